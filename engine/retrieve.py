"""The two FTS5 retrievers (reference ``search`` and ``searchTrigram`` in OR mode).

Each runs ``MATCH`` with its sanitised query, joined to ``sources`` for the
label, ordered by ``bm25(table, 5.0, 1.0)`` ascending (title weight 5,
content weight 1; FTS5 ranks are negative), limited to the candidate count,
and returns ``highlight(table, 1, char(2), char(3))`` of the content.
Optional filters run in SQL: source label (``LIKE '%label%'`` with ``\\``,
``%`` and ``_`` escaped, ``ESCAPE '\\'``; or ``=`` in exact mode) and content
type. All values are bound parameters.

As pass stages (``porter`` and ``trigram`` in :mod:`engine.stages`) they are
the pass's parallel entries: :data:`PORTER_HOOKS` and :data:`TRIGRAM_HOOKS`.
A chunk neither returns leaves at the ``retrieve`` stage; the codes for it
(:data:`RETRIEVE_SENTENCES`) are decided by :mod:`engine.why`, which looks
further (uncapped runs, filters), except ``not-retrieved``, which says only
that no retriever returned it.
"""

from __future__ import annotations

import sqlite3
import time

from .model import Exit, Hit, RetrieverRun, SearchParams
from .query import sanitize_porter, sanitize_trigram
from .stage_api import PassContext, StageHooks
from .store import SchemaInfo, elapsed_ms, is_corruption
from .words import abbreviate, plural

TABLES = {"porter": "chunks", "trigram": "chunks_trigram"}


def is_query_error(exc: sqlite3.Error) -> bool:
    """True for an error of the query itself (an FTS5 syntax error, SQLite's
    generic ``SQLITE_ERROR``), which a run records; False for a store that
    cannot be read (damaged, locked, I/O), which is raised."""
    if is_corruption(exc):
        return False
    code = getattr(exc, "sqlite_errorcode", None)
    return code is None or code & 0xFF == 1


def like_pattern(source: str) -> str:
    """``%source%`` with LIKE metacharacters escaped (backslash first)."""
    escaped = source.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def build_sql(
    retriever: str,
    schema: SchemaInfo,
    source: str | None,
    source_match: str,
    content_type: str | None,
) -> tuple[str, list[str]]:
    """SQL for one retriever and the names of its parameters in order.

    Returns:
        ``(sql, param_names)`` where names are drawn from ``match``,
        ``source``, ``content_type``, ``limit``.

    Raises:
        ValueError: unknown retriever name.
    """
    if retriever not in TABLES:
        raise ValueError(f"retriever must be 'porter' or 'trigram'; got {retriever!r}")
    t = TABLES[retriever]
    session = schema.session_column(t)
    where = [f"{t} MATCH ?"]
    names = ["match"]
    if source:
        where.append("sources.label = ?" if source_match == "exact" else "sources.label LIKE ? ESCAPE '\\'")
        names.append("source")
    if content_type:
        where.append(f"{t}.content_type = ?")
        names.append("content_type")
    names.append("limit")
    sql = (
        f"SELECT {t}.rowid, {t}.title, {t}.content, {t}.content_type, sources.label, "
        f"bm25({t}, 5.0, 1.0) AS rank, highlight({t}, 1, char(2), char(3)) AS highlighted, {session} "
        f"FROM {t} JOIN sources ON sources.id = {t}.source_id "
        f"WHERE {' AND '.join(where)} ORDER BY rank LIMIT ?"
    )
    return sql, names


def retrieve(
    conn: sqlite3.Connection,
    schema: SchemaInfo,
    retriever: str,
    query: str,
    fts_limit: int,
    source: str | None = None,
    source_match: str = "like",
    content_type: str | None = None,
) -> RetrieverRun:
    """Run one retriever for the raw ``query``.

    The query is sanitised here (Porter or trigram rules). An empty trigram
    query skips the run. An SQLite error of the query (which sanitising
    should make impossible) is caught and recorded in ``error``; the run is
    then empty.

    Returns:
        A :class:`RetrieverRun` with 1-based ranks.

    Raises:
        sqlite3.DatabaseError: the store itself cannot be read (damaged
            pages, locked, I/O error): see :func:`is_query_error`.
    """
    sanitized = sanitize_porter(query, "OR") if retriever == "porter" else sanitize_trigram(query, "OR")
    if not sanitized:
        return RetrieverRun(retriever, "", fts_limit, (), skipped="query has no word of 3+ characters")
    sql, names = build_sql(retriever, schema, source, source_match, content_type)
    values = {
        "match": sanitized,
        "source": source if source_match == "exact" else like_pattern(source or ""),
        "content_type": content_type,
        "limit": fts_limit,
    }
    start = time.perf_counter()
    try:
        rows = conn.execute(sql, [values[n] for n in names]).fetchall()
    except sqlite3.Error as exc:
        if not is_query_error(exc):
            raise  # a damaged or unreadable store: search() names it (CorruptStoreError / StoreError)
        return RetrieverRun(
            retriever, sanitized, fts_limit, (), error=f"{type(exc).__name__}: {exc}",
            elapsed_ms=elapsed_ms(start),
        )
    hits = tuple(
        Hit(
            rank=i + 1,
            rowid=int(r[0]),
            source=r[4],
            title=r[1] if r[1] is not None else "",
            content=r[2] if r[2] is not None else "",
            content_type=r[3] if r[3] is not None else "prose",
            session_id=r[7] if r[7] is not None else "",
            bm25=float(r[5]),
            highlighted=r[6] if r[6] is not None else "",
        )
        for i, r in enumerate(rows)
    )
    return RetrieverRun(retriever, sanitized, fts_limit, hits, elapsed_ms=elapsed_ms(start))


def fts_limit_for(params: SearchParams, pool_size: int) -> int:
    """Rows per retriever: ``max(2 * pool_size, 10)`` (or the variant's override)."""
    v = params.variant
    return v.fts_limit if v.fts_limit is not None else max(pool_size * 2, 10)


# ─── as pass stages ──────────────────────────────────────────────────────


def runs_retriever(params: SearchParams, name: str) -> bool:
    """True when the variant runs retriever ``name`` (``retrievers`` is
    ``both`` or that name); a retriever it leaves out gives a skipped run."""
    return params.variant.retrievers in ("both", name)


def _step(name: str):
    def step(ctx: PassContext, items: tuple) -> RetrieverRun:
        """Run retriever ``name`` for ``ctx.query`` (a skipped run when the
        variant leaves it out), through ``ctx.runs`` when a run cache is given."""
        p = ctx.params
        if not runs_retriever(p, name):
            return RetrieverRun(name, "", ctx.fts_limit, (), skipped=f"variant: {p.variant.retrievers} retriever only")
        run = ctx.runs.run if ctx.runs is not None else retrieve
        return run(ctx.conn, ctx.store.schema, name, ctx.query, ctx.fts_limit, p.source, p.source_match,
                   p.content_type)

    return step


def ranked(run: RetrieverRun) -> tuple[Hit, ...]:
    """The run's rows in bm25 order."""
    return run.hits


def headline(run: RetrieverRun, params: SearchParams) -> str:
    """``12 hits for "cache" (limit 20) with source LIKE '%docs%'``, or why it
    was skipped / failed."""
    if run.skipped:
        return f"skipped: {run.skipped}"
    if run.error:
        return f"error: {run.error}"
    head = f"{plural(len(run.hits), 'hit')} for {abbreviate(run.query)} (limit {run.fts_limit})"
    if params.filter_text:
        head += f" with {params.filter_text}"
    return head


PORTER_HOOKS = StageHooks(step=_step("porter"), ranked=ranked, headline=headline)
TRIGRAM_HOOKS = StageHooks(step=_step("trigram"), ranked=ranked, headline=headline)


# ─── exits at the retrieve stage (a chunk no retriever returned) ─────────


def _source_filter(e: Exit) -> str:
    mode = "equal to" if e.get("source_match") == "exact" else "containing"
    return f"excluded by the source filter (labels {mode} {e.get('filter')!r})"


def _content_type_filter(e: Exit) -> str:
    return f"excluded by the content-type filter (only {e.get('filter')} chunks)"


def _no_term(e: Exit) -> str:
    return "not retrieved: no query term is indexed in it"


def _retriever_skipped(e: Exit) -> str:
    return "not retrieved: only a retriever the variant skipped would match it"


def _beyond_fts_limit(e: Exit) -> str:
    return f"not retrieved: it matches at bm25 rank {e.get('rank')}, beyond the {e.get('fts_limit')} rows fetched"


def _not_retrieved(e: Exit) -> str:
    return "not retrieved: neither retriever returned it"


#: Codes of the ``retrieve`` stage and their sentences.
RETRIEVE_SENTENCES = {
    "source-filter": _source_filter,
    "content-type-filter": _content_type_filter,
    "no-term": _no_term,
    "retriever-skipped": _retriever_skipped,
    "beyond-fts-limit": _beyond_fts_limit,
    "not-retrieved": _not_retrieved,
}
#: The names in each code's exit data.
RETRIEVE_DATA = {
    "source-filter": ("source", "filter", "source_match"),
    "content-type-filter": ("content_type", "filter"),
    "no-term": ("porter_terms", "trigram_terms"),
    "retriever-skipped": ("retrievers",),
    "beyond-fts-limit": ("rank", "fts_limit"),
    "not-retrieved": (),
}
