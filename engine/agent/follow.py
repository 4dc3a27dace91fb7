"""Follow a session DB while context-mode's hooks write it: each new
``ctx_search`` call, as soon as its rows are committed.

:class:`SessionFollower` is polled (``agent-log --follow`` polls every
:data:`POLL_SECONDS`). A poll costs four ``stat`` calls while nothing
changes; when the files change (the database, its ``-wal`` or ``-journal``:
size, modification time, inode) it opens the DB read-only (a
:class:`~engine.agent.sessiondb.SessionDb`: ``mode=ro`` beside a live
writer, ``immutable=1`` otherwise, a private copy for a ``-wal`` without
``-shm``; nothing is ever created beside the file), reads the call rows with
a larger ``id`` than any seen, and closes it again, so a writer that
replaces, truncates or deletes the file is never held up.

A file replaced (another inode) or rewritten (its largest ``id`` fell) is
followed from its start again, like ``tail -F``; a file that cannot be read
for the moment (missing, half-written, not a session DB) is a notice, and
the follower keeps polling. Nothing here sleeps or prints.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from engine.store.errors import StoreError
from .sessiondb import RecordedCall, SessionDb, SkippedRow

#: Seconds between polls of ``agent-log --follow``: a committed call is seen
#: within this (plus the read), well inside a second.
POLL_SECONDS = 0.2
#: Notice codes (:attr:`FollowUpdate.notices`).
NOTICES = ("replaced", "rewritten", "unreadable", "readable")


@dataclass(frozen=True)
class FollowUpdate:
    """What one poll found.

    Attributes:
        calls: new calls, in id order.
        skipped: malformed rows among the new ones.
        notices: ``(code, message)`` pairs (:data:`NOTICES`), in order.
    """

    calls: tuple[RecordedCall, ...] = ()
    skipped: tuple[SkippedRow, ...] = ()
    notices: tuple[tuple[str, str], ...] = ()


def _signature(path: str) -> tuple:
    """``(inode, device, size, mtime ns)`` of the file and of its ``-wal`` and
    ``-journal`` (``None`` each when absent). ``-shm`` is left out: readers
    touch it."""
    out: list[object] = []
    for suffix in ("", "-wal", "-journal"):
        try:
            st = os.stat(path + suffix)
        except OSError:
            out.append(None)
        else:
            out.append((st.st_ino, st.st_dev, st.st_size, st.st_mtime_ns))
    return tuple(out)


@dataclass
class SessionFollower:
    """The calls appended to a session DB since the last poll.

    Args:
        path: the session DB.
        project_dir: only calls of this project (as ``agent-log --project``).
        from_start: the first poll returns the calls already there; by
            default it only notes where they end.
    """

    path: str
    project_dir: str | None = None
    from_start: bool = False
    #: The largest ``session_events.id`` read.
    last_id: int = 0
    _signature: tuple | None = None
    _inode: tuple[int, int] | None = None
    _started: bool = False
    _failing: str | None = None
    _seen: set[int] = field(default_factory=set)

    def poll(self) -> FollowUpdate:
        """Read what was committed since the last poll (never raises for the
        file's state or content; a read that fails is retried next poll)."""
        sig = _signature(self.path)
        if sig == self._signature and self._failing is None:
            return FollowUpdate()
        notices: list[tuple[str, str]] = []
        main = sig[0]
        if main is None:
            return self._fail("the file is gone", sig)
        inode = (main[0], main[1])
        try:
            with SessionDb(self.path) as db:
                top = db.max_event_id()
                if self._started and self._inode is not None and inode != self._inode:
                    notices.append(("replaced", f"{self.path} was replaced: following it from its start"))
                    self._restart()
                elif self._started and top < self.last_id:
                    notices.append(("rewritten", f"{self.path} was rewritten (truncated): following it from its start"))
                    self._restart()
                if not self._started and not self.from_start:
                    calls: list[RecordedCall] = []
                    skipped: list[SkippedRow] = []
                else:
                    calls = db.ctx_search_calls(self.project_dir, after_id=self.last_id)
                    skipped = list(db.skipped)
        except (StoreError, OSError) as exc:
            return self._fail(str(exc), sig)
        if self._failing is not None:
            notices.insert(0, ("readable", f"{self.path} is readable again"))
            self._failing = None
        new = [c for c in calls if c.event_id not in self._seen]
        self._seen.update(c.event_id for c in new)
        self.last_id = max([self.last_id, top, *(c.event_id for c in calls)])
        self._signature, self._inode, self._started = sig, inode, True
        return FollowUpdate(tuple(new), tuple(skipped), tuple(notices))

    def _restart(self) -> None:
        self.last_id = 0
        self._seen.clear()

    def _fail(self, why: str, sig: tuple) -> FollowUpdate:
        """A poll that could not read: one notice per new reason."""
        self._signature = sig
        if why == self._failing:
            return FollowUpdate()
        self._failing = why
        return FollowUpdate(notices=(("unreadable", f"cannot read {self.path} now ({why}); still following"),))
