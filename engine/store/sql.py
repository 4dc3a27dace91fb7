"""The SQLite rankscope runs on: the one bundled in the pinned ``apsw`` wheel
(SQLite 3.54, FTS5 with the ``trigram`` tokenizer), behind the small
``sqlite3``-like surface the engine and the browser use.

Why not the standard ``sqlite3`` module: it runs on whatever SQLite the
system's Python was built with (3.40 here; some distributions ship one older
than FTS5's trigram tokenizer, 3.34), and an older SQLite is measurably
slower. Every connection in ``engine/`` and ``tui/`` comes from
:func:`connect`.

Surface (differences from ``sqlite3`` in brackets):

* :func:`connect` — a file path, ``":memory:"``, or a ``file:`` URI with
  query parameters (``mode=ro``, ``immutable=1``); ``read_only`` opens with
  ``SQLITE_OPEN_READONLY``. A 30 s busy timeout, autocommit (no implicit
  ``BEGIN``: the engine writes ``BEGIN``/``COMMIT`` itself, as it did with
  ``isolation_level=None``).
* :class:`Connection` — ``execute`` / ``executemany`` return a cursor with
  ``fetchone`` / ``fetchall`` and iteration (rows are tuples);
  ``executescript``; ``in_transaction``; ``total_changes()`` and
  ``last_insert_rowid()`` [methods, not attributes]; ``close()``;
  ``uri_flags`` (the URI query it was opened with, ``""`` for none);
  :func:`backup` [``sqlite3``'s ``Connection.backup``].
* Text comes back as ``str`` decoded strictly [``sqlite3`` had a
  ``text_factory``]. A column that may hold invalid UTF-8 (the reference can
  store a lone surrogate, e.g. a title cut inside an emoji pair) is selected
  through :func:`text` (``CAST(x AS BLOB)``) and read with :func:`decode`,
  which turns each invalid byte into U+FFFD, as V8 does.
* :data:`Error` — the base class of every SQLite error [``apsw.Error``;
  ``sqlite3.Error``/``DatabaseError``]; :func:`primary_code` gives its
  primary result code (``SQLITE_CORRUPT`` = 11, ...). The store maps these to
  its own :class:`~engine.store.errors.StoreError` classes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator, Protocol, overload

import apsw

#: Version of the SQLite library in use, e.g. ``"3.54.1"``.
SQLITE_VERSION: str = apsw.sqlite_lib_version()
#: The same as a tuple of ints, e.g. ``(3, 54, 1)``.
SQLITE_VERSION_INFO: tuple[int, ...] = tuple(int(x) for x in SQLITE_VERSION.split("."))
#: The apsw wheel's version, e.g. ``"3.54.1.0"``.
APSW_VERSION: str = apsw.apsw_version()

#: Base class of every SQLite error.
Error = apsw.Error
#: Raised by a connection closed (by another thread) while in use.
ConnectionClosedError = apsw.ConnectionClosedError

#: Busy timeout of every connection, milliseconds (``sqlite3``'s ``timeout=30``).
BUSY_TIMEOUT_MS = 30_000


def _memory_statistics_off() -> bool:
    """Turn SQLite's memory statistics off (``SQLITE_CONFIG_MEMSTATUS`` 0),
    as better-sqlite3 builds it (``SQLITE_DEFAULT_MEMSTATUS=0``); the apsw
    wheel keeps them on. With them on, every ``sqlite3_malloc`` and
    ``sqlite3_free`` takes one process-wide mutex, so the two retriever
    statements of a pass, run at once on two connections, queue on it: on
    the 2-core machine, npm docs, 80 queries × 3 rounds, turning it off cut
    the parallel search's p50 by 28% at 1,437 chunks (3.05 → 2.20 ms) and
    15% at 10,059 (5.21 → 4.41 ms), where with it on the parallel search
    was slower than the serial one (docs/performance.md). Nothing in
    rankscope reads SQLite's memory counters (``apsw.memory_used()`` then
    reads 0).

    The option can only change while SQLite is shut down, which is allowed
    only with no connection open: run once, when this module is first
    imported. Returns True when the statistics are off, False when a
    connection made before this import left them as they were.
    """
    if apsw.connections():
        return False
    apsw.shutdown()
    try:
        apsw.config(apsw.SQLITE_CONFIG_MEMSTATUS, 0)
    finally:
        apsw.initialize()
    return True


#: True when SQLite's memory statistics are off (:func:`_memory_statistics_off`).
MEMORY_STATISTICS_OFF: bool = _memory_statistics_off()


def primary_code(exc: BaseException) -> int | None:
    """The primary SQLite result code of ``exc`` (``extended & 0xFF``), or
    ``None`` when it is not an SQLite error."""
    code = getattr(exc, "result", None)
    if not isinstance(code, int):
        return None
    return code & 0xFF


class _Rows(Protocol):
    """What the engine reads from a cursor (typing only)."""

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class Connection(apsw.Connection):
    """An SQLite connection (an :class:`apsw.Connection` with the few
    ``sqlite3`` spellings the engine uses). Safe to use from several threads
    (SQLite serialises calls on one connection); use several connections
    for concurrency."""

    #: URI query the connection was opened with (``"mode=ro&immutable=1"``), or ``""``.
    uri_flags: str = ""
    #: The store's data version noted by ``Store.begin_read`` (``None`` outside its read transaction).
    read_version: Any = None
    #: The file this connection reads (a read-only store may read a private copy), set by ``Store``.
    read_path: str | None = None

    if TYPE_CHECKING:
        # For the type checker only: rows are read positionally by code that
        # knows its query's columns (``SELECT COUNT(*)`` always returns a row),
        # so a row is ``Any`` rather than apsw's ``tuple[SQLiteValue, ...] | None``.
        def execute(  # type: ignore[override]  # narrows apsw's Cursor to what the engine reads
            self,
            statements: str,
            bindings: Any = None,
            *,
            can_cache: bool = True,
            prepare_flags: int = 0,
            explain: int = -1,
        ) -> _Rows: ...

    def executescript(self, script: str) -> None:
        """Run every statement of ``script`` (no rows are returned)."""
        for _ in self.execute(script):
            pass


#: Why a file whose name is not UTF-8 text cannot be opened (the end of a sentence naming it).
NOT_UTF8_NAME = "its name is not UTF-8 text (SQLite opens files by UTF-8 names); rename it or give a link to it"


def utf8_name(name: str) -> bool:
    """Whether SQLite can be given ``name``: a name of undecodable bytes
    reaches Python as lone surrogates, which have no UTF-8 form."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def connect(target: str, *, read_only: bool = False, uri: bool = False) -> Connection:
    """Open ``target``: a path, ``":memory:"`` or (``uri=True``) a
    ``file:PATH?QUERY`` URI. Read-write connections create a missing file.

    Raises:
        Error: SQLite cannot open it (``CantOpenError``, ...), or its name
            is not UTF-8 text (``CantOpenError``: SQLite takes UTF-8 names; a
            name of undecodable bytes comes from Python as lone surrogates).
    """
    if not utf8_name(target):
        raise apsw.CantOpenError(NOT_UTF8_NAME)
    flags = apsw.SQLITE_OPEN_READONLY if read_only else apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE
    if uri:
        flags |= apsw.SQLITE_OPEN_URI
    conn = Connection(target, flags=flags)
    conn.uri_flags = target.partition("?")[2] if uri else ""
    conn.set_busy_timeout(BUSY_TIMEOUT_MS)
    return conn


def table_exists(conn: Connection, name: str) -> bool:
    """Whether the database of ``conn`` has an ordinary table ``name`` (``sqlite_master``)."""
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)).fetchone() is not None


def text(expr: str) -> str:
    """SQL selecting the text ``expr`` as bytes, for :func:`decode`."""
    return f"CAST({expr} AS BLOB)"


@overload
def decode(value: None) -> None: ...
@overload
def decode(value: bytes | str) -> str: ...
def decode(value: bytes | str | None) -> str | None:
    """A text value selected through :func:`text`: UTF-8 decoded, each
    invalid byte read as U+FFFD (as Node reads it); ``None`` stays ``None``."""
    if value is None or isinstance(value, str):
        return value
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return value.decode("utf-8", "replace")


def backup(source: Connection, dest: Connection) -> None:
    """Copy the whole ``main`` database of ``source`` into ``dest`` with
    SQLite's online backup API (``sqlite3``'s ``source.backup(dest)``;
    apsw calls it on the destination). ``source`` may be inside a read
    transaction: the copy is then that snapshot.

    Raises:
        Error: a page cannot be read (a damaged file: ``CorruptError``) or
            written, in SQLite's words for what stopped the copy (the step
            itself reports the destination's "not an error"; the finish
            reports the cause).
    """
    job = dest.backup("main", source, "main")
    try:
        job.step(-1)
    except Error:
        try:
            job.finish()
        except Error as cause:
            raise cause from None
        raise
    job.finish()
