"""The one output writer: every file rankscope writes goes through here
(``batch --out`` / ``--trec-run``, ``snapshot save -o``, ``qrels convert``,
the browser's trace and case exports, the data folder's ``history.json`` /
``cases.json`` / ``qrels.json``, the cache's fingerprints).

What is never written, even when overwriting was asked for (``--force``):

* anything but a regular file: a FIFO (opening it would wait for a reader,
  forever), a device (replacing ``/dev/null``'s node with a file), a
  socket, a folder; a symbolic link to one of them counts as one. Nothing is
  opened to find out (``stat`` only);
* an SQLite database (its 16-byte header), and any database's ``-wal``,
  ``-shm`` or ``-journal`` file (by name beside a database, or by the WAL's
  and journal's own magic numbers): replacing a WAL destroys the
  transactions committed to it;
* the command's store (given with ``--db``, or as the browser's ``PATH``)
  and its side files, whether they exist or not, and any other file the
  same command reads (its query file, ...), by any of its names;
* anything under :data:`SYSTEM_FOLDERS` (``/dev``, ``/proc``, ``/sys``), by
  its name or by where a symbolic link leads (``/dev/stdout`` leads to
  a regular file when stdout is redirected: replacing the link would break
  the system); said before what the file is (``/dev/stdout`` piped is a
  link to a FIFO, but it is refused for lying under ``/dev``).

The text is written to a temporary file (``.NAME.RANDOM.tmp``) in the
target's folder, with the target's mode (a new file: ``0o666`` less the
umask, i.e. 0644 under the usual umask 022; a replaced file: its old mode),
then put in place in one step: hard-linked to the name (fails if the name
exists in any form, a dangling symlink included: nothing is overwritten and
no link is followed) or, when overwriting was asked for, renamed over it
(``rename`` replaces a symlink itself, never its target). The temporary file
is removed on every error, on ``KeyboardInterrupt`` (SIGINT) and, for a
write from the main thread, on SIGTERM and SIGHUP (then the signal's default
action ends the process). No Textual here.
"""

from __future__ import annotations

import errno
import os
import secrets
import signal
import stat as _stat
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Sequence

from engine.files.reading import file_kind, peek

#: The first 16 bytes of every SQLite database file.
SQLITE_HEADER = b"SQLite format 3\x00"
#: The first 4 bytes of an SQLite write-ahead log (big-endian 0x377f0682 or 0x377f0683).
WAL_MAGICS = (b"\x37\x7f\x06\x82", b"\x37\x7f\x06\x83")
#: The first 8 bytes of an SQLite rollback journal.
JOURNAL_MAGIC = b"\xd9\xd5\x05\xf9\x20\xa1\x63\xd7"
#: The files SQLite keeps beside a database ``X``: ``X-wal``, ``X-shm``, ``X-journal``.
SIDE_SUFFIXES = ("-wal", "-shm", "-journal")
#: Signals whose default action would end the process mid-write; the
#: temporary file is removed first (writes from the main thread).
CLEANUP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


class OutputRefused(OSError):
    """The output file is refused; the message says why (one line). An
    ``OSError`` so that a caller's "cannot write" handling covers it."""


def _is_regular(path: str) -> bool:
    try:
        return _stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def is_sqlite_file(path: str | os.PathLike[str]) -> bool:
    """True when ``path`` is a regular file starting with the SQLite header
    (rankscope's store or anyone's database). Symlinks are followed; a FIFO
    or device is never opened."""
    name = os.fspath(path)
    return _is_regular(name) and peek(name, 16) == SQLITE_HEADER


def database_file_role(path: str | os.PathLike[str]) -> str | None:
    """What ``path`` is to SQLite, for a refusal message, or ``None``:
    ``"an SQLite database"``, ``"the wal file of the SQLite database X"``
    (likewise ``shm``, ``journal``: ``path`` is named ``X-wal`` beside a
    database ``X``, existing or not), ``"an SQLite write-ahead log"`` or
    ``"an SQLite rollback journal"`` (by their magic numbers). Symbolic
    links are followed."""
    name = os.fspath(path)
    real = os.path.realpath(name)
    head = peek(real, 16)
    if head == SQLITE_HEADER:
        return "an SQLite database"
    for candidate in dict.fromkeys((os.path.abspath(name), real)):
        for suffix in SIDE_SUFFIXES:
            if candidate.endswith(suffix) and is_sqlite_file(candidate[: -len(suffix)]):
                return f"the {suffix[1:]} file of the SQLite database {candidate[: -len(suffix)]}"
    if head[:4] in WAL_MAGICS:
        return "an SQLite write-ahead log"
    if head[:8] == JOURNAL_MAGIC:
        return "an SQLite rollback journal"
    return None


#: Folders of the running system, never written into (not even with
#: ``--force``): their entries are devices, kernel state and links such as
#: ``/dev/stdout`` that the system needs.
SYSTEM_FOLDERS = ("/dev", "/proc", "/sys")


def system_folder_of(path: str | os.PathLike[str]) -> tuple[str, bool] | None:
    """The :data:`SYSTEM_FOLDERS` entry ``path`` lies under, by its own
    (absolute, normalised) name, or else by where its symbolic links lead,
    with ``True`` in the second case; ``None`` when neither."""
    name = os.fspath(path)
    for candidate, through_link in ((os.path.abspath(name), False), (os.path.realpath(name), True)):
        for folder in SYSTEM_FOLDERS:
            root = folder.rstrip("/")
            if candidate == root or candidate.startswith(root + "/"):
                return folder, through_link
    return None


def _same_file(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def system_refusal(path: str | os.PathLike[str]) -> str | None:
    """Why ``path`` is never written because of :data:`SYSTEM_FOLDERS`, as
    the end of a sentence starting with the path (``"is under /dev, a
    folder of the system; rankscope never writes there"``; ``"leads into
    /dev, ..."`` through a symbolic link), or ``None``
    (:func:`system_folder_of`). The one wording of the rule: outputs
    (:func:`kind_refusal`) and stores (``engine.store.opening``) use it."""
    system = system_folder_of(path)
    if system is None:
        return None
    folder, through_link = system
    where = f"leads into {folder}" if through_link else f"is under {folder}"
    return f"{where}, a folder of the system; rankscope never writes there"


def kind_refusal(path: str | os.PathLike[str]) -> str | None:
    """Why ``path`` must never be written whatever the options, as the end
    of a sentence starting with the path (``"is a FIFO; rankscope writes
    regular files only"``), or ``None``: anything under (or a link leading
    into) :data:`SYSTEM_FOLDERS` (:func:`system_refusal`, said first:
    ``/dev/stdout`` is a link to a pipe or a terminal, but what matters is
    where it lies), not a regular file (a symbolic link is judged by what it
    names), an SQLite database or one of a database's files
    (:func:`database_file_role`)."""
    name = os.fspath(path)
    system = system_refusal(name)
    if system is not None:
        return system
    try:
        st = os.stat(name)
    except OSError:
        st = None
    if st is not None and _stat.S_ISDIR(st.st_mode):
        return "is a folder; give a file name"
    if st is not None and not _stat.S_ISREG(st.st_mode):
        link = "a symbolic link to " if os.path.islink(name) else ""
        return f"is {link}{file_kind(st.st_mode)}; rankscope writes regular files only"
    role = database_file_role(name)
    if role is not None:
        return f"is {role}; rankscope never overwrites a database or its files"
    return None


def given(parameter: str) -> str:
    """How a message says a path was given by ``parameter``: ``"with --db"``
    for an option, ``"as PATH"`` for an argument (its name in the usage line)."""
    return f"with {parameter}" if parameter.startswith("-") else f"as {parameter}"


def folder_refusal(parent: Path) -> str | None:
    """Why a new file cannot be made in ``parent``: ``"PARENT is not a
    folder"`` (it is a file or another kind), ``"folder PARENT does not
    exist"``, or ``None`` when it is a folder."""
    if parent.is_dir():
        return None
    if os.path.lexists(parent):
        return f"{parent} is not a folder"
    return f"folder {parent} does not exist"


def check_output(
    path: Path,
    option: str,
    store: tuple[str, Path] | None = None,
    force: bool = False,
    inputs: Sequence[tuple[str, Path]] = (),
) -> None:
    """Refuse, before any work, an output path that must not be written.

    Refused: a path in a folder that does not exist; the store itself or one
    of its ``-wal``/``-shm``/``-journal`` files (existing or not); any of
    the command's ``inputs``, by any name (a symlink, a hard link);
    whatever :func:`kind_refusal` refuses (even with ``force``); any other
    existing file or symlink unless ``force``.

    Args:
        store: the parameter that gave the command its store (an option,
            ``--db``, or an argument, ``PATH``: the message says "the store
            given with --db" or "as PATH", :func:`given`) and the store's path.
        inputs: ``(what it is, path)`` for each file the same command reads
            (``("the query file", Path("q.json"))``); refused even with ``force``.

    Raises:
        OutputRefused: with a one-line reason naming ``option`` and ``path``.
    """
    if not os.path.lexists(path):
        missing = folder_refusal(path.parent if str(path.parent) else Path("."))
        if missing is not None:
            raise OutputRefused(f"{option} {path}: {missing}")
    if store is not None:
        parameter, db = store
        for suffix in ("",) + SIDE_SUFFIXES:
            if _same_file(path, f"{db}{suffix}"):
                side = f"the {suffix[1:]} file of " if suffix else ""
                raise OutputRefused(
                    f"{option} {path} is {side}the store given {given(parameter)}; give another file name"
                )
    for what, source in inputs:
        if _same_file(path, source):
            raise OutputRefused(f"{option} {path} is {what}; give another name")
    reason = kind_refusal(path)
    if reason is not None:
        raise OutputRefused(f"{option} {path} {reason}")
    if not os.path.lexists(path):
        return
    if os.path.islink(path):
        if not force:
            raise OutputRefused(
                f"{option} {path} is a symbolic link; give another name (or --force to replace the link)"
            )
        return
    if not force:
        raise OutputRefused(f"{option} {path} exists; give another name or add --force to overwrite it")


def check_distinct(outputs: Sequence[tuple[str, Path]]) -> None:
    """Refuse two outputs of one command that are the same file: the same
    path, or two names of one file (a symlink, a hard link), existing or not.

    Args:
        outputs: ``(option, path)`` pairs, e.g. ``[("--out", p), ("--trec-run", q)]``.

    Raises:
        OutputRefused: naming both options.
    """
    for i, (opt_a, a) in enumerate(outputs):
        for opt_b, b in outputs[i + 1 :]:
            if _same_file(a, b):
                raise OutputRefused(f"{opt_a} {a} and {opt_b} {b} are the same file; give each its own name")


# ── the write ────────────────────────────────────────────────────────────

_pending: set[str] = set()
_pending_lock = threading.Lock()


def remove_leftovers(*paths: str) -> None:
    """Remove each of ``paths`` that exists (temporary files a write leaves
    behind); a path already gone, or that cannot be removed, is skipped."""
    for path in paths:
        try:
            os.unlink(path)
        except OSError:
            pass


def _remove_pending_and_die(signum: int, frame: object) -> None:
    with _pending_lock:
        leftovers = list(_pending)
    remove_leftovers(*leftovers)
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


@contextmanager
def removed_on_signal(*paths: str) -> Iterator[None]:
    """While the block runs, a SIGTERM/SIGHUP whose action is the default
    (ending the process) removes ``paths`` (temporary files) first, then
    ends the process by the same signal. Handlers can only be set from the
    main thread; elsewhere nothing changes. (SIGINT is Python's
    ``KeyboardInterrupt``: the caller's ``finally`` removes them.)"""
    installed: list[tuple[int, object]] = []
    if threading.current_thread() is threading.main_thread():
        for sig in CLEANUP_SIGNALS:
            try:
                if signal.getsignal(sig) == signal.SIG_DFL:
                    installed.append((sig, signal.signal(sig, _remove_pending_and_die)))
            except (ValueError, OSError):
                pass
    with _pending_lock:
        _pending.update(paths)
    try:
        yield
    finally:
        with _pending_lock:
            _pending.difference_update(paths)
        for sig, previous in installed:
            signal.signal(sig, previous)  # type: ignore[arg-type]  # what getsignal gave back


def _existing_mode(path: Path) -> int | None:
    """The permission bits of the regular file ``path`` names (through a
    symlink), or ``None``."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return _stat.S_IMODE(st.st_mode) if _stat.S_ISREG(st.st_mode) else None


def _place_new(tmp: str, path: Path) -> None:
    """Give the complete file ``tmp`` the name ``path``, never over anything:
    a hard link (fails if the name exists in any form, a dangling symlink
    included); where hard links are not supported, a rename unless ``path``
    exists by then.

    Raises:
        FileExistsError: ``path`` exists.
    """
    try:
        os.link(tmp, path)
    except FileExistsError:
        raise
    except OSError:
        # No hard links here (some network or FAT file systems).
        if os.path.lexists(path):
            raise FileExistsError(errno.EEXIST, "File exists", str(path)) from None
        os.replace(tmp, path)


@contextmanager
def built_aside(path: Path, side_suffixes: Sequence[str] = SIDE_SUFFIXES) -> Iterator[Path]:
    """A new file made whole before it gets its name (``index --db`` of a
    store that does not exist yet): yields a temporary name
    ``.NAME.RANDOM.tmp`` in ``path``'s folder, for the caller to build the
    file at (and close it); when the block ends without an error, the file
    is put at ``path`` (:func:`_place_new`: never over anything). The
    temporary file and its ``side_suffixes`` files (an SQLite database's
    ``-wal``, ``-shm``, ``-journal``) are removed in every case: an error,
    ``KeyboardInterrupt`` (SIGINT) and, from the main thread, SIGTERM and
    SIGHUP (:func:`removed_on_signal`).

    Raises:
        FileExistsError: ``path`` appeared while the file was built; it is
            left as it is and the new file removed.
        OutputRefused: a side file with content remains (the file is not
            complete without it): nothing is put in place.
    """
    folder = path.parent if str(path.parent) else Path(".")
    tmp = str(folder / f".{path.name}.{secrets.token_hex(6)}.tmp")
    leftovers = (tmp, *(tmp + suffix for suffix in side_suffixes))
    with removed_on_signal(*leftovers):
        try:
            yield Path(tmp)
            for side in leftovers[1:]:
                if os.path.exists(side) and os.path.getsize(side) > 0:
                    raise OutputRefused(f"the new file is not complete without {side}, which remains")
            _place_new(tmp, path)
        finally:
            remove_leftovers(*leftovers)


def write_text_file(path: Path, text: str, overwrite: bool = False, make_folder: bool = False) -> None:
    """Write ``text`` (UTF-8) to ``path`` through a temporary file in the same
    folder, then put it in place in one step (see the module docstring).

    Args:
        overwrite: replace an existing file (or symlink: the link itself is
            replaced, its target untouched; the new file keeps the mode of
            the file replaced); otherwise an existing name of any kind raises
            ``FileExistsError`` and nothing changes.
        make_folder: create the folder (and its parents) first.

    Raises:
        OutputRefused: ``path`` is refused whatever the options
            (:func:`kind_refusal`: a FIFO, device, folder, database, ...).
        FileExistsError: ``path`` exists (in any form) and ``overwrite`` is
            false; checked first, so a caller picking a free name moves on.
        OSError: the folder is not writable, the disk is full, ...; the
            temporary file is removed.
    """
    if not overwrite and os.path.lexists(path):
        raise FileExistsError(errno.EEXIST, "File exists", str(path))
    reason = kind_refusal(path)
    if reason is not None:
        raise OutputRefused(f"{path} {reason}")
    folder = path.parent if str(path.parent) else Path(".")
    if make_folder:
        folder.mkdir(parents=True, exist_ok=True)
    tmp = str(folder / f".{path.name}.{secrets.token_hex(6)}.tmp")
    mode = _existing_mode(path) if overwrite else None
    with removed_on_signal(tmp):
        # O_EXCL: a fresh file, never through an existing name or symlink.
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666)
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
                if mode is not None and hasattr(os, "fchmod"):
                    os.fchmod(fh.fileno(), mode)
                fh.write(text)
                fh.flush()
                os.fsync(fh.fileno())
            if overwrite:
                os.replace(tmp, path)
            else:
                _place_new(tmp, path)
        finally:
            remove_leftovers(tmp)
