"""The two FTS5 retrievers (reference ``search`` and ``searchTrigram`` in OR mode).

Each runs ``MATCH`` with its sanitised query, joined to ``sources`` for the
label, ordered by ``bm25(table, 5.0, 1.0)`` ascending (title weight 5,
content weight 1; FTS5 ranks are negative), limited to the candidate count,
and returns ``highlight(table, 1, char(2), char(3))`` of the content.
Optional filters run in SQL: source label (``LIKE '%label%'`` with ``\\``,
``%`` and ``_`` escaped, ``ESCAPE '\\'``; or ``=`` in exact mode) and content
type. All values are bound parameters.
"""

from __future__ import annotations

import sqlite3
import time

from .model import Hit, RetrieverRun
from .query import sanitize_porter, sanitize_trigram
from .store import SchemaInfo, elapsed_ms, is_corruption

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
