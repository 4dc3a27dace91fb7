"""The per-visitor temporary folder of a demo session (``rankscope --demo``).

A demo visitor's grades, query history and saved cases (and the index of a
folder when no up-to-date cached one exists) go to a folder of their own,
``<temp dir>/rankscope-visitor-<pid>-<random>/`` (mode 0700), which is
removed when they leave:

* by the demo process itself when it exits, whatever ends it but SIGKILL
  (:func:`tui.cli.demo.run_demo`);
* under ``rankscope serve --demo``, also by the server once the session's
  process has ended (the server makes the folder and hands it to the process
  in :data:`VISITOR_DIR_ENV`);
* a folder whose process was killed outright (SIGKILL, out of memory) is
  removed by the next demo session's :func:`sweep_stale`: its ``<pid>`` no
  longer runs.

Only folders that look like ours are ever removed: named
``rankscope-visitor-*``, a real folder (not a symbolic link), owned by this
user. No Textual here.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from pathlib import Path

#: Every visitor folder's name starts with this, then ``<pid>-``.
PREFIX = "rankscope-visitor-"
#: Set by ``rankscope serve --demo`` for each session: the visitor folder it made.
VISITOR_DIR_ENV = "RANKSCOPE_VISITOR_DIR"


class VisitorFolderError(Exception):
    """A visitor folder given in :data:`VISITOR_DIR_ENV` is not one of ours; the message says why."""


def make_visitor_folder(root: Path | None = None, pid: int | None = None) -> Path:
    """A new, empty visitor folder (mode 0700) in ``root`` (default: the
    system's temporary folder, ``$TMPDIR``), named after ``pid`` (default:
    this process), the process whose end makes it stale.

    Raises:
        OSError: the folder cannot be made.
    """
    return Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid() if pid is None else pid}-", dir=root))


def is_visitor_folder(path: Path) -> bool:
    """True when ``path`` is a folder made by :func:`make_visitor_folder`
    for this user: the name, a real folder (not a link), our owner."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return path.name.startswith(PREFIX) and stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid()


def given_visitor_folder(value: str) -> Path:
    """The folder :data:`VISITOR_DIR_ENV` names, checked.

    Raises:
        VisitorFolderError: not a visitor folder of this user, or readable
            by others (it must be mode 0700).
    """
    path = Path(value)
    if not path.is_absolute() or not is_visitor_folder(path):
        raise VisitorFolderError(f"{VISITOR_DIR_ENV}={value} is not a visitor folder of this user ({PREFIX}*)")
    if stat.S_IMODE(os.lstat(path).st_mode) & 0o077:
        raise VisitorFolderError(f"{VISITOR_DIR_ENV}={value} is open to other users; it must be mode 0700")
    return path


def remove_visitor_folder(path: Path) -> bool:
    """Remove ``path`` and everything in it when it is a visitor folder
    (:func:`is_visitor_folder`; anything else is left alone). Returns whether
    it is gone. Never raises."""
    if not is_visitor_folder(path):
        return not os.path.lexists(path)
    shutil.rmtree(path, ignore_errors=True)
    return not os.path.lexists(path)


def _pid_of(name: str) -> int | None:
    head = name[len(PREFIX) :].split("-", 1)[0]
    return int(head) if head.isascii() and head.isdigit() else None


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: alive
    return True


def sweep_stale(root: Path | None = None) -> list[Path]:
    """Remove this user's visitor folders in ``root`` (default: the system's
    temporary folder) whose process no longer runs. Returns those removed."""
    base = Path(root) if root is not None else Path(tempfile.gettempdir())
    removed: list[Path] = []
    try:
        names = os.listdir(base)
    except OSError:
        return removed
    for name in names:
        if not name.startswith(PREFIX):
            continue
        pid = _pid_of(name)
        path = base / name
        if pid is None or _running(pid) or not is_visitor_folder(path):
            continue
        if remove_visitor_folder(path):
            removed.append(path)
    return removed
