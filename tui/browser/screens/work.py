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

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """A worker of this screen failed: notify (the app keeps running),
        then :meth:`worker_failed`."""
        if event.state != WorkerState.ERROR:
            return
        error = event.worker.error
        assert error is not None  # set in the ERROR state
        what = self.WORK.get(event.worker.group, "Background task")
        self.notify(
            safe.line(describe_problem(error)), title=f"{what} failed", severity="error", timeout=10, markup=False
        )
        self.worker_failed(event.worker.group, error)

    def worker_failed(self, group: str, error: BaseException) -> None:
        """Say in place that this screen's ``group`` work failed with ``error``
        (the notification is out already). Nothing by default."""
