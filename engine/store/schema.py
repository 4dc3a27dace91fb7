"""The content-store schema and what an open database's schema is.

Schema (reference context-mode ``src/store.ts`` 1.0.169): ``sources``,
``chunks`` (FTS5, ``porter unicode61``), ``chunks_trigram`` (FTS5,
``trigram``), ``vocabulary``. Older stores (context-mode 1.0.22) have 4 FTS
columns and no session column: every chunk then reads as session ``""``.
Stores rankscope creates carry ``PRAGMA application_id =`` :data:`APPLICATION_ID`.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import quote

from engine.files.writing import SQLITE_HEADER
from engine.store import sql
from engine.store.errors import (
    CANTOPEN_CODE,
    READONLY_CODE,
    NotADatabaseError,
    SchemaError,
    damaged,
    is_corruption,
    sqlite_store_error,
)

SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS sources (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  label TEXT NOT NULL,
  chunk_count INTEGER NOT NULL DEFAULT 0,
  code_chunk_count INTEGER NOT NULL DEFAULT 0,
  indexed_at TEXT NOT NULL DEFAULT (datetime('now')),
  file_path TEXT,
  content_hash TEXT
);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks USING fts5(
  title, content, source_id UNINDEXED, content_type UNINDEXED,
  source_category UNINDEXED, session_id UNINDEXED, event_id UNINDEXED,
  timestamp UNINDEXED, tokenize='porter unicode61'
);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_trigram USING fts5(
  title, content, source_id UNINDEXED, content_type UNINDEXED,
  source_category UNINDEXED, session_id UNINDEXED, event_id UNINDEXED,
  timestamp UNINDEXED, tokenize='trigram'
);
CREATE TABLE IF NOT EXISTS vocabulary (word TEXT PRIMARY KEY);
CREATE INDEX IF NOT EXISTS idx_sources_label ON sources(label);
"""

FTS_TABLES = ("chunks", "chunks_trigram")
#: Shadow tables FTS5 keeps for each table of the reference schema.
FTS_SHADOWS = ("data", "idx", "content", "docsize", "config")
_VIRTUAL_MODULE = re.compile(r"\s*CREATE\s+VIRTUAL\s+TABLE\s.*?\sUSING\s+([A-Za-z0-9_]+)", re.I | re.S)
#: A chunk's session id with ``NULL`` read as ``""``.
SESSION_OR_EMPTY = "COALESCE(session_id, '')"
#: In rankscope's own stores (the only ones written), an index on the
#: ``source_id`` column (``c2``) of each FTS table's ``_content`` shadow
#: table, created on the first re-index; SQLite keeps it up to date as FTS5
#: writes. context-mode ignores it; searches never use it.
SOURCE_INDEX_SQL = "CREATE INDEX IF NOT EXISTS rankscope_{table}_source ON {table}_content(c2)"

#: ``PRAGMA application_id`` of every store rankscope creates ("RANK" in
#: ASCII). A database without it is never written to.
APPLICATION_ID = 0x52414E4B


def table_module(create_sql: str | None) -> str | None:
    """The module of a virtual table, lower-cased (``"fts5"``), from its
    ``CREATE VIRTUAL TABLE`` statement in ``sqlite_master``; ``None`` for an
    ordinary table (or no statement)."""
    m = _VIRTUAL_MODULE.match(create_sql or "")
    return m.group(1).lower() if m else None


def fts_shadow_tables(create_sql: str | None, table: str) -> tuple[str, ...]:
    """The shadow tables (suffixes of :data:`FTS_SHADOWS`) FTS5 keeps for the
    table ``table`` declared by ``create_sql``: the statement is run in an
    empty in-memory database and what FTS5 made there is listed, so every
    option counts as FTS5 counts it (``content=''`` and external content
    have no ``_content``, ``columnsize=0`` no ``_docsize``). All of
    :data:`FTS_SHADOWS` when the statement cannot be run there (no
    statement, a tokenizer this SQLite lacks)."""
    if create_sql:
        conn = sql.connect(":memory:")
        try:
            conn.execute(create_sql)
            names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
            return tuple(x for x in FTS_SHADOWS if f"{table}_{x}" in names)
        except sql.Error:
            pass
        finally:
            conn.close()
    return FTS_SHADOWS


@dataclass(frozen=True)
class SchemaInfo:
    """What kind of content store this is.

    Attributes:
        fts_columns: 8 (context-mode 1.0.100+ style) or 4 (older).
        has_session: the FTS tables have a ``session_id`` column.
        has_vocabulary: a ``vocabulary`` table exists (fuzzy needs it).
        has_file_columns: ``sources`` has ``file_path``/``content_hash``.
    """

    fts_columns: int
    has_session: bool
    has_vocabulary: bool
    has_file_columns: bool

    def session_column(self, table: str = "chunks") -> str:
        """SQL for a chunk's session id in ``table`` (an FTS table name or
        alias): ``table.session_id``, or the literal ``''`` when the store
        has no session column (every chunk then reads as unattributed)."""
        return f"{table}.session_id" if self.has_session else "''"

    @property
    def generation(self) -> str:
        """Human label: ``"8-column (session attribution)"`` or ``"4-column (legacy)"``."""
        return "8-column (session attribution)" if self.fts_columns >= 8 else "4-column (legacy)"


@lru_cache(maxsize=None)
def fts5_available() -> bool:
    """True when this SQLite build has FTS5 (checked once, in memory)."""
    try:
        conn = sql.connect(":memory:")
        try:
            conn.execute("CREATE VIRTUAL TABLE t USING fts5(x)")
        finally:
            conn.close()
    except sql.Error:
        return False
    return True


def read_application_id(path: str | os.PathLike[str]) -> int | None:
    """``PRAGMA application_id`` read straight from the file header (bytes
    68-71), without opening SQLite; ``None`` when the file is not an SQLite
    database (or too short to hold a header).

    Raises:
        OSError: the file cannot be read.
    """
    with open(path, "rb") as fh:
        header = fh.read(100)
    if len(header) < 100 or not header.startswith(SQLITE_HEADER):
        return None
    return int.from_bytes(header[68:72], "big")


def describe_foreign(p: str, app_id: int | None) -> str:
    """What a database rankscope did not create looks like, for the refusal
    message. Reads it with an ``immutable`` read-only connection (creates
    nothing next to it)."""
    try:
        uri = f"file:{quote(os.path.abspath(p))}?mode=ro&immutable=1"
        conn = sql.connect(uri, read_only=True, uri=True)
        try:
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        finally:
            conn.close()
    except (sql.Error, UnicodeDecodeError):
        tables = set()
    if {"sources", "chunks", "chunks_trigram"} <= tables:
        return "it looks like a context-mode content store"
    if app_id:
        return f"it is another application's SQLite database (application_id {app_id:#010x})"
    return "it is an SQLite database of unknown origin"


def inspect_schema(conn: sql.Connection, p: str) -> SchemaInfo:
    """The :class:`SchemaInfo` of the database ``conn`` reads (``p`` names it
    in errors); ``conn`` is closed when it raises.

    Raises:
        NotADatabaseError: not a readable SQLite database.
        SchemaError: SQLite, but not a content store (or no FTS5 here).
        CorruptStoreError: the FTS5 table ``chunks`` cannot be opened.
        StoreError: SQLite cannot read the file (:func:`engine.store.errors.sqlite_store_error`).
    """
    try:
        declared = {
            r[0]: r[1] for r in conn.execute("SELECT name, sql FROM sqlite_master WHERE type IN ('table','view')")
        }
    except (sql.Error, UnicodeDecodeError) as exc:
        conn.close()
        if sql.primary_code(exc) in (READONLY_CODE, CANTOPEN_CODE) or is_corruption(exc):
            raise sqlite_store_error(exc, p, "open") from exc
        raise NotADatabaseError(f"{p} is not a readable SQLite database: {exc}") from exc
    tables = set(declared)
    missing = [t for t in ("sources", "chunks", "chunks_trigram") if t not in tables]
    if missing:
        conn.close()
        raise SchemaError(f"{p} is not a context-mode content store: missing table(s) {', '.join(missing)}")
    for t in FTS_TABLES:
        module = table_module(declared[t])
        if module != "fts5":  # a foreign schema, not a damaged store
            conn.close()
            kind = "an ordinary table" if module is None else f"a virtual table of module {module}"
            raise SchemaError(f"{p} is not a context-mode content store: {t} is {kind}, not an FTS5 table")
    try:
        cols = [r[1] for r in conn.execute("SELECT * FROM pragma_table_xinfo('chunks')")]
        src_cols = {r[1] for r in conn.execute("SELECT * FROM pragma_table_xinfo('sources')")}
    except (sql.Error, UnicodeDecodeError) as exc:
        conn.close()
        if not fts5_available():
            raise SchemaError(f"{p}: cannot read the chunks table ({exc}): this SQLite has no FTS5") from exc
        missing = [
            f"{t}_{x}" for t in FTS_TABLES for x in fts_shadow_tables(declared[t], t) if f"{t}_{x}" not in tables
        ]
        lost = f"; missing: {', '.join(missing)}" if missing else ""
        raise damaged(p, f"its FTS5 table chunks cannot be opened (SQLite says '{exc}'{lost})") from exc
    unopenable = [f"chunks_{x}" for x in ("data", "config") if f"chunks_{x}" not in tables]
    if unopenable:
        # SQLite 3.40 refused to read the table's columns without these;
        # 3.54 reads them and fails at the first query instead.
        conn.close()
        missing = [
            f"{t}_{x}" for t in FTS_TABLES for x in fts_shadow_tables(declared[t], t) if f"{t}_{x}" not in tables
        ]
        raise damaged(p, f"its FTS5 table chunks cannot be opened (missing: {', '.join(missing)})")
    visible = [c for c in cols if c not in ("chunks", "rank")]
    for needed in ("title", "content", "source_id", "content_type"):
        if needed not in visible:
            conn.close()
            raise SchemaError(f"{p} is not a context-mode content store: table chunks lacks column {needed!r}")
    return SchemaInfo(
        fts_columns=len(visible),
        has_session="session_id" in visible,
        has_vocabulary="vocabulary" in tables,
        has_file_columns={"file_path", "content_hash"} <= src_cols,
    )
