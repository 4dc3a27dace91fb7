"""F1: what each pipeline stage does (two lines each, from
:data:`engine.pipeline.table.STAGES`) and the keys."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from engine.pipeline import table as stages

from tui.browser.actions import ACTIONS, close_keys, help_keys
from tui.browser.widgets.footer import KeyFooter


#: (key column, what it does): the F1 key list, from the one action table (tui.browser.actions).
KEYS = help_keys()


def help_renderable() -> Table:
    """The help text as a two-column table."""
    t = Table(box=None, show_header=False, pad_edge=False, expand=True)
    t.add_column(no_wrap=True, style="bold")
    t.add_column(ratio=1)
    t.add_row(Text("Pipeline", style="bold underline"), "")
    opened_by = {a.stage: a for a in ACTIONS if a.stage and a.keys}
    for stage in stages.STAGES:
        one, two = stage.about
        if stage.id in opened_by:  # a stage with a view of its own: its key
            two += f" ({opened_by[stage.id].keys[0].shown})"
        t.add_row(stage.title, Text(f"{one}\n{two}"))
        t.add_row("", "")
    t.add_row(Text("Keys", style="bold underline"), "")
    for key, what in KEYS:
        t.add_row(key, what)
    return t


class HelpScreen(ModalScreen[None]):
    """The stages explained, and the keys."""

    BINDINGS = [
        *close_keys("help", "help", toggle="f1"),
    ]

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="dialog help"):
            yield Static("rankscope · how a search is ranked", classes="dialog-title")
            with VerticalScroll(id="help-scroll"):
                yield Static(help_renderable())
            yield Static("↑↓ PgUp PgDn scroll · Esc closes", classes="hint")
        yield KeyFooter(compact=True)

    def on_mount(self) -> None:
        self.query_one("#help-scroll").focus()

    def action_close(self) -> None:
        """Close help."""
        self.dismiss(None)
