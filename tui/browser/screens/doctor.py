"""Store diagnostics (``rankscope doctor`` in the browser): what in the open
store will surprise a search: damage (integrity checks), fusion-key collisions, oversized chunks,
Untitled titles, wrong source counts, orphan chunks, the vocabulary and stale
file-backed sources (:func:`engine.lab.doctor.diagnose`, read-only)."""

from __future__ import annotations

from dataclasses import dataclass

from rich.console import Group
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widgets import Static

from engine import Store
from engine.lab.doctor import DoctorReport, diagnose

from tui.present import safe
from tui.present.describe import describe_report, to_rich
from tui.browser.actions import close_keys
from tui.browser.screens.work import WorkScreen
from tui.browser.widgets.footer import KeyFooter


#: Rows shown per table (``rankscope doctor --json`` lists them all).
MAX_ROWS = 100


def doctor_renderable(report: DoctorReport, label: str = "") -> Group:
    """The report as ``rankscope doctor`` prints it
    (:func:`tui.present.describe.describe_report`), at most ``MAX_ROWS`` rows per table."""
    return to_rich(describe_report(report, label), max_rows=MAX_ROWS)


class DoctorScreen(WorkScreen[None]):
    """The store diagnosis, on a screen of its own (run in its worker)."""

    BROWSER_KEYS = False
    BINDINGS = [
        *close_keys("doctor", "the diagnosis", toggle="f9"),
    ]

    WORK = {"doctor": "Doctor"}

    @dataclass
    class Diagnosed(Message):
        """The diagnosis is ready."""

        report: DoctorReport

    def __init__(self, store: Store, label: str = "") -> None:
        super().__init__()
        self.store = store
        self.label = label
        self.report: DoctorReport | None = None

    def compose(self) -> ComposeResult:
        yield Static(Text("Store diagnostics (doctor)", style="bold"), id="doctor-title", classes="lab-title")
        with VerticalScroll(id="doctor-box"):
            yield Static(Text("diagnosing…", style="italic"), id="doctor-text")
        yield KeyFooter(compact=True)

    def on_mount(self) -> None:
        box = self.query_one("#doctor-box", VerticalScroll)
        box.border_title = "Report"
        box.border_subtitle = "read-only · ↑↓ PgUp PgDn scroll"
        box.focus()
        self._diagnose()

    @work(thread=True, exclusive=True, exit_on_error=False, group="doctor")
    def _diagnose(self) -> None:
        """Diagnose the store (read-only); post :class:`Diagnosed`."""
        with self.store.thread_connection() as conn:
            self.post_message(self.Diagnosed(diagnose(self.store, conn=conn)))

    @on(Diagnosed)
    def _finished(self, event: Diagnosed) -> None:
        self.report = event.report
        self.query_one("#doctor-text", Static).update(doctor_renderable(event.report, self.label))

    def worker_failed(self, group: str, error: BaseException) -> None:
        """The diagnosis failed (notified already): say so in place."""
        self.query_one("#doctor-text", Static).update(Text(f"Diagnosis failed: {safe.line(str(error))}", style="bold"))

    def action_close(self) -> None:
        """Close the diagnosis."""
        self.dismiss(None)
