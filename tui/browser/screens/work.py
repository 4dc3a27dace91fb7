"""The screens that run workers, and the one way a worker's failure is reported.

A screen starts the thread workers it needs (``@work(thread=True,
exclusive=True, exit_on_error=False, group=...)``) and receives their results
as its own messages. A worker that raises is reported here, whatever the
screen: a notification titled from :attr:`WorkScreen.WORK` (``Compare
failed``), then :meth:`WorkScreen.worker_failed`, where the screen says so in
place. Expected outcomes (a search on a damaged index, a chunk that is gone)
are results, not failures: the worker posts them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import ClassVar, Mapping, TypeVar

from textual.screen import Screen
from textual.worker import Worker, WorkerState

from tui.browser.facts import describe_problem
from tui.present import safe

ResultT = TypeVar("ResultT")


class WorkScreen(Screen[ResultT]):
    """A screen that runs workers; reports the failure of any of them."""

    #: Worker group → what it does, in words: the failure's notification says
    #: ``{what} failed``. A group missing here is a "Background task".
    WORK: ClassVar[Mapping[str, str]] = {}
    #: The browser's keys work on this screen; false on the lab screens
    #: (Esc first), which keeps their footers readable.
    BROWSER_KEYS: ClassVar[bool] = True

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """A worker of this screen failed: notify (the app keeps running),
        then :meth:`worker_failed`."""
        if event.state != WorkerState.ERROR:
            return
        error = event.worker.error
        assert error is not None  # set in the ERROR state
        what = self.WORK.get(event.worker.group, "Background task")
        self.notify(safe.line(describe_problem(error)), title=f"{what} failed", severity="error", markup=False)
        self.worker_failed(event.worker.group, error)

    def worker_failed(self, group: str, error: BaseException) -> None:
        """Say in place that this screen's ``group`` work failed with ``error``
        (the notification is out already). Nothing by default."""


class Foreground:
    """Work a screen's background workers yield to (its searches): while any
    runs, and for :attr:`settle_s` after the last one ended (the results are
    being shown then), :meth:`wait` blocks. Thread-safe."""

    def __init__(self, settle_s: float = 0.3) -> None:
        #: Seconds the foreground must have been idle before :meth:`wait` returns.
        self.settle_s = settle_s
        self._cond = threading.Condition()
        self._running = 0
        self._idle_since = float("-inf")

    @contextmanager
    def running(self) -> Iterator[None]:
        """Mark foreground work as running for the ``with`` block."""
        with self._cond:
            self._running += 1
        try:
            yield
        finally:
            with self._cond:
                self._running -= 1
                if not self._running:
                    self._idle_since = time.monotonic()
                self._cond.notify_all()

    def touch(self) -> None:
        """Mark the foreground as busy now without running anything (a key
        typed into the query: its search follows the debounce): :meth:`wait`
        blocks for :attr:`settle_s` from now."""
        with self._cond:
            self._idle_since = max(self._idle_since, time.monotonic())
            self._cond.notify_all()

    def wait(self, timeout: float | None = None) -> bool:
        """Block while foreground work runs or ended less than :attr:`settle_s`
        ago, at most ``timeout`` seconds; True when the foreground is idle by then."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while True:
                now = time.monotonic()
                rest = None if self._running else self._idle_since + self.settle_s - now
                if rest is not None and rest <= 0:
                    return True
                if deadline is not None:
                    if deadline <= now:
                        return False
                    rest = deadline - now if rest is None else min(rest, deadline - now)
                self._cond.wait(rest)
