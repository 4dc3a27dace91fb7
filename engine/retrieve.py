"""The two FTS5 retrievers (reference ``search`` and ``searchTrigram`` in OR mode).

Each runs ``MATCH`` with its sanitised query, joined to ``sources`` for the
label, ordered by ``bm25(table, 5.0, 1.0)`` ascending (title weight 5,
content weight 1; FTS5 ranks are negative), limited to the candidate count,
and returns ``highlight(table, 1, char(2), char(3))`` of the content. FTS5
itself orders the matches (:func:`build_sql`), so only the rows returned are
joined and highlighted.
Optional filters run in SQL: source label (``LIKE '%label%'`` with ``\\``,
``%`` and ``_`` escaped, ``ESCAPE '\\'``; or ``=`` in exact mode) and content
type. All values are bound parameters.

:func:`retrieve_pair` runs both for one pass of the pipeline: runs computed
before at the same store data version come from the store's run cache, and
the two statements run at once on two connections that see the same
snapshot (SQLite releases the GIL while it works), each timed on its own.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor, wait

from . import sql
from .model import Hit, RetrieverRun
from .query import sanitize_porter, sanitize_trigram
from .store import SchemaInfo, Store, elapsed_ms, is_corruption

TABLES = {"porter": "chunks", "trigram": "chunks_trigram"}


def is_query_error(exc: BaseException) -> bool:
    """True for an error of the query itself (an FTS5 syntax error, SQLite's
    generic ``SQLITE_ERROR``), which a run records; False for a store that
    cannot be read (damaged, locked, I/O), which is raised."""
    if is_corruption(exc):
        return False
    code = sql.primary_code(exc)
    return code is None or code == 1


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
    *,
    reference: bool = False,
) -> tuple[str, list[str]]:
    """SQL for one retriever and the names of its parameters in order.

    ``reference=True`` gives the reference's own statement: ``bm25(t, 5.0,
    1.0) AS rank ... ORDER BY rank`` sorts every matching row in SQLite's
    sorter, so each one is joined to ``sources`` and carries its title,
    content and ``highlight()`` into the sort. The default asks FTS5 to rank
    with the same function (``t.rank MATCH 'bm25(5.0, 1.0)'``, ``ORDER BY
    t.rank``): FTS5 scores every match and sorts them itself, and SQLite
    joins, filters and highlights rows in that order only until ``LIMIT``
    rows passed. Same rows, same order (ties in rowid order in both), same
    values; at 100,000 chunks about a third less time (docs/performance.md).

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
    where = [f"{t} MATCH ?"] if reference else [f"{t} MATCH ?", f"{t}.rank MATCH 'bm25(5.0, 1.0)'"]
    names = ["match"]
    if source:
        where.append("sources.label = ?" if source_match == "exact" else "sources.label LIKE ? ESCAPE '\\'")
        names.append("source")
    if content_type:
        where.append(f"{t}.content_type = ?")
        names.append("content_type")
    names.append("limit")
    x = sql.text
    rank, order = (f"bm25({t}, 5.0, 1.0)", "rank") if reference else (f"{t}.rank", f"{t}.rank")
    statement = (
        f"SELECT {t}.rowid, {x(t + '.title')}, {x(t + '.content')}, {t}.content_type, {x('sources.label')}, "
        f"{rank} AS rank, {x(f'highlight({t}, 1, char(2), char(3))')} AS highlighted, {x(session)} "
        f"FROM {t} JOIN sources ON sources.id = {t}.source_id "
        f"WHERE {' AND '.join(where)} ORDER BY {order} LIMIT ?"
    )
    return statement, names


def retrieve(
    conn: sql.Connection,
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
        engine.sql.Error: the store itself cannot be read (damaged
            pages, locked, I/O error): see :func:`is_query_error`.
    """
    sanitized = sanitize_porter(query, "OR") if retriever == "porter" else sanitize_trigram(query, "OR")
    if not sanitized:
        return RetrieverRun(retriever, "", fts_limit, (), skipped="query has no word of 3+ characters")
    statement, names = build_sql(retriever, schema, source, source_match, content_type)
    values = {
        "match": sanitized,
        "source": source if source_match == "exact" else like_pattern(source or ""),
        "content_type": content_type,
        "limit": fts_limit,
    }
    start = time.perf_counter()
    try:
        rows = conn.execute(statement, [values[n] for n in names]).fetchall()
    except sql.Error as exc:
        if not is_query_error(exc):
            raise  # a damaged or unreadable store: search() names it (CorruptStoreError / StoreError)
        return RetrieverRun(
            retriever, sanitized, fts_limit, (), error=f"{type(exc).__name__}: {exc}",
            elapsed_ms=elapsed_ms(start),
        )
    dec = sql.decode
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
            highlighted=dec(r[6]) if r[6] is not None else "",
        )
        for i, r in enumerate(rows)
    )
    return RetrieverRun(retriever, sanitized, fts_limit, hits, elapsed_ms=elapsed_ms(start))


# ─── both retrievers of a pass ──────────────────────────────────────────────

_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()
#: Threads that run a search's second retriever (several searches may run at once).
POOL_THREADS = 4


def _pool() -> ThreadPoolExecutor:
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max_workers=POOL_THREADS, thread_name_prefix="rankscope-retriever")
        return _POOL


def run_key(
    retriever: str, query: str, fts_limit: int, source: str | None, source_match: str, content_type: str | None
) -> tuple:
    """The run-cache key of one retriever run: everything its SQL depends on
    besides the store (retriever, sanitised query, row limit, filters)."""
    sanitize = sanitize_porter if retriever == "porter" else sanitize_trigram
    return (retriever, sanitize(query, "OR"), fts_limit, source or None, source_match if source else None,
            content_type or None)


def retrieve_pair(
    store: Store,
    conn: sql.Connection,
    names: tuple[str, ...] | list[str],
    query: str,
    fts_limit: int,
    source: str | None = None,
    source_match: str = "like",
    content_type: str | None = None,
) -> dict[str, RetrieverRun]:
    """Run the retrievers ``names`` (``"porter"``, ``"trigram"``) for ``query``.

    * A run computed earlier at the same store data version (the one
      ``conn``'s :meth:`~engine.store.Store.begin_read` noted) with the same
      :func:`run_key` is taken from ``store.runs`` (``cached=True``;
      ``elapsed_ms`` is then the lookup's time).
    * When both must run and ``conn`` is a file store's read transaction,
      the second is handed to a worker thread, on another connection of the
      store whose snapshot is the same as ``conn``'s
      (:meth:`~engine.store.Store.parallel_reader`), while the first runs
      here; if no worker has started it by the time the first is done (a
      short statement, a busy machine), it runs here too, on that
      connection, rather than waiting for a thread to wake. Otherwise both
      run one after the other on ``conn``. Each run's ``elapsed_ms`` is its
      own statement's time.

    Returns:
        ``{name: RetrieverRun}`` for every name given.

    Raises:
        engine.sql.Error: the store cannot be read (as :func:`retrieve`).
    """
    version = getattr(conn, "read_version", None) if conn.in_transaction else None
    args = (query, fts_limit, source, source_match, content_type)
    out: dict[str, RetrieverRun] = {}
    todo: list[str] = []
    keys = {name: run_key(name, *args) for name in names}
    for name in names:
        start = time.perf_counter()
        hit = store.runs.get(version, keys[name])
        if hit is None:
            todo.append(name)
        else:
            out[name] = dataclasses.replace(hit, cached=True, elapsed_ms=elapsed_ms(start))
    if len(todo) == 2 and store.can_read_in_parallel(conn):
        with store.parallel_reader(conn) as reader:
            if reader is not None:
                second: Future = _pool().submit(retrieve, reader, store.schema, todo[1], *args)
                try:
                    out[todo[0]] = retrieve(conn, store.schema, todo[0], *args)
                finally:
                    if not second.cancel():
                        wait([second])  # the reader goes back to the store only when its statement is done
                if second.cancelled():
                    # no thread had picked it up by the time the first was done (a short
                    # statement, a busy machine): run it here, on the same snapshot
                    out[todo[1]] = retrieve(reader, store.schema, todo[1], *args)
                else:
                    out[todo[1]] = second.result()
                for name in todo:
                    store.runs.put(version, keys[name], out[name])
                todo = []
    for name in todo:
        out[name] = retrieve(conn, store.schema, name, *args)
        store.runs.put(version, keys[name], out[name])
    return out
