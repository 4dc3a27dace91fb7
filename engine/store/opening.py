"""Opening a store's file: creating one of ours, opening it for writing, and
reading anybody's without ever writing to it.

* :func:`create` / :func:`open_writable` — a store rankscope owns: schema
  created if missing, WAL journal, indexing allowed. Every store
  :func:`create` makes is marked with ``PRAGMA application_id =``
  :data:`~engine.store.schema.APPLICATION_ID`; both refuse
  (:class:`~engine.store.errors.NotOurStoreError`) a database without that
  mark *before* anything is written, so a context-mode store (or any other
  SQLite file) is never modified.
* :func:`open_readonly` — anybody's store: opened with SQLite's read-only URI
  mode, no pragma that writes, nothing migrated, refreshed or optimised, and
  no file created beside it. How it is read (:data:`READ_MODES`, a
  :class:`ReadTarget`) follows the files next to it; a failure a concurrent
  writer may have caused is retried (:data:`READ_ATTEMPTS`).
"""

from __future__ import annotations

import os
import secrets
import shutil
import stat
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Optional
from urllib.parse import quote

from engine.files.reading import file_kind
from engine.files.writing import (
    SQLITE_HEADER,
    database_file_role,
    folder_refusal,
    remove_leftovers,
    removed_on_signal,
    system_refusal,
)
from engine.store import schema, sql
from engine.store.errors import (
    READONLY_CODE,
    NotADatabaseError,
    NotOurStoreError,
    SchemaError,
    StoreError,
    StoreNotFoundError,
    is_corruption,
    is_transient,
    sqlite_errors,
    sqlite_store_error,
)
from engine.store.schema import APPLICATION_ID, SchemaInfo, inspect_schema

#: How a read-only store is read (:attr:`ReadTarget.mode`):
#:
#: * ``"live"`` — ``mode=ro`` on the file itself, with SQLite's locks: a
#:   WAL store whose ``-wal`` and ``-shm`` exist (a writer is, or was, there:
#:   reading creates nothing), or a rollback-journal store (readers never
#:   create a file there). Safe against any writer.
#: * ``"immutable"`` — ``immutable=1``: a WAL store with no ``-wal`` (nobody
#:   is writing). ``mode=ro`` would create ``-wal``/``-shm`` (and leave them);
#:   the price is that SQLite neither locks nor notices changes, so the files
#:   are checked before every search
#:   (:meth:`engine.store.reading.Connections.reopen_if_writer_started`) and a
#:   read during which they changed is repeated
#:   (:meth:`engine.store.reading.Connections.read`).
#: * ``"copy"`` — a WAL store with a non-empty ``-wal`` but no ``-shm`` (its
#:   writer was killed): SQLite would create ``-shm`` beside it, so the
#:   database and its WAL are copied to a private temporary folder, the WAL
#:   replayed there, and the copy read ``immutable``.
READ_MODES = ("live", "immutable", "copy")
ReadMode = Literal["live", "immutable", "copy"]

#: ``(mtime ns, size)`` of a file, or ``None`` when it does not exist.
FileSignature = Optional[tuple[int, int]]
#: :data:`FileSignature` of a store file and of its ``-wal``, ``-shm`` and ``-journal``.
FilesSignature = tuple[FileSignature, ...]

#: Store files up to this size are read through a memory map of this size
#: (measured: about 12% less search time at 100,000 chunks, 302 MiB; no gain
#: at 1,000,000, 3 GiB, where the map would only add the file's pages to the
#: process's resident size). Larger files are read as usual.
MMAP_BYTES = 512 * 2**20

#: Attempts at a read that fails (or reads files that changed under it)
#: because another process is writing the store, and the first pause
#: between two of them (seconds; doubled each time up to :data:`RETRY_MAX_DELAY_S`).
READ_ATTEMPTS = 12
RETRY_DELAY_S = 0.005
RETRY_MAX_DELAY_S = 0.1


@dataclass(frozen=True)
class ReadTarget:
    """How a store's connections open its file.

    Attributes:
        mode: :data:`READ_MODES` entry (``"live"`` for a writable store).
        read_path: the file connections open: the store's path, its private
            copy for a ``"copy"`` read, ``":memory:"`` for an in-memory store.
        flags: URI query of read-only connections (``""`` for a writable store).
        copy_dir: the private folder of a ``"copy"`` read, else ``None``.
        signature: :func:`files_signature` of the store when it was opened
            (``None`` for a writable store).
        mmap: read-only connections use a memory map (:func:`mmap_safe`).
    """

    mode: ReadMode
    read_path: str
    flags: str
    copy_dir: str | None
    signature: FilesSignature | None
    mmap: bool

    @property
    def immutable(self) -> bool:
        """Read with ``immutable=1`` (``"immutable"`` or ``"copy"``)."""
        return self.mode != "live"


def writable_target(path: str | None) -> ReadTarget:
    """The :class:`ReadTarget` of a writable store at ``path`` (``None``: in memory)."""
    return ReadTarget("live", path or ":memory:", "", None, None, False)


def file_signature(path: str) -> FileSignature:
    """``(mtime ns, size)`` of ``path``, or ``None`` when it does not exist."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size)


def files_signature(p: str) -> FilesSignature:
    """:func:`file_signature` of ``p`` and of its ``-wal``, ``-shm`` and
    ``-journal``: changes whenever a writer touches the store."""
    return tuple(file_signature(p + suffix) for suffix in ("", "-wal", "-shm", "-journal"))


def journal_is_wal(p: str) -> bool:
    """True when the database header of ``p`` says WAL (file format bytes 18
    and 19 are 2); False for a rollback-journal database or an unreadable
    header."""
    try:
        with open(p, "rb") as fh:
            header = fh.read(20)
    except OSError:
        return False
    return len(header) >= 20 and header[18] == 2 and header[19] == 2


def read_mode_for(p: str) -> ReadMode:
    """The :data:`READ_MODES` entry to read ``p`` with, from the files beside it now."""
    wal = file_signature(p + "-wal")
    if wal is not None and (wal[1] > 0 or os.path.exists(p + "-shm")):
        return "live" if os.path.exists(p + "-shm") else "copy"
    return "immutable" if journal_is_wal(p) else "live"


def mode_flags(mode: ReadMode) -> str:
    """URI flags of a read-only connection in ``mode``: ``mode=ro`` for a
    ``"live"`` read, ``mode=ro&immutable=1`` otherwise."""
    return "mode=ro" if mode == "live" else "mode=ro&immutable=1"


def readonly_flags(p: str) -> str:
    """URI flags for a read-only open of ``p`` itself: :func:`mode_flags` of
    :func:`read_mode_for` (a ``"copy"`` read goes through :func:`open_target`,
    not here: it gets the immutable flags)."""
    return mode_flags(read_mode_for(p))


def private_copy(p: str) -> tuple[str, str]:
    """Copy ``p`` and its ``-wal`` into a new private temporary folder and
    replay the WAL into the copy (nothing is written next to ``p``).

    Returns:
        ``(folder, copied database path)``; the caller removes the folder
        (:func:`remove_copy`).

    Raises:
        CorruptStoreError: SQLite calls the store with its WAL damaged
            (:func:`~engine.store.errors.sqlite_store_error`).
        StoreError: the copy cannot be made (disk full, unreadable file).
    """
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
        if isinstance(exc, sql.Error) and is_corruption(exc):  # the copy was made: the store with its WAL is damaged
            raise sqlite_store_error(exc, p) from exc
        raise StoreError(
            f"cannot read {p}: its -wal file has no -shm beside it (its writer was killed), and a private "
            f"copy to read it through could not be made in {os.path.dirname(folder)} ({exc})"
        ) from exc
    return folder, target


def remove_copy(copy_dir: str | None) -> None:
    """Remove a ``"copy"`` read's private folder (nothing for ``None``)."""
    if copy_dir:
        shutil.rmtree(copy_dir, ignore_errors=True)


def mmap_safe(p: str, mode: ReadMode) -> bool:
    """Whether a read-only read of ``p`` in ``mode`` may use a memory map: a
    private copy, or an ``immutable`` read of a store rankscope created
    (whose writers never shrink the file). Never a live store or a foreign
    one read ``immutable``: a writer that appears and shrinks the file (a
    ``VACUUM``) would fault a mapped read (SIGBUS) instead of failing it."""
    if mode == "copy":
        return True
    try:
        return mode == "immutable" and schema.read_application_id(p) == APPLICATION_ID
    except OSError:
        return False


def connect_file(p: str, read_only: bool, flags: str | None = None, *, mmap: bool | None = None) -> sql.Connection:
    """A connection to ``p`` (its ``read_path`` set to ``p``): read-only ones
    through a URI with ``flags`` (default :func:`readonly_flags`). ``mmap``
    (default: for a writable connection, or an ``immutable`` one) reads a
    file of at most :data:`MMAP_BYTES` through a memory map (no copy of each
    page read). Never for a store another program may be writing
    (``mode=ro`` on a live WAL store): a writer that shrinks the file would
    fault a mapped read.

    Raises:
        engine.store.sql.Error: SQLite cannot open it.
    """
    if read_only:
        uri_path = quote(os.path.abspath(p))
        flags = flags or readonly_flags(p)
        conn = sql.connect(f"file:{uri_path}?{flags}", read_only=True, uri=True)
    else:
        conn = sql.connect(p)
    conn.read_path = p
    if mmap is None:
        mmap = not read_only or "immutable=1" in (flags or "")
    if mmap and p != ":memory:" and (file_signature(p) or (0, 0))[1] <= MMAP_BYTES:
        try:
            conn.execute(f"PRAGMA mmap_size={MMAP_BYTES}").fetchall()
        except sql.Error:
            pass  # not a database (the caller's next read says so) or no mmap here: read as usual
    return conn


# ── checks before opening ──────────────────────────────────────────────


def check_file(p: str) -> None:
    """Refuse what is not an SQLite database file, reading its header only.

    Raises:
        StoreError: in memory, or the file cannot be read.
        StoreNotFoundError: no file at ``p``.
        NotADatabaseError: a folder, FIFO, socket, device, or not SQLite.
    """
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
        raise NotADatabaseError(f"{p} is {file_kind(mode)}, not a database file")
    try:
        with open(p, "rb") as fh:
            header = fh.read(16)
    except OSError as exc:
        raise StoreError(f"cannot read {p}: {exc.strerror or exc}") from exc
    if header != SQLITE_HEADER:
        raise NotADatabaseError(f"{p} is not an SQLite database (header {header[:16]!r})")


def has_content(p: str) -> bool:
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


def check_writable(p: str, create: bool = False) -> None:
    """Refuse early, with a clear message, a store SQLite could not write:
    a read-only file, or a folder where the file (or its ``-wal`` and
    ``-shm`` side files) cannot be created. (Root passes ``os.access``;
    SQLite's own errors are then mapped by :func:`~engine.store.errors.sqlite_store_error`.)

    Raises:
        StoreError: naming the path and what is not writable.
    """
    folder = os.path.dirname(os.path.abspath(p))
    if not create and os.path.exists(p) and not os.access(p, os.W_OK):
        raise StoreError(f"cannot write to {p}: the file is read-only")
    if not os.access(folder, os.W_OK | os.X_OK):
        what = f"cannot create store {p}" if create else f"cannot write to {p}"
        raise StoreError(f"{what}: its folder {folder} is not writable (SQLite keeps its -wal and -shm files there)")


def check_owned(p: str) -> None:
    """Refuse a database rankscope did not create (no :data:`~engine.store.schema.APPLICATION_ID`
    in its header). Reads the header only; writes nothing.

    Raises:
        NotOurStoreError: the mark is missing.
        StoreError: the file cannot be read.
    """
    try:
        app_id = schema.read_application_id(p)
    except OSError as exc:
        raise StoreError(f"cannot read {p}: {exc.strerror or exc}") from exc
    if app_id == APPLICATION_ID:
        return
    raise NotOurStoreError(
        f"refusing to write to {p}: it is not a rankscope store ({schema.describe_foreign(p, app_id)}); "
        "rankscope never writes to stores it did not create; index into a new --db instead"
    )


# ── a store rankscope owns ─────────────────────────────────────────────


def create_file(p: str) -> None:
    """Place a new, complete, empty store at ``p``: built (mark, WAL,
    schema) in ``.NAME.RANDOM.creating`` beside it, then hard-linked to
    ``p``, which fails if ``p`` appeared meanwhile (another run won the
    race: its store is used; an empty file that appeared meanwhile is
    replaced). Where hard links
    are not supported the file is renamed into place unless ``p`` exists by
    then. The temporary files are removed in every case (on SIGTERM and
    SIGHUP too: :func:`engine.files.writing.removed_on_signal`).

    Raises:
        StoreError: SQLite could not build the store (disk full, I/O).
    """
    folder, name = os.path.split(os.path.abspath(p))
    tmp = os.path.join(folder, f".{name}.{secrets.token_hex(6)}.creating")
    leftovers = (tmp, tmp + "-wal", tmp + "-shm", tmp + "-journal")
    with removed_on_signal(*leftovers):
        _build_and_place(p, tmp, leftovers)


def _build_and_place(p: str, tmp: str, leftovers: tuple[str, ...]) -> None:
    """:func:`create_file`'s work: build the store at ``tmp``, place it at
    ``p``, remove ``leftovers`` whatever happens."""
    try:
        with sqlite_errors(p, "create"):
            conn = sql.connect(tmp)
            try:
                # First, before WAL: the mark then sits in the main file's header.
                conn.execute(f"PRAGMA application_id={APPLICATION_ID}")
                conn.execute("PRAGMA journal_mode=WAL")
                conn.executescript(schema.SCHEMA_SQL)
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
        remove_leftovers(*leftovers)


def check_not_system(p: str, verb: str) -> None:
    """Refuse a store path under (or leading into) ``/dev``, ``/proc`` or
    ``/sys``: the writer's rule (:func:`engine.files.writing.system_refusal`),
    for a store SQLite would write (and its ``-wal``/``-shm`` beside it).

    Raises:
        StoreError: ``cannot VERB store P: it is under /dev, a folder of the system; ...``.
    """
    reason = system_refusal(p)
    if reason is not None:
        raise StoreError(f"cannot {verb} store {p}: it {reason}")


def check_target(p: str) -> None:
    """Refuse, before anything is written, a path no store may be created
    or opened for writing at: a path under a folder of the system
    (:func:`check_not_system`), a missing folder, anything but a regular
    file, another database's ``-wal``/``-shm``/``-journal`` file (existing
    or not) or an SQLite log, an existing empty file (not a store rankscope
    made).

    Raises:
        StoreError: a folder of the system, or the folder does not exist.
        NotADatabaseError: any other case.
    """
    require_utf8_name(p, "create")
    check_not_system(p, "create")
    missing = folder_refusal(Path(p).resolve().parent)
    if missing is not None:
        raise StoreError(f"cannot create store {p}: {missing}")
    try:
        mode: int | None = os.stat(p).st_mode
    except OSError:
        mode = None
    if mode is not None and not stat.S_ISREG(mode):  # a FIFO, a device, a folder: said as it is
        raise NotADatabaseError(f"cannot create store {p}: it is {file_kind(mode)}, not a database file")
    role = database_file_role(p)
    if role is not None and role != "an SQLite database":  # another database's -wal/-shm/-journal
        raise NotADatabaseError(f"cannot create store {p}: it is {role}; rankscope never writes a database's own files")
    if mode is not None and not has_content(p):
        # an empty file: SQLite would read it as an empty database, but rankscope did not make it
        raise NotADatabaseError(
            f"cannot create store {p}: it is an empty file, not a store rankscope made; remove it or give another name"
        )


def _stray_wal(p: str) -> StoreError:
    return StoreError(
        f"cannot create store {p}: a {os.path.basename(p)}-wal file of some other database is "
        "beside it (SQLite would replay it); remove it or choose another name"
    )


def check_new_store(p: str) -> None:
    """The checks :func:`create` makes before it builds a store at ``p``,
    which does not exist, for a caller that builds it under another name
    and puts it at ``p`` when complete (``index --db`` of a new store):
    :func:`check_target`, no ``-wal`` with content beside ``p`` (SQLite
    would replay it into the store), a writable folder.

    Raises:
        StoreError, NotADatabaseError: naming ``p``.
    """
    check_target(p)
    try:
        if os.path.getsize(p + "-wal") > 0:
            raise _stray_wal(p)
    except OSError:
        pass
    check_writable(p, create=True)


def require_utf8_name(p: str, verb: str) -> None:
    """Refuse a store path that is not UTF-8 text (a name of undecodable
    bytes reaches Python as lone surrogates): SQLite opens files by UTF-8
    names, so no connection could reach it.

    Raises:
        StoreError: ``cannot VERB store P: its name is not UTF-8 text ...``.
    """
    if not sql.utf8_name(p):
        raise StoreError(f"cannot {verb} store {p}: {sql.NOT_UTF8_NAME}")


def create(p: str) -> tuple[sql.Connection, SchemaInfo]:
    """Create a writable store at ``p`` (or open one rankscope created
    earlier); ``":memory:"`` for a scratch store. A new store is marked
    with :data:`~engine.store.schema.APPLICATION_ID`, gets the schema and the WAL journal.

    Creation is atomic (:func:`create_file`): the store is built under a
    temporary name in the same folder and linked into place complete, so
    a second run starting at the same moment never sees a half-made file
    (it uses whichever store was placed first), and a failure (a full
    disk) leaves nothing at ``p``. A store of ours that an older version
    left half-created gets its missing tables here.

    Raises:
        NotADatabaseError: ``p`` exists and is not an SQLite file (an
            empty file included), or is another database's
            ``-wal``/``-shm``/``-journal`` file (existing or not) or an SQLite
            log (:func:`engine.files.writing.database_file_role`).
        NotOurStoreError: ``p`` is an SQLite database rankscope did not
            create (checked before anything is written).
        SchemaError: an existing DB has a different schema.
        StoreError: the folder does not exist or is not writable.
    """
    fresh = True
    if p != ":memory:":
        check_target(p)  # the name's UTF-8 too
        fresh = not has_content(p)
        if fresh:
            check_writable(p, create=True)
            create_file(p)
            fresh = False
        if not os.path.isdir(p) and (not os.path.exists(p) or os.path.getsize(p) == 0):
            raise _stray_wal(p)
        check_file(p)
        check_owned(p)
        check_writable(p)
    with sqlite_errors(p, "create"):
        conn = connect_file(p, read_only=False)
    try:
        if fresh:
            # First, before WAL: the mark then sits in the main file's header.
            conn.execute(f"PRAGMA application_id={APPLICATION_ID}")
        if p != ":memory:":
            conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA busy_timeout=30000")
        conn.executescript(schema.SCHEMA_SQL)
    except sql.Error as exc:
        conn.close()
        if is_corruption(exc) or sql.primary_code(exc) == READONLY_CODE or "readonly" in str(exc):
            raise sqlite_store_error(exc, p, "create") from exc
        raise NotADatabaseError(f"{p} is not a usable SQLite database: {exc}") from exc
    info = inspect_schema(conn, p)
    if info.fts_columns < 8:
        conn.close()
        raise SchemaError(
            f"{p} has the older 4-column FTS schema; rankscope will not migrate it. Open it read-only instead."
        )
    return conn, info


def open_writable(p: str) -> tuple[sql.Connection, SchemaInfo]:
    """Open an existing store for writing. It must be one rankscope created
    (:func:`create` marks it) and not under a folder of the system
    (:func:`check_not_system`); anything else is refused before a
    connection is even opened.

    Raises:
        StoreNotFoundError, NotADatabaseError, NotOurStoreError, SchemaError, StoreError.
    """
    require_utf8_name(p, "open")
    check_not_system(p, "write to")
    check_file(p)
    check_owned(p)
    check_writable(p)
    with sqlite_errors(p, "open"):
        conn = connect_file(p, read_only=False)
    info = inspect_schema(conn, p)
    conn.execute("PRAGMA busy_timeout=30000")
    return conn, info


# ── anybody's store, read-only ─────────────────────────────────────────


def open_target(p: str, mode: ReadMode | None = None) -> tuple[sql.Connection, ReadTarget]:
    """A read-only connection to ``p`` read in ``mode`` (default: what the
    files beside it call for now, :func:`read_mode_for`), and its
    :class:`ReadTarget`; a ``"copy"`` read makes its private copy first.

    Raises:
        StoreError: a ``"copy"`` read's private copy cannot be made.
        engine.store.sql.Error: the file cannot be opened.
    """
    signature = files_signature(p)
    mode = mode or read_mode_for(p)
    copy_dir, read_path = private_copy(p) if mode == "copy" else (None, p)
    flags = mode_flags(mode)
    mmap = mmap_safe(p, mode)
    try:
        conn = connect_file(read_path, read_only=True, flags=flags, mmap=mmap)
    except BaseException:
        remove_copy(copy_dir)
        raise
    return conn, ReadTarget(mode, read_path, flags, copy_dir, signature, mmap)


def _open_readonly_once(p: str) -> tuple[sql.Connection, SchemaInfo, ReadTarget]:
    with sqlite_errors(p, "open"):
        conn, target = open_target(p)
    try:
        info = inspect_schema(conn, p)
    except BaseException:
        remove_copy(target.copy_dir)
        raise
    return conn, info, target


def open_readonly(p: str) -> tuple[sql.Connection, SchemaInfo, ReadTarget]:
    """Open any content store without ever writing to it. A failure another
    process writing the store may have caused is retried (at most
    :data:`READ_ATTEMPTS` times); only two in a row on files that did not
    change are believed.

    Raises:
        StoreNotFoundError: no file at ``p``.
        NotADatabaseError: not SQLite, or corrupt.
        SchemaError: SQLite, but not a content store.
        StoreError: SQLite cannot read it.
    """
    require_utf8_name(p, "open")
    check_file(p)
    last: StoreError | None = None
    stable_failures = 0
    delay = RETRY_DELAY_S
    for _ in range(READ_ATTEMPTS):
        before = files_signature(p)
        try:
            return _open_readonly_once(p)
        except StoreError as exc:
            cause = exc.__cause__
            if cause is None or not is_transient(cause):
                raise
            # A writer may have changed the files while they were read:
            # only two failures in a row on unchanged files are believed.
            stable_failures = stable_failures + 1 if files_signature(p) == before else 0
            last = exc
            if stable_failures >= 2:
                raise
        time.sleep(delay)
        delay = min(delay * 2, RETRY_MAX_DELAY_S)
    assert last is not None
    raise last
