"""Store diagnostics (``rankscope doctor`` in the browser): what in the open
store will surprise a search: damage (integrity checks), fusion-key collisions, oversized chunks,
Untitled titles, wrong source counts, orphan chunks, the vocabulary and stale
file-backed sources (:func:`engine.doctor.diagnose`, read-only)."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Static

from engine.doctor import DoctorReport

from .. import safe
from ..messages import Diagnose, DoctorFinished

_CLOSE = Binding.Group("Close ", compact=True)

#: Rows shown per table (``rankscope doctor --json`` lists them all).
MAX_ROWS = 100


def _table(title: str, columns: tuple[str, ...], rows: list[tuple], wide: tuple[str, ...] = ()) -> Group:
    """A heading (``name (n): gloss``) over a table of at most ``MAX_ROWS`` rows."""
    shown = rows[:MAX_ROWS]
    more = f"; first {MAX_ROWS} shown, rankscope doctor --json lists all" if len(rows) > MAX_ROWS else ""
    name, _, gloss = title.partition(": ")
    heading = Text(f"{name} ({len(rows)})", style="bold")
    if gloss or more:
        heading.append(f": {gloss}{more}" if gloss else more, style="dim")
    t = Table(expand=False, box=None, header_style="bold underline", pad_edge=False)
    for col in columns:
        if col in wide:
            t.add_column(col, overflow="fold", ratio=2 if col in ("key", "title", "file", "error") else 1)
        else:
            t.add_column(col, no_wrap=True, justify="right" if col in ("rowid", "chunks", "bytes", "id", "recorded", "actual") else "left")
    for row in shown:
        t.add_row(*[Text(safe.line(str(x))) for x in row])
    return Group(heading, t)


def doctor_renderable(report: DoctorReport, label: str = "") -> Group:
    """The report: the store line, one bullet per finding (⚠, in words),
    then a table per kind of problem."""
    head = Text(safe.line(label or report.path or "(in memory)"), style="bold")
    if report.read_error is not None:
        head.append(f"\n{safe.line(report.schema)} · unreadable", style="dim")
    else:
        vocab = "missing (no typo fallback)" if report.vocabulary_size is None else f"{report.vocabulary_size} words"
        head.append(f"\n{safe.line(report.schema)} · {report.sources} sources · {report.chunks} chunks · "
                    f"trigram rows {report.trigram_rows} · vocabulary {vocab}", style="dim")
    if report.integrity:
        head.append("\nintegrity: " + ", ".join(f"{c.title} {'ok' if c.ok else 'FAILED'}" for c in report.integrity),
                    style="dim")
    parts: list = [head, Text("")]
    if report.ok:
        parts.append(Text("✓ No problems found.", style="bold green"))
        return Group(*parts)
    for line in report.findings:
        damage = line.startswith("the store is damaged")
        parts.append(Text(("✗ " if damage else "⚠ ") + safe.line(line), style="bold red" if damage else "bold yellow"))
    if report.damaged:
        parts.append(Text("Rebuild the store from its files (rankscope index into a new --db): searches on a damaged "
                          "index can silently miss or misrank chunks.", style="italic"))
    tables: list[Group] = []
    if report.collisions:
        tables.append(_table(
            "Fusion-key collisions: chunks sharing source::title; fusion keeps the first row seen",
            ("chunks", "key", "rowids"),
            [(c.count, c.key, ", ".join(map(str, c.rowids))) for c in report.collisions], wide=("key", "rowids")))
    if report.oversized:
        tables.append(_table(
            f"Chunks over {report.max_chunk_bytes} bytes", ("rowid", "bytes", "title", "source"),
            [(o.rowid, o.bytes, o.title, o.source or "(no source row)") for o in report.oversized],
            wide=("title",)))
    if report.untitled:
        tables.append(_table(
            "Empty or Untitled titles: no heading, weak title boost", ("rowid", "title", "source"),
            [(u.rowid, repr(u.title), u.source or "(no source row)") for u in report.untitled], wide=("source",)))
    if report.count_mismatches:
        tables.append(_table(
            "Counts that disagree with the rows stored", ("id", "source", "count", "recorded", "actual"),
            [("—" if m.source_id is None else m.source_id, "—" if m.label is None else m.label, m.what,
              m.recorded, m.actual) for m in report.count_mismatches], wide=("source",)))
    if report.stale:
        tables.append(_table("Stale file-backed sources: changed since indexing (not refreshed here)", ("label", "file"),
                             [(s.label, s.file_path) for s in report.stale], wide=("file",)))
    if report.stale_errors:
        tables.append(_table("Sources that could not be checked", ("label", "error"),
                             list(report.stale_errors), wide=("error",)))
    for t in tables:
        parts += [Text(""), t]
    return Group(*parts)


class DoctorScreen(Screen[None]):
    """The store diagnosis, on a screen of its own."""

    BINDINGS = [
        Binding("escape", "close", "Close", group=_CLOSE, id="doctor.close",
                tooltip="Close the diagnosis; focus returns where it was"),
        Binding("f9", "close", "Close", group=_CLOSE, id="doctor.toggle", tooltip="Close the diagnosis"),
    ]

    def __init__(self, label: str = "") -> None:
        super().__init__()
        self.label = label
        self.report: DoctorReport | None = None

    def compose(self) -> ComposeResult:
        yield Static(Text("Store diagnostics (doctor)", style="bold"), id="doctor-title", classes="lab-title")
        with VerticalScroll(id="doctor-box"):
            yield Static(Text("diagnosing…", style="italic"), id="doctor-text")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        box = self.query_one("#doctor-box", VerticalScroll)
        box.border_title = "Report"
        box.border_subtitle = "read-only · ↑↓ PgUp PgDn scroll"
        box.focus()
        self.app.post_message(Diagnose(self))

    @on(DoctorFinished)
    def _finished(self, event: DoctorFinished) -> None:
        self.report = event.report
        self.query_one("#doctor-text", Static).update(doctor_renderable(event.report, self.label))

    def worker_failed(self, group: str, error: BaseException) -> None:
        """The diagnosis failed (the app has notified): say so in place."""
        if group == "doctor":
            self.query_one("#doctor-text", Static).update(
                Text(f"Diagnosis failed: {safe.line(str(error))}", style="bold"))

    def action_close(self) -> None:
        """Close the diagnosis."""
        self.dismiss(None)
