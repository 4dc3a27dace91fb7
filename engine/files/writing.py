"""Writing output files (``batch --out``, the F6 trace export) without ever
destroying something: no database is overwritten, no existing file unless
asked, no symbolic link is followed, and no half-written file is left.

The text is written to a temporary file in the target's folder and then
put in place in one step: hard-linked to the name (fails if the name exists
in any form, dangling symlink included, so nothing is overwritten and no
link is followed) or, when overwriting was asked for, renamed over it
(``rename`` replaces a symlink itself, never its target). No Textual here.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

#: The first 16 bytes of every SQLite database file.
SQLITE_HEADER = b"SQLite format 3\x00"


class OutputRefused(Exception):
    """The output file is refused; the message says why (one line)."""


def is_sqlite_file(path: str | os.PathLike[str]) -> bool:
    """True when ``path`` is a regular file starting with the SQLite header
    (rankscope's store or anyone's database). Symlinks are followed for this
    check only."""
    try:
        with open(path, "rb") as fh:
            return fh.read(16) == SQLITE_HEADER
    except OSError:
        return False


def _same_file(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def check_output(path: Path, option: str, db: Path | None = None, force: bool = False) -> None:
    """Refuse, before any work, an output path that must not be written.

    Refused: a folder; a path in a folder that does not exist; the store
    ``db`` itself or one of its ``-wal``/``-shm``/``-journal`` files; any
    existing SQLite database (even with ``force``); any other existing file
    or symlink unless ``force``.

    Raises:
        OutputRefused: with a one-line reason naming ``option`` and ``path``.
    """
    if path.is_dir():
        raise OutputRefused(f"{option} {path} is a folder; give a file name")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise OutputRefused(f"{option} {path}: folder {parent} does not exist")
    if db is not None:
        for suffix in ("", "-wal", "-shm", "-journal"):
            if _same_file(path, f"{db}{suffix}"):
                what = (
                    "the store given with --db" if not suffix else f"the {suffix[1:]} file of the store given with --db"
                )
                raise OutputRefused(f"{option} {path} is {what}; give another file name")
    if not os.path.lexists(path):
        return
    if is_sqlite_file(path):
        raise OutputRefused(f"{option} {path} is an SQLite database; rankscope never overwrites one")
    if os.path.islink(path):
        if not force:
            raise OutputRefused(
                f"{option} {path} is a symbolic link; give another name (or --force to replace the link)"
            )
        return
    if not force:
        raise OutputRefused(f"{option} {path} exists; give another name or add --force to overwrite it")


def write_text_file(path: Path, text: str, overwrite: bool = False) -> None:
    """Write ``text`` (UTF-8) to ``path`` through a temporary file in the same
    folder, then put it in place in one step.

    Args:
        overwrite: replace an existing file (or symlink: the link itself is
            replaced, its target untouched); otherwise an existing name of
            any kind raises ``FileExistsError`` and nothing changes.

    Raises:
        FileExistsError: ``path`` exists and ``overwrite`` is false.
        OSError: the folder is not writable, the disk is full, ...; the
            temporary file is removed.
    """
    folder = path.parent if str(path.parent) else Path(".")
    tmp = folder / f".{path.name}.{secrets.token_hex(6)}.tmp"
    # O_EXCL: a fresh file, never through an existing name or symlink.
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        if overwrite:
            os.replace(tmp, path)
        else:
            try:
                os.link(tmp, path)
            except FileExistsError:
                raise
            except OSError:
                # No hard links here (some network or FAT file systems).
                if os.path.lexists(path):
                    raise FileExistsError(17, "File exists", str(path)) from None
                os.replace(tmp, path)
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass
