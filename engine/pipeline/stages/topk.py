"""Exact top-k bm25 over an FTS5 table without scoring every match.

FTS5 answers ``MATCH q ORDER BY rank LIMIT k`` by scoring *every* row that
matches ``q`` (about 1 µs a row with ``bm25``): for a query with a word in
three chunks of four (``npm`` in the npm docs) that is most of the table,
whatever ``k``. This module returns the same ``k`` rows, in the same order,
with the same ``bm25`` values bit for bit, and the same
``highlight(t, 1, char(2), char(3))``, while scoring only rows that could
reach the top ``k`` (the MaxScore idea: Turtle and Flood, "Query evaluation:
strategies and optimizations", IP&M 31(6), 1995).

Each row's score is FTS5's own, computed by :mod:`engine.pipeline.stages.bm25`
(``fts5Bm25Function``'s double operations in its order, so the bits are
the same): ``bm25 = -1.0 * score``, ``score`` the sum over the query's
phrases of ``idf(i) * f(i, r) (k1 + 1) / (f(i, r) + k1 (1 - b + b D(r) / avgdl))``.

The bound: a phrase adds less than ``idf(i) * (k1 + 1)`` to any row's score
(``f (k1+1) / (f + k1 L) < k1 + 1`` for ``L > 0``). With the query's phrases
split into rare ones ``R`` and frequent ones ``F``:

1. Every row's score is below ``S_R(r) + U_F``, where ``S_R`` is FTS5's own
   bm25 for the query of ``R`` alone and ``U_F`` the sum of ``F``'s bounds;
   a row matching only ``F`` phrases scores below ``U_F``.
2. FTS5 ranks the rows of ``R`` (few) by ``S_R``; walking them in that order,
   each row's exact score is computed here, and the walk stops at the first
   row whose ``S_R + U_F`` cannot reach the k-th exact score found.
3. When the k-th score is above ``U_F``, no row outside the walk can enter:
   the answer is exact. Otherwise (too few rows, or a bound too weak)
   :func:`top_k` returns ``None`` and the caller runs FTS5's own ranking.

Scores are compared with a margin (:data:`MARGIN`) far above the rounding of
a sum of a few doubles, so rounding can only make the walk longer, never
drop a row. Ties keep FTS5's order: ascending rowid.

Only a plain ``OR`` of double-quoted phrases (what :mod:`engine.pipeline.query`
writes) on a table with a ``%_docsize`` table and a tokenizer ``apsw`` can
load qualifies; anything else returns ``None`` with a reason code
(:class:`Declined`), and the caller falls back.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field
from typing import Any, Iterable

import apsw

from engine.pipeline.marks import Marks
from engine.store import sql
from engine.pipeline.stages import bm25
from engine.store.cache import VersionedLRU

#: Slack on every bound comparison (scores are sums of a few terms below ~40;
#: their rounding error is below 1e-13).
MARGIN = 1e-9
#: Below this many rows in the table, FTS5's own ranking is cheap enough
#: (about 1 µs a match) and counting each phrase's rows first would cost a
#: visible share: :func:`top_k` declines before counting anything. (npm
#: docs, 80 queries: at 1,437 chunks top-k made searches slower, at 10,059
#: it cut the p50 by 30%.)
MIN_ROWS = 5_000
#: Below this many phrase matches in all (the sum of the phrases' row
#: counts), the same.
MIN_MATCHES = 4_000
#: Above this many rows wanted, walking and tokenizing costs more than FTS5's
#: ranking saves: :func:`top_k` declines (``deep-limit``).
MAX_K = 250
#: Decline when the rarest phrases needed for ``k`` rows hold more than this
#: share of all phrase matches (FTS5 would rank nearly as many rows).
SEED_SHARE_MAX = 0.6
#: Decline when the phrases left to rank hold more than this share.
RARE_SHARE_MAX = 0.75
#: The walk tokenizes at most this many distinct texts per row wanted (and
#: at least :data:`WALK_MIN_TEXTS` in all); a walk that would tokenize more
#: declines (``long-walk``), since FTS5 ranks faster than Python tokenizes:
#: 20,040 log lines that all hold "INFO request" took 7.4 s to walk and
#: 0.07 s for FTS5 to rank.
WALK_TEXTS_PER_ROW = 6
WALK_MIN_TEXTS = 40


#: From this many rows in the table, a query of one phrase of several tokens
#: (a trigram word) is declined (``one-phrase``) without counting its rows:
#: one phrase leaves no bound to prune with whatever its count, and counting
#: a trigram phrase is a phrase match over the whole table (50–100 ms for a
#: frequent word at 1,000,152 chunks). A one-token phrase is still counted
#: (a doclist's size: a few milliseconds), for the split into halves.
UNCOUNTED_ROWS = 100_000


#: Why :func:`top_k` leaves a query to FTS5's own ranking.
DECLINED = {
    "not-or-query": "the MATCH string is not an OR of quoted phrases",
    "no-docsize": "the table keeps no per-row token counts",
    "tokenizer": "the table's tokenizer cannot be loaded here",
    "table-options": "the table's FTS5 options change how rows match (detail, locale, tokendata)",
    "few-matches": "few matches: FTS5 ranks them quickly",
    "one-phrase": "one phrase matches: no bound to prune with",
    "no-gain": "the rare phrases match too many rows to save time",
    "weak-bound": "the frequent phrases could still reach the limit",
    "too-few-rows": "fewer matches than rows wanted",
    "deep-limit": "too many rows wanted",
    "long-walk": "the bound would leave too many rows to score here",
    "size-mismatch": "a row's tokens differ from its stored count",
    "no-source": "a chosen row has no source row",
    "error": "a statement failed",
}


class Declined(Exception):
    """:func:`top_k` cannot answer this query exactly; ``code`` says why
    (:data:`DECLINED`)."""

    def __init__(
        self,
        code: str,
        phrase_rows: tuple[int, ...] = (),
        phrase_sizes: tuple[int, ...] = (),
        *,
        large: bool = False,
    ) -> None:
        super().__init__(code)
        self.code = code
        #: Rows each phrase matches (query order), when counted before declining; else ``()``.
        self.phrase_rows = phrase_rows
        #: Tokens in each phrase (query order), when counted; else ``()``.
        self.phrase_sizes = phrase_sizes
        #: Declined uncounted on a table of at least :data:`UNCOUNTED_ROWS`
        #: rows: FTS5 will rank what may be many matches.
        self.large = large


@dataclass(frozen=True)
class Row:
    """One row of the answer.

    Attributes:
        rowid: the FTS5 rowid.
        bm25: ``bm25(t, 5.0, 1.0)`` as FTS5 computes it (negative; lower is better).
        marks: its content's ``highlight(t, 1, char(2), char(3))``, computed
            when first asked (:class:`engine.pipeline.marks.Marks`; the
            instances are the ones scoring found).
    """

    rowid: int
    bm25: float
    marks: Marks

    @property
    def highlighted(self) -> bytes:
        """``highlight(t, 1, char(2), char(3))`` as UTF-8 bytes (computed now if not yet)."""
        return self.marks.bytes()


@dataclass
class Outcome:
    """What :func:`top_k` did, for the trace and the benchmarks.

    Attributes:
        rows: the answer, bm25 ascending then rowid ascending.
        phrases: the phrases' row counts ``n(i)``, in query order.
        rare: indexes (0-based, query order) of the phrases FTS5 ranked (``R``).
        walked: rows whose exact score was needed (read and checked).
        tokenized: distinct texts tokenized (rows with the same title and
            content share one).
    """

    rows: list[Row]
    phrases: list[int]
    rare: list[int]
    walked: int = 0
    tokenized: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


class _Scorer:
    """Exact bm25 of a row from its text (:mod:`engine.pipeline.stages.bm25`)."""

    def __init__(self, tok: apsw.FTS5Tokenizer, phrase_tokens: list[tuple[str, ...]], idf: list[float], avgdl: float):
        self.tok = tok
        self.phrase_tokens = phrase_tokens
        self.idf = idf
        self.avgdl = avgdl
        self.memo: dict[tuple[bytes, bytes], tuple[float, list[list[int]]]] = {}

    def score(self, title: bytes, content: bytes, docsize: int | None) -> tuple[float, list[list[int]]]:
        """``(score, starts)``: the score (positive, higher is better) and,
        per phrase, the 0-based token positions where it starts in the
        content column (for the highlight).

        Raises:
            Declined: ``size-mismatch`` when the tokens counted here are not
                the row's ``%_docsize`` (a store tokenized differently).
        """
        key = (title, content)
        hit = self.memo.get(key)
        if hit is not None:
            return hit
        hits = bm25.column_hits(self.tok, title, content, self.phrase_tokens)
        size = hits.title_tokens + hits.content_tokens
        if docsize is not None and size != docsize:
            raise Declined("size-mismatch")
        d = float(size)
        starts: list[list[int]] = []
        score = 0.0
        for i, found in enumerate(hits.content):
            freq = bm25.weighted_frequency(hits.title[i], len(found))
            score += bm25.part(self.idf[i], freq, d, self.avgdl)
            starts.append(list(found))
        out = (score, starts)
        self.memo[key] = out
        return out


def top_k(
    conn: sql.Connection,
    table: str,
    match: str,
    k: int,
    *,
    min_rows: int | None = None,
    min_matches: int | None = None,
    counts: VersionedLRU[int] | None = None,
) -> Outcome:
    """The first ``k`` rows of ``SELECT ... WHERE t MATCH match ORDER BY
    bm25(t, 5.0, 1.0), rowid`` with their bm25 and content highlight.

    Args:
        conn: a connection inside a read transaction (all statements must
            see one snapshot).
        table: the FTS5 table (``chunks`` or ``chunks_trigram``).
        match: an OR of double-quoted phrases.
        k: rows wanted (>= 1).
        min_rows: decline when the table has fewer rows (default
            :data:`MIN_ROWS`, read at each call).
        min_matches: decline below this many phrase matches in all
            (default :data:`MIN_MATCHES`).
        counts: a cache of phrase row counts keyed ``(table, phrase)``
            (:attr:`engine.store.store.Store.phrase_rows`), read and filled under
            the data version ``conn``'s read transaction noted
            (``conn.read_version``; none noted: not used).

    Returns:
        An :class:`Outcome` whose ``rows`` are exactly FTS5's first ``k``.

    Raises:
        Declined: the query or table does not qualify, the bound would save
            too little, or it did not settle the answer; the caller then runs
            FTS5's own ranking.
    """
    texts = bm25.phrases_of(match)
    if texts is None:
        raise Declined("not-or-query")
    if k < 1:
        raise Declined("too-few-rows")
    if k > MAX_K:
        raise Declined("deep-limit")
    if not bm25.has_docsize(conn, table):
        raise Declined("no-docsize")
    try:
        n_row, n_token = bm25.table_totals(conn, table)
        if n_row < max(MIN_ROWS if min_rows is None else min_rows, 1):
            raise Declined("few-matches")
        tok = bm25.tokenizer_for(conn, table)
    except bm25.Unsupported as unsupported:
        raise Declined(unsupported.code) from None
    phrase_tokens = [bm25.phrase_tokens(tok, p) for p in texts]
    if len(texts) == 1 and len(phrase_tokens[0]) > 1 and n_row >= UNCOUNTED_ROWS:
        raise Declined("one-phrase", large=True)
    # a phrase with no token (``"--"``) matches no row, like a word no row has
    rows_of = bm25.phrase_rows(conn, table, texts, phrase_tokens, counts)
    counts_list = rows_of
    try:
        return _ranked(
            conn,
            table,
            texts,
            phrase_tokens,
            tok,
            counts_list,
            n_row,
            n_token,
            k,
            min_matches,
            bm25.tokenizer_spec(conn, table),
        )
    except Declined as declined:
        raise Declined(declined.code, tuple(counts_list), tuple(len(p) for p in phrase_tokens)) from None


def _ranked(
    conn: sql.Connection,
    table: str,
    texts: list[str],
    phrase_tokens: list[tuple[str, ...]],
    tok: apsw.FTS5Tokenizer,
    counts: list[int],
    n_row: int,
    n_token: int,
    k: int,
    min_matches: int | None,
    spec: tuple[str, ...],
) -> Outcome:
    """:func:`top_k` once the phrases' row counts are known."""
    total = sum(counts)
    outcome = Outcome([], counts, [])
    if total < (MIN_MATCHES if min_matches is None else min_matches):
        raise Declined("few-matches")
    # a phrase no row matches adds +0.0 to every score: it takes no part below
    live = sorted((i for i in range(len(texts)) if counts[i]), key=lambda i: counts[i])  # rarest first
    if len(live) < 2:
        raise Declined("one-phrase")
    seed: list[int] = []
    for i in live:
        seed.append(i)
        if sum(counts[j] for j in seed) >= k:
            break
    if sum(counts[j] for j in seed) > SEED_SHARE_MAX * total:
        raise Declined("no-gain")
    avgdl = n_token / n_row
    idf = [bm25.idf(n_row, n_hit) for n_hit in counts]
    bound = [v * (bm25.K1 + 1.0) for v in idf]
    scorer = _Scorer(tok, phrase_tokens, idf, avgdl)
    best: list[tuple[float, int, bytes, bytes]] = []  # (-score, rowid, title, content), best first
    seen: set[int] = set()
    budget = max(WALK_TEXTS_PER_ROW * k, WALK_MIN_TEXTS)

    def take(rowid: int, title: bytes | None, content: bytes | None, size_blob: bytes | None) -> None:
        title = title or b""
        content = content or b""
        outcome.walked += 1
        if rowid in seen:
            return
        seen.add(rowid)
        key = (title, content)
        if key not in scorer.memo:
            if outcome.tokenized >= budget:
                raise Declined("long-walk")
            outcome.tokenized += 1
        size = sum(bm25.varints(bytes(size_blob))) if size_blob is not None and key not in scorer.memo else None
        score, _ = scorer.score(title, content, size)
        entry = (-score, rowid, title, content)
        if len(best) < k or entry < best[-1]:
            bisect.insort(best, entry)
            if len(best) > k:
                best.pop()

    def ranked(subset: list[int]) -> Iterable[Any]:
        q = " OR ".join(bm25.match_phrase(texts[i]) for i in subset)
        t = f'"{table}"'
        return conn.execute(
            f"SELECT {t}.rowid, {t}.rank, CAST(title AS BLOB), CAST(content AS BLOB), "
            f'(SELECT sz FROM "{table}_docsize" WHERE id = {t}.rowid) '
            f"FROM {t} WHERE {t} MATCH ? AND {t}.rank MATCH 'bm25(5.0, 1.0)' ORDER BY {t}.rank",
            (q,),
        )

    # 1. a first threshold: the k-th exact score among the rarest phrases' best rows
    cursor = iter(ranked(seed))
    last_partial = math.inf
    for row in cursor:
        take(row[0], row[2], row[3], row[4])
        last_partial = -float(row[1])
        if len(best) >= k:
            break
    if len(best) < k:
        raise Declined("too-few-rows")
    theta0 = -best[-1][0]
    # 2. the frequent phrases: most frequent first, while their bounds stay below it
    frequent: list[int] = []
    u_f = 0.0
    for i in reversed(live):
        if i in seed or u_f + bound[i] + MARGIN >= theta0:
            break
        frequent.append(i)
        u_f += bound[i]
    rare = [i for i in range(len(texts)) if counts[i] and i not in frequent]
    outcome.rare = rare
    if not frequent:
        raise Declined("weak-bound")
    if sum(counts[i] for i in rare) > RARE_SHARE_MAX * total:
        raise Declined("no-gain")
    # 3. walk the rare phrases' rows in FTS5's order of their partial score
    if sorted(rare) != sorted(seed):
        cursor = iter(ranked(rare))
        last_partial = math.inf
    theta = -best[-1][0]
    if last_partial + u_f + MARGIN >= theta:
        for row in cursor:
            partial = -float(row[1])
            if partial + u_f + MARGIN < theta:
                break
            take(row[0], row[2], row[3], row[4])
            theta = -best[-1][0]
    if theta <= u_f + MARGIN:
        raise Declined("weak-bound")
    for neg, rowid, title, content in best:
        _, starts = scorer.score(title, content, None)
        inst = sorted((p, i) for i, ps in enumerate(starts) for p in ps)
        found = [(p, len(phrase_tokens[i])) for p, i in inst]
        outcome.rows.append(Row(rowid, -1.0 * -neg, Marks(spec, content, found=found)))
    return outcome
