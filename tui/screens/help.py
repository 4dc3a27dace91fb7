"""F1: what each pipeline stage does (two lines each, from
:data:`engine.stages.STAGES`) and the keys."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer, Static

from engine import stages

_CLOSE = Binding.Group("Close ", compact=True)

KEYS = (
    ("ctrl+l  /", "focus the query box (text selected: typing replaces it)"),
    ("Enter", "search now (otherwise 150 ms after you stop typing)"),
    ("↓  Tab", "move from the query to the results (or the pane shown), then on"),
    ("1 2 3", "results · stages · journey (one at a time on narrow screens); in the query box digits are text"),
    ("F2", "parameters: limit, source filter (substring or exact), content type"),
    ("F3", "session filter: choose the allow-set"),
    ("F4", "copy the current search as a 'rankscope search' command line"),
    ("F6", "export the whole trace as JSON into the current folder"),
    ("F7", "compare: this search under variants A and B side by side (↑n ↓n = new gone, counts)"),
    ("F8", "why not?: find any chunk; the stage where it left and why (from a pane: the selected chunk)"),
    ("F9", "doctor: store diagnostics (key collisions, oversized and Untitled chunks, counts)"),
    ("ctrl+p", "command palette: every command, including 'limit 7'"),
    ("Esc", "close a dialog or lab screen: focus returns where it was"),
    ("ctrl+q", "quit"),
)


def help_renderable() -> Table:
    """The help text as a two-column table."""
    t = Table(box=None, show_header=False, pad_edge=False, expand=True)
    t.add_column(no_wrap=True, style="bold")
    t.add_column(ratio=1)
    t.add_row(Text("Pipeline", style="bold underline"), "")
    for stage in stages.STAGES:
        one, two = stage.about
        t.add_row(stage.title, Text(f"{one}\n{two}"))
        t.add_row("", "")
    t.add_row(Text("Keys", style="bold underline"), "")
    for key, what in KEYS:
        t.add_row(key, what)
    return t


class HelpScreen(ModalScreen[None]):
    """The stages explained, and the keys."""

    BINDINGS = [
        Binding("escape", "close", "Close", group=_CLOSE, id="help.close", tooltip="Close help; focus returns where it was"),
        Binding("f1", "close", "Close", group=_CLOSE, id="help.toggle", tooltip="Close help"),
    ]

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="dialog help"):
            yield Static("rankscope · how a search is ranked", classes="dialog-title")
            with VerticalScroll(id="help-scroll"):
                yield Static(help_renderable())
            yield Static("↑↓ PgUp PgDn scroll · Esc closes", classes="hint")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.query_one("#help-scroll").focus()

    def action_close(self) -> None:
        """Close help."""
        self.dismiss(None)
