"""``rankscope --demo [PATH]``: the browser for a visitor (a terminal, SSH,
or one session of ``rankscope serve --demo``).

What differs from ``rankscope [PATH]``:

* the store is opened read-only (as always), and a folder's index is read
  from the user's cache only when it is up to date, else built in the
  visitor's folder (:func:`tui.cli.launch.app_arguments`);
* the store picker is off (it would list this machine's stores);
* grades, query history and saved cases go to the visitor's temporary
  folder (:mod:`tui.cli.visitor`, via ``RANKSCOPE_DATA_DIR``), removed when
  the app ends: on quitting, on a hang-up (SSH disconnect: SIGHUP), on
  SIGTERM, on the idle timeout;
* exports (F6, saved cases, screenshots) are delivered to the visitor: a
  download in a web page, a file in the visitor's folder at this machine's
  own terminal or at a shell over SSH, refused when rankscope is the SSH
  session's command (the recipe's ``ForceCommand``: no shell, so a file here
  is out of the visitor's reach; :func:`files_out_of_reach`,
  :mod:`tui.browser.delivery`).
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading
from dataclasses import replace
from pathlib import Path
from types import FrameType
from typing import Callable, Mapping

from tui.browser.options import DemoMode
from tui.cli.base import CliError
from tui.cli.visitor import (
    VISITOR_DIR_ENV,
    VisitorFolderError,
    given_visitor_folder,
    make_visitor_folder,
    remove_visitor_folder,
    sweep_stale,
)

#: Seconds a hang-up or SIGTERM leaves the app to end the normal way; then
#: the visitor folder is removed and the process ends at once.
HANGUP_GRACE_S = 5.0
#: Signals that end a demo session the normal way (the visitor folder removed).
ENDING_SIGNALS = tuple(getattr(signal, name) for name in ("SIGHUP", "SIGTERM") if hasattr(signal, name))
#: Variables sshd sets in a session: their presence means the visitor is at another machine.
SSH_VARIABLES = ("SSH_CONNECTION", "SSH_CLIENT", "SSH_TTY")
#: Process names of OpenSSH's server (``sshd-session`` from OpenSSH 9.8 on).
SSHD_NAMES = frozenset({"sshd", "sshd-session"})


def parent_name(pid: int | None = None) -> str | None:
    """The process name of ``pid``'s parent (default: this process's), from
    Linux's ``/proc``; ``None`` where it cannot be read."""
    try:
        ppid = os.getppid() if pid is None else int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        return Path(f"/proc/{ppid}/comm").read_text().strip()
    except (OSError, ValueError, IndexError):
        return None


def files_out_of_reach(environ: Mapping[str, str] | None = None, parent: str | None = "") -> bool:
    """True when the visitor cannot read a file written here: they came over
    SSH (sshd's variables are set) and rankscope is sshd's command, not
    something they started from a shell: a ``ForceCommand`` (sshd sets
    ``SSH_ORIGINAL_COMMAND`` when it replaced theirs) or a process whose
    parent is sshd itself (``parent``: its name, default read from
    ``/proc``; ``None``, unknown, counts as sshd). A visitor at a shell (or in
    tmux or screen) over SSH can read their files, as one at this machine can.
    """
    env = os.environ if environ is None else environ
    if not any(env.get(name) for name in SSH_VARIABLES):
        return False
    if env.get("SSH_ORIGINAL_COMMAND") is not None:
        return True
    name = parent_name() if parent == "" else parent
    return name is None or name in SSHD_NAMES


def visitor_folder() -> Path:
    """The folder ``rankscope serve --demo`` made for this session
    (:data:`~tui.cli.visitor.VISITOR_DIR_ENV`), or a new one; stale folders of
    ended sessions are removed first.

    Raises:
        CliError: the variable names something that is not a visitor folder,
            or none can be made.
    """
    sweep_stale()
    given = os.environ.get(VISITOR_DIR_ENV)
    try:
        return given_visitor_folder(given) if given else make_visitor_folder()
    except VisitorFolderError as exc:
        raise CliError(str(exc)) from exc
    except OSError as exc:
        raise CliError(f"cannot make the visitor's temporary folder: {exc.strerror or exc}") from exc


class _Ending:
    """Ends the app on SIGHUP/SIGTERM: asks it to exit, and after
    :data:`HANGUP_GRACE_S` removes the folder and ends the process (a
    terminal that is gone can make the exit hang)."""

    def __init__(self, exit_app: Callable[[], None], folder: Path) -> None:
        self.exit_app = exit_app
        self.folder = folder
        self.signal: int | None = None

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        if self.signal is not None:
            return
        self.signal = signum
        watchdog = threading.Timer(HANGUP_GRACE_S, self._force, args=(signum,))
        watchdog.daemon = True
        watchdog.start()
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # the app is not running (yet, or any more): unwind
            raise SystemExit(128 + signum) from None
        loop.call_soon_threadsafe(self.exit_app)

    def _force(self, signum: int) -> None:
        remove_visitor_folder(self.folder)
        os._exit(128 + signum)


def run_demo(path: str | None, idle_timeout: float | None = None) -> None:
    """Run the browser as a demo session on ``path`` (see the module
    docstring) until the visitor quits, leaves or idles out; the visitor
    folder is removed whatever ends it (but SIGKILL, whose folder the next
    session sweeps).

    Raises:
        CliError: a bad path, or no visitor folder.
    """
    from tui.cli.launch import app_arguments, require_terminal

    folder = visitor_folder()
    previous = {sig: signal.getsignal(sig) for sig in ENDING_SIGNALS}
    try:
        os.environ["RANKSCOPE_DATA_DIR"] = str(folder / "data")
        options = app_arguments(path, demo_cache=folder / "cache")  # reads the user's cache, if up to date
        require_terminal()
        os.environ["RANKSCOPE_CACHE_DIR"] = str(folder / "cache")  # anything cached from now on: the visitor's
        from tui.browser.app import RankscopeApp

        app = RankscopeApp(
            replace(options, demo=DemoMode(folder, remote=files_out_of_reach()), idle_timeout=idle_timeout)
        )
        ending = _Ending(app.exit, folder)
        for sig in ENDING_SIGNALS:
            signal.signal(sig, ending)
        app.run()
        if ending.signal is not None:
            raise SystemExit(128 + ending.signal)
        if app.return_code:
            raise SystemExit(app.return_code)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if not remove_visitor_folder(folder):
            print(f"rankscope: warning: could not remove the visitor folder {folder}", file=sys.stderr)
