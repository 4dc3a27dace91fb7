"""What a store holds, as typed rows: its chunks (:class:`ChunkRow`), its
sources (:class:`SourceRow`) and its counts (:class:`StoreCounts`), and the
queries that read them. Each query reads on the connection it is given and
raises :data:`engine.store.sql.Error` (the :class:`~engine.store.store.Store`
methods that call them turn it into a :class:`~engine.store.errors.StoreError`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from engine.store import sql
from engine.store.schema import SESSION_OR_EMPTY, SchemaInfo


class ChunkRow(NamedTuple):
    """One chunk of the ``chunks`` table (the Porter table; ``chunks_trigram``
    holds the same rows under the same rowids). A ``NamedTuple`` rather than a
    frozen dataclass: :func:`iter_chunks` builds one per chunk of the store
    (the browser's finder reads them all), and as frozen dataclasses that read
    took 60% longer (measured at 10,059 chunks, content left out).

    Attributes:
        rowid: the chunk's rowid in both FTS tables.
        source: its source's label, ``None`` for an orphan chunk (no
            ``sources`` row).
        title: heading path, e.g. ``"Guide > Install"`` (``""`` when NULL).
        content: the chunk's text, ``None`` when read without content.
        content_type: ``"code"`` or ``"prose"`` as stored (``""`` when NULL).
        session_id: attribution, ``""`` for none (NULL, or a store without
            the column).
        source_id: ``chunks.source_id`` (stored as a REAL; ``None`` when it
            is not a number).
    """

    rowid: int
    source: str | None
    title: str
    content: str | None
    content_type: str
    session_id: str
    source_id: int | None


@dataclass(frozen=True, slots=True)
class SourceRow:
    """One row of the ``sources`` table.

    Attributes:
        id: ``sources.id``.
        label: the source label (e.g. a relative path).
        chunk_count: chunks recorded for it.
        code_chunk_count: of which ``code``.
        indexed_at: when it was indexed, ``YYYY-MM-DD HH:MM:SS`` UTC as SQLite writes it.
        file_path: the file it was read from (file-backed: refreshed when
            stale), else ``None``; ``None`` on stores without the column.
        content_hash: SHA-256 hex of its text, or ``None``.
    """

    id: int
    label: str
    chunk_count: int
    code_chunk_count: int
    indexed_at: str
    file_path: str | None
    content_hash: str | None


@dataclass(frozen=True, slots=True)
class StoreCounts:
    """What a store holds, in numbers.

    Attributes:
        sources: source rows.
        chunks: chunks (counted, or as ``sources.chunk_count`` records them).
        code_chunks: of which ``code``.
        vocabulary: vocabulary words, ``None`` when the table is missing.
        last_indexed_at: newest ``sources.indexed_at``, ``None`` without sources.
    """

    sources: int
    chunks: int
    code_chunks: int
    vocabulary: int | None
    last_indexed_at: str | None


def _chunk_select(schema: SchemaInfo, join: str, with_content: bool = True) -> str:
    """``SELECT`` of a :class:`ChunkRow`'s columns from ``chunks`` ``join``-ed
    to ``sources`` (text read through :func:`engine.store.sql.text`)."""
    t = sql.text
    content = t("chunks.content") if with_content else "NULL"
    return (
        f"SELECT chunks.rowid, {t('sources.label')}, {t('chunks.title')}, {content}, chunks.content_type, "
        f"{t(schema.session_column())}, chunks.source_id FROM chunks {join} sources ON sources.id = chunks.source_id "
    )


def _chunk_row(row: Any) -> ChunkRow:
    rowid, label, title, content, ctype, session, source_id = row
    dec = sql.decode
    return ChunkRow(
        rowid,
        dec(label),
        dec(title) or "",
        dec(content),
        ctype or "",
        dec(session) or "",
        int(source_id) if isinstance(source_id, (int, float)) else None,
    )


def chunk(conn: sql.Connection, schema: SchemaInfo, rowid: int) -> ChunkRow | None:
    """The chunk at ``rowid`` (with content), or ``None`` when there is none or it has no source row."""
    row = conn.execute(_chunk_select(schema, "JOIN") + "WHERE chunks.rowid = ?", (rowid,)).fetchone()
    return None if row is None else _chunk_row(row)


def iter_chunks(conn: sql.Connection, schema: SchemaInfo, *, with_content: bool = True) -> list[ChunkRow]:
    """Every chunk in rowid order, orphans included; ``with_content=False``
    leaves ``content`` ``None`` (a list of a million chunks then does not hold their text)."""
    rows = conn.execute(_chunk_select(schema, "LEFT JOIN", with_content) + "ORDER BY chunks.rowid").fetchall()
    return [_chunk_row(r) for r in rows]


def sources(conn: sql.Connection, schema: SchemaInfo) -> list[SourceRow]:
    """Every source row, in id order."""
    extra = "file_path, content_hash" if schema.has_file_columns else "NULL, NULL"
    rows = conn.execute(
        f"SELECT id, {sql.text('label')}, chunk_count, code_chunk_count, indexed_at, {extra} FROM sources ORDER BY id"
    ).fetchall()
    return [SourceRow(r[0], sql.decode(r[1]) or "", r[2], r[3], r[4], r[5], r[6]) for r in rows]


def source_labels(conn: sql.Connection) -> list[str]:
    """Every source label, in id order (one pass over ``sources``)."""
    return [sql.decode(r[0]) or "" for r in conn.execute(f"SELECT {sql.text('label')} FROM sources ORDER BY id")]


def source_hashes(conn: sql.Connection, schema: SchemaInfo) -> dict[str, str | None]:
    """``label -> content_hash`` of every source (empty on stores without the column)."""
    if not schema.has_file_columns:
        return {}
    return {lbl: h for lbl, h in conn.execute("SELECT label, content_hash FROM sources")}


def session_counts(conn: sql.Connection, schema: SchemaInfo) -> list[tuple[str, int]]:
    """``(session_id, chunks)`` pairs, most chunks first, then by id (``""`` = unattributed)."""
    if not schema.has_session:
        n = conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
        return [("", n)] if n else []
    rows = conn.execute(
        f"SELECT {sql.text(SESSION_OR_EMPTY)}, COUNT(*) FROM chunks GROUP BY 1 ORDER BY 2 DESC, 1"
    ).fetchall()
    return [(str(sql.decode(s)), int(n)) for s, n in rows]


def _vocabulary_size(conn: sql.Connection, schema: SchemaInfo) -> int | None:
    return int(conn.execute("SELECT COUNT(*) FROM vocabulary").fetchone()[0]) if schema.has_vocabulary else None


def recorded_counts(conn: sql.Connection, schema: SchemaInfo) -> StoreCounts:
    """The counts the ``sources`` table records (``chunks`` and
    ``code_chunks`` are sums of ``chunk_count`` / ``code_chunk_count``) — what
    the reference's ``getIndexState`` reads. One pass over ``sources``, none
    over the chunks: fast on any store (:func:`counts` counts the chunks
    themselves; they differ only on a store whose counts are inconsistent,
    which ``doctor`` reports)."""
    n_sources, chunks, code, last = conn.execute(
        "SELECT COUNT(*), COALESCE(SUM(chunk_count), 0), COALESCE(SUM(code_chunk_count), 0), MAX(indexed_at) "
        "FROM sources"
    ).fetchone()
    return StoreCounts(n_sources, int(chunks), int(code), _vocabulary_size(conn, schema), last)


def counts(conn: sql.Connection, schema: SchemaInfo) -> StoreCounts:
    """The counts, chunks counted in the ``chunks`` table."""
    n_sources, last = conn.execute("SELECT COUNT(*), MAX(indexed_at) FROM sources").fetchone()
    chunks = conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
    code = conn.execute("SELECT COUNT(*) FROM chunks WHERE content_type = 'code'").fetchone()[0]
    return StoreCounts(n_sources, chunks, code, _vocabulary_size(conn, schema), last)
