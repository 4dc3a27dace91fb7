"""The content store: the one handle callers hold on an SQLite content store
(a file, or in memory). Each job lives in its own module, which the
:class:`Store` methods call:

* :mod:`engine.store.opening` — creating, opening for writing, and reading
  anybody's store without writing to it (read modes);
* :mod:`engine.store.reading` — the connections, the data version, read
  transactions, reads retried when a writer disturbed them;
* :mod:`engine.store.parallel` — when a pass's two retrievers run at once;
* :mod:`engine.store.indexing` — writing chunks, deleting labels,
  refreshing stale file-backed sources;
* :mod:`engine.store.rows` — chunks, sources and counts as typed rows;
* :mod:`engine.store.schema` and :mod:`engine.store.errors` — the schema
  and the :class:`~engine.store.errors.StoreError` family.

Every SQL value is a bound parameter.
"""

from __future__ import annotations

import functools
import os
from contextlib import AbstractContextManager
from typing import Any, Callable, TypeVar

from typing_extensions import Concatenate, ParamSpec

from engine.store import indexing, opening, parallel, rows, sql
from engine.store.cache import VersionedLRU
from engine.store.errors import sqlite_errors
from engine.store.freshness import Freshness, RefreshReport
from engine.store.opening import ReadMode, ReadTarget
from engine.store.reading import Connections, DataVersion
from engine.store.rows import ChunkRow, SourceRow, StoreCounts
from engine.store.schema import FTS_TABLES, SchemaInfo
from engine.store.segments import Structure, read_structure

T = TypeVar("T")
R = TypeVar("R")
P = ParamSpec("P")

#: Retriever runs kept per store (a compare, a why-not and a few variants of
#: the last searches).
RUN_CACHE_SIZE = 256
#: Phrase row counts kept per store (:attr:`Store.phrase_rows`).
PHRASE_ROWS_CACHE_SIZE = 4096
#: Tables whose rows are grouped for filters, kept per store (:attr:`Store.kept_rows`).
KEPT_ROWS_CACHE_SIZE = 4
#: Fuzzy corrections kept per store (the reference's ``FUZZY_CACHE_SIZE``).
CORRECTION_CACHE_SIZE = 256


def _on_connections(job: Callable[Concatenate[Connections, P], R]) -> Callable[Concatenate[Store, P], R]:
    """A :class:`Store` method that calls ``job`` (a function of
    :mod:`engine.store.indexing`) on the store's connections, with the
    job's own signature and docstring."""

    @functools.wraps(job)
    def method(self: Store, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return job(self.connections, *args, **kwargs)

    return method


class Store:
    """A content store on one SQLite file (or in memory).

    Use :meth:`create`, :meth:`open_writable` or :meth:`open_readonly`; do
    not call the constructor directly. :meth:`connect` returns a fresh
    connection for another thread (in-memory stores share one connection
    under :attr:`lock`). Close with :meth:`close` or use as a context manager.

    Attributes:
        path: the store file, ``None`` in memory.
        read_only: opened read-only (never written).
        schema: what kind of content store it is.
        connections: its connections (:class:`~engine.store.reading.Connections`).
        lock: guards the main connection (re-entrant).
        runs: retriever runs by run key and row count, per data version: the
            one run cache, read through :class:`engine.pipeline.runcache.RunCache` handles.
        corrections: fuzzy corrections by word, per data version (the reference keeps 256).
        phrase_rows: rows each FTS5 phrase matches, by ``(table, phrase)``,
            per data version (:func:`engine.pipeline.stages.topk.top_k`).
        kept_rows: each large FTS5 table's rows grouped for the retrievers'
            filters, by table, per data version (:mod:`engine.pipeline.stages.kept`).
        freshness: the stale-source answer, kept current between searches.
        parallel: run a pass's two retrievers at once: ``True``, ``False``,
            or ``None`` to decide per pass (:func:`engine.store.parallel.can_read_in_parallel`).
    """

    def __init__(
        self, path: str | None, read_only: bool, conn: sql.Connection, schema: SchemaInfo, target: ReadTarget
    ) -> None:
        self.path = path
        self.read_only = read_only
        self.schema = schema
        self.connections = Connections(path, read_only, conn, target)
        self.lock = self.connections.lock
        self.runs: VersionedLRU[dict[int, Any]] = VersionedLRU(RUN_CACHE_SIZE)
        self.corrections: VersionedLRU[Any] = VersionedLRU(CORRECTION_CACHE_SIZE)
        self.phrase_rows: VersionedLRU[int] = VersionedLRU(PHRASE_ROWS_CACHE_SIZE)
        self.kept_rows: VersionedLRU[object] = VersionedLRU(KEPT_ROWS_CACHE_SIZE)
        self.freshness = Freshness()
        self.parallel: bool | None = None

    # ── opening ────────────────────────────────────────────────────────

    @classmethod
    def create(cls, path: str | os.PathLike[str] = ":memory:") -> Store:
        """Create a writable store at ``path`` (or open one rankscope created
        earlier); ``":memory:"`` for a scratch store (:func:`engine.store.opening.create`)."""
        p = str(path)
        conn, schema = opening.create(p)
        stored = None if p == ":memory:" else p
        return cls(stored, False, conn, schema, opening.writable_target(stored))

    @classmethod
    def open_writable(cls, path: str | os.PathLike[str]) -> Store:
        """Open an existing store rankscope created, for writing
        (:func:`engine.store.opening.open_writable`)."""
        p = str(path)
        conn, schema = opening.open_writable(p)
        return cls(p, False, conn, schema, opening.writable_target(p))

    @classmethod
    def open_readonly(cls, path: str | os.PathLike[str]) -> Store:
        """Open any content store without ever writing to it
        (:func:`engine.store.opening.open_readonly`)."""
        p = str(path)
        conn, schema, target = opening.open_readonly(p)
        return cls(p, True, conn, schema, target)

    open = open_readonly

    @property
    def conn(self) -> sql.Connection:
        """The main connection (replaced when a writer starts beside a read-only store)."""
        return self.connections.conn

    @property
    def read_mode(self) -> ReadMode:
        """How the store is read (:data:`engine.store.opening.READ_MODES`; ``"live"`` when writable)."""
        return self.connections.target.mode

    @property
    def immutable(self) -> bool:
        """Read-only and read with ``immutable=1`` (:attr:`read_mode` ``"immutable"`` or ``"copy"``)."""
        return self.read_only and self.connections.target.immutable

    def reopen_if_writer_started(self, *, force: bool = False) -> bool:
        """:meth:`engine.store.reading.Connections.reopen_if_writer_started`."""
        return self.connections.reopen_if_writer_started(force=force)

    def connect(self) -> sql.Connection:
        """:meth:`engine.store.reading.Connections.connect`: a new connection for another thread."""
        return self.connections.connect()

    def using(self, conn: sql.Connection | None = None) -> AbstractContextManager[sql.Connection]:
        """:meth:`engine.store.reading.Connections.using`: ``conn`` or the main connection, locked."""
        return self.connections.using(conn)

    def thread_connection(self) -> AbstractContextManager[sql.Connection]:
        """:meth:`engine.store.reading.Connections.thread_connection`: a connection for one unit of work."""
        return self.connections.thread_connection()

    def close(self) -> None:
        """Close the stale-source watcher and every connection (idempotent)."""
        self.freshness.close()
        self.connections.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ── reading ────────────────────────────────────────────────────────

    def reading(
        self, work: Callable[[sql.Connection | None], T], conn: sql.Connection | None = None, action: str = "read"
    ) -> T:
        """``work(c)`` retried while a writer disturbs it (:meth:`engine.store.reading.Connections.read`)."""
        return self.connections.read(work, conn, action)

    def data_version(self) -> DataVersion:
        """:meth:`engine.store.reading.Connections.data_version`: changes with any commit."""
        return self.connections.data_version()

    def begin_read(self, conn: sql.Connection) -> bool:
        """:meth:`engine.store.reading.Connections.begin_read`: one snapshot on ``conn``."""
        return self.connections.begin_read(conn)

    def end_read(self, conn: sql.Connection, began: bool, *, failed: bool = False) -> None:
        """:meth:`engine.store.reading.Connections.end_read`."""
        self.connections.end_read(conn, began, failed=failed)

    def snapshot(self, conn: sql.Connection) -> AbstractContextManager[sql.Connection]:
        """:meth:`engine.store.reading.Connections.snapshot`: one read transaction around a block."""
        return self.connections.snapshot(conn)

    def can_read_in_parallel(self, conn: sql.Connection) -> bool:
        """:func:`engine.store.parallel.can_read_in_parallel` with :attr:`parallel`."""
        return parallel.can_read_in_parallel(self.path, conn, self.parallel)

    def parallel_reader(self, conn: sql.Connection) -> AbstractContextManager[sql.Connection | None]:
        """:meth:`engine.store.reading.Connections.parallel_reader`: a second
        connection on ``conn``'s snapshot, or ``None``."""
        return self.connections.parallel_reader(conn)

    # ── rows (:mod:`engine.store.rows`; a failed read raises StoreError naming the path) ──

    def _rows(self, query: Callable[[sql.Connection, SchemaInfo], T], conn: sql.Connection | None) -> T:
        """``query`` on ``conn``, or on the main connection holding :attr:`lock`
        (an in-memory store's writer holds it for its whole transaction: a
        read from another thread waits for it instead of seeing half a write)."""
        with sqlite_errors(self.path):
            if conn is not None:
                return query(conn, self.schema)
            with self.lock:
                return query(self.conn, self.schema)

    def chunk(self, rowid: int, conn: sql.Connection | None = None) -> ChunkRow | None:
        """:func:`engine.store.rows.chunk`: the chunk at ``rowid``, or ``None``."""
        return self._rows(lambda c, schema: rows.chunk(c, schema, rowid), conn)

    def iter_chunks(self, conn: sql.Connection | None = None, *, with_content: bool = True) -> list[ChunkRow]:
        """:func:`engine.store.rows.iter_chunks`: every chunk in rowid order."""
        return self._rows(lambda c, schema: rows.iter_chunks(c, schema, with_content=with_content), conn)

    def sources(self, conn: sql.Connection | None = None) -> list[SourceRow]:
        """:func:`engine.store.rows.sources`: every source row in id order."""
        return self._rows(rows.sources, conn)

    def source_labels(self, conn: sql.Connection | None = None) -> list[str]:
        """:func:`engine.store.rows.source_labels`: every label in id order."""
        return self._rows(lambda c, _: rows.source_labels(c), conn)

    def source_hashes(self) -> dict[str, str | None]:
        """:func:`engine.store.rows.source_hashes`: ``label -> content_hash``, for incremental indexing."""
        return self._rows(rows.source_hashes, None)

    def session_counts(self, conn: sql.Connection | None = None) -> list[tuple[str, int]]:
        """:func:`engine.store.rows.session_counts`: ``(session_id, chunks)``, most chunks first."""
        return self._rows(rows.session_counts, conn)

    def recorded_stats(self, conn: sql.Connection | None = None) -> StoreCounts:
        """:func:`engine.store.rows.recorded_counts`: the counts ``sources`` records (fast on any store)."""
        return self._rows(rows.recorded_counts, conn)

    def stats(self, conn: sql.Connection | None = None) -> StoreCounts:
        """:func:`engine.store.rows.counts`: the counts, chunks counted."""
        return self._rows(rows.counts, conn)

    # ── writing ────────────────────────────────────────────────────────

    #: :func:`engine.store.indexing.index_text`: chunk ``text`` and store it under ``label``.
    index_text = _on_connections(indexing.index_text)
    #: :func:`engine.store.indexing.delete_label`; returns chunks removed.
    delete_label = _on_connections(indexing.delete_label)
    #: :func:`engine.store.indexing.merge_index`: both FTS5 indexes merged into one segment each.
    merge_index = _on_connections(indexing.merge_index)

    def index_segments(self, conn: sql.Connection | None = None) -> dict[str, Structure | None]:
        """Each FTS table's index structure (:func:`engine.store.segments.read_structure`),
        by table name; ``None`` for a table whose structure record cannot be read. Read-only."""
        return self._rows(lambda c, _: {table: read_structure(c, table) for table in FTS_TABLES}, conn)

    def stale_sources(
        self, conn: sql.Connection | None = None
    ) -> tuple[list[tuple[str, str, str]], list[tuple[str, str]]]:
        """:func:`engine.store.indexing.stale_sources`: ``(stale, errors)``, every file examined now."""
        return indexing.stale_sources(self.connections, self.schema, conn)

    def refresh_for_search(self, conn: sql.Connection) -> RefreshReport:
        """:func:`engine.store.indexing.refresh_for_search`: the refresh stage before a search on ``conn``."""
        return indexing.refresh_for_search(self.connections, self.schema, self.freshness, conn)

    def warm_freshness(self, conn: sql.Connection) -> None:
        """:func:`engine.store.indexing.warm_freshness`: examine the sources now, ahead of the first search."""
        indexing.warm_freshness(self.connections, self.schema, self.freshness, conn)

    def refresh_stale(self) -> tuple[list[str], list[tuple[str, str]]]:
        """:func:`engine.store.indexing.refresh_stale`: ``(labels refreshed, errors)``."""
        return indexing.refresh_stale(self.connections, self.schema)
