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

:class:`LiveLog` is what both front-ends poll (``agent-log --follow`` and
the browser's live agent log): the follower, and each new call's received
numbers and replay on the store.
"""

from __future__ import annotations

import os
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Callable

from engine.store import sql
from engine.store.errors import StoreError
from engine.store.store import Store
from .log import Replay, Replayer, answer_summary, recorded_queries
from .sessiondb import RecordedCall, SessionDb, SkippedRow
from .throttle import ThrottleConfig

#: Seconds between polls of ``agent-log --follow``: a committed call is seen
#: within this (plus the read), well inside a second.
POLL_SECONDS = 0.2
#: Notice codes (:attr:`FollowUpdate.notices`).
NOTICES = ("replaced", "rewritten", "unreadable", "readable")
#: The notices after which the file is followed from its start again.
RESTARTS = ("replaced", "rewritten")


#: ``(inode, device, size, mtime ns)`` of each file, ``None`` when absent.
_Signature = tuple[tuple[int, int, int, int] | None, ...]


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


def _signature(path: str) -> _Signature:
    """``(inode, device, size, mtime ns)`` of the file and of its ``-wal`` and
    ``-journal`` (``None`` each when absent). ``-shm`` is left out: readers
    touch it."""
    out: list[tuple[int, int, int, int] | None] = []
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
    _signature: _Signature | None = None
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

    def _fail(self, why: str, sig: _Signature) -> FollowUpdate:
        """A poll that could not read: one notice per new reason."""
        self._signature = sig
        if why == self._failing:
            return FollowUpdate()
        self._failing = why
        return FollowUpdate(notices=(("unreadable", f"cannot read {self.path} now ({why}); still following"),))


@dataclass(frozen=True)
class FollowedCall:
    """One new call, as the front-ends show it.

    Attributes:
        call: the recorded call.
        received: what its recorded answer gave the agent, in numbers
            (:func:`~engine.agent.log.answer_summary`); ``None`` when the
            answer was not recorded.
        replay: the call replayed on the store (``None``: no store given,
            or it could not be replayed now).
        replay_error: why it could not be replayed now (the session DB or
            the store could not be read), else ``None``.
    """

    call: RecordedCall
    received: dict[str, object] | None
    replay: Replay | None
    replay_error: str | None = None


@dataclass(frozen=True)
class LiveUpdate:
    """What one :meth:`LiveLog.poll` found.

    Attributes:
        calls: the new calls, in id order.
        skipped: malformed rows among them.
        notices: ``(code, message)`` pairs (:data:`NOTICES`), in order.
        restarted: the file was replaced or rewritten: ``calls`` start
            again from its first call (what was shown before is gone).
    """

    calls: tuple[FollowedCall, ...] = ()
    skipped: tuple[SkippedRow, ...] = ()
    notices: tuple[tuple[str, str], ...] = ()
    restarted: bool = False


class LiveLog:
    """A session DB followed (:class:`SessionFollower`), each new call's
    recorded answer summed up and, with a store, replayed on it by one
    :class:`~engine.agent.log.Replayer` (one server's throttle window and
    refresh memory; a new one when the file restarts).

    Args:
        path: the session DB.
        project_dir: only calls of this project.
        store: the content store to replay the calls on, or ``None``.
        throttle: the throttle thresholds of the replay (default: the server's).
        from_start: the first poll returns the calls already there.
        connect: opens a connection for the replays of one poll (another
            thread's: ``store.thread_connection``); by default the store's own.
    """

    def __init__(
        self,
        path: str,
        project_dir: str | None = None,
        store: Store | None = None,
        throttle: ThrottleConfig | None = None,
        from_start: bool = False,
        connect: Callable[[], AbstractContextManager[sql.Connection]] | None = None,
    ) -> None:
        self.path, self.project_dir, self.store, self.throttle = path, project_dir, store, throttle
        self.connect = connect
        self.follower = SessionFollower(path, project_dir, from_start)
        self.replayer = self._replayer()

    def _replayer(self) -> Replayer | None:
        return None if self.store is None else Replayer(self.store, self.path, self.project_dir, self.throttle)

    @property
    def last_id(self) -> int:
        """The largest ``session_events.id`` read."""
        return self.follower.last_id

    def poll(self) -> LiveUpdate:
        """The calls committed since the last poll, replayed (a connection is
        opened only when there are calls to replay). Never raises for the
        session DB's or the store's state: a replay that cannot read one is
        the call's ``replay_error``."""
        update = self.follower.poll()
        restarted = any(code in RESTARTS for code, _ in update.notices)
        if restarted:
            self.replayer = self._replayer()
        replays: list[tuple[Replay | None, str | None]] = [(None, None)] * len(update.calls)
        if self.replayer is not None and update.calls:
            replays = self._replay(self.replayer, update.calls)
        out = tuple(
            FollowedCall(
                call,
                answer_summary(call.answer, recorded_queries(call.params)) if call.answer is not None else None,
                replay,
                error,
            )
            for call, (replay, error) in zip(update.calls, replays)
        )
        return LiveUpdate(out, update.skipped, update.notices, restarted)

    def _replay(self, replayer: Replayer, calls: tuple[RecordedCall, ...]) -> list[tuple[Replay | None, str | None]]:
        """Each call replayed, or why it could not be now."""
        out: list[tuple[Replay | None, str | None]] = []
        try:
            with self.connect() if self.connect is not None else nullcontext(None) as conn:
                for call in calls:
                    try:
                        out.append((replayer.replay(call, conn), None))
                    except StoreError as exc:  # a SessionDbError too
                        out.append((None, str(exc)))
        except (StoreError, sql.Error) as exc:  # the store cannot be opened now
            out += [(None, str(exc))] * (len(calls) - len(out))
        return out
