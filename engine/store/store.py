"""The content store: SQLite with the reference schema, indexing, and safe
read-only opening of stores written by context-mode itself.

Schema (reference context-mode ``src/store.ts`` 1.0.169): ``sources``,
``chunks`` (FTS5, ``porter unicode61``), ``chunks_trigram`` (FTS5,
``trigram``), ``vocabulary``. Older stores (context-mode 1.0.22) have 4 FTS
columns and no session column: every chunk then reads as session ``""``.

Two ways in:

* :meth:`Store.create` / :meth:`Store.open_writable` — a store rankscope owns:
  schema created if missing, WAL journal, indexing allowed. Every store
  :meth:`Store.create` makes is marked with ``PRAGMA application_id =``
  :data:`APPLICATION_ID`; both refuse (:class:`NotOurStoreError`) a database
  without that mark *before* anything is written, so a context-mode store
  (or any other SQLite file) is never modified.
* :meth:`Store.open_readonly` — anybody's store (the default for
  :meth:`Store.open`): opened with SQLite's read-only URI mode, no pragma
  that writes, nothing migrated, refreshed or optimised, and no file created
  beside it. How it is read (:data:`READ_MODES`) follows the files next to it:
  through a live writer's WAL, or the rollback journal's locks (``"live"``);
  ``immutable`` while a WAL store has no ``-wal``; through a private copy
  when a killed writer left a ``-wal`` without ``-shm``. The mode is checked
  again before every search, and a read that a concurrent writer disturbed
  is retried (:meth:`Store.reading`): a store is called damaged only when a
  read fails the same way twice on files that did not change.

SQLite errors that mean the file itself is damaged (``database disk image is
malformed``) surface as :class:`CorruptStoreError`, naming the path; other
SQLite failures while reading or writing a store as :class:`StoreError`.

Every SQL value is a bound parameter.
"""

from __future__ import annotations

import datetime as _dt
import os
import shlex
import stat
import threading
import time
from contextlib import contextmanager
from functools import lru_cache
from dataclasses import dataclass
from typing import Any, Iterator
from pathlib import Path
from urllib.parse import quote

import regex

from engine.store import sql
from engine.store.cache import VersionedLRU
from engine.store.chunking import MAX_CHUNK_BYTES, ChunkDraft, chunk_json, chunk_markdown, chunk_plain_text
from engine.store.freshness import Freshness, check_all, load_sources, read_text, sha256_text
from engine.js.strings import decode_utf8_like_node, js_to_lower, to_storage_bytes, utf16_len
from engine.store.freshness import RefreshReport
from engine.store.segments import Structure, indexed_rows, optimize, read_structure
from engine.store.stopwords import STOPWORDS

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
#: A writable store merges its FTS5 indexes (:meth:`Store.merge_index`) once
#: the chunks written since the last merge reach the chunks there were then,
#: and at least this many: the index doubles between merges, so the merges
#: of one long run rewrite about twice the final index in all (context-mode
#: merges every 50 inserted sources, which at 100,000 chunks is 127 rewrites).
MERGE_MIN_ROWS = 1_000
#: At the end of an indexing run an index is merged fully when the segments
#: other than its largest hold at least this share of its leaf pages...
MERGE_SHARE = 0.125
#: ...or when it has at most this many leaf pages (about 32 MB; merging it
#: takes well under a second), so that a small incremental run on a large
#: store does not rewrite the whole index for a few new rows.
MERGE_ALWAYS_PAGES = 8_192
#: A chunk's session id with ``NULL`` read as ``""``.
SESSION_OR_EMPTY = "COALESCE(session_id, '')"
_VOCAB_SPLIT = regex.compile(r"[^\p{L}\p{N}_-]+")
#: File kinds and the chunker each uses.
KINDS = ("markdown", "json", "plain")


class StoreError(Exception):
    """Base class of every store error; the message names the path."""


class StoreNotFoundError(StoreError):
    """The database file does not exist."""


class NotADatabaseError(StoreError):
    """The file exists but is not an SQLite database (or is corrupt)."""


class SchemaError(StoreError):
    """The database lacks the content-store tables."""


class ReadOnlyStoreError(StoreError):
    """A write was attempted on a store opened read-only."""


class NotOurStoreError(StoreError):
    """A write was refused: the database was not created by rankscope (it
    lacks the :data:`APPLICATION_ID` mark). Nothing was written."""


class CorruptStoreError(NotADatabaseError):
    """SQLite reports the database file as damaged (``SQLITE_CORRUPT`` /
    ``SQLITE_NOTADB``), e.g. ``database disk image is malformed``: when
    opening (a :class:`NotADatabaseError` then) or on any later read.

    Attributes:
        reason: what is wrong, without the path and the checking hint
            (e.g. ``SQLite says 'database disk image is malformed'``).
        check_command: the command that checks the file, named in the
            message (:func:`doctor_command`); ``None`` for an in-memory store.
    """

    def __init__(self, message: str, reason: str | None = None, check_command: str | None = None) -> None:
        super().__init__(message)
        self.reason = reason or message
        self.check_command = check_command


#: ``PRAGMA application_id`` of every store rankscope creates ("RANK" in
#: ASCII). A database without it is never written to.
APPLICATION_ID = 0x52414E4B
_SQLITE_HEADER = b"SQLite format 3\x00"
#: Primary SQLite result codes that mean a damaged file.
_CORRUPT_CODES = (11, 26)  # SQLITE_CORRUPT, SQLITE_NOTADB
_READONLY_CODE = 8  # SQLITE_READONLY
_CANTOPEN_CODE = 14  # SQLITE_CANTOPEN


_primary_code = sql.primary_code


def is_corruption(exc: BaseException) -> bool:
    """True when an SQLite error says the database file is damaged."""
    return _primary_code(exc) in _CORRUPT_CODES or "malformed" in str(exc)


def sqlite_store_error(exc: BaseException, path: str | None, action: str = "read") -> StoreError:
    """The :class:`StoreError` to raise for an SQLite error on the store at ``path``.

    A damaged file gives :class:`CorruptStoreError` (with the command that
    checks it); a write refused because the file or folder is read-only says
    so; a text value that is not valid UTF-8 (read without
    :func:`engine.store.sql.text`) says so; anything else keeps SQLite's words.
    """
    where = path or "(in-memory store)"
    if isinstance(exc, UnicodeDecodeError):
        return StoreError(f"cannot {action} {where}: a text value is not valid UTF-8 ({exc.reason})")
    words = str(exc) or type(exc).__name__
    if is_corruption(exc):
        return CorruptStoreError(
            f"{where} is damaged: SQLite says '{words}'.{integrity_hint(path)}",
            reason=f"SQLite says '{words}'",
            check_command=doctor_command(path),
        )
    if _primary_code(exc) == _READONLY_CODE or "readonly database" in words:
        return StoreError(f"cannot write to {where}: SQLite says '{words}' (the file or its folder is not writable)")
    if _primary_code(exc) == _CANTOPEN_CODE:
        return StoreError(
            f"cannot {action} {where}: SQLite says '{words}' (can the file and its folder be read and written?)"
        )
    return StoreError(f"cannot {action} {where}: SQLite says '{words}'")


def doctor_command(path: str | None) -> str | None:
    """``rankscope doctor --db PATH`` (shell-quoted), or ``None`` in memory:
    the check a damaged-store message names."""
    return f"rankscope doctor --db {shlex.quote(path)}" if path else None


def integrity_hint(path: str | None) -> str:
    """The sentence every damaged-store message ends with (``""`` in memory):
    ``rankscope doctor`` runs SQLite's integrity_check and FTS5's
    integrity-check on a private copy (SQLite's own check alone passes a
    store whose FTS5 shadow tables are missing or damaged)."""
    if not path:
        return ""
    return f" Check it with: {doctor_command(path)} (or sqlite3 {shlex.quote(path)} 'PRAGMA integrity_check')"


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


#: Shadow tables FTS5 keeps for each table of the reference schema.
FTS_SHADOWS = ("data", "idx", "content", "docsize", "config")


@contextmanager
def sqlite_errors(path: str | None, action: str = "read") -> Iterator[None]:
    """Turn an SQLite error (:data:`engine.store.sql.Error`) raised inside the
    block into the :class:`StoreError` of :func:`sqlite_store_error`."""
    try:
        yield
    except (sql.Error, UnicodeDecodeError) as exc:
        raise sqlite_store_error(exc, path, action) from exc


def read_application_id(path: str | os.PathLike[str]) -> int | None:
    """``PRAGMA application_id`` read straight from the file header (bytes
    68-71), without opening SQLite; ``None`` when the file is not an SQLite
    database (or too short to hold a header)."""
    with open(path, "rb") as fh:
        header = fh.read(100)
    if len(header) < 100 or not header.startswith(_SQLITE_HEADER):
        return None
    return int.from_bytes(header[68:72], "big")


def _describe_foreign(p: str, app_id: int | None) -> str:
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


@dataclass(frozen=True)
class TableMerge:
    """One FTS table's index at a :meth:`Store.merge_index`.

    Attributes:
        table: ``chunks`` or ``chunks_trigram``.
        before, after: segments before and after (``None``: the structure
            record could not be read).
        merged: FTS5's ``optimize`` ran on it.
    """

    table: str
    before: int | None
    after: int | None
    merged: bool


@dataclass(frozen=True)
class MergeReport:
    """What :meth:`Store.merge_index` did.

    Attributes:
        tables: one entry per FTS table, in :data:`FTS_TABLES` order.
        elapsed_ms: wall clock of the whole call (milliseconds).
    """

    tables: tuple[TableMerge, ...]
    elapsed_ms: float

    @property
    def merged(self) -> bool:
        """True when at least one table was merged."""
        return any(t.merged for t in self.tables)


@dataclass(frozen=True)
class IndexResult:
    """Outcome of indexing one label.

    Attributes:
        label: the source label.
        source_id: new ``sources.id``.
        kind: chunker used (``markdown``/``json``/``plain``; a JSON file that
            failed to parse reports ``plain``).
        chunks: chunks stored.
        code_chunks: of which ``code``.
        bytes: UTF-8 size of the indexed text.
        vocabulary_added: new vocabulary words.
    """

    label: str
    source_id: int
    kind: str
    chunks: int
    code_chunks: int
    bytes: int
    vocabulary_added: int


def kind_for_path(path: str | os.PathLike[str]) -> str:
    """Chunker for a file name: ``.md`` markdown, ``.json`` JSON, else plain
    (extension compared case-insensitively)."""
    suffix = Path(path).suffix.lower()
    return {".md": "markdown", ".json": "json"}.get(suffix, "plain")


def backing_path(path: str | os.PathLike[str], kind: str) -> str | None:
    """The ``sources.file_path`` to record for a file indexed as ``kind``:
    its resolved absolute path for markdown (the reference makes only
    markdown read from a file stale-refreshable), else ``None``."""
    return str(Path(path).resolve()) if kind == "markdown" else None


def vocabulary_words(text: str) -> list[str]:
    """Words the reference adds to ``vocabulary`` for ``text``: lower-cased,
    split on runs of characters that are not letters, digits, ``_`` or ``-``;
    3+ UTF-16 code units; stopwords dropped; first occurrence order."""
    seen: dict[str, None] = {}
    for word in _VOCAB_SPLIT.split(js_to_lower(text)):
        if word not in seen and utf16_len(word) >= 3 and word not in STOPWORDS:
            seen[word] = None
    return list(seen)


def _journal_is_wal(p: str) -> bool:
    """True when the database header of ``p`` says WAL (file format bytes 18
    and 19 are 2); False for a rollback-journal database or an unreadable
    header."""
    try:
        with open(p, "rb") as fh:
            header = fh.read(20)
    except OSError:
        return False
    return len(header) >= 20 and header[18] == 2 and header[19] == 2


#: How a read-only store is read (:attr:`Store.read_mode`):
#:
#: * ``"live"`` — ``mode=ro`` on the file itself, with SQLite's locks: a
#:   WAL store whose ``-wal`` and ``-shm`` exist (a writer is, or was, there:
#:   reading creates nothing), or a rollback-journal store (readers never
#:   create a file there). Safe against any writer.
#: * ``"immutable"`` — ``immutable=1``: a WAL store with no ``-wal`` (nobody
#:   is writing). ``mode=ro`` would create ``-wal``/``-shm`` (and leave them);
#:   the price is that SQLite neither locks nor notices changes, so the files
#:   are checked before every search (:meth:`Store.reopen_if_writer_started`)
#:   and a read during which they changed is repeated (:meth:`Store.reading`).
#: * ``"copy"`` — a WAL store with a non-empty ``-wal`` but no ``-shm`` (its
#:   writer was killed): SQLite would create ``-shm`` beside it, so the
#:   database and its WAL are copied to a private temporary folder, the WAL
#:   replayed there, and the copy read ``immutable``.
READ_MODES = ("live", "immutable", "copy")


def _read_mode_for(p: str) -> str:
    """The :data:`READ_MODES` entry to read ``p`` with, from the files beside it now."""
    wal = _file_signature(p + "-wal")
    if wal is not None and (wal[1] > 0 or os.path.exists(p + "-shm")):
        return "live" if os.path.exists(p + "-shm") else "copy"
    return "immutable" if _journal_is_wal(p) else "live"


def _readonly_flags(p: str) -> str:
    """URI flags for a read-only open of ``p`` itself: ``mode=ro`` for a
    ``"live"`` read (:data:`READ_MODES`), ``mode=ro&immutable=1`` otherwise
    (an immutable read creates nothing; a ``"copy"`` read goes through
    :meth:`Store.open_readonly`, not here)."""
    return "mode=ro" if _read_mode_for(p) == "live" else "mode=ro&immutable=1"


def _files_signature(p: str) -> tuple:
    """``(mtime ns, size)`` (or ``None``) of ``p`` and of its ``-wal``,
    ``-shm`` and ``-journal``: changes whenever a writer touches the store."""
    return tuple(_file_signature(p + suffix) for suffix in ("", "-wal", "-shm", "-journal"))


def _private_copy(p: str) -> tuple[str, str]:
    """Copy ``p`` and its ``-wal`` into a new private temporary folder and
    replay the WAL into the copy (nothing is written next to ``p``).

    Returns:
        ``(folder, copied database path)``; the caller removes the folder.

    Raises:
        StoreError: the copy cannot be made (disk full, unreadable file).
    """
    import shutil
    import tempfile

    folder = tempfile.mkdtemp(prefix="rankscope-ro-")
    target = os.path.join(folder, "store.db")
    try:
        shutil.copyfile(p, target)
        try:
            shutil.copyfile(p + "-wal", target + "-wal")
        except FileNotFoundError:
            pass  # checkpointed and removed meanwhile: the main file is complete
        conn = sql.connect(target)
        try:
            conn.execute("PRAGMA journal_mode=DELETE").fetchall()  # checkpoints the WAL into the copy
        finally:
            conn.close()
    except (OSError, sql.Error) as exc:
        shutil.rmtree(folder, ignore_errors=True)
        raise StoreError(
            f"cannot read {p}: its -wal file has no -shm beside it (its writer was killed), and a private "
            f"copy to read it through could not be made in {os.path.dirname(folder)} ({exc})"
        ) from exc
    return folder, target


def _mmap_safe(p: str, mode: str) -> bool:
    """Whether a read-only read of ``p`` in ``mode`` may use a memory map: a
    private copy, or an ``immutable`` read of a store rankscope created
    (whose writers never shrink the file). Never a live store or a foreign
    one read ``immutable``: a writer that appears and shrinks the file (a
    ``VACUUM``) would fault a mapped read (SIGBUS) instead of failing it."""
    if mode == "copy":
        return True
    try:
        return mode == "immutable" and read_application_id(p) == APPLICATION_ID
    except OSError:
        return False


#: Attempts at a read that fails (or reads files that changed under it)
#: because another process is writing the store, and the first pause
#: between two of them (seconds; doubled each time up to :data:`RETRY_MAX_DELAY_S`).
READ_ATTEMPTS = 12
RETRY_DELAY_S = 0.005
RETRY_MAX_DELAY_S = 0.1
#: Primary result codes a concurrent writer can cause: SQLITE_BUSY,
#: SQLITE_LOCKED, SQLITE_IOERR (a short read of a file being truncated),
#: SQLITE_CORRUPT, SQLITE_CANTOPEN (a ``-wal`` removed while opening),
#: SQLITE_SCHEMA, SQLITE_NOTADB.
_TRANSIENT_CODES = (5, 6, 10, 11, 14, 17, 26)


def is_transient(exc: BaseException) -> bool:
    """True when ``exc`` may come from another process changing the store
    while it was read (see :data:`_TRANSIENT_CODES`), or from a connection
    closed by a reopen in another thread."""
    import apsw

    return isinstance(exc, apsw.ConnectionClosedError) or is_corruption(exc) or (_primary_code(exc) in _TRANSIENT_CODES)


#: Store files up to this size are read through a memory map of this size
#: (measured: about 12% less search time at 100,000 chunks, 302 MiB; no gain
#: at 1,000,000, 3 GiB, where the map would only add the file's pages to the
#: process's resident size). Larger files are read as usual.
MMAP_BYTES = 512 * 2**20

#: Store files at least this large run a pass's two retrievers at once when
#: a core is free (:attr:`Store.parallel`): about 1,000 chunks of prose.
#: Measured on the 2-core machine, idle, npm docs, with SQLite's memory
#: statistics off (docs/performance.md): at 1,437 chunks (5 MiB) −14% p50
#: against one after the other, at 10,059 chunks (31 MiB) −8% p50 and −14%
#: p95; smaller statements take well under a millisecond.
PARALLEL_MIN_BYTES = 4 * 2**20
#: The second retriever goes to another thread only while other processes
#: leave a core free: their CPU use, averaged since the last reading, below
#: the core count minus this many cores. On a saturated machine handing a
#: statement over costs 0.5-2 ms and gains nothing (measured at load 5 on 2
#: cores). This process's own threads do not count: a search's second
#: retriever must not switch the next search's off.
PARALLEL_OTHERS_MARGIN = 1.0
#: CPU use is read at most this often (seconds); between readings the last
#: answer stands.
_CPU_TTL_S = 1.0
#: The last reading: (monotonic time, system busy CPU seconds or None, this
#: process's CPU seconds, the answer); time -inf before the first.
_cpu_seen: tuple[float, float | None, float, bool] = (float("-inf"), None, 0.0, True)


def _system_busy_seconds() -> float | None:
    """CPU seconds all cores have spent busy since boot (``/proc/stat``:
    user + nice + system + irq + softirq + steal; idle and iowait are not
    busy), or ``None`` where ``/proc/stat`` cannot be read (not Linux)."""
    try:
        with open("/proc/stat", "rb") as fh:
            fields = fh.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != b"cpu" or len(fields) < 5:
        return None
    ticks = [int(x) for x in fields[1:9]]
    idle = ticks[3] + (ticks[4] if len(ticks) > 4 else 0)
    return (sum(ticks) - idle) / os.sysconf("SC_CLK_TCK")


def core_free() -> bool:
    """True when this machine has at least two cores and other processes
    leave one of them free: the CPU seconds the whole machine was busy
    (:func:`_system_busy_seconds`) minus this process's own
    (``time.process_time``, every thread), per second since the previous
    reading, is below ``cores -`` :data:`PARALLEL_OTHERS_MARGIN`. Read at
    most once a second (:data:`_CPU_TTL_S`); the first reading says True.
    Where ``/proc/stat`` is missing, the one-minute load average stands in
    (``os.getloadavg() < cores - 0.5``; False when that is missing too)."""
    global _cpu_seen
    now = time.monotonic()
    seen_at, busy_then, own_then, free = _cpu_seen
    if now - seen_at < _CPU_TTL_S:
        return free
    cores = os.cpu_count() or 1
    busy, own = _system_busy_seconds(), time.process_time()
    if cores < 2:
        free = False
    elif busy is None:
        try:
            free = os.getloadavg()[0] < cores - 0.5
        except OSError:
            free = False
    elif busy_then is None:
        free = True
    else:
        others = max(0.0, (busy - busy_then) - (own - own_then)) / max(now - seen_at, 1e-9)
        free = others < cores - PARALLEL_OTHERS_MARGIN
    _cpu_seen = (now, busy, own, free)
    return free


#: Retriever runs kept per store (a compare, a why-not and a few variants of
#: the last searches).
RUN_CACHE_SIZE = 256
#: Phrase row counts kept per store (:attr:`Store.phrase_rows`).
PHRASE_ROWS_CACHE_SIZE = 4096
#: Fuzzy corrections kept per store (the reference's ``FUZZY_CACHE_SIZE``).
CORRECTION_CACHE_SIZE = 256


def _file_signature(path: str) -> tuple[int, int] | None:
    """``(mtime ns, size)`` of ``path``, or ``None`` when it does not exist."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size)


def _rollback(conn: sql.Connection) -> None:
    """Roll back if a transaction is open. An interrupt can land just after
    ``COMMIT``; a bare ``ROLLBACK`` would then raise and hide it."""
    if conn.in_transaction:
        conn.execute("ROLLBACK")


def _now_iso() -> str:
    now = _dt.datetime.now(_dt.timezone.utc)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


def _delete_label_rows(conn: sql.Connection, label: str) -> int:
    """Delete a label's chunks (both FTS tables) and source rows inside the
    caller's transaction; returns the chunks removed from ``chunks``.

    Same rows as the reference's ``DELETE ... WHERE source_id IN (SELECT id
    FROM sources WHERE label = ?)``, but without its full FTS table scans
    (``source_id`` is UNINDEXED, so re-indexing every file of a store was
    quadratic): a label with no source row (every new file) costs one
    indexed lookup, and the chunks of one that has are found through
    :data:`SOURCE_INDEX_SQL` on the content shadow table and deleted by rowid.
    """
    ids = [row[0] for row in conn.execute("SELECT id FROM sources WHERE label = ?", (label,))]
    if not ids:
        return 0
    marks = ",".join("?" * len(ids))
    removed = 0
    for table in FTS_TABLES:
        conn.execute(SOURCE_INDEX_SQL.format(table=table))
        rowids = [(r[0],) for r in conn.execute(f"SELECT id FROM {table}_content WHERE c2 IN ({marks})", ids)]
        conn.executemany(f"DELETE FROM {table} WHERE rowid = ?", rowids)
        if table == "chunks":
            removed = len(rowids)
    conn.execute("DELETE FROM sources WHERE label = ?", (label,))
    return removed


#: In rankscope's own stores (the only ones written), an index on the
#: ``source_id`` column (``c2``) of each FTS table's ``_content`` shadow
#: table, created on the first re-index; SQLite keeps it up to date as FTS5
#: writes. context-mode ignores it; searches never use it.
SOURCE_INDEX_SQL = "CREATE INDEX IF NOT EXISTS rankscope_{table}_source ON {table}_content(c2)"


def _reads(method):
    """Store read method: SQLite errors become :class:`StoreError` (a damaged
    file :class:`CorruptStoreError`) naming the store's path."""
    import functools

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        with sqlite_errors(self.path):
            return method(self, *args, **kwargs)

    return wrapper


class Store:
    """A content store on one SQLite file (or in memory).

    Use :meth:`create`, :meth:`open_writable` or :meth:`open_readonly`; do
    not call the constructor directly. :meth:`connect` returns a fresh
    connection for another thread (in-memory stores share one connection
    under a lock). Close with :meth:`close` or use as a context manager.
    """

    def __init__(self, path: str | None, read_only: bool, conn: sql.Connection, schema: SchemaInfo):
        self.path = path
        self.read_only = read_only
        self.conn = conn
        self.schema = schema
        self.lock = threading.RLock()
        #: Retriever runs by run key (retriever, sanitised query, filters) and row
        #: count, per data version: the one run cache, read through
        #: :class:`engine.pipeline.runcache.RunCache` handles.
        self.runs: VersionedLRU[dict[int, Any]] = VersionedLRU(RUN_CACHE_SIZE)
        #: Fuzzy corrections by word, per data version (the reference keeps 256).
        self.corrections: VersionedLRU = VersionedLRU(CORRECTION_CACHE_SIZE)
        #: Rows each FTS5 phrase matches, by ``(table, phrase)``, per data
        #: version: the counts :func:`engine.pipeline.stages.topk.top_k` starts from (a
        #: query typed letter by letter, a fuzzy re-run, a what-if re-run
        #: share most of their phrases).
        self.phrase_rows: VersionedLRU = VersionedLRU(PHRASE_ROWS_CACHE_SIZE)
        #: The stale-source answer, kept current between searches.
        self.freshness = Freshness()
        self._side_lock = threading.Lock()
        #: A connection that only reads ``PRAGMA data_version`` (see :meth:`data_version`).
        self._sentinel: sql.Connection | None = None
        #: Idle read connections for a search's second retriever, by URI flags.
        self._readers: dict[tuple[str | None, str], list[sql.Connection]] = {}
        #: Bumped when the main connection is replaced (:meth:`reopen_if_writer_started`).
        self._generation = 0
        #: How a read-only store is read (:data:`READ_MODES`); ``"live"`` for a writable one.
        self.read_mode = "live"
        #: The file connections open: :attr:`path`, or the private copy of a ``"copy"`` read.
        self._read_path = path
        #: URI flags of read-only connections (``""`` for a writable store).
        self._flags = ""
        #: The private folder of a ``"copy"`` read (removed on reopen and close).
        self._copy_dir: str | None = None
        #: :func:`_files_signature` of :attr:`path` when the main connection was opened.
        self._opened_signature: tuple | None = None
        #: Read-only connections use a memory map (see :func:`_mmap_safe`).
        self._mmap = False
        #: Chunks written through this handle since its last full merge, and
        #: the chunks the store held then (``None``: not read yet); see
        #: :data:`MERGE_MIN_ROWS`.
        self._rows_since_merge = 0
        self._rows_at_merge: int | None = None

    # ── opening ────────────────────────────────────────────────────────

    @classmethod
    def create(cls, path: str | os.PathLike[str] = ":memory:") -> "Store":
        """Create a writable store at ``path`` (or open one rankscope created
        earlier); ``":memory:"`` for a scratch store. A new store is marked
        with :data:`APPLICATION_ID`, gets the schema and the WAL journal.

        Creation is atomic (:meth:`_create_file`): the store is built under a
        temporary name in the same folder and linked into place complete, so
        a second run starting at the same moment never sees a half-made file
        (it uses whichever store was placed first), and a failure (a full
        disk) leaves nothing at ``path``. A store of ours that an older
        version left half-created gets its missing tables here.

        Raises:
            NotADatabaseError: ``path`` exists and is not an SQLite file.
            NotOurStoreError: ``path`` is an SQLite database rankscope did not
                create (checked before anything is written).
            SchemaError: an existing DB has a different schema.
            StoreError: the folder does not exist or is not writable.
        """
        p = str(path)
        fresh = True
        if p != ":memory:":
            parent = Path(p).resolve().parent
            if not parent.is_dir():
                raise StoreError(f"cannot create store {p}: folder {parent} does not exist")
            fresh = not cls._has_content(p)
            if fresh:
                cls._check_writable(p, create=True)
                cls._create_file(p)
                fresh = False
            if not fresh:
                if not os.path.isdir(p) and (not os.path.exists(p) or os.path.getsize(p) == 0):
                    raise StoreError(
                        f"cannot create store {p}: a {os.path.basename(p)}-wal file of some other database is "
                        "beside it (SQLite would replay it); remove it or choose another name"
                    )
                cls._check_file(p)
                cls._check_owned(p)
            cls._check_writable(p, create=fresh)
        with sqlite_errors(p, "create"):
            conn = cls._raw_connect(p, read_only=False)
        try:
            if fresh:
                # First, before WAL: the mark then sits in the main file's header.
                conn.execute(f"PRAGMA application_id={APPLICATION_ID}")
            if p != ":memory:":
                conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA busy_timeout=30000")
            conn.executescript(SCHEMA_SQL)
        except sql.Error as exc:
            conn.close()
            if is_corruption(exc) or _primary_code(exc) == _READONLY_CODE or "readonly" in str(exc):
                raise sqlite_store_error(exc, p, "create") from exc
            raise NotADatabaseError(f"{p} is not a usable SQLite database: {exc}") from exc
        schema = cls._inspect(conn, p)
        if schema.fts_columns < 8:
            conn.close()
            raise SchemaError(
                f"{p} has the older 4-column FTS schema; rankscope will not migrate it. Open it read-only instead."
            )
        return cls(None if p == ":memory:" else p, False, conn, schema)

    @staticmethod
    def _create_file(p: str) -> None:
        """Place a new, complete, empty store at ``p``: built (mark, WAL,
        schema) in ``.NAME.RANDOM.creating`` beside it, then hard-linked to
        ``p``, which fails if ``p`` appeared meanwhile (another run won the
        race: its store is used; an empty file is replaced). Where hard links are not supported the file
        is renamed into place unless ``p`` exists by then. The temporary
        files are removed in every case.

        Raises:
            StoreError: SQLite could not build the store (disk full, I/O).
        """
        import secrets

        folder, name = os.path.split(os.path.abspath(p))
        tmp = os.path.join(folder, f".{name}.{secrets.token_hex(6)}.creating")
        try:
            with sqlite_errors(p, "create"):
                conn = sql.connect(tmp)
                try:
                    # First, before WAL: the mark then sits in the main file's header.
                    conn.execute(f"PRAGMA application_id={APPLICATION_ID}")
                    conn.execute("PRAGMA journal_mode=WAL")
                    conn.executescript(SCHEMA_SQL)
                finally:
                    conn.close()  # the last connection: the WAL is checkpointed into tmp
            try:
                os.link(tmp, p)
            except FileExistsError:
                # Another run placed its store first (use it), or an empty
                # file was there (SQLite reads it as an empty database).
                if not os.path.isfile(p):
                    raise StoreError(
                        f"cannot create store {p}: a FIFO, device or dangling symbolic link is "
                        "at that path; choose another name"
                    ) from None
                if os.path.getsize(p) == 0:
                    os.replace(tmp, p)
            except OSError:
                if not os.path.exists(p):
                    os.replace(tmp, p)
        except OSError as exc:
            raise StoreError(f"cannot create store {p}: {exc.strerror or exc}") from exc
        finally:
            for leftover in (tmp, tmp + "-wal", tmp + "-shm", tmp + "-journal"):
                try:
                    os.unlink(leftover)
                except OSError:
                    pass

    @staticmethod
    def _has_content(p: str) -> bool:
        """True when ``p`` holds a database already: a non-empty file (or a
        folder), or an empty file with a non-empty ``-wal`` beside it. A
        missing or empty file is a new store (SQLite reads it as empty)."""
        try:
            if os.path.isdir(p) or os.path.getsize(p) > 0:
                return True
        except OSError:
            pass
        try:
            return os.path.getsize(p + "-wal") > 0
        except OSError:
            return False

    @staticmethod
    def _check_writable(p: str, create: bool = False) -> None:
        """Refuse early, with a clear message, a store SQLite could not write:
        a read-only file, or a folder where the file (or its ``-wal`` and
        ``-shm`` side files) cannot be created. (Root passes ``os.access``;
        SQLite's own errors are then mapped by :func:`sqlite_store_error`.)

        Raises:
            StoreError: naming the path and what is not writable.
        """
        folder = os.path.dirname(os.path.abspath(p))
        if not create and os.path.exists(p) and not os.access(p, os.W_OK):
            raise StoreError(f"cannot write to {p}: the file is read-only")
        if not os.access(folder, os.W_OK | os.X_OK):
            what = f"cannot create store {p}" if create else f"cannot write to {p}"
            raise StoreError(
                f"{what}: its folder {folder} is not writable (SQLite keeps its -wal and -shm files there)"
            )

    @staticmethod
    def _check_owned(p: str) -> None:
        """Refuse a database rankscope did not create (no :data:`APPLICATION_ID`
        in its header). Reads the header only; writes nothing.

        Raises:
            NotOurStoreError: the mark is missing.
        """
        try:
            app_id = read_application_id(p)
        except OSError as exc:
            raise StoreError(f"cannot read {p}: {exc.strerror or exc}") from exc
        if app_id == APPLICATION_ID:
            return
        raise NotOurStoreError(
            f"refusing to write to {p}: it is not a rankscope store ({_describe_foreign(p, app_id)}); "
            "rankscope never writes to stores it did not create; index into a new --db instead"
        )

    @classmethod
    def open_writable(cls, path: str | os.PathLike[str]) -> "Store":
        """Open an existing store for writing. It must be one rankscope
        created (:meth:`create` marks it); anything else is refused before a
        connection is even opened.

        Raises:
            StoreNotFoundError, NotADatabaseError, NotOurStoreError, SchemaError.
        """
        p = str(path)
        cls._check_file(p)
        cls._check_owned(p)
        cls._check_writable(p)
        with sqlite_errors(p, "open"):
            conn = cls._raw_connect(p, read_only=False)
        schema = cls._inspect(conn, p)
        conn.execute("PRAGMA busy_timeout=30000")
        return cls(p, False, conn, schema)

    @classmethod
    def open_readonly(cls, path: str | os.PathLike[str]) -> "Store":
        """Open any content store without ever writing to it.

        Raises:
            StoreNotFoundError: no file at ``path``.
            NotADatabaseError: not SQLite, or corrupt.
            SchemaError: SQLite, but not a content store.
        """
        p = str(path)
        cls._check_file(p)
        store: Store | None = None
        last: StoreError | None = None
        stable_failures = 0
        delay = RETRY_DELAY_S
        for _ in range(READ_ATTEMPTS):
            before = _files_signature(p)
            try:
                store = cls._open_readonly_once(p)
                return store
            except StoreError as exc:
                cause = exc.__cause__
                if cause is None or not is_transient(cause):
                    raise
                # A writer may have changed the files while they were read:
                # only two failures in a row on unchanged files are believed.
                stable_failures = stable_failures + 1 if _files_signature(p) == before else 0
                last = exc
                if stable_failures >= 2:
                    raise
            time.sleep(delay)
            delay = min(delay * 2, RETRY_MAX_DELAY_S)
        assert last is not None
        raise last

    @classmethod
    def _open_readonly_once(cls, p: str) -> "Store":
        mode = _read_mode_for(p)
        copy_dir, read_path = _private_copy(p) if mode == "copy" else (None, p)
        flags = "mode=ro" if mode == "live" else "mode=ro&immutable=1"
        signature = _files_signature(p)
        try:
            with sqlite_errors(p, "open"):
                conn = cls._raw_connect(read_path, read_only=True, flags=flags, mmap=_mmap_safe(p, mode))
            schema = cls._inspect(conn, p)
        except BaseException:
            if copy_dir:
                import shutil

                shutil.rmtree(copy_dir, ignore_errors=True)
            raise
        store = cls(p, True, conn, schema)
        store._set_read_mode(mode, read_path, flags, copy_dir, signature)
        return store

    def _set_read_mode(self, mode: str, read_path: str, flags: str, copy_dir: str | None, signature: tuple) -> None:
        self.read_mode, self._read_path, self._flags = mode, read_path, flags
        self.immutable = mode != "live"
        self._mmap = _mmap_safe(self.path, mode) if self.path else False
        old_copy, self._copy_dir = self._copy_dir, copy_dir
        self._opened_signature = signature
        if old_copy and old_copy != copy_dir:
            import shutil

            shutil.rmtree(old_copy, ignore_errors=True)

    open = open_readonly

    @staticmethod
    def _check_file(p: str) -> None:
        if p == ":memory:":
            raise StoreError("an in-memory store cannot be reopened; use Store.create()")
        if not os.path.exists(p):
            raise StoreNotFoundError(f"no database at {p}")
        if os.path.isdir(p):
            raise NotADatabaseError(f"{p} is a folder, not a database file")
        try:
            mode = os.stat(p).st_mode
        except OSError as exc:
            raise StoreError(f"cannot read {p}: {exc.strerror or exc}") from exc
        if not stat.S_ISREG(mode):  # opening a FIFO would wait for a writer forever
            raise NotADatabaseError(f"{p} is not a database file (a FIFO, socket or device)")
        try:
            with open(p, "rb") as fh:
                header = fh.read(16)
        except OSError as exc:
            raise StoreError(f"cannot read {p}: {exc.strerror or exc}") from exc
        if header != _SQLITE_HEADER:
            raise NotADatabaseError(f"{p} is not an SQLite database (header {header[:16]!r})")

    @staticmethod
    def _raw_connect(p: str, read_only: bool, flags: str | None = None, *, mmap: bool | None = None) -> sql.Connection:
        """A connection to ``p``: read-only ones through a URI with ``flags``
        (default :func:`_readonly_flags`). ``mmap`` (default: for a writable
        connection, or an ``immutable`` one) reads a file of at most
        :data:`MMAP_BYTES` through a memory map (no copy of each page read).
        Never for a store another program may be writing (``mode=ro`` on a
        live WAL store): a writer that shrinks the file would fault a mapped
        read."""
        if read_only:
            uri_path = quote(os.path.abspath(p))
            flags = flags or _readonly_flags(p)
            conn = sql.connect(f"file:{uri_path}?{flags}", read_only=True, uri=True)
        else:
            conn = sql.connect(p)
        conn.read_path = p
        if mmap is None:
            mmap = not read_only or "immutable=1" in (flags or "")
        if mmap and p != ":memory:" and (_file_signature(p) or (0, 0))[1] <= MMAP_BYTES:
            try:
                conn.execute(f"PRAGMA mmap_size={MMAP_BYTES}").fetchall()
            except sql.Error:
                pass  # not a database (the caller's next read says so) or no mmap here: read as usual
        return conn

    @staticmethod
    def _inspect(conn: sql.Connection, p: str) -> SchemaInfo:
        try:
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table','view')")}
        except (sql.Error, UnicodeDecodeError) as exc:
            conn.close()
            if _primary_code(exc) in (_READONLY_CODE, _CANTOPEN_CODE) or is_corruption(exc):
                raise sqlite_store_error(exc, p, "open") from exc
            raise NotADatabaseError(f"{p} is not a readable SQLite database: {exc}") from exc
        missing = [t for t in ("sources", "chunks", "chunks_trigram") if t not in tables]
        if missing:
            conn.close()
            raise SchemaError(f"{p} is not a context-mode content store: missing table(s) {', '.join(missing)}")
        try:
            cols = [r[1] for r in conn.execute("SELECT * FROM pragma_table_xinfo('chunks')")]
            src_cols = {r[1] for r in conn.execute("SELECT * FROM pragma_table_xinfo('sources')")}
        except (sql.Error, UnicodeDecodeError) as exc:
            conn.close()
            if not fts5_available():
                raise SchemaError(f"{p}: cannot read the chunks table ({exc}): this SQLite has no FTS5") from exc
            missing = [f"{t}_{x}" for t in FTS_TABLES for x in FTS_SHADOWS if f"{t}_{x}" not in tables]
            lost = f"; missing: {', '.join(missing)}" if missing else ""
            reason = f"its FTS5 table chunks cannot be opened (SQLite says '{exc}'{lost})"
            raise CorruptStoreError(
                f"{p} is damaged: {reason}.{integrity_hint(p)}", reason=reason, check_command=doctor_command(p)
            ) from exc
        unopenable = [f"chunks_{x}" for x in ("data", "config") if f"chunks_{x}" not in tables]
        if unopenable:
            # SQLite 3.40 refused to read the table's columns without these;
            # 3.54 reads them and fails at the first query instead.
            conn.close()
            missing = [f"{t}_{x}" for t in FTS_TABLES for x in FTS_SHADOWS if f"{t}_{x}" not in tables]
            reason = f"its FTS5 table chunks cannot be opened (missing: {', '.join(missing)})"
            raise CorruptStoreError(
                f"{p} is damaged: {reason}.{integrity_hint(p)}", reason=reason, check_command=doctor_command(p)
            )
        visible = [c for c in cols if c not in ("chunks", "rank")]
        for needed in ("title", "content", "source_id", "content_type"):
            if needed not in visible:
                conn.close()
                raise SchemaError(f"{p}: table chunks lacks column {needed!r}")
        return SchemaInfo(
            fts_columns=len(visible),
            has_session="session_id" in visible,
            has_vocabulary="vocabulary" in tables,
            has_file_columns={"file_path", "content_hash"} <= src_cols,
        )

    #: Read-only store read with ``immutable=1`` (:attr:`read_mode` ``"immutable"`` or ``"copy"``).
    immutable = False

    def reopen_if_writer_started(self, *, force: bool = False) -> bool:
        """Keep a read-only store readable, and right, whatever a writer does
        next to it; called before every search (:meth:`reading`).

        A store opened while nobody wrote it is read ``immutable``: SQLite
        reads the main file only and neither locks it nor notices a change.
        So the files are looked at (four ``stat`` calls): when the read mode
        they call for (:data:`READ_MODES`) is not the current one (a writer
        started: read through its WAL), or an ``immutable``/``copy`` read's
        files changed since it was opened (a writer came and went), the main
        connection is reopened (still read-only; idle side connections are
        dropped). ``force`` reopens in any case (after a failed read).
        Connections from :meth:`connect` follow the current mode.

        Returns:
            ``True`` when it reopened.

        Raises:
            StoreError: a ``"copy"`` read's private copy cannot be made.
            engine.store.sql.Error: the file cannot be opened.
        """
        if not (self.read_only and self.path):
            return False
        mode = _read_mode_for(self.path)
        signature = _files_signature(self.path)
        if not force and mode == self.read_mode and (mode == "live" or signature == self._opened_signature):
            return False
        with self.lock:
            copy_dir, read_path = _private_copy(self.path) if mode == "copy" else (None, self.path)
            flags = "mode=ro" if mode == "live" else "mode=ro&immutable=1"
            try:
                conn = self._raw_connect(read_path, read_only=True, flags=flags, mmap=_mmap_safe(self.path, mode))
            except BaseException:
                if copy_dir:
                    import shutil

                    shutil.rmtree(copy_dir, ignore_errors=True)
                raise
            old, self.conn = self.conn, conn
            self._generation += 1
            with self._side_lock:
                side = [c for idle in self._readers.values() for c in idle]
                if self._sentinel is not None:
                    side.append(self._sentinel)
                self._readers, self._sentinel = {}, None
            for c in [old, *side]:
                try:
                    c.close()
                except sql.Error:
                    pass
            self._set_read_mode(mode, read_path, flags, copy_dir, signature)
        return True

    def connect(self) -> sql.Connection:
        """A new connection to the same file, for use in another thread.

        Read-only stores get a read-only connection, read the way the main
        connection reads (:attr:`read_mode`). For an in-memory store the
        shared connection is returned (guard it with :attr:`lock`).
        """
        if self.path is None:
            return self.conn
        if not self.read_only:
            return self._raw_connect(self.path, read_only=False)
        return self._raw_connect(
            self._read_path,  # type: ignore[arg-type]  # a file store: set when it was opened
            read_only=True,
            flags=self._flags,
            mmap=self._mmap,
        )

    def _current(self, conn: sql.Connection) -> bool:
        """True when ``conn`` reads the way the store reads now."""
        return (
            conn is self.conn
            or not self.read_only
            or (getattr(conn, "read_path", None) == self._read_path and conn.uri_flags == self._flags)
        )

    def reading(self, work, conn: sql.Connection | None = None, action: str = "read"):
        """``work(c)`` with a connection ``c`` to this store (``conn``, or the
        store's own), retried while another process writing the store makes
        it fail or read files that changed under it.

        Before each attempt :meth:`reopen_if_writer_started` matches the read
        mode to the files; a ``conn`` that no longer reads that way is
        replaced by a fresh connection for the call. An attempt that raises
        an SQLite error :func:`is_transient` calls transient (busy, locked,
        ``database disk image is malformed``, ...) is repeated on a reopened
        connection after a pause (:data:`RETRY_DELAY_S`, doubling), at most
        :data:`READ_ATTEMPTS` times. The store is called damaged only when
        two attempts in a row fail with a damage code on files that did not
        change (a stable snapshot agrees). An ``immutable`` read whose files
        changed while it ran is repeated too (its answer may mix two
        versions); after the last attempt its answer is returned.

        Returns:
            What ``work`` returns.

        Raises:
            CorruptStoreError: the file is damaged (confirmed as above).
            StoreError: any other SQLite failure, or one that persisted
                through every attempt; the message names the path.
        """
        if self.path is None:
            with sqlite_errors(self.path, action):
                return work(conn or self.conn)
        delay = RETRY_DELAY_S
        stable_failures = 0
        last_failure: tuple | None = None
        for attempt in range(READ_ATTEMPTS):
            final = attempt == READ_ATTEMPTS - 1
            with sqlite_errors(self.path, action):
                self.reopen_if_writer_started(force=attempt > 0 and last_failure is not None)
            c = conn if conn is not None and self._current(conn) else (self.connect() if conn is not None else None)
            own = c is not None and c is not conn
            before = _files_signature(self.path)
            try:
                result = work(c)
            except (sql.Error, UnicodeDecodeError) as exc:
                if not is_transient(exc):
                    raise sqlite_store_error(exc, self.path, action) from exc
                after = _files_signature(self.path)
                stable = after == before and (last_failure is None or last_failure == after)
                stable_failures = stable_failures + 1 if stable else 0
                last_failure = after
                if final or (stable_failures >= 2 and is_corruption(exc)):
                    raise sqlite_store_error(exc, self.path, action) from exc
            else:
                if not (self.read_only and self.immutable) or final or _files_signature(self.path) == before:
                    return result
                last_failure = None  # the answer may mix two versions: read again (the files changed, so reopen)
            finally:
                if own:
                    c.close()  # type: ignore[union-attr]
            time.sleep(delay)
            delay = min(delay * 2, RETRY_MAX_DELAY_S)
        raise AssertionError("unreachable")

    @contextmanager
    def using(self, conn: sql.Connection | None = None) -> Iterator[sql.Connection]:
        """Yield ``conn`` (default: the store's own connection), holding
        :attr:`lock` when it is the shared connection (re-entrant), so engine
        functions can be called from any thread with their own connection."""
        c = conn or self.conn
        if c is self.conn:
            with self.lock:
                yield c
        else:
            yield c

    @contextmanager
    def thread_connection(self) -> Iterator[sql.Connection]:
        """:meth:`connect` for one unit of work in a worker thread: the
        connection is closed afterwards (the shared connection of an
        in-memory store is left open; engine functions lock it themselves,
        other readers should hold :attr:`lock`)."""
        conn = self.connect()
        try:
            yield conn
        finally:
            if conn is not self.conn:
                conn.close()

    def close(self) -> None:
        """Close the main connection, the side connections and the stale-source
        watcher (idempotent). Waits for :attr:`lock` before closing the main
        connection: a worker thread searching on the shared connection (an
        in-memory store's only one) finishes first; closing a connection
        another thread is inside crashes the interpreter (SIGSEGV in SQLite)."""
        self.freshness.close()
        with self._side_lock:
            side = [c for idle in self._readers.values() for c in idle]
            if self._sentinel is not None:
                side.append(self._sentinel)
            self._readers, self._sentinel = {}, None
        for c in side:
            try:
                c.close()
            except sql.Error:
                pass
        with self.lock:
            try:
                self.conn.close()
            except sql.Error:
                pass
        if self._copy_dir:
            import shutil

            shutil.rmtree(self._copy_dir, ignore_errors=True)
            self._copy_dir = None

    # ── data version, read transactions, side connections ──────────────

    def data_version(self) -> tuple:
        """A token that changes whenever the store's content may have changed:
        any commit by any connection, in this process or another. Caches key
        their entries on it (:mod:`engine.store.cache`).

        * a file store: ``PRAGMA data_version`` of a connection used for
          nothing else (it changes when *another* connection commits, and
          every connection of this store is another one);
        * a read-only store opened ``immutable`` (nobody was writing it): the
          size and mtime of the file and of a ``-wal`` beside it (a writer
          that starts later creates one);
        * an in-memory store: the changes its only connection has made.

        Raises:
            engine.store.sql.Error: the file cannot be read.
        """
        if self.path is None:
            with self.lock:
                return ("memory", self.conn.total_changes())
        if self.read_only and self.immutable:
            return ("immutable", self._generation, _files_signature(self.path))
        with self._side_lock:
            if self._sentinel is None:
                self._sentinel = self._raw_connect(self.path, read_only=True, flags="mode=ro", mmap=False)
            version = self._sentinel.execute("PRAGMA data_version").fetchone()[0]
        return ("file", self._generation, version)

    def begin_read(self, conn: sql.Connection) -> bool:
        """``BEGIN`` a read transaction on ``conn`` (one snapshot for every
        statement until :meth:`end_read`), noting the data version read just
        before it in ``conn.read_version``. Does nothing when ``conn`` is
        already in a transaction (its snapshot may predate any version read
        now, so ``read_version`` is left unset and caches stay out).

        Returns:
            Whether a transaction was begun (pass it to :meth:`end_read`).
        """
        if conn.in_transaction:
            return False
        conn.read_version = self.data_version()
        conn.execute("BEGIN")
        return True

    def end_read(self, conn: sql.Connection, began: bool, *, failed: bool = False) -> None:
        """End the transaction :meth:`begin_read` began (``COMMIT``; ``ROLLBACK``
        when ``failed``, ignoring an error then: the one propagating says more)."""
        if not began:
            return
        conn.read_version = None
        if not conn.in_transaction:
            return
        if not failed:
            try:
                conn.execute("COMMIT")
                return
            except sql.Error:
                # A read transaction has nothing to commit; FTS5 can still
                # repeat an error a retriever already recorded (SQLite 3.54
                # with a missing shadow table). Every read succeeded: end it.
                if not conn.in_transaction:
                    return
        try:
            conn.execute("ROLLBACK")
        except sql.Error:
            pass

    #: Run a pass's two retrievers at once: ``True``, ``False`` (one after the
    #: other) or ``None``: when the store file holds at least
    #: :data:`PARALLEL_MIN_BYTES` (below that, statements take well under a
    #: millisecond and handing one to another thread costs more than it saves)
    #: and a core is free (:func:`core_free`).
    parallel: bool | None = None

    def can_read_in_parallel(self, conn: sql.Connection) -> bool:
        """True when a second connection can read what ``conn`` reads (a file
        store, with ``conn`` inside a :meth:`begin_read` transaction) and
        :attr:`parallel` asks for it."""
        if self.path is None or getattr(conn, "read_version", None) is None or not conn.in_transaction:
            return False
        if self.parallel is None:
            sig = _file_signature(self.path)
            return sig is not None and sig[1] >= PARALLEL_MIN_BYTES and core_free()
        return self.parallel

    @contextmanager
    def parallel_reader(self, conn: sql.Connection) -> Iterator[sql.Connection | None]:
        """A second read connection in a transaction that sees the same
        snapshot as ``conn`` (inside :meth:`begin_read`), or ``None`` when that
        cannot be guaranteed (another connection committed between the two
        snapshots): then read everything on ``conn``.

        Both snapshots are taken, then the data version is read again: equal
        to ``conn.read_version`` (read before ``conn``'s snapshot) means no
        commit happened in between, so both see the same rows.
        """
        flags = conn.uri_flags or "mode=ro"
        key = (getattr(conn, "read_path", None) or self.path, flags)
        with self._side_lock:
            idle = self._readers.setdefault(key, [])
            reader = idle.pop() if idle else None
        if reader is None:
            reader = self._raw_connect(
                key[0],  # type: ignore[arg-type]  # a side reader exists only for a file store
                read_only=True,
                flags=flags,
                mmap=not self.read_only or (self._mmap and key == (self._read_path, self._flags)),
            )
        ok = False
        try:
            conn.execute("PRAGMA schema_version").fetchone()  # takes conn's snapshot if it has none yet
            reader.execute("BEGIN")
            reader.execute("PRAGMA schema_version").fetchone()
            same = "immutable=1" in flags or self.data_version() == conn.read_version
            yield reader if same else None
            ok = True
        finally:
            try:
                if reader.in_transaction:
                    reader.execute("COMMIT" if ok else "ROLLBACK")
            except sql.Error:
                ok = False
            if ok:
                with self._side_lock:
                    self._readers.setdefault(key, []).append(reader)
            else:
                try:
                    reader.close()
                except sql.Error:
                    pass

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ── indexing ───────────────────────────────────────────────────────

    def _require_writable(self) -> None:
        if self.read_only:
            raise ReadOnlyStoreError(f"{self.path} is open read-only; rankscope never writes to it")

    def index_text(
        self,
        label: str,
        text: str,
        kind: str = "markdown",
        *,
        session_id: str = "",
        event_id: str = "",
        file_path: str | None = None,
        max_chunk_bytes: int = MAX_CHUNK_BYTES,
        content_hash: str | None = None,
    ) -> IndexResult:
        """Chunk ``text`` with the ``kind`` chunker and store it under ``label``.

        One transaction replaces any earlier content of ``label`` (both FTS
        tables and the source row, with its ``content_hash``) and adds the
        vocabulary: an interruption leaves either the old label or the new
        one, never a mix. (The reference commits the vocabulary separately;
        the rows written are the same, in the same order.)

        Args:
            label: source label (e.g. a relative path).
            text: the decoded text.
            kind: ``"markdown"``, ``"json"`` or ``"plain"``.
            session_id: attribution stored on every chunk (``""`` = none).
            file_path: makes the source file-backed (stale refresh); the
                reference records it for markdown read from a file.
            content_hash: SHA-256 to record on the source row; by default
                the text's SHA-256 for file-backed sources, else ``NULL``.

        Raises:
            ReadOnlyStoreError: the store is read-only.
            ValueError: unknown ``kind``.
        """
        self._require_writable()
        if kind == "markdown":
            drafts, used = chunk_markdown(text, max_chunk_bytes), "markdown"
        elif kind == "json":
            drafts, used = chunk_json(text, max_chunk_bytes)
        elif kind == "plain":
            drafts, used = chunk_plain_text(text, max_chunk_bytes=max_chunk_bytes), "plain"
        else:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}; got {kind!r}")
        if content_hash is None and file_path is not None:
            content_hash = sha256_text(text)
        return self._insert(label, drafts, text, used, session_id, event_id, file_path, content_hash)

    def _insert(
        self,
        label: str,
        drafts: list[ChunkDraft],
        text: str,
        kind: str,
        session_id: str,
        event_id: str,
        file_path: str | None,
        content_hash: str | None,
    ) -> IndexResult:
        code = sum(1 for d in drafts if d.has_code)
        now = _now_iso()
        with sqlite_errors(self.path, "write to"), self.lock:
            conn = self.conn
            conn.execute("BEGIN IMMEDIATE")
            try:
                _delete_label_rows(conn, label)
                conn.execute(
                    "INSERT INTO sources (label, chunk_count, code_chunk_count, file_path, content_hash) VALUES (?, ?, ?, ?, ?)",
                    (label, len(drafts), code, file_path, content_hash),
                )
                source_id = conn.last_insert_rowid()
                rows = [
                    (
                        to_storage_bytes(d.title),
                        to_storage_bytes(d.content),
                        float(source_id),
                        d.content_type,
                        None,
                        session_id,
                        event_id,
                        now,
                    )
                    for d in drafts
                ]
                for row in rows:
                    for table in FTS_TABLES:
                        conn.execute(
                            f"INSERT INTO {table} (title, content, source_id, content_type, source_category, "
                            "session_id, event_id, timestamp) VALUES (CAST(? AS TEXT), CAST(? AS TEXT), ?, ?, ?, ?, ?, ?)",
                            row,
                        )
                added = 0
                if text:
                    before = conn.total_changes()
                    conn.executemany(
                        "INSERT OR IGNORE INTO vocabulary (word) VALUES (?)", ((w,) for w in vocabulary_words(text))
                    )
                    added = conn.total_changes() - before
                conn.execute("COMMIT")
            except BaseException:
                _rollback(conn)
                raise
            self._rows_since_merge += len(drafts)
            if self._rows_at_merge is None:
                self._rows_at_merge = indexed_rows(conn, FTS_TABLES[0])
            if self._rows_since_merge >= max(MERGE_MIN_ROWS, self._rows_at_merge):
                self.merge_index(full=True)
        return IndexResult(label, int(source_id), kind, len(drafts), code, len(to_storage_bytes(text)), added)

    def index_file(
        self,
        path: str | os.PathLike[str],
        label: str | None = None,
        *,
        session_id: str = "",
        kind: str | None = None,
    ) -> IndexResult:
        """Read a file and index it; the kind comes from its extension.

        Bytes are decoded as UTF-8 like Node (invalid sequences become
        U+FFFD). Markdown sources are file-backed (``file_path`` and SHA-256
        recorded) as in the reference; every kind records its SHA-256, in
        the same transaction as the chunks.

        Raises:
            OSError: the file cannot be read.
            ReadOnlyStoreError: the store is read-only.
        """
        self._require_writable()
        p = Path(path)
        if not p.is_file():
            raise OSError(f"refusing to index {p}: not a regular file")
        text = decode_utf8_like_node(p.read_bytes())
        k = kind or kind_for_path(p)
        lbl = label if label is not None else str(p)
        return self.index_text(
            lbl,
            text,
            k,
            session_id=session_id,
            file_path=backing_path(p, k),
            content_hash=sha256_text(text),
        )

    def merge_index(self, *, full: bool = False) -> MergeReport:
        """Merge each FTS table's index into one segment (FTS5's
        ``optimize``, both tables in one transaction), as context-mode does
        every 50 inserted sources and on close. A table already in one
        segment is left alone. Unless ``full``, a table is merged only when
        that is cheap or due (:data:`MERGE_ALWAYS_PAGES`,
        :data:`MERGE_SHARE`): what an indexing run calls at its end.

        Raises:
            ReadOnlyStoreError: the store is read-only (nothing is written
                to a store rankscope did not create).
            StoreError: the store cannot be written.
        """
        self._require_writable()
        start = time.perf_counter()
        with sqlite_errors(self.path, "write to"), self.lock:
            conn = self.conn
            conn.execute("BEGIN IMMEDIATE")
            try:
                plan: list[tuple[str, Structure | None, bool]] = []
                for table in FTS_TABLES:
                    s = read_structure(conn, table)
                    due = s is not None and s.count > 1
                    if due and not full and s is not None:
                        due = s.pages <= MERGE_ALWAYS_PAGES or s.outside_largest >= MERGE_SHARE * s.pages
                    if due:
                        optimize(conn, table)
                    plan.append((table, s, due))
                tables = []
                for table, s, due in plan:
                    after = read_structure(conn, table) if due else s
                    tables.append(TableMerge(table, s.count if s else None, after.count if after else None, due))
                conn.execute("COMMIT")
            except BaseException:
                _rollback(conn)
                raise
            if all(t.after is None or t.after <= 1 for t in tables):
                self._rows_since_merge = 0
                self._rows_at_merge = indexed_rows(conn, FTS_TABLES[0])
        return MergeReport(tuple(tables), elapsed_ms(start))

    @_reads
    def index_segments(self, conn: sql.Connection | None = None) -> dict[str, Structure | None]:
        """Each FTS table's index structure (:mod:`engine.store.segments`), by
        table name; ``None`` for a table whose structure record cannot be
        read. Read-only."""
        c = conn or self.conn
        return {table: read_structure(c, table) for table in FTS_TABLES}

    def delete_label(self, label: str) -> int:
        """Remove a label's chunks and source row in one transaction; returns chunks removed.

        Raises:
            ReadOnlyStoreError: the store is read-only.
        """
        self._require_writable()
        with sqlite_errors(self.path, "write to"), self.lock:
            conn = self.conn
            conn.execute("BEGIN IMMEDIATE")
            try:
                n = _delete_label_rows(conn, label)
                conn.execute("COMMIT")
            except BaseException:
                _rollback(conn)
                raise
        return int(n)

    # ── stale sources ──────────────────────────────────────────────────

    @_reads
    def stale_sources(
        self, conn: sql.Connection | None = None
    ) -> tuple[list[tuple[str, str, str]], list[tuple[str, str]]]:
        """File-backed sources whose file changed since indexing (reference
        ``#refreshStaleSources`` test: file exists, mtime after ``indexed_at``,
        SHA-256 differs), every file examined now.

        Returns:
            ``(stale, errors)``: stale is ``[(label, file_path, new_text)]``,
            errors is ``[(label, message)]``. Nothing is written.
        """
        if not self.schema.has_file_columns:
            return [], []
        c = conn or self.conn
        return check_all(load_sources(c))

    @_reads
    def refresh_for_search(self, conn: sql.Connection) -> RefreshReport:
        """The refresh stage before a search on ``conn``: which file-backed
        sources are stale (from :attr:`freshness`, kept current without
        examining every file each time), and, when ``conn`` is this writable
        store's own connection, re-index them first (the reference's
        auto-refresh: each file is read once, and the bytes hashed are the
        bytes indexed). Read-only stores and other connections only report
        what would be refreshed.

        Raises:
            StoreError: the store cannot be read or written.
        """
        start = time.perf_counter()
        if not self.schema.has_file_columns:
            return RefreshReport()
        answer = self.freshness.check(conn, self.data_version())
        report: dict[str, Any] = dict(method=answer.method, age_ms=answer.age_ms, examined=answer.examined)
        if not answer.checked:
            return RefreshReport(elapsed_ms=elapsed_ms(start), **report)
        if self.read_only or conn is not self.conn or not answer.stale:
            return RefreshReport(answer.checked, answer.stale, False, answer.errors, elapsed_ms(start), **report)
        done: list[str] = []
        errors = list(answer.errors)
        for label, file_path, content_hash in answer.paths:
            try:
                text = read_text(file_path)
            except OSError as exc:
                errors.append((label, str(exc)))
                continue
            if sha256_text(text) == content_hash:
                continue  # changed back since it was examined
            self.index_text(label, text, "markdown", file_path=file_path)
            done.append(label)
        return RefreshReport(answer.checked, tuple(done), True, tuple(errors), elapsed_ms(start), **report)

    def refresh_stale(self) -> tuple[list[str], list[tuple[str, str]]]:
        """Re-index stale file-backed sources (writable stores only) as
        markdown, like the reference. Returns ``(labels refreshed, errors)``."""
        self._require_writable()
        stale, errors = self.stale_sources()
        done = []
        for label, file_path, text in stale:
            self.index_text(label, text, "markdown", file_path=file_path)
            done.append(label)
        return done, errors

    # ── reading ────────────────────────────────────────────────────────

    #: Keys of the chunk dicts :meth:`chunk` and :meth:`iter_chunks` return.
    CHUNK_KEYS = ("rowid", "source", "title", "content", "content_type", "session_id", "source_id")

    def _chunk_select(self, join: str) -> str:
        """``SELECT`` of :data:`CHUNK_KEYS` from ``chunks`` ``join``-ed to
        ``sources`` (text read through :func:`engine.store.sql.text`: decode the row
        with :meth:`_chunk_dict`)."""
        t = sql.text
        return (
            f"SELECT chunks.rowid, {t('sources.label')}, {t('chunks.title')}, {t('chunks.content')}, chunks.content_type, "
            f"{t(self.schema.session_column())}, chunks.source_id FROM chunks {join} sources ON sources.id = chunks.source_id "
        )

    def _chunk_dict(self, row: tuple) -> dict:
        rowid, label, title, content, ctype, session, source_id = row
        dec = sql.decode
        return dict(zip(self.CHUNK_KEYS, (rowid, dec(label), dec(title), dec(content), ctype, dec(session), source_id)))

    @_reads
    def chunk(self, rowid: int, conn: sql.Connection | None = None) -> dict | None:
        """One chunk by rowid as a dict (``rowid, source, title, content,
        content_type, session_id, source_id``), or ``None``."""
        c = conn or self.conn
        row = c.execute(self._chunk_select("JOIN") + "WHERE chunks.rowid = ?", (rowid,)).fetchone()
        return None if row is None else self._chunk_dict(row)

    @_reads
    def iter_chunks(self, conn: sql.Connection | None = None, *, with_content: bool = True) -> list[dict]:
        """Every chunk in rowid order (same dict shape as :meth:`chunk`, with
        content; ``with_content=False`` leaves ``content`` ``None``, so a list of a
        million chunks does not hold their text); ``source`` is ``None`` for an
        orphan chunk."""
        c = conn or self.conn
        select = self._chunk_select("LEFT JOIN")
        if not with_content:
            select = select.replace(sql.text("chunks.content"), "NULL", 1)
        rows = c.execute(select + "ORDER BY chunks.rowid").fetchall()
        return [self._chunk_dict(r) for r in rows]

    @_reads
    def sources(self, conn: sql.Connection | None = None) -> list[dict]:
        """Source rows in id order: ``id, label, chunk_count, code_chunk_count,
        indexed_at, file_path, content_hash`` (the last two ``None`` on old stores)."""
        c = conn or self.conn
        extra = "file_path, content_hash" if self.schema.has_file_columns else "NULL, NULL"
        rows = c.execute(
            f"SELECT id, {sql.text('label')}, chunk_count, code_chunk_count, indexed_at, {extra} FROM sources ORDER BY id"
        ).fetchall()
        keys = ("id", "label", "chunk_count", "code_chunk_count", "indexed_at", "file_path", "content_hash")
        return [dict(zip(keys, (r[0], sql.decode(r[1])) + tuple(r[2:]))) for r in rows]

    @_reads
    def source_labels(self, conn: sql.Connection | None = None) -> list[str]:
        """Every source label, in id order (one pass over ``sources``)."""
        c = conn or self.conn
        return [sql.decode(r[0]) or "" for r in c.execute(f"SELECT {sql.text('label')} FROM sources ORDER BY id")]

    @_reads
    def session_counts(self, conn: sql.Connection | None = None) -> list[tuple[str, int]]:
        """``(session_id, chunks)`` pairs, most chunks first (``""`` = unattributed)."""
        c = conn or self.conn
        if not self.schema.has_session:
            n = c.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
            return [("", n)] if n else []
        rows = c.execute(
            f"SELECT {sql.text(SESSION_OR_EMPTY)}, COUNT(*) FROM chunks GROUP BY 1 ORDER BY 2 DESC, 1"
        ).fetchall()
        return [(str(sql.decode(s)), int(n)) for s, n in rows]

    @_reads
    def recorded_stats(self, conn: sql.Connection | None = None) -> dict:
        """The counts the ``sources`` table records: ``sources``, ``chunks`` and
        ``code_chunks`` (sums of ``chunk_count`` / ``code_chunk_count``),
        ``vocabulary`` (``None`` when the table is missing) and
        ``last_indexed_at`` — what the reference's ``getIndexState`` reads.
        One pass over ``sources``, none over the chunks: fast on any store
        (:meth:`stats` counts the chunks themselves; they differ only on a
        store whose counts are inconsistent, which ``doctor`` reports)."""
        c = conn or self.conn
        sources, chunks, code, last = c.execute(
            "SELECT COUNT(*), COALESCE(SUM(chunk_count), 0), COALESCE(SUM(code_chunk_count), 0), MAX(indexed_at) "
            "FROM sources"
        ).fetchone()
        vocab = c.execute("SELECT COUNT(*) FROM vocabulary").fetchone()[0] if self.schema.has_vocabulary else None
        return {
            "sources": sources,
            "chunks": int(chunks),
            "code_chunks": int(code),
            "vocabulary": vocab,
            "last_indexed_at": last,
        }

    @_reads
    def stats(self, conn: sql.Connection | None = None) -> dict:
        """Counts: ``sources, chunks, code_chunks, vocabulary`` (``None`` when
        the table is missing) and ``last_indexed_at``."""
        c = conn or self.conn
        sources, last = c.execute("SELECT COUNT(*), MAX(indexed_at) FROM sources").fetchone()
        chunks = c.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
        code = c.execute("SELECT COUNT(*) FROM chunks WHERE content_type = 'code'").fetchone()[0]
        vocab = c.execute("SELECT COUNT(*) FROM vocabulary").fetchone()[0] if self.schema.has_vocabulary else None
        return {"sources": sources, "chunks": chunks, "code_chunks": code, "vocabulary": vocab, "last_indexed_at": last}

    @_reads
    def source_hashes(self) -> dict[str, str | None]:
        """``label -> content_hash`` for incremental indexing."""
        if not self.schema.has_file_columns:
            return {}
        return {lbl: h for lbl, h in self.conn.execute("SELECT label, content_hash FROM sources")}


def elapsed_ms(start: float) -> float:
    """Milliseconds since ``start`` (a ``time.perf_counter()`` value)."""
    return (time.perf_counter() - start) * 1000.0
