"""The store's errors, and how an SQLite error becomes one.

Every store error is a :class:`StoreError` whose message names the path. A
damaged file (``database disk image is malformed``) is a
:class:`CorruptStoreError` (made by :func:`damaged`, the one place its
message is worded) naming the command that checks it, and the ``-wal`` /
``-shm`` files beside it, which can be another database's; any other
SQLite failure while reading or writing a store a :class:`StoreError` with
SQLite's words (:func:`sqlite_store_error`, :func:`sqlite_errors`).
"""

from __future__ import annotations

import os
import shlex
from contextlib import contextmanager
from typing import Iterator, Sequence

from engine.store import sql


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
    lacks the :data:`engine.store.schema.APPLICATION_ID` mark). Nothing was written."""


class CorruptStoreError(NotADatabaseError):
    """SQLite reports the database file as damaged (``SQLITE_CORRUPT`` /
    ``SQLITE_NOTADB``), e.g. ``database disk image is malformed``: when
    opening (a :class:`NotADatabaseError` then) or on any later read.

    Attributes:
        reason: what is wrong, without the path and the hints
            (e.g. ``SQLite says 'database disk image is malformed'``).
        check_command: the command that checks the file, named in the
            message (:func:`doctor_command`); ``None`` for an in-memory store.
        side_files: the ``-wal`` / ``-shm`` files beside the store when it
            failed (:func:`side_files`), named in the message.
    """

    def __init__(
        self,
        message: str,
        reason: str | None = None,
        check_command: str | None = None,
        side_files: tuple[str, ...] = (),
    ) -> None:
        super().__init__(message)
        self.reason = reason or message
        self.check_command = check_command
        self.side_files = side_files


#: Primary SQLite result codes that mean a damaged file: SQLITE_CORRUPT, SQLITE_NOTADB.
CORRUPT_CODES = (11, 26)
#: SQLITE_READONLY.
READONLY_CODE = 8
#: SQLITE_CANTOPEN.
CANTOPEN_CODE = 14
#: Primary result codes a concurrent writer can cause: SQLITE_BUSY,
#: SQLITE_LOCKED, SQLITE_IOERR (a short read of a file being truncated),
#: SQLITE_CORRUPT, SQLITE_CANTOPEN (a ``-wal`` removed while opening),
#: SQLITE_SCHEMA, SQLITE_NOTADB.
TRANSIENT_CODES = (5, 6, 10, 11, 14, 17, 26)


def is_corruption(exc: BaseException) -> bool:
    """True when an SQLite error says the database file is damaged."""
    return sql.primary_code(exc) in CORRUPT_CODES or "malformed" in str(exc)


def is_transient(exc: BaseException) -> bool:
    """True when ``exc`` may come from another process changing the store
    while it was read (:data:`TRANSIENT_CODES`), or from a connection closed
    by a reopen in another thread."""
    return (
        isinstance(exc, sql.ConnectionClosedError) or is_corruption(exc) or (sql.primary_code(exc) in TRANSIENT_CODES)
    )


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


#: The files SQLite keeps beside a database in WAL mode: its write-ahead
#: log and that log's shared-memory index.
SIDE_SUFFIXES = ("-wal", "-shm")


def side_files(path: str | None) -> tuple[str, ...]:
    """The paths of the :data:`SIDE_SUFFIXES` files beside ``path`` that
    exist now, ``-wal`` first (``()`` in memory)."""
    if not path:
        return ()
    return tuple(path + suffix for suffix in SIDE_SUFFIXES if os.path.lexists(path + suffix))


def side_files_hint(files: Sequence[str]) -> str:
    """The sentence a damaged store's message adds when ``files``
    (:func:`side_files`) are beside it (``""`` when none): SQLite applies
    the ``-wal`` beside a database to it whatever database wrote that log,
    so one left by a database this file replaced makes it read as damaged.
    (The store's own ``-wal`` holds its latest changes: the sentence
    advises moving the files only if they are another database's.)"""
    if not files:
        return ""
    names = " and ".join(files)
    are, such, them = ("is", "it is such a file", "it") if len(files) == 1 else ("are", "they are such files", "them")
    return (
        f"{names} {are} beside it: a -wal or -shm file left by another database (one this file replaced) "
        f"makes SQLite read this one as damaged; if {such} and no program is using the database, "
        f"moving {them} away may help."
    )


def damaged(path: str | None, reason: str) -> CorruptStoreError:
    """The :class:`CorruptStoreError` for the store at ``path`` (``None``: in
    memory), damaged as ``reason`` says: ``PATH is damaged: REASON.``, then
    :func:`side_files_hint` and :func:`integrity_hint`, on one line."""
    where = path or "(in-memory store)"
    files = side_files(path)
    hint = side_files_hint(files)
    return CorruptStoreError(
        f"{where} is damaged: {reason}.{' ' + hint if hint else ''}{integrity_hint(path)}",
        reason=reason,
        check_command=doctor_command(path),
        side_files=files,
    )


def sqlite_store_error(exc: BaseException, path: str | None, action: str = "read") -> StoreError:
    """The :class:`StoreError` to raise for an SQLite error on the store at ``path``.

    A damaged file gives :class:`CorruptStoreError` (:func:`damaged`); a write refused because the file or folder is read-only says
    so; a text value that is not valid UTF-8 (read without
    :func:`engine.store.sql.text`) says so; anything else keeps SQLite's words.
    """
    where = path or "(in-memory store)"
    if isinstance(exc, UnicodeDecodeError):
        return StoreError(f"cannot {action} {where}: a text value is not valid UTF-8 ({exc.reason})")
    words = str(exc) or type(exc).__name__
    if is_corruption(exc):
        return damaged(path, f"SQLite says '{words}'")
    if sql.primary_code(exc) == READONLY_CODE or "readonly database" in words:
        return StoreError(f"cannot write to {where}: SQLite says '{words}' (the file or its folder is not writable)")
    if sql.primary_code(exc) == CANTOPEN_CODE:
        return StoreError(
            f"cannot {action} {where}: SQLite says '{words}' (can the file and its folder be read and written?)"
        )
    return StoreError(f"cannot {action} {where}: SQLite says '{words}'")


@contextmanager
def sqlite_errors(path: str | None, action: str = "read") -> Iterator[None]:
    """Turn an SQLite error (:data:`engine.store.sql.Error`) raised inside the
    block into the :class:`StoreError` of :func:`sqlite_store_error`."""
    try:
        yield
    except (sql.Error, UnicodeDecodeError) as exc:
        raise sqlite_store_error(exc, path, action) from exc
