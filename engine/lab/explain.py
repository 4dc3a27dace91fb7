"""Explain a score: a retriever's bm25 phrase by phrase, and "why is X above Y".

:func:`explain_chunk` takes a search and one chunk and gives, for each
retriever of the pass that answered (the first pass, or the fuzzy re-run when
it answered), the anatomy of its ``bm25(t, 5.0, 1.0)``: for each phrase of
the sanitised MATCH string (each OR'ed word for Porter, each trigram phrase
for the trigram table), the rows in the table and the rows the phrase
matches, its idf, its instances in the title and in the content, the
weighted frequency (title × 5.0 + content × 1.0), the row's token count and
the table's average, and the phrase's part of the score. The parts come from
:mod:`engine.pipeline.stages.bm25`, FTS5's own formula in its own double
operations, so added in query order from ``0.0`` they give FTS5's value bit
for bit: ``bm25 == -1.0 * total(parts)`` (:attr:`RetrieverAnatomy.exact`;
lower bm25 is better). It also gives the chunk's position at every stage of
that pass, read from the pass's paths (:attr:`engine.pipeline.trace.Run.paths`).

:func:`explain_versus` puts two chunks of one search side by side: both
anatomies, both paths, and :class:`Decision`: the first stage from which
they stood in their final order (or from which one of them was gone), and
what decided it there, in numbers:

=====================  ====================================================
stage                  the numbers
=====================  ====================================================
``porter``/``trigram`` each retriever that ranked them in that order: ranks,
``retrieve`` (both)    bm25 and every phrase's two parts, the phrases whose
                       parts differ most first
``fusion``             each chunk's fused score and every contribution
                       ``1 / (k + rank)``; a merged chunk's exit
``pool``, ``filter``,  the cut: the exit of the chunk that left there
``trim``               (``beyond-pool``, ``session-filter``, ``trimmed``)
``rerank``             each chunk's boost and its parts (title, proximity,
                       phrase) and the fused score behind the tie-break
=====================  ====================================================

The order at a stage: by position when both hold one; the one present is
above when the other is not; when neither is, the order of the stage before
holds. The final order is the last stage's. The deciding stage is the one
that removed the lower chunk when it left the pass before the other one did
(its exit stage: ``merged`` at fusion, or the cut); otherwise the first
stage from which the order never changed (:attr:`Decision.order_since`).
When that is fusion and no retriever ranked them the other way round, the
retrievers decided: ``retrieve`` when both retrievers ranked them, else the
one that did. With the counterfactual search
(:func:`engine.lab.counterfactual.would_reorder_with`) it also finds the
one parameter change, if any, after which the lower chunk is returned above
the other.

Everything here is computed on demand (a few ``count(*)``, one row read and
tokenized per retriever), never on a search's path. Positions are 1-based.
Pure Python; no Textual.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Callable

from engine.lab.counterfactual import Counterfactual, would_reorder_with
from engine.lab.why import find_chunks
from engine.pipeline.runcache import RunCache
from engine.pipeline.stages import bm25
from engine.pipeline.stages.retrieve import TABLES
from engine.pipeline.table import RETRIEVERS, base_id, depth, ranked, run_stage_ids, stage
from engine.pipeline.candidates import Candidate, Exit
from engine.pipeline.passes import Run
from engine.pipeline.stages.rerank import RerankEntry
from engine.pipeline.trace import Trace
from engine.store import sql
from engine.store.chunkids import chunk_ids
from engine.store.store import Store

if TYPE_CHECKING:
    from engine.store.cache import VersionedLRU

#: The two chunks of a comparison, in the order given: the chunk, then the one it is compared with.
SIDES = ("chunk", "vs")


# ─── the anatomy of one retriever's score ────────────────────────────────


@dataclass(frozen=True)
class PhraseAnatomy:
    """One phrase of a retriever's MATCH string against one row.

    Attributes:
        phrase: the phrase's text (unquoted).
        rows_matching: rows of the table the phrase matches alone (``n``,
            FTS5's ``xQueryPhrase`` count).
        idf: ``ln((N - n + 0.5) / (n + 0.5))``, floored at 1e-6.
        title_hits: instances of the phrase in the row's title.
        content_hits: instances in the row's content.
        weighted_tf: ``5.0 * title_hits + 1.0 * content_hits``.
        part: the phrase's part of the score (positive; 0.0 without a hit).
    """

    phrase: str
    rows_matching: int
    idf: float
    title_hits: int
    content_hits: int
    weighted_tf: float
    part: float

    def to_dict(self) -> dict[str, object]:
        """``{"phrase", "rows_matching", "idf", "hits": {"title", "content"}, "weighted_tf", "part"}``."""
        return {
            "phrase": self.phrase,
            "rows_matching": self.rows_matching,
            "idf": self.idf,
            "hits": {"title": self.title_hits, "content": self.content_hits},
            "weighted_tf": self.weighted_tf,
            "part": self.part,
        }


@dataclass(frozen=True)
class RetrieverAnatomy:
    """A row's bm25 in one retriever, phrase by phrase.

    Attributes:
        retriever: ``"porter"`` or ``"trigram"``.
        match: the sanitised MATCH string the pass ran (``""``: the
            retriever did not run: no trigram word, or the variant skips it).
        rank: the row's 1-based rank in the pass's run, ``None`` when the
            run did not return it.
        bm25: FTS5's ``bm25(t, 5.0, 1.0)`` of the row for ``match``, read
            with the parts (``None`` when the row does not match).
        rows: ``N``, rows in the table.
        total_tokens: tokens in all rows (FTS5's averages record).
        row_tokens: ``D``, the row's tokens in all columns (its ``%_docsize``).
        phrases: one per phrase of ``match``, in query order.
        unsupported: why no phrase could be scored here (a
            :class:`engine.pipeline.stages.bm25.Unsupported` code, or
            ``not-or-query``); ``None`` normally.
    """

    retriever: str
    match: str
    rank: int | None
    bm25: float | None
    rows: int
    total_tokens: int
    row_tokens: int
    phrases: tuple[PhraseAnatomy, ...] = ()
    unsupported: str | None = None

    @property
    def avg_tokens(self) -> float:
        """``avgdl``: total tokens / rows, as FTS5 divides them (0.0 for an empty table)."""
        return self.total_tokens / self.rows if self.rows else 0.0

    @property
    def score(self) -> float:
        """The parts added in query order from 0.0 (:func:`engine.pipeline.stages.bm25.total`)."""
        return bm25.total([p.part for p in self.phrases])

    @property
    def exact(self) -> bool:
        """True when ``bm25 == -1.0 * score`` to the last bit (the row matches)."""
        return self.bm25 is not None and self.bm25 == -1.0 * self.score

    def to_dict(self) -> dict[str, object]:
        """The JSON of ``rankscope explain`` (README): ``rank, bm25, rows,
        avg_tokens, row_tokens, k1, b, weights, phrases``, then ``match`` and
        ``unsupported``."""
        return {
            "rank": self.rank,
            "bm25": self.bm25,
            "rows": self.rows,
            "avg_tokens": self.avg_tokens,
            "row_tokens": self.row_tokens,
            "k1": bm25.K1,
            "b": bm25.B,
            "weights": {"title": bm25.WEIGHTS[0], "content": bm25.WEIGHTS[1]},
            "phrases": [p.to_dict() for p in self.phrases],
            "match": self.match,
            "unsupported": self.unsupported,
        }


def retriever_anatomy(
    conn: sql.Connection,
    retriever: str,
    match: str,
    rowid: int,
    rank: int | None = None,
    counts: "VersionedLRU[int] | None" = None,
) -> RetrieverAnatomy:
    """The anatomy of row ``rowid``'s bm25 for ``match`` in ``retriever``'s table.

    Args:
        conn: a connection (a read transaction keeps the parts and FTS5's
            value on one snapshot).
        match: the sanitised MATCH string (``""``: no phrases).
        rank: the row's rank in the run, carried into the result.
        counts: the store's phrase-count cache
            (:attr:`engine.store.store.Store.phrase_rows`), or ``None``.

    Raises:
        ValueError: unknown retriever.
        engine.store.sql.Error: the store cannot be read.
    """
    if retriever not in TABLES:
        raise ValueError(f"retriever must be one of {', '.join(TABLES)}; got {retriever!r}")
    table = TABLES[retriever]
    try:
        n_row, n_token = bm25.table_totals(conn, table)
    except bm25.Unsupported as exc:
        return RetrieverAnatomy(retriever, match, rank, _fts5_bm25(conn, table, match, rowid), 0, 0, 0, (), exc.code)
    size = bm25.row_size(conn, table, rowid) if bm25.has_docsize(conn, table) else None
    base = RetrieverAnatomy(retriever, match, rank, None, n_row, n_token, size or 0)
    if not match:
        return base
    fts5 = _fts5_bm25(conn, table, match, rowid)
    texts = bm25.phrases_of(match)
    if texts is None:
        return replace(base, bm25=fts5, unsupported="not-or-query")
    if size is None:
        return replace(base, bm25=fts5, unsupported="no-docsize")
    try:
        tok = bm25.tokenizer_for(conn, table)
    except bm25.Unsupported as exc:
        return replace(base, bm25=fts5, unsupported=exc.code)
    toks = [bm25.phrase_tokens(tok, t) for t in texts]
    rows = bm25.phrase_rows(conn, table, texts, toks, counts)
    row = conn.execute(f'SELECT CAST(title AS BLOB), CAST(content AS BLOB) FROM "{table}" WHERE rowid = ?', (rowid,))
    found = row.fetchone()
    title, content = (bytes(found[0] or b""), bytes(found[1] or b"")) if found else (b"", b"")
    hits = bm25.column_hits(tok, title, content, toks)
    avgdl = n_token / n_row if n_row else 0.0
    phrases = []
    for i, text in enumerate(texts):
        idf = bm25.idf(n_row, rows[i])
        freq = bm25.weighted_frequency(hits.title[i], len(hits.content[i]))
        part = bm25.part(idf, freq, float(size), avgdl) if freq else 0.0  # FTS5 adds idf * 0.0 = 0.0
        phrases.append(PhraseAnatomy(text, rows[i], idf, hits.title[i], len(hits.content[i]), freq, part))
    return replace(base, bm25=fts5, phrases=tuple(phrases))


def _fts5_bm25(conn: sql.Connection, table: str, match: str, rowid: int) -> float | None:
    """FTS5's own ``bm25(t, 5.0, 1.0)`` of one row, ``None`` when it does not match."""
    if not match:
        return None
    row = conn.execute(
        f'SELECT bm25("{table}", 5.0, 1.0) FROM "{table}" WHERE "{table}" MATCH ? AND rowid = ?', (match, rowid)
    ).fetchone()
    return None if row is None else float(row[0])


# ─── one chunk in one search ─────────────────────────────────────────────


@dataclass(frozen=True)
class ChunkAnatomy:
    """One chunk of a search: its score in each retriever and its path.

    Attributes:
        rowid: the chunk's FTS5 row id.
        chunk_id: its stable chunk id (:mod:`engine.store.chunkids`).
        source, title: the chunk's source label and title.
        pass_name: the pass explained: ``"first"``, or ``"fuzzy"`` when the
            typo re-run answered.
        query: the text that pass searched.
        retrievers: one per retriever (``porter``, ``trigram``).
        steps: ``(stage id, 1-based position or None)`` for every stage of
            the pass, in execution order, ending with ``final`` (ids
            prefixed ``fuzzy:`` in the re-run).
        exit: where it left the pass, ``None`` when it is in the pass's
            answer or no retriever returned it (then every position is None).
    """

    rowid: int
    chunk_id: str
    source: str
    title: str
    pass_name: str
    query: str
    retrievers: tuple[RetrieverAnatomy, ...]
    steps: tuple[tuple[str, int | None], ...]
    exit: Exit | None = None

    def retriever(self, name: str) -> RetrieverAnatomy | None:
        """The anatomy in retriever ``name``."""
        return next((r for r in self.retrievers if r.retriever == name), None)

    def position(self, stage_id: str) -> int | None:
        """The 1-based position at ``stage_id`` (a full id)."""
        return dict(self.steps).get(stage_id)

    @property
    def final(self) -> int | None:
        """The 1-based position in the pass's answer."""
        return self.steps[-1][1] if self.steps else None

    def to_dict(self) -> dict[str, object]:
        """``{"chunk": {"rowid", "id"}, "retrievers": {name: ...}, "stages":
        [{"stage", "position"}]}``."""
        return {
            "chunk": {"rowid": self.rowid, "id": self.chunk_id},
            "retrievers": {r.retriever: r.to_dict() for r in self.retrievers},
            "stages": [{"stage": sid, "position": pos} for sid, pos in self.steps],
        }


def explained_run(trace: Trace) -> Run:
    """The pass an explanation reads: the one that answered (the fuzzy
    re-run for layer ``rrf-fuzzy``), else the first."""
    return trace.answering_run or trace.first


def explain_chunk(store: Store, trace: Trace, rowid: int, *, conn: sql.Connection | None = None) -> ChunkAnatomy:
    """The anatomy of chunk ``rowid`` in ``trace``'s answering pass (see the
    module docstring), read in one read transaction.

    Raises:
        ChunkNotFoundError: no chunk has that row id.
        CorruptStoreError / StoreError: the store cannot be read.
    """
    out: list[ChunkAnatomy] = store.reading(lambda c: _explain_in_read(store, c, trace, [rowid]), conn)
    return out[0]


def explain_chunks(
    store: Store, trace: Trace, rowids: list[int], *, conn: sql.Connection | None = None
) -> list[ChunkAnatomy]:
    """:func:`explain_chunk` for several chunks, in one read transaction
    (the phrase counts are read once).

    Raises:
        ChunkNotFoundError: no chunk has one of the row ids.
        CorruptStoreError / StoreError: the store cannot be read.
    """
    out: list[ChunkAnatomy] = store.reading(lambda c: _explain_in_read(store, c, trace, rowids), conn)
    return out


def _explain_in_read(store: Store, conn: sql.Connection | None, trace: Trace, rowids: list[int]) -> list[ChunkAnatomy]:
    with store.using(conn) as c, store.snapshot(c):
        return [_explain(store, c, trace, rowid) for rowid in rowids]


def _explain(store: Store, conn: sql.Connection, trace: Trace, rowid: int) -> ChunkAnatomy:
    [ref] = find_chunks(store, rowid=rowid, conn=conn)
    run = explained_run(trace)
    ids = chunk_ids(store, conn)
    retrievers = []
    for name in RETRIEVERS:
        rec = run.record(name)
        match = getattr(rec, "query", "") if rec is not None and not getattr(rec, "skipped", None) else ""
        hits = getattr(rec, "hits", ()) if rec is not None else ()
        rank = next((h.rank for h in hits if h.rowid == rowid), None)
        retrievers.append(retriever_anatomy(conn, name, match, rowid, rank, store.phrase_rows))
    path = run.path(rowid)
    steps = path.steps if path is not None else tuple((sid, None) for sid in run_stage_ids(run))
    return ChunkAnatomy(
        rowid,
        ids.by_rowid[rowid] if rowid in ids.by_rowid else f"{ref.source}::{ref.title}",
        ref.source,
        ref.title,
        run.pass_name,
        run.query,
        tuple(retrievers),
        steps,
        path.exit if path is not None else None,
    )


def run_anatomy(run: Run, rowid: int) -> ChunkAnatomy:
    """Chunk ``rowid`` in ``run`` as the trace alone tells it, without the
    store: its path, and in each retriever its rank and bm25 from the run
    (no phrases, no table numbers: ``rows``, ``row_tokens`` 0). Enough for
    :func:`decide` (a retriever decision then has ranks and bm25 but no
    phrase parts); ``chunk_id`` is ``""``."""
    retrievers = []
    for name in RETRIEVERS:
        rec = run.record(name)
        match = getattr(rec, "query", "") if rec is not None and not getattr(rec, "skipped", None) else ""
        hit = next((h for h in getattr(rec, "hits", ()) if h.rowid == rowid), None)
        rank, value = (hit.rank, hit.bm25) if hit is not None else (None, None)
        retrievers.append(RetrieverAnatomy(name, match, rank, value, 0, 0, 0))
    path = run.path(rowid)
    steps = path.steps if path is not None else tuple((sid, None) for sid in run_stage_ids(run))
    source, title = (path.source, path.title) if path is not None else ("", "")
    exit = path.exit if path is not None else None
    return ChunkAnatomy(rowid, "", source, title, run.pass_name, run.query, tuple(retrievers), steps, exit)


def neighbours(run: Run, rowid: int) -> tuple[Decision | None, Decision | None]:
    """What holds chunk ``rowid`` at its place in ``run``'s answer: the
    :class:`Decision` against the chunk just above it and against the one
    just below (``None`` where there is none, or when ``rowid`` is not in
    the answer), from the trace alone (:func:`run_anatomy`)."""
    order = [c.rowid for c in run.results]
    if rowid not in order:
        return None, None
    i = order.index(rowid)
    me = run_anatomy(run, rowid)
    above = decide(run, me, run_anatomy(run, order[i - 1])) if i > 0 else None
    below = decide(run, me, run_anatomy(run, order[i + 1])) if i + 1 < len(order) else None
    return above, below


# ─── X versus Y ──────────────────────────────────────────────────────────


@dataclass(frozen=True)
class PhraseDiff:
    """One phrase's parts for both chunks.

    Attributes:
        phrase: the phrase.
        parts: ``(chunk's part, other's part)``.
        weighted_tf: ``(chunk's, other's)`` weighted frequency (title × 5 + content × 1).
    """

    phrase: str
    parts: tuple[float, float]
    weighted_tf: tuple[float, float] = (0.0, 0.0)

    @property
    def difference(self) -> float:
        """The chunk's part minus the other's (positive: it favours the chunk)."""
        return self.parts[0] - self.parts[1]


@dataclass(frozen=True)
class RetrieverDiff:
    """Both chunks in one retriever.

    Attributes:
        retriever: ``"porter"`` or ``"trigram"``.
        ranks, bm25, row_tokens: ``(chunk's, other's)``.
        phrases: every phrase, the largest absolute difference first
            (query order on a tie).
    """

    retriever: str
    ranks: tuple[int | None, int | None]
    bm25: tuple[float | None, float | None]
    phrases: tuple[PhraseDiff, ...]
    row_tokens: tuple[int, int] = (0, 0)

    def to_dict(self) -> dict[str, object]:
        """``{"rank": {"chunk", "vs"}, "bm25": {...}, "row_tokens": {...}, "phrases":
        [{"phrase", "weighted_tf": {...}, "part": {...}, "difference"}]}``."""
        return {
            "rank": _pair(self.ranks),
            "bm25": _pair(self.bm25),
            "row_tokens": _pair(self.row_tokens),
            "phrases": [
                {
                    "phrase": p.phrase,
                    "weighted_tf": _pair(p.weighted_tf),
                    "part": _pair(p.parts),
                    "difference": p.difference,
                }
                for p in self.phrases
            ],
        }


@dataclass(frozen=True)
class FusedSide:
    """One chunk at fusion.

    Attributes:
        score: its key's fused score (``None``: it has no key: merged, or
            never retrieved).
        contributions: every ``1 / (k + rank)`` added into the key it is in,
            Porter's first (a merged chunk: the key it was merged into).
        key_rowid: the row that represents that key (itself unless merged).
    """

    score: float | None
    contributions: tuple[tuple[str, int, int, float], ...] = ()
    key_rowid: int | None = None

    def to_dict(self) -> dict[str, object]:
        """``{"score", "key_rowid", "contributions": [{"retriever", "rank", "rowid", "value"}]}``."""
        return {
            "score": self.score,
            "key_rowid": self.key_rowid,
            "contributions": [
                {"retriever": r, "rank": rank, "rowid": row, "value": v} for r, rank, row, v in self.contributions
            ],
        }


@dataclass(frozen=True)
class Decision:
    """What put two chunks in their final order (see the module docstring).

    Attributes:
        stage: the stage id (``porter``, ``trigram``, ``retrieve`` for both
            retrievers, ``fusion``, ``pool``, ``filter``, ``trim``,
            ``rerank``; prefixed ``fuzzy:`` in the re-run).
        above, below: the row ids in their final order; ``None`` when no
            retriever returned either (or neither got past fusion: both merged).
        order_since: the first stage from which ``above`` stood above
            ``below`` (or ``below`` was gone) without a change: ``stage``
            itself, except when ``stage`` is the one that removed ``below``
            and the order was the same before (a cut below the line).
        positions: ``(chunk's, other's)`` 1-based positions at ``stage``
            (retriever ranks for a retriever stage; ``None`` for ``retrieve``).
        exits: ``(chunk's, other's)`` exits from the pass, ``None`` for one
            still in the answer or never retrieved.
        retrievers: at a retriever stage, each retriever that ranked them.
        fused: at fusion, ``(chunk's, other's)`` fused side.
        rerank: at the rerank, ``(chunk's, other's)`` rerank entry.
        rrf_k: at fusion, the RRF constant.
    """

    stage: str
    above: int | None
    below: int | None
    order_since: str | None = None
    positions: tuple[int | None, int | None] = (None, None)
    exits: tuple[Exit | None, Exit | None] = (None, None)
    retrievers: tuple[RetrieverDiff, ...] = ()
    fused: tuple[FusedSide, FusedSide] | None = None
    rerank: tuple[RerankEntry | None, RerankEntry | None] | None = None
    rrf_k: int | None = None

    @property
    def kind(self) -> str:
        """``"retriever"`` (a retriever stage or ``retrieve``), ``"fusion"``,
        ``"cut"`` (a stage that removed one), ``"rerank"``, or ``"none"``
        (no order: neither was retrieved)."""
        base = base_id(self.stage)
        if self.above is None:
            return "none"
        if base in RETRIEVERS or base == "retrieve":
            return "retriever"
        if base in ("fusion", "rerank"):
            return base
        return "cut"

    def to_dict(self) -> dict[str, object]:
        """``{"stage", "above", "below", "order_since", "positions": {"chunk", "vs"}, "exits": {...}}``
        plus, by kind: ``retrievers`` {name: :meth:`RetrieverDiff.to_dict`};
        ``rrf_k`` and ``fused`` {"chunk", "vs"}; ``rerank`` {"chunk", "vs"}
        each ``{"boost", "title_boost", "proximity_boost", "phrase_boost",
        "fused_score", "old_position", "new_position"}``."""
        out: dict[str, object] = {
            "stage": self.stage,
            "above": self.above,
            "below": self.below,
            "order_since": self.order_since,
            "positions": _pair(self.positions),
            "exits": _pair(tuple(None if e is None else e.to_dict() for e in self.exits)),
        }
        if self.retrievers:
            out["retrievers"] = {d.retriever: d.to_dict() for d in self.retrievers}
        if self.fused is not None:
            out["rrf_k"] = self.rrf_k
            out["fused"] = _pair(tuple(f.to_dict() for f in self.fused))
        if self.rerank is not None:
            out["rerank"] = _pair(tuple(None if e is None else _rerank_dict(e) for e in self.rerank))
        return out


def _rerank_dict(e: RerankEntry) -> dict[str, object]:
    return {
        "boost": e.boost,
        "title_boost": e.title_boost,
        "proximity_boost": e.proximity_boost,
        "phrase_boost": e.phrase_boost,
        "fused_score": e.candidate.score,
        "old_position": e.old_position,
        "new_position": e.new_position,
    }


def _pair(values: tuple[object, ...]) -> dict[str, object]:
    return dict(zip(SIDES, values))


@dataclass(frozen=True)
class Versus:
    """Two chunks of one search.

    Attributes:
        chunk, other: both anatomies, in the order given.
        decision: what put them in their final order.
        flip: the one change after which the lower one is returned above
            the other (:func:`engine.lab.counterfactual.would_reorder_with`),
            or why there is none; ``None`` when not looked for (no order,
            or not asked).
    """

    chunk: ChunkAnatomy
    other: ChunkAnatomy
    decision: Decision
    flip: Counterfactual | None = field(default=None)

    def would_flip_with(self) -> dict[str, object] | None:
        """``{"param", "value", "layer", "positions": {"chunk", "vs"}}`` or ``None``."""
        cf = self.flip
        if cf is None or cf.change is None:
            return None
        finals = dict(cf.finals)
        return {
            "param": cf.change.param,
            "value": cf.change.value,
            "layer": cf.layer,
            "positions": {"chunk": finals.get(self.chunk.rowid), "vs": finals.get(self.other.rowid)},
        }

    def to_dict(self) -> dict[str, object]:
        """The ``vs`` object of ``rankscope explain --json``: the other
        chunk's :meth:`ChunkAnatomy.to_dict`, ``decided_by``,
        ``would_flip_with`` and ``counterfactual`` (the search's outcome,
        :meth:`engine.lab.counterfactual.Counterfactual.to_dict`, or null)."""
        out = self.other.to_dict()
        out["decided_by"] = self.decision.to_dict()
        out["would_flip_with"] = self.would_flip_with()
        out["counterfactual"] = None if self.flip is None else self.flip.to_dict()
        return out


def _order(a: int | None, b: int | None) -> bool | None:
    """True: the first is above; False: the second; None: neither holds a position."""
    if a is None and b is None:
        return None
    if b is None:
        return True
    if a is None:
        return False
    return a < b


def decide(run: Run, x: ChunkAnatomy, y: ChunkAnatomy) -> Decision:
    """What put ``x`` and ``y`` in their final order in ``run`` (the pass
    both anatomies read; see the module docstring)."""
    ids = run_stage_ids(run)
    prefix = run.prefix
    chain = [sid for sid in ids if stage(sid).kind != "retriever"]
    retrievers = [sid for sid in ids if stage(sid).kind == "retriever"]
    orders: list[bool | None] = []
    held: bool | None = None
    for sid in chain:
        now = _order(x.position(sid), y.position(sid))
        held = held if now is None else now
        orders.append(held)
    exits = (x.exit, y.exit)
    final = orders[-1] if orders else None
    if final is None:
        gone = any(e is not None for e in exits)
        return Decision(chain[0] if gone and chain else prefix + "retrieve", None, None, exits=exits)
    above, below = (x.rowid, y.rowid) if final else (y.rowid, x.rowid)
    s = len(orders) - 1
    while s > 0 and orders[s - 1] == final:
        s -= 1
    since = chain[s]
    agreeing: list[str] = []
    if s == 0:
        opinions = {r: _order(x.position(r), y.position(r)) for r in retrievers}
        if all(o is None or o == final for o in opinions.values()):
            agreeing = [r for r, o in opinions.items() if o == final]
            since = agreeing[0] if len(agreeing) == 1 else prefix + "retrieve"
    gone_above, gone_below = exits if final else exits[::-1]
    sid = since
    if gone_below is not None and (gone_above is None or depth(gone_above.stage) > depth(gone_below.stage)):
        sid = gone_below.stage  # the lower one left the pass first: the stage that removed it decides
    if sid == since and agreeing:
        diffs = tuple(_retriever_diff(x, y, base_id(r)) for r in agreeing)
        positions = (x.position(sid), y.position(sid)) if len(agreeing) == 1 else (None, None)
        return Decision(sid, above, below, since, positions, exits, retrievers=diffs)
    positions = (x.position(sid), y.position(sid))
    base = base_id(sid)
    if base == "fusion":
        k = getattr(run.record("fusion"), "rrf_k", None)
        fused = (_fused(run, x.rowid), _fused(run, y.rowid))
        return Decision(sid, above, below, since, positions, exits, fused=fused, rrf_k=k)
    if base == "rerank":
        entries = {e.candidate.rowid: e for e in getattr(run.record("rerank"), "entries", ())}
        return Decision(sid, above, below, since, positions, exits, rerank=(entries.get(x.rowid), entries.get(y.rowid)))
    return Decision(sid, above, below, since, positions, exits)


def _retriever_diff(x: ChunkAnatomy, y: ChunkAnatomy, name: str) -> RetrieverDiff:
    ax, ay = x.retriever(name), y.retriever(name)
    assert ax is not None and ay is not None
    other = {p.phrase: p for p in ay.phrases}
    phrases = [
        PhraseDiff(
            p.phrase,
            (p.part, other[p.phrase].part if p.phrase in other else 0.0),
            (p.weighted_tf, other[p.phrase].weighted_tf if p.phrase in other else 0.0),
        )
        for p in ax.phrases
    ]
    order = sorted(range(len(phrases)), key=lambda i: (-abs(phrases[i].difference), i))
    ranked_phrases = tuple(phrases[i] for i in order)
    return RetrieverDiff(name, (ax.rank, ay.rank), (ax.bm25, ay.bm25), ranked_phrases, (ax.row_tokens, ay.row_tokens))


def _fused(run: Run, rowid: int) -> FusedSide:
    """The fused key that holds ``rowid`` (its own, or the one it was merged into)."""
    for c in ranked(run, run.prefix + "fusion"):
        assert isinstance(c, Candidate)
        if c.rowid == rowid or rowid in c.merged_rowids:
            contributions = tuple((t.retriever, t.rank, t.rowid, t.value) for t in c.contributions)
            return FusedSide(c.score, contributions, c.rowid)
    return FusedSide(None)


def explain_versus(
    store: Store,
    trace: Trace,
    rowid: int,
    other: int,
    *,
    conn: sql.Connection | None = None,
    runs: RunCache | None = None,
    counterfactual: bool = True,
    stop: Callable[[], bool] | None = None,
) -> Versus:
    """Chunk ``rowid`` against chunk ``other`` in ``trace``: both anatomies,
    the :class:`Decision` and (``counterfactual``) the one change that
    would put the lower one above the other, found by re-running
    (:func:`engine.lab.counterfactual.would_reorder_with`, sharing ``runs``
    and ``stop``).

    Raises:
        ValueError: the two row ids are the same.
        ChunkNotFoundError: no chunk has one of the row ids.
        CorruptStoreError / StoreError: the store cannot be read.
    """
    if rowid == other:
        raise ValueError("--vs names the same chunk; name another one")
    x, y = explain_chunks(store, trace, [rowid, other], conn=conn)
    decision = decide(explained_run(trace), x, y)
    flip = None
    if counterfactual and decision.above is not None and decision.below is not None:
        flip = would_reorder_with(
            store,
            trace.params,
            above=decision.above,
            below=decision.below,
            trace=trace,
            runs=runs,
            conn=conn,
            stop=stop,
        )
    return Versus(x, y, decision, flip)
