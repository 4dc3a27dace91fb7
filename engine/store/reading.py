"""Reading a store while other processes may write it: the connections of one
store (:class:`Connections`), its data version, read transactions, reads
retried when a writer disturbed them, and the second connection a pass's
other retriever reads on.

A read-only store is read the way the files beside it call for
(:data:`engine.store.opening.READ_MODES`); the mode is checked again before
every read (:meth:`Connections.reopen_if_writer_started`), and a read that a
concurrent writer disturbed is retried (:meth:`Connections.read`): a store
is called damaged only when a read fails the same way twice on files that
did not change.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from dataclasses import replace
from typing import Callable, Hashable, Iterator, TypeVar

from engine.store import sql
from engine.store.errors import is_corruption, is_transient, sqlite_errors, sqlite_store_error
from engine.store.segments import MergeCounter
from engine.store.opening import (
    READ_ATTEMPTS,
    RETRY_DELAY_S,
    RETRY_MAX_DELAY_S,
    FilesSignature,
    ReadTarget,
    connect_file,
    files_signature,
    open_target,
    read_mode_for,
    remove_copy,
)

T = TypeVar("T")

#: A token that changes whenever a store's content may have changed
#: (:meth:`Connections.data_version`).
DataVersion = tuple[Hashable, ...]


class Connections:
    """The connections of one store: the main one (:attr:`conn`, replaced
    when a writer starts beside a read-only store), idle side readers for a
    pass's second retriever, and the one that reads the data version.

    Attributes:
        path: the store file, ``None`` in memory.
        read_only: opened read-only.
        conn: the main connection.
        target: how connections open the file now (:class:`~engine.store.opening.ReadTarget`).
        lock: guards :attr:`conn` (re-entrant); an in-memory store's only connection.
        generation: bumped each time :attr:`conn` is replaced.
    """

    def __init__(self, path: str | None, read_only: bool, conn: sql.Connection, target: ReadTarget) -> None:
        self.path = path
        self.read_only = read_only
        self.conn = conn
        self.target = target
        self.lock = threading.RLock()
        self.generation = 0
        self._side_lock = threading.Lock()
        #: A connection that only reads ``PRAGMA data_version`` (see :meth:`data_version`).
        self._sentinel: sql.Connection | None = None
        #: Idle read connections for a pass's second retriever, by (file, URI flags).
        self._readers: dict[tuple[str, str], list[sql.Connection]] = {}
        #: Chunks written since the last FTS5 merge (:func:`engine.store.indexing.merge_index`).
        self.merges = MergeCounter()

    # ── the main connection and new ones ───────────────────────────────

    def connect(self) -> sql.Connection:
        """A new connection to the same file, for use in another thread.

        Read-only stores get a read-only connection, read the way the main
        connection reads (:attr:`target`). For an in-memory store the shared
        connection is returned (guard it with :attr:`lock`).

        Raises:
            engine.store.sql.Error: the file cannot be opened.
        """
        if self.path is None:
            return self.conn
        if not self.read_only:
            return connect_file(self.path, read_only=False)
        t = self.target
        return connect_file(t.read_path, read_only=True, flags=t.flags, mmap=t.mmap)

    def is_current(self, conn: sql.Connection) -> bool:
        """True when ``conn`` reads the way the store reads now."""
        return (
            conn is self.conn
            or not self.read_only
            or (conn.read_path == self.target.read_path and conn.uri_flags == self.target.flags)
        )

    def reopen_if_writer_started(self, *, force: bool = False) -> bool:
        """Keep a read-only store readable, and right, whatever a writer does
        next to it; called before every read (:meth:`read`).

        A store opened while nobody wrote it is read ``immutable``: SQLite
        reads the main file only and neither locks it nor notices a change.
        So the files are looked at (four ``stat`` calls): when the read mode
        they call for (:data:`~engine.store.opening.READ_MODES`) is not the
        current one (a writer started: read through its WAL), or an
        ``immutable``/``copy`` read's files changed since it was opened (a
        writer came and went), the main connection is reopened (still
        read-only; idle side connections are dropped). ``force`` reopens in
        any case (after a failed read). Connections from :meth:`connect`
        follow the current mode.

        Returns:
            ``True`` when it reopened.

        Raises:
            StoreError: a ``"copy"`` read's private copy cannot be made.
            engine.store.sql.Error: the file cannot be opened.
        """
        if not (self.read_only and self.path):
            return False
        mode = read_mode_for(self.path)
        if not force and mode == self.target.mode and (mode == "live" or self._unchanged(files_signature(self.path))):
            return False
        with self.lock:
            conn, target = open_target(self.path, mode)
            old, self.conn = self.conn, conn
            self.generation += 1
            for c in [old, *self._drop_side()]:
                try:
                    c.close()
                except sql.Error:
                    pass
            old_copy, self.target = self.target.copy_dir, target
            if old_copy != target.copy_dir:
                remove_copy(old_copy)
        return True

    def _unchanged(self, signature: FilesSignature) -> bool:
        return signature == self.target.signature

    def _drop_side(self) -> list[sql.Connection]:
        """Forget the side connections (the caller closes them)."""
        with self._side_lock:
            side = [c for idle in self._readers.values() for c in idle]
            if self._sentinel is not None:
                side.append(self._sentinel)
            self._readers, self._sentinel = {}, None
        return side

    @contextmanager
    def using(self, conn: sql.Connection | None = None) -> Iterator[sql.Connection]:
        """Yield ``conn`` (default: the main connection), holding :attr:`lock`
        when it is the main connection (re-entrant)."""
        c = conn or self.conn
        if c is self.conn:
            with self.lock:
                yield c
        else:
            yield c

    @contextmanager
    def thread_connection(self) -> Iterator[sql.Connection]:
        """:meth:`connect` for one unit of work in a worker thread, closed
        afterwards (an in-memory store's shared connection is left open)."""
        conn = self.connect()
        try:
            yield conn
        finally:
            if conn is not self.conn:
                conn.close()

    def close(self) -> None:
        """Close the side connections, then the main one, and remove a
        ``"copy"`` read's private copy (idempotent). Waits for :attr:`lock`
        before closing the main connection: a worker thread reading on it
        finishes first; closing a connection another thread is inside crashes
        the interpreter (SIGSEGV in SQLite)."""
        for c in self._drop_side():
            try:
                c.close()
            except sql.Error:
                pass
        with self.lock:
            try:
                self.conn.close()
            except sql.Error:
                pass
        if self.target.copy_dir:
            remove_copy(self.target.copy_dir)
            self.target = replace(self.target, copy_dir=None)

    # ── reads that survive a concurrent writer ─────────────────────────

    def read(
        self, work: Callable[[sql.Connection | None], T], conn: sql.Connection | None = None, action: str = "read"
    ) -> T:
        """``work(c)`` with a connection ``c`` to this store (``conn``, a fresh
        one when ``conn`` no longer reads the way the store reads, or
        ``None`` for the main connection when ``conn`` is ``None``), retried
        while another process writing the store makes it fail or read files
        that changed under it.

        Before each attempt :meth:`reopen_if_writer_started` matches the read
        mode to the files. An attempt that raises an SQLite error
        :func:`~engine.store.errors.is_transient` calls transient (busy,
        locked, ``database disk image is malformed``, ...) is repeated on a
        reopened connection after a pause (:data:`~engine.store.opening.RETRY_DELAY_S`,
        doubling), at most :data:`~engine.store.opening.READ_ATTEMPTS` times.
        The store is called damaged only when two attempts in a row fail with
        a damage code on files that did not change (a stable snapshot
        agrees). An ``immutable`` read whose files changed while it ran is
        repeated too (its answer may mix two versions); after the last
        attempt its answer is returned.

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
        last_failure: FilesSignature | None = None
        for attempt in range(READ_ATTEMPTS):
            final = attempt == READ_ATTEMPTS - 1
            with sqlite_errors(self.path, action):
                self.reopen_if_writer_started(force=attempt > 0 and last_failure is not None)
            c = conn if conn is not None and self.is_current(conn) else (self.connect() if conn is not None else None)
            own = c is not None and c is not conn
            before = files_signature(self.path)
            try:
                result = work(c)
            except (sql.Error, UnicodeDecodeError) as exc:
                if not is_transient(exc):
                    raise sqlite_store_error(exc, self.path, action) from exc
                after = files_signature(self.path)
                stable = after == before and (last_failure is None or last_failure == after)
                stable_failures = stable_failures + 1 if stable else 0
                last_failure = after
                if final or (stable_failures >= 2 and is_corruption(exc)):
                    raise sqlite_store_error(exc, self.path, action) from exc
            else:
                if not (self.read_only and self.target.immutable) or final or files_signature(self.path) == before:
                    return result
                last_failure = None  # the answer may mix two versions: read again (the files changed, so reopen)
            finally:
                if own and c is not None:
                    c.close()
            time.sleep(delay)
            delay = min(delay * 2, RETRY_MAX_DELAY_S)
        raise AssertionError("unreachable")

    # ── data version and read transactions ─────────────────────────────

    def data_version(self) -> DataVersion:
        """A token that changes whenever the store's content may have changed:
        any commit by any connection, in this process or another.

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
        if self.read_only and self.target.immutable:
            return ("immutable", self.generation, files_signature(self.path))
        with self._side_lock:
            if self._sentinel is None:
                self._sentinel = connect_file(self.path, read_only=True, flags="mode=ro", mmap=False)
            version = self._sentinel.execute("PRAGMA data_version").fetchone()[0]
        return ("file", self.generation, version)

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

    @contextmanager
    def snapshot(self, conn: sql.Connection) -> Iterator[sql.Connection]:
        """Yield ``conn`` inside :meth:`begin_read` ... :meth:`end_read`: one
        snapshot for the block, rolled back when the block raises."""
        began = self.begin_read(conn)
        try:
            yield conn
        except BaseException:
            self.end_read(conn, began, failed=True)
            raise
        self.end_read(conn, began)

    @contextmanager
    def parallel_reader(self, conn: sql.Connection) -> Iterator[sql.Connection | None]:
        """A second read connection in a transaction that sees the same
        snapshot as ``conn`` (inside :meth:`begin_read`; a file store), or
        ``None`` when that cannot be guaranteed (another connection committed
        between the two snapshots): then read everything on ``conn``.

        Both snapshots are taken, then the data version is read again: equal
        to ``conn.read_version`` (read before ``conn``'s snapshot) means no
        commit happened in between, so both see the same rows. The reader
        goes back to an idle pool afterwards.
        """
        flags = conn.uri_flags or "mode=ro"
        path = conn.read_path or self.path
        assert path is not None, "a side reader exists only for a file store"
        key = (path, flags)
        with self._side_lock:
            idle = self._readers.setdefault(key, [])
            reader = idle.pop() if idle else None
        if reader is None:
            t = self.target
            mmap = not self.read_only or (t.mmap and key == (t.read_path, t.flags))
            reader = connect_file(path, read_only=True, flags=flags, mmap=mmap)
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
