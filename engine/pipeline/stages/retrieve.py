"""The two FTS5 retrievers (reference ``search`` and ``searchTrigram`` in OR mode).

Each runs ``MATCH`` with its sanitised query, joined to ``sources`` for the
label, ordered by ``bm25(table, 5.0, 1.0)`` ascending (title weight 5,
content weight 1; FTS5 ranks are negative), limited to the candidate count,
and returns ``highlight(table, 1, char(2), char(3))`` of the content. FTS5
itself orders the matches (:func:`build_sql`), so only the rows returned are
joined and highlighted; a content longer than
:data:`engine.pipeline.marks.SQL_MAX_BYTES` is highlighted only when a view
shows it (:class:`engine.pipeline.marks.Marks`: FTS5's own highlight costs
time quadratic in such a row's matches). Optional filters run in SQL:
source label (``LIKE '%label%'`` with ``\\``, ``%`` and ``_`` escaped,
``ESCAPE '\\'``; or ``=`` in exact mode) and content type. All values are
bound parameters.

As stages: :data:`PORTER` and :data:`TRIGRAM`, a pass's parallel entries,
and :data:`RETRIEVE`, the two together, where a chunk neither returns is
said to have left (why-not finds which of its codes applies, looking
beyond the trace: uncapped runs, the filters). :func:`retrieve_pair` runs
both for one pass: runs of the same store data version come from the run
cache, and the two statements run at once on two connections that see the
same snapshot (SQLite releases the GIL while it works), each timed on its own.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any, Protocol

from engine.js.strings import js_to_lower
from engine.pipeline import marks
from engine.pipeline.candidates import ChunkRef, Exit, Hit
from engine.pipeline.hooks import Asking, Explanation, Items, PassContext, PassView, Reason, RecordStage, Records, Stage
from engine.pipeline.params import SearchParams
from engine.pipeline.query import porter_words, sanitize_porter, sanitize_trigram, trigram_words
from engine.pipeline.stages import bm25, kept, topk
from engine.pipeline.words import abbreviate, plural
from engine.store import sql
from engine.store.clock import elapsed_ms
from engine.store.errors import is_corruption
from engine.store.indexing import vocabulary_words
from engine.store.schema import SchemaInfo
from engine.store.store import Store

if TYPE_CHECKING:
    from engine.store.cache import VersionedLRU

TABLES = {"porter": "chunks", "trigram": "chunks_trigram"}
#: The retriever ids, in fusion's order (Porter first).
RETRIEVERS = tuple(TABLES)


@dataclass(frozen=True)
class RetrieverRun:
    """One retriever's ranked run (the record of the ``porter`` and ``trigram`` stages).

    Attributes:
        name: ``"porter"`` or ``"trigram"``.
        query: the sanitised MATCH string (``""`` for a skipped run).
        fts_limit: the ``LIMIT`` used.
        hits: rows in SQL order (bm25 ascending).
        skipped: why the retriever did not run, or ``None``.
        error: an SQLite error message (the run is then empty), or ``None``.
        elapsed_ms: time spent in SQL (for a cached run: in the cache lookup).
        cached: served from the store's run cache (:mod:`engine.pipeline.runcache`).
        ranked_by: ``"fts5"`` (FTS5 scored every match) or ``"top-k"``
            (:mod:`engine.pipeline.stages.topk`; same rows, order and bm25 bits).
        ranking: facts of that choice, ``((name, value), ...)``: for ``top-k``
            ``phrase_rows`` (rows per phrase, query order), ``ranked_phrases``
            (0-based indexes of the phrases FTS5 ranked), ``rows_read`` and
            ``texts_tokenized``; for ``fts5`` after a declined attempt,
            ``declined`` (a :class:`~engine.pipeline.stages.topk.Declined` code),
            ``halves`` and ``half_helped`` when it ran in two halves; with
            filters, ``kept_rows`` when FTS5 ranked only the rows they keep
            (how many); else empty.
    """

    name: str
    query: str
    fts_limit: int
    hits: tuple[Hit, ...]
    skipped: str | None = None
    error: str | None = None
    elapsed_ms: float = 0.0
    cached: bool = False
    ranked_by: str = "fts5"
    ranking: tuple[tuple[str, object], ...] = ()

    def ranking_fact(self, name: str, default: object = None) -> object:
        """The value of fact ``name`` in :attr:`ranking`, or ``default``."""
        return next((v for k, v in self.ranking if k == name), default)


@dataclass(frozen=True)
class Request:
    """One retriever run asked for: the retriever, the raw query, the row
    count and the SQL filters (everything a run depends on)."""

    retriever: str
    query: str
    fts_limit: int
    source: str | None = None
    source_match: str = "like"
    content_type: str | None = None

    @classmethod
    def of(cls, retriever: str, query: str, fts_limit: int, params: SearchParams) -> Request:
        """The run of ``retriever`` for ``query`` under ``params``' filters."""
        return cls(retriever, query, fts_limit, params.source, params.source_match, params.content_type)

    @cached_property
    def match(self) -> str:
        """The sanitised MATCH string (Porter or trigram rules; ``""``: nothing to run).
        Computed once per request (the run cache asks for it on every lookup)."""
        return sanitize_porter(self.query, "OR") if self.retriever == "porter" else sanitize_trigram(self.query, "OR")

    @cached_property
    def key(self) -> tuple[str, str, str | None, str | None, str | None]:
        """What the run depends on besides its row count (the match mode only with a source filter)."""
        src = self.source or None
        return (self.retriever, self.match, src, self.source_match if src else None, self.content_type or None)

    def at(self, fts_limit: int) -> Request:
        """The same run at another row count."""
        return replace(self, fts_limit=fts_limit)


def is_query_error(exc: BaseException) -> bool:
    """True for an error of the query itself (an FTS5 syntax error, SQLite's
    generic ``SQLITE_ERROR``), which a run records; False for a store that
    cannot be read (damaged, locked, I/O), which is raised."""
    if is_corruption(exc):
        return False
    code = sql.primary_code(exc)
    return code is None or code == 1


def _shadow_missing(conn: sql.Connection, table: str) -> bool:
    """True when one of FTS5's shadow tables of ``table`` is missing: the
    damage is then this retriever's alone (the other one still answers, and
    the run records the error; ``rankscope doctor`` reports it). SQLite 3.54
    reports a missing shadow table as ``SQLITE_CORRUPT`` (3.40 said ``SQL
    logic error``), so the code alone no longer tells it from damaged pages."""
    from engine.store.schema import FTS_SHADOWS

    try:
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sql.Error:
        return False
    return table in names and any(f"{table}_{x}" not in names for x in FTS_SHADOWS)


def like_pattern(source: str) -> str:
    """``%source%`` with LIKE metacharacters escaped (backslash first)."""
    escaped = source.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def source_condition(source_match: str) -> str:
    """The source filter's SQL test on ``sources.label`` (one ``?``: the
    label, or :func:`like_pattern` of it unless ``source_match`` is ``exact``)."""
    return "sources.label = ?" if source_match == "exact" else "sources.label LIKE ? ESCAPE '\\'"


def build_sql(
    retriever: str,
    schema: SchemaInfo,
    source: str | None,
    source_match: str,
    content_type: str | None,
    *,
    reference: bool = False,
    highlight_max: int | None = None,
    rowids: str | None = None,
    bounded: bool = True,
    kept: bool = False,
) -> tuple[str, list[str]]:
    """SQL for one retriever and the names of its parameters in order.

    ``reference=True`` gives the reference's own statement: ``bm25(t, 5.0,
    1.0) AS rank ... ORDER BY rank`` sorts every matching row in SQLite's
    sorter, so each one is joined to ``sources`` and carries its title,
    content and ``highlight()`` into the sort. rankscope's statements rank
    the same rows in the same order with the same values (ties in rowid
    order in all three), faster:

    - **Bounded** (``bounded``, no filter): SQLite keeps the best ``LIMIT`` ``(bm25, rowid)``
      pairs of the matches in a bounded sort (``ORDER BY bm25(...), rowid
      LIMIT ?`` in a materialised ``WITH``: one bm25 per match, nothing else
      carried), and only those rows are read, joined and highlighted. A row
      whose source is missing comes back with a ``NULL`` label (``LEFT
      JOIN``): the reference's inner join drops it and takes the next match,
      so :func:`retrieve` then runs the other form, which does the same.
      :func:`retrieve` uses it for many matches (:data:`BOUNDED_MIN_MATCHES`).
    - **Kept** (``kept``, with filters): the same bounded sort over the matches
      whose rowid is in the JSON array ``kept`` (the rows the filters keep,
      :mod:`engine.pipeline.stages.kept`), so bm25 runs for those alone;
      the filters themselves are not repeated.
    - **Otherwise** (a source or content-type filter, or few matches) FTS5 ranks every match with
      the same function (``t.rank MATCH 'bm25(5.0, 1.0)'``, ``ORDER BY
      t.rank``) and SQLite joins, filters and highlights rows in that order
      only until ``LIMIT`` rows passed (testing a filter inside the bounded
      sort reads every match's row: no faster).

    ``highlight_max`` (bytes) leaves ``highlighted`` ``NULL`` for a content
    longer than that (:mod:`engine.pipeline.marks` highlights it when shown).
    ``rowids`` (``"<="`` or ``">"``, rankscope's statements only) ranks the
    matches on that side of a rowid (parameter ``mid``) alone: one half of
    :func:`_in_halves`.

    Returns:
        ``(sql, param_names)`` where names are drawn from ``match``,
        ``source``, ``content_type``, ``kept``, ``mid``, ``limit``.

    Raises:
        ValueError: unknown retriever name, or ``rowids`` with ``reference``.
    """
    if retriever not in TABLES:
        raise ValueError(f"retriever must be 'porter' or 'trigram'; got {retriever!r}")
    if rowids not in (None, "<=", ">") or (rowids and reference):
        raise ValueError(f"rowids must be '<=' or '>' on rankscope's statement; got {rowids!r}")
    t = TABLES[retriever]
    session = schema.session_column(t)
    x = sql.text
    marked = x(f"highlight({t}, 1, char(2), char(3))")
    if highlight_max is not None:
        marked = f"CASE WHEN length({x(t + '.content')}) > {int(highlight_max)} THEN NULL ELSE {marked} END"
    columns = (
        f"{t}.rowid, {x(t + '.title')}, {x(t + '.content')}, {t}.content_type, {x('sources.label')}, "
        "{rank} AS rank, " + f"{marked} AS highlighted, {x(session)}"
    )
    half = [f"{t}.rowid {rowids} ?"] if rowids else []
    if not reference and (kept or (bounded and not source and not content_type)):
        keep = [f"+{t}.rowid IN (SELECT value FROM json_each(?))"] if kept else []
        best = " AND ".join([f"{t} MATCH ?", *keep, *half])
        statement = (
            f"WITH best AS MATERIALIZED (SELECT {t}.rowid AS id, bm25({t}, 5.0, 1.0) AS score FROM {t} "
            f"WHERE {best} ORDER BY score, {t}.rowid LIMIT ?) "
            f"SELECT {columns.format(rank='best.score')} "
            f"FROM best JOIN {t} ON {t}.rowid = best.id LEFT JOIN sources ON sources.id = {t}.source_id "
            f"WHERE {t} MATCH ? ORDER BY best.score, best.id"
        )
        return statement, ["match", *(["kept"] if kept else []), *(["mid"] if rowids else []), "limit", "match"]
    where = [f"{t} MATCH ?"] if reference else [f"{t} MATCH ?", f"{t}.rank MATCH 'bm25(5.0, 1.0)'"]
    names = ["match"]
    if source:
        where.append(source_condition(source_match))
        names.append("source")
    if content_type:
        where.append(f"{t}.content_type = ?")
        names.append("content_type")
    where += half
    names += ["mid"] if rowids else []
    names.append("limit")
    rank, order = (f"bm25({t}, 5.0, 1.0)", "rank") if reference else (f"{t}.rank", f"{t}.rank")
    statement = (
        f"SELECT {columns.format(rank=rank)} "
        f"FROM {t} JOIN sources ON sources.id = {t}.source_id "
        f"WHERE {' AND '.join(where)} ORDER BY {order} LIMIT ?"
    )
    return statement, names


def retrieve(
    conn: sql.Connection,
    schema: SchemaInfo,
    request: Request,
    *,
    share: HalfShare | None = None,
    phrase_rows: VersionedLRU[int] | None = None,
    kept_rows: VersionedLRU[object] | None = None,
) -> RetrieverRun:
    """Run one retriever as ``request`` asks.

    Without filters, on a large table, :func:`engine.pipeline.stages.topk.top_k` ranks first
    (``ranked_by="top-k"``); when it declines, FTS5's own statement runs
    (``ranking`` then holds the code), in two halves at once
    (:func:`_in_halves`) when it ranks many matches and ``beside`` (e.g.
    :meth:`~engine.store.store.Store.parallel_reader`) gives a second connection
    on ``conn``'s snapshot. With filters, on a large table, FTS5 ranks only
    the rows they keep when ``kept_rows`` (:attr:`~engine.store.store.Store.kept_rows`)
    holds or builds them (:mod:`engine.pipeline.stages.kept`; ``ranking``
    then holds ``kept_rows``, their count); a filtered run that goes the
    reference's way notes its time there. The rows are the same every way.

    The query is sanitised here (Porter or trigram rules). An empty trigram
    query skips the run. An SQLite error of the query (which sanitising
    should make impossible) is caught and recorded in ``error``; the run is
    then empty.

    Returns:
        A :class:`RetrieverRun` with 1-based ranks.

    Raises:
        engine.store.sql.Error: the store itself cannot be read (damaged
            pages, locked, I/O error): see :func:`is_query_error`.
    """
    retriever, fts_limit, source, content_type = (
        request.retriever,
        request.fts_limit,
        request.source,
        request.content_type,
    )
    source_match = request.source_match
    sanitized = request.match
    if not sanitized:
        return RetrieverRun(retriever, "", fts_limit, (), skipped="query has no word of 3+ characters")
    start = time.perf_counter()
    ranking: tuple[tuple[str, object], ...] = ()
    matches = 0  # phrase matches counted, when every phrase is one token
    ranked_match = sanitized  # the MATCH the statement runs
    many = False  # many matches (counted, or a large table): the bounded sort
    if not source and not content_type and fts_limit > 0:
        try:
            return _retrieve_top_k(conn, schema, retriever, sanitized, fts_limit, start, phrase_rows)
        except topk.Declined as declined:
            ranking = (("declined", declined.code),)
            counted = sum(declined.phrase_rows)
            many = counted >= BOUNDED_MIN_MATCHES or declined.large
            ranked_match = without_unmatched(sanitized, declined.phrase_rows)
            if declined.phrase_sizes and max(declined.phrase_sizes) <= 1:
                matches = counted  # one-token phrases: an idf pass costs little
        except sql.Error as exc:
            if not is_query_error(exc):
                raise
            ranking = (("declined", "error"),)  # FTS5's own statement below records the error
    spec = _highlight_spec(conn, TABLES[retriever])
    values: dict[str, object] = {
        "match": ranked_match,
        "source": source if source_match == "exact" else like_pattern(source or ""),
        "content_type": content_type,
        "limit": fts_limit,
    }
    held = _kept(conn, request, values["source"], kept_rows) if (source or content_type) and fts_limit > 0 else None
    if held is not None:
        values["kept"] = held.json
        ranking += (("kept_rows", held.rows),)

    def ranked(bounded: bool, use_kept: bool = held is not None) -> list[Any]:
        def statement(rowids: str | None) -> tuple[str, list[str]]:
            highlight_max = marks.SQL_MAX_BYTES if spec else None
            return build_sql(
                retriever,
                schema,
                source,
                source_match,
                content_type,
                highlight_max=highlight_max,
                rowids=rowids,
                bounded=bounded,
                kept=use_kept,
            )

        nonlocal ranking
        if share is not None and matches >= SPLIT_MIN_MATCHES:
            rows, helped = _in_halves(conn, share, retriever, statement, values, fts_limit)
            if helped is not None:
                ranking += (("halves", 2), ("half_helped", helped))
            return rows
        text, names = statement(None)
        return conn.execute(text, [values[n] for n in names]).fetchall()

    try:
        rows = ranked(many)
        if any(r[4] is None for r in rows):  # a match without its source row: the reference skips it
            rows = ranked(False, False)
        if (source or content_type) and held is None:
            kept.spend(conn, TABLES[retriever], elapsed_ms(start), kept_rows)
    except sql.Error as exc:
        if not is_query_error(exc) and not _shadow_missing(conn, TABLES[retriever]):
            raise  # a damaged or unreadable store: search() names it (CorruptStoreError / StoreError)
        return RetrieverRun(
            retriever,
            sanitized,
            fts_limit,
            (),
            error=f"{type(exc).__name__}: {exc}",
            elapsed_ms=elapsed_ms(start),
        )
    dec = sql.decode

    def marked(r: tuple[Any, ...]) -> str | marks.Marks:
        if r[6] is not None:
            return dec(r[6]) or ""
        if spec and r[2] is not None and len(r[2]) > marks.SQL_MAX_BYTES:
            return _long_marks(conn, retriever, sanitized, int(r[0]), spec, bytes(r[2]))
        return ""

    hits = tuple(
        Hit(
            rank=i + 1,
            rowid=int(r[0]),
            source=dec(r[4]),
            title=dec(r[1]) if r[1] is not None else "",
            content=dec(r[2]) if r[2] is not None else "",
            content_type=r[3] if r[3] is not None else "prose",
            session_id=dec(r[7]) if r[7] is not None else "",
            bm25=float(r[5]),
            marked=marked(r),
        )
        for i, r in enumerate(rows)
    )
    return RetrieverRun(retriever, sanitized, fts_limit, hits, elapsed_ms=elapsed_ms(start), ranking=ranking)


def _kept(
    conn: sql.Connection, request: Request, label: object, cache: VersionedLRU[object] | None
) -> kept.Kept | None:
    """The rows ``request``'s filters keep (``label``: the source parameter
    as bound), when its table's :class:`~engine.pipeline.stages.kept.KeptRows`
    are held or built now; else ``None``, also when reading fails (the
    reference's statement then meets the failure and says it as it does)."""
    table = TABLES[request.retriever]
    if cache is None:
        return None
    try:
        rows = kept.kept_rows(conn, table, bm25.table_totals(conn, table)[0], cache)
        if rows is None:
            return None
        source_ids = None
        if request.source:
            found = conn.execute(f"SELECT id FROM sources WHERE {source_condition(request.source_match)}", (label,))
            source_ids = [r[0] for r in found]
        return rows.kept(source_ids, request.content_type or None)
    except (bm25.Unsupported, sql.Error):
        return None


def without_unmatched(match: str, phrase_rows: tuple[int, ...]) -> str:
    """``match`` (an OR of quoted phrases) without the phrases that match no
    row, given each phrase's row count (``phrase_rows``, query order, as a
    declined :func:`engine.pipeline.stages.topk.top_k` counted them).

    Such a phrase adds ``+0.0`` to every row's bm25 sum (its frequency is 0)
    and marks nothing in ``highlight()``, so FTS5 returns the same rows, bits
    and highlights without it; with it, FTS5 still walks its tokens' doclists
    to find that it never occurs (a trigram typo: six frequent trigrams).
    ``match`` itself is returned when nothing was counted, every phrase
    matches, or none does.
    """
    texts = bm25.phrases_of(match)
    if texts is None or len(texts) != len(phrase_rows) or all(phrase_rows) or not any(phrase_rows):
        return match
    return " OR ".join(bm25.match_phrase(t) for t, n in zip(texts, phrase_rows) if n)


def _long_marks(
    conn: sql.Connection, retriever: str, match: str, rowid: int, spec: tuple[str, ...], content: bytes
) -> str | marks.Marks:
    """The highlight of a content over :data:`engine.pipeline.marks.SQL_MAX_BYTES`:
    a :class:`~engine.pipeline.marks.Marks` for an OR of quoted phrases (what
    the sanitisers write), else FTS5's own, now."""
    phrases = bm25.phrases_of(match)
    if phrases is not None:
        return marks.Marks(spec, content, tuple(phrases))
    t = TABLES[retriever]
    row = conn.execute(
        f"SELECT {sql.text(f'highlight({t}, 1, char(2), char(3))')} FROM {t} WHERE {t} MATCH ? AND rowid = ?",
        (match, rowid),
    ).fetchone()
    return (sql.decode(row[0]) or "") if row is not None else ""


def _highlight_spec(conn: sql.Connection, table: str) -> tuple[str, ...] | None:
    """The table's tokenizer when :class:`engine.pipeline.marks.Marks` can
    highlight its long contents exactly (a tokenizer that loads on a
    private connection, no FTS5 option that changes matching); else
    ``None``: FTS5 highlights every row. Cached per connection and table."""
    cache = conn.__dict__.setdefault("_rankscope_highlight_specs", {})
    if table in cache:
        found: tuple[str, ...] | None = cache[table]
        return found
    try:
        spec: tuple[str, ...] | None = bm25.tokenizer_spec(conn, table)
    except bm25.Unsupported:
        spec = None
    except sql.Error as exc:
        if not is_query_error(exc):
            raise
        return None
    if spec is not None and not marks.loadable(spec):
        spec = None
    cache[table] = spec
    return spec


#: :func:`build_sql`'s bounded sort ranks a query without filters when a
#: declined :func:`engine.pipeline.stages.topk.top_k` counted at least this
#: many phrase matches, or declined one phrase uncounted on a large table
#: (:data:`engine.pipeline.stages.topk.UNCOUNTED_ROWS`: even a rare trigram
#: word ranked faster that way at 1,000,152 chunks, ``provenance`` 35 → 18
#: ms); fewer (or none counted: a small table) and FTS5 ranks them itself. Its fixed price is the second ``MATCH`` that reads and
#: highlights the ``LIMIT`` rows (a trigram phrase is matched again per row).
#: Measured statement by statement on npm's docs at 14,370 chunks (light
#: set, median of 7): below about 1,900 matches FTS5's own ranking was the
#: faster (``repository``, trigram, 290 matches: 0.88 against 2.60 ms),
#: above it the bounded sort (``npm cache``, trigram, 11,020: 12.8 → 4.9
#: ms; ``config`` at 1,000,152 chunks, 672,336: 558 → 388 ms).
BOUNDED_MIN_MATCHES = 2_000


#: An FTS5 ranking of at least this many phrase matches in all (counted by
#: a declined :func:`engine.pipeline.stages.topk.top_k`), every phrase one token, runs in two
#: halves of the rowid range, one offered to the other retriever's thread
#: (:func:`_in_halves`). Each half repeats bm25's idf pass over every
#: phrase's rows: cheap for one-token phrases (a doclist read, 3 ms for
#: 76,000 rows), a phrase match over the whole table for longer ones (a
#: trigram word), which is why those run whole.
SPLIT_MIN_MATCHES = 30_000


class _Half:
    """One half of a split FTS5 ranking: a statement that either the
    retriever that split it or a helper runs, exactly once."""

    def __init__(self, work: Callable[[sql.Connection], list[Any]]) -> None:
        self.work = work
        self._lock = threading.Lock()
        self._taken = False
        self.done = threading.Event()
        self.rows: list[Any] = []
        self.error: BaseException | None = None

    def claim(self) -> bool:
        """True for the first caller only: it must then :meth:`run` it."""
        with self._lock:
            if self._taken:
                return False
            self._taken = True
            return True

    def run(self, conn: sql.Connection) -> None:
        try:
            self.rows = self.work(conn)
        except BaseException as exc:  # handed to the retriever that split it
            self.error = exc
        finally:
            self.done.set()


class HalfShare:
    """Halves of FTS5 rankings that the two retrievers of one pass offer each
    other (:func:`retrieve_pair`): a thread whose own run is done runs the
    other's offered half on its own connection, which reads the same
    snapshot, instead of sitting idle."""

    def __init__(self) -> None:
        self._cv = threading.Condition()
        self._offered: list[_Half] = []
        self._closed = False
        self._helping = 0  # helpers between taking a half and finishing it

    def offer(self, half: _Half) -> None:
        with self._cv:
            self._offered.append(half)
            self._cv.notify_all()

    def wake(self) -> None:
        """Tell a helper waiting in :meth:`help_until` to look again."""
        with self._cv:
            self._cv.notify_all()

    def help_until(self, conn: sql.Connection, finished: Callable[[], bool]) -> None:
        """Run offered halves on ``conn`` until ``finished()`` (checked after
        each half and on every :meth:`wake`) or :meth:`close`."""
        while True:
            with self._cv:
                while not self._offered and not self._closed and not finished():
                    self._cv.wait(0.05)
                if self._closed or not self._offered:
                    return
                half = self._offered.pop()
                self._helping += 1
            try:
                if half.claim():
                    half.run(conn)
            finally:
                with self._cv:
                    self._helping -= 1
                    self._cv.notify_all()

    def close(self) -> None:
        """End the sharing: once this returns no helper runs a half (it
        waits for one a helper is running), and :meth:`help_until` returns
        without touching its connection again, so that connection may go
        back to the store while the helper's thread is still waking."""
        with self._cv:
            self._closed = True
            self._cv.notify_all()
            while self._helping:
                self._cv.wait()


def _in_halves(
    conn: sql.Connection,
    share: HalfShare,
    retriever: str,
    statement: Callable[[str | None], tuple[str, list[str]]],
    values: Mapping[str, object],
    limit: int,
) -> tuple[list[Any], bool | None]:
    """The rows of ``statement(None)`` (:func:`build_sql`'s, with its
    parameters named in ``values``, ``limit`` its ``LIMIT``) ranked as two statements over the lower
    and upper halves of the rowid range (``statement("<=")`` and
    ``statement(">")``), merged by ``(rank, rowid)``. The lower half is
    offered on ``share``; this thread runs the upper one, then the lower one
    too unless a helper took it (then it waits for the helper's rows).

    FTS5 computes bm25's idf and average length over the whole table
    whatever the rowid range (``xQueryPhrase``, ``xRowCount``), so each row
    keeps its bm25 bits, and ties go in rowid order: the first ``LIMIT``
    rows of the merge are the whole statement's. Each half computes the idf
    again (one more pass over each phrase's rows): the price of letting a
    second core rank.

    Returns:
        ``(rows, helped)``: ``helped`` says whether a helper ran the lower
        half; ``None`` when the statement ran whole (a table of one rowid).

    Raises:
        engine.store.sql.Error: as :func:`retrieve` (from either half).
    """
    t = TABLES[retriever]
    ends = conn.execute(
        f"SELECT (SELECT rowid FROM {t} ORDER BY rowid LIMIT 1), (SELECT rowid FROM {t} ORDER BY rowid DESC LIMIT 1)"
    ).fetchone()
    if ends[0] is None or ends[0] == ends[1]:
        text, names = statement(None)
        return conn.execute(text, [values[n] for n in names]).fetchall(), None
    bound = {**values, "mid": (int(ends[0]) + int(ends[1])) // 2}
    (low, low_names), (high, high_names) = statement("<="), statement(">")
    lower = _Half(lambda c: c.execute(low, [bound[n] for n in low_names]).fetchall())
    share.offer(lower)
    try:
        upper = conn.execute(high, [bound[n] for n in high_names]).fetchall()
    finally:
        helped = not lower.claim()
        if not helped:
            lower.run(conn)
        lower.done.wait()
    if lower.error is not None:
        raise lower.error
    merged = sorted(lower.rows + upper, key=lambda r: (r[5], r[0]))
    return merged[:limit], helped


def _retrieve_top_k(
    conn: sql.Connection,
    schema: SchemaInfo,
    retriever: str,
    sanitized: str,
    fts_limit: int,
    start: float,
    phrase_rows: VersionedLRU[int] | None = None,
) -> RetrieverRun:
    """The run through :func:`engine.pipeline.stages.topk.top_k` (no filters): its rows, with
    the columns :func:`build_sql`'s statement selects read by rowid.

    Raises:
        engine.pipeline.stages.topk.Declined: top-k cannot answer exactly; run FTS5's ranking.
        engine.store.sql.Error: as :func:`retrieve`.
    """
    t = TABLES[retriever]
    outcome = topk.top_k(conn, t, sanitized, fts_limit, counts=phrase_rows)
    x = sql.text
    session = schema.session_column(t)
    wanted = [r.rowid for r in outcome.rows]
    details = {
        int(r[0]): r
        for r in conn.execute(
            f"SELECT {t}.rowid, {x(t + '.title')}, {x(t + '.content')}, {t}.content_type, {x('sources.label')}, "
            f"{x(session)} FROM {t} JOIN sources ON sources.id = {t}.source_id "
            f"WHERE {t}.rowid IN ({','.join('?' * len(wanted))})",
            wanted,
        )
    }
    if len(details) != len(wanted):
        raise topk.Declined("no-source")  # a row whose source is gone: the join drops it, FTS5's order decides
    dec = sql.decode
    hits = []
    for i, row in enumerate(outcome.rows):
        r = details[row.rowid]
        hits.append(
            Hit(
                rank=i + 1,
                rowid=row.rowid,
                source=dec(r[4]),
                title=dec(r[1]) if r[1] is not None else "",
                content=dec(r[2]) if r[2] is not None else "",
                content_type=r[3] if r[3] is not None else "prose",
                session_id=dec(r[5]) if r[5] is not None else "",
                bm25=row.bm25,
                marked=row.marks if r[2] is not None else "",
            )
        )
    facts: tuple[tuple[str, object], ...] = (
        ("phrase_rows", tuple(outcome.phrases)),
        ("ranked_phrases", tuple(outcome.rare)),
        ("rows_read", outcome.walked),
        ("texts_tokenized", outcome.tokenized),
    )
    return RetrieverRun(
        retriever, sanitized, fts_limit, tuple(hits), elapsed_ms=elapsed_ms(start), ranked_by="top-k", ranking=facts
    )


def fts_limit_for(params: SearchParams, pool_size: int) -> int:
    """Rows per retriever: ``max(2 * pool_size, 10)`` (or the variant's override)."""
    v = params.variant
    return v.fts_limit if v.fts_limit is not None else max(pool_size * 2, 10)


# ─── as stages ───────────────────────────────────────────────────────────


def runs_retriever(params: SearchParams, name: str) -> bool:
    """True when the variant runs retriever ``name`` (``retrievers`` is
    ``both`` or that name); a retriever it leaves out gives a skipped run."""
    return params.variant.retrievers in ("both", name)


def _step(name: str) -> Callable[[PassContext, Items], RetrieverRun]:
    def step(ctx: PassContext, items: Items) -> RetrieverRun:
        """The run :func:`retrieve_pair` made for this pass, or a skipped
        run when the variant leaves the retriever out."""
        p = ctx.params
        if not runs_retriever(p, name):
            return RetrieverRun(name, "", ctx.fts_limit, (), skipped=f"variant: {p.variant.retrievers} retriever only")
        run = ctx.ahead.get(name)
        if not isinstance(run, RetrieverRun):
            raise LookupError(f"no {name} run was fetched for this pass")
        return run

    return step


def _ranked(run: RetrieverRun) -> Items:
    return run.hits


def _headline(run: RetrieverRun, params: SearchParams) -> str:
    """``12 hits for "cache" (limit 20) with source LIKE '%docs%'``, or why it was skipped / failed."""
    if run.skipped:
        return f"skipped: {run.skipped}"
    if run.error:
        return f"error: {run.error}"
    head = f"{plural(len(run.hits), 'hit')} for {abbreviate(run.query)} (limit {run.fts_limit})"
    if params.filter_text:
        head += f" with {params.filter_text}"
    if run.ranked_by == "top-k":
        rows = run.ranking_fact("phrase_rows", ())
        read = run.ranking_fact("rows_read", 0)
        assert isinstance(rows, tuple) and isinstance(read, int)
        head += f"; exact top-k read {read:,} of {sum(rows):,} phrase matches"
    elif run.ranking_fact("kept_rows") is not None:
        head += f"; FTS5 ranked only the {run.ranking_fact('kept_rows'):,} rows the filters keep"
    elif run.ranking_fact("halves"):
        how = "one on the other retriever's thread" if run.ranking_fact("half_helped") else "one after the other"
        head += f"; FTS5 ranked it in {run.ranking_fact('halves')} rowid ranges, {how}"
    return head


def _retriever(name: str, title: str, about: tuple[str, str], compact: str) -> RecordStage[RetrieverRun]:
    return RecordStage(
        id=name,
        title=title,
        compact=compact,
        about=about,
        scope="pass",
        kind="retriever",
        record=RetrieverRun,
        step=_step(name),
        ranked=_ranked,
        headline=_headline,
        note=lambda run, pos: f"rank {pos}",
    )


PORTER = _retriever(
    "porter",
    "Porter",
    (
        "FTS5 with the Porter stemmer: words are reduced to stems (install, installing → instal).",
        "Ranked by bm25 with the title weighted 5x; fetches max(2 × pool, 10) rows.",
    ),
    "Por",
)
TRIGRAM = _retriever(
    "trigram",
    "Trigram",
    (
        "FTS5 over 3-character slices: finds substrings (CacheMiss inside onCacheMiss) and CJK.",
        "Same ranking and row count; words under 3 characters are skipped.",
    ),
    "Tri",
)
_BY_NAME = {"porter": PORTER, "trigram": TRIGRAM}


def runs_of(run: Records) -> tuple[RetrieverRun, ...]:
    """The retriever runs of a pass, Porter first."""
    return tuple(PORTER.get(run) if name == "porter" else TRIGRAM.get(run) for name in RETRIEVERS)


def _to_json(run: Records) -> dict[str, object]:
    """``porter_query``, ``trigram_query``, ``porter`` / ``trigram`` [{rank,
    rowid, source, title, bm25, content_type, session_id}],
    ``retriever_errors`` {retriever: message}, ``ranking`` {retriever: {by, ...facts}}."""
    runs = runs_of(run)
    out: dict[str, object] = {f"{r.name}_query": r.query for r in runs}
    for r in runs:
        out[r.name] = [
            {
                "rank": h.rank,
                "rowid": h.rowid,
                "source": h.source,
                "title": h.title,
                "bm25": h.bm25,
                "content_type": h.content_type,
                "session_id": h.session_id,
            }
            for h in r.hits
        ]
    out["retriever_errors"] = {r.name: r.error for r in runs if r.error}
    out["ranking"] = {
        r.name: {"by": r.ranked_by, **{k: list(v) if isinstance(v, tuple) else v for k, v in r.ranking}}
        for r in runs
        if not r.skipped
    }
    return out


# ─── why-not: a chunk no retriever returned ──────────────────────────────

#: Distinctive words shown for a ``no-term`` chunk.
DISTINCTIVE_WORDS = 8
#: At most this many of a chunk's words are checked for document frequency.
_DF_SCAN = 60


def distinctive_words(
    store: Store, chunk: ChunkRef, n: int = DISTINCTIVE_WORDS, conn: sql.Connection | None = None
) -> list[str]:
    """Up to ``n`` words that characterise ``chunk``: its vocabulary words
    (lower-cased, 3+ characters, no stopwords; title first), ordered by how
    few chunks contain them (Porter document frequency), then by how often
    the chunk uses them, then by first occurrence."""
    c = conn or store.conn
    words = vocabulary_words(chunk.title + "\n" + chunk.content)[:_DF_SCAN]
    lower = js_to_lower(chunk.title + "\n" + chunk.content)
    scored = []
    for i, w in enumerate(words):
        try:
            df = c.execute(
                "SELECT COUNT(*) FROM chunks WHERE chunks MATCH ?", ('"' + w.replace('"', "") + '"',)
            ).fetchone()[0]
        except sql.Error as exc:
            if is_corruption(exc):
                raise
            continue
        if df == 0:
            continue
        scored.append((df, -lower.count(w), i, w))
    scored.sort()
    return [w for *_, w in scored[:n]]


def full_ranks_words(full: dict[str, dict[str, object] | None], names: tuple[str, ...] | list[str]) -> str:
    """``Porter: bm25 rank 12 of 40 (bm25 -1.2345); Trigram: no match`` for ``names``."""

    def one(name: str) -> str:
        label, info = _BY_NAME[name].title, full[name]
        if info is None:
            return f"{label}: no match"
        if "skipped" in info:
            return f"{label}: skipped ({info['skipped']})"
        bm25 = info["bm25"]
        assert isinstance(bm25, float)
        return f"{label}: bm25 rank {info['rank']} of {info['matches']} (bm25 {bm25:.4f})"

    return "; ".join(one(n) for n in names)


def _fts_words(ask: Asking) -> str:
    if ask.params.variant.fts_limit is not None:
        return f"fts_limit {ask.fts_limit}, set by the variant"
    return f"fts_limit {ask.fts_limit} = max(2 × pool size {ask.pool_size}, 10)"


def _source_excluded(ask: Asking, chunk: ChunkRef) -> bool:
    p = ask.params
    if not p.source:
        return False
    if p.source_match == "exact":
        return chunk.source != p.source
    row = ask.conn.execute("SELECT ? LIKE ? ESCAPE '\\'", (chunk.source, like_pattern(p.source))).fetchone()
    return not row[0]


def _rank(info: dict[str, object] | None) -> int | None:
    rank = info.get("rank") if info else None
    return rank if isinstance(rank, int) else None


def _absent_in(ask: Asking, chunk: ChunkRef, run: PassView) -> Explanation:
    """Why no retriever of ``run`` returned ``chunk``: beyond the rows fetched,
    only a skipped retriever matches it, or no query term is indexed in it."""
    params, which, at = ask.params, run.pass_name, run.prefix + "retrieve"
    full = ask.full_ranks(run.query, chunk.rowid)
    ran = [name for name in RETRIEVERS if runs_retriever(params, name)]
    details: dict[str, object] = {"query": run.query, "full_ranks": full, "fts_limit": ask.fts_limit}
    ranks = [r for r in (_rank(full[n]) for n in ran) if r is not None]
    if ranks:
        details["rank"] = min(ranks)
        return Explanation(
            chunk,
            at,
            "beyond-fts-limit",
            f"It matches the query but sits beyond the candidates each retriever fetches "
            f"({_fts_words(ask)}): {full_ranks_words(full, ran)}.",
            which,
            min(ranks),
            details,
        )
    skipped = [n for n in full if n not in ran and _rank(full[n]) is not None]
    if skipped:
        details["retrievers"] = sorted(ran)
        return Explanation(
            chunk,
            at,
            "retriever-skipped",
            f"The variant runs only the {', '.join(sorted(ran)) or 'no'} retriever, which does not match it; "
            f"the skipped one would have: {full_ranks_words(full, skipped)} (fts_limit {ask.fts_limit}).",
            which,
            None,
            details,
        )
    pw, tw = porter_words(run.query), trigram_words(run.query)
    distinct = distinctive_words(ask.store, chunk, conn=ask.conn)
    details.update(
        {
            "porter_terms": pw,
            "trigram_terms": tw,
            "chunk_words": distinct,
            "porter_query": PORTER.get(run).query,
            "trigram_query": TRIGRAM.get(run).query,
        }
    )
    looked = f"Porter looked for {', '.join(pw) or '(no word)'} (stemmed)"
    looked += f", trigram for {', '.join(tw)}" if tw else ", trigram did not run (no word of 3+ characters)"
    return Explanation(
        chunk,
        at,
        "no-term",
        f"No query term is indexed in it: {looked}. It is about: {', '.join(distinct) or '(no indexed words)'}.",
        which,
        None,
        details,
    )


def _absent(ask: Asking, chunk: ChunkRef, so_far: Explanation | None) -> Explanation | None:
    """The first story of a chunk no retriever returned: a filter excludes
    it, or each pass's reason (the first pass's, unless it is ``no-term``
    and another pass's is more specific)."""
    p = ask.params
    if _source_excluded(ask, chunk):
        mode = "equal to" if p.source_match == "exact" else "containing"
        return Explanation(
            chunk,
            "retrieve",
            "source-filter",
            f"The source filter keeps labels {mode} {p.source!r}; this chunk's source is {chunk.source!r}.",
            details={"source": chunk.source, "filter": p.source, "source_match": p.source_match},
        )
    if p.content_type and chunk.content_type != p.content_type:
        return Explanation(
            chunk,
            "retrieve",
            "content-type-filter",
            f"The content-type filter keeps only {p.content_type} chunks; this one is {chunk.content_type}.",
            details={"content_type": chunk.content_type, "filter": p.content_type},
        )
    best: Explanation | None = None
    for run in ask.passes():
        exp = _absent_in(ask, chunk, run)
        if best is None or (best.reason == "no-term" and exp.reason != "no-term"):
            best = exp
    return best


def _source_filter(e: Exit) -> str:
    mode = "equal to" if e.get("source_match") == "exact" else "containing"
    return f"excluded by the source filter (labels {mode} {e.get('filter')!r})"


def not_retrieved(sentence: Callable[[Exit], str], data: tuple[str, ...], told: bool = True) -> Reason:
    """A code of a chunk no retriever returned: ``not retrieved`` in a flow cell (compact ``none``)."""
    return Reason(sentence, data, lambda e: "not retrieved", lambda e, cut: "none", told)


def unretrieved(prefix: str = "") -> Exit:
    """The exit of a chunk no retriever of a pass returned, before why-not looks further."""
    return Exit(prefix + "retrieve", "not-retrieved")


RETRIEVE = Stage(
    id="retrieve",
    title="Retrieve",
    about=(
        "Both retrievers together, with the source and content-type filters in their SQL:",
        "a chunk neither returns within its row count never enters the pass.",
    ),
    scope="pass",
    kind="group",
    emptied="nothing was retrieved",
    reasons={
        "source-filter": not_retrieved(_source_filter, ("source", "filter", "source_match")),
        "content-type-filter": not_retrieved(
            lambda e: f"excluded by the content-type filter (only {e.get('filter')} chunks)", ("content_type", "filter")
        ),
        "no-term": not_retrieved(
            lambda e: "not retrieved: no query term is indexed in it", ("porter_terms", "trigram_terms")
        ),
        "retriever-skipped": not_retrieved(
            lambda e: "not retrieved: only a retriever the variant skipped would match it", ("retrievers",)
        ),
        "beyond-fts-limit": not_retrieved(
            lambda e: (
                f"not retrieved: it matches at bm25 rank {e.get('rank')}, beyond the {e.get('fts_limit')} rows fetched"
            ),
            ("rank", "fts_limit"),
        ),
        "not-retrieved": not_retrieved(lambda e: "not retrieved: neither retriever returned it", (), told=False),
    },
    to_json=_to_json,
    absent=_absent,
)


# ─── both retrievers of a pass ──────────────────────────────────────────────

_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()
#: Threads that run a search's second retriever (several searches may run at once).
POOL_THREADS = 4
#: The retriever whose statement usually takes longer: when both run at
#: once it runs on the calling thread and the other goes to a worker, so
#: the caller is rarely left waiting for a thread to finish and wake it.
#: npm docs, 80 queries × 3 rounds, per-stage p50: trigram 1.5 ms against
#: porter 0.70 ms at 1,437 chunks, 12.8 against 5.5 ms at 100,590; with
#: porter on the calling thread a 1,437-chunk search waited a median
#: 0.1 ms after the trigram statement ended (docs/performance.md).
LONGER_RETRIEVER = "trigram"


def _pool() -> ThreadPoolExecutor:
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max_workers=POOL_THREADS, thread_name_prefix="rankscope-retriever")
        return _POOL


class Runs(Protocol):
    """Where a pass takes its retriever runs from (:class:`engine.pipeline.runcache.RunCache`)."""

    def lookup(self, conn: sql.Connection, request: Request) -> RetrieverRun | None: ...

    def run(
        self, conn: sql.Connection, schema: SchemaInfo, request: Request, *, share: HalfShare | None = None
    ) -> RetrieverRun: ...


def retrieve_pair(
    store: Store, conn: sql.Connection, requests: tuple[Request, ...] | list[Request], *, runs: Runs
) -> dict[str, RetrieverRun]:
    """Run ``requests`` (one per retriever) through ``runs`` (a cached run
    comes back ``cached=True``). When two must run and ``conn`` is a file
    store's read transaction, the second runs on a worker thread, on another
    connection of the same snapshot (:meth:`~engine.store.store.Store.parallel_reader`),
    while :data:`LONGER_RETRIEVER` runs here; a worker that has not started
    by then is not waited for (the second runs here too). Each run's
    ``elapsed_ms`` is its own statement's time.

    Returns:
        ``{retriever name: RetrieverRun}``.

    Raises:
        engine.store.sql.Error: the store cannot be read (as :func:`retrieve`).
    """
    out: dict[str, RetrieverRun] = {}
    todo: list[Request] = []
    for request in requests:
        hit = runs.lookup(conn, request)
        if hit is None:
            todo.append(request)
        else:
            out[request.retriever] = hit
    if len(todo) == 2 and store.can_read_in_parallel(conn):
        todo.sort(key=lambda r: r.retriever != LONGER_RETRIEVER)
        with store.parallel_reader(conn) as reader:
            if reader is not None:
                reader.read_version = conn.read_version  # same snapshot: the runs it makes are kept too
                share = HalfShare()
                first_done = threading.Event()
                second_ran = threading.Event()
                second_out: list[RetrieverRun | BaseException | None] = [None, None]  # [run, error]

                def second_then_help() -> None:
                    try:
                        second_out[0] = runs.run(reader, store.schema, todo[1], share=share)
                    except BaseException as exc:  # raised in the caller's thread below
                        second_out[1] = exc
                    finally:
                        second_ran.set()
                        share.wake()
                    share.help_until(reader, first_done.is_set)  # the first's offered halves

                try:
                    second: Future[None] = _pool().submit(second_then_help)
                    try:
                        out[todo[0].retriever] = runs.run(conn, store.schema, todo[0], share=share)
                    finally:
                        first_done.set()
                        share.wake()
                        started = not second.cancel()
                        if started:
                            share.help_until(conn, second_ran.is_set)  # the second's offered halves
                            second_ran.wait()  # its statement is done...
                        share.close()  # ...and no half runs on the reader: it may go back to the store
                    if not started:
                        # no thread had picked it up by the time the first was done (a short
                        # statement, a busy machine): run it here, on the same snapshot
                        out[todo[1].retriever] = runs.run(reader, store.schema, todo[1])
                    elif isinstance(second_out[1], BaseException):
                        raise second_out[1]
                    else:
                        assert isinstance(second_out[0], RetrieverRun)
                        out[todo[1].retriever] = second_out[0]
                finally:
                    reader.read_version = None
                todo = []
    for request in todo:
        out[request.retriever] = runs.run(conn, store.schema, request)
    return out
