"""The files indexing passed over (binary, too large, unreadable, ...), as
``rankscope index`` lists them: opened from the palette ("Skipped files")."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from tui.present import safe
from tui.browser.actions import close_keys
from tui.browser.corpus_cache import SkipList
from tui.browser.widgets.footer import KeyFooter


def skipped_renderable(skips: SkipList) -> Table:
    """One row per skipped file: its label and why it was not indexed."""
    t = Table(box=None, show_header=True, header_style="bold", pad_edge=False, expand=True)
    t.add_column("file", no_wrap=False, ratio=1)
    t.add_column("why not indexed", ratio=1)
    for s in skips.skipped:
        t.add_row(Text(safe.line(s.path), style="bold"), Text(safe.line(s.reason)))
    return t


class SkippedScreen(ModalScreen[None]):
    """The files the last indexing of this folder did not index, and why."""

    BINDINGS = [
        *close_keys("skipped", "the list"),
    ]

    def __init__(self, skips: SkipList, label: str) -> None:
        super().__init__()
        self.skips = skips
        self.label = label

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="dialog"):
            yield Static(Text(f"Not indexed from {safe.line(self.label)}", style="bold"), classes="dialog-title")
            if self.skips.skipped:
                yield Static(self.skips.summary() + ":", classes="hint")
                with VerticalScroll(id="skipped-scroll"):
                    yield Static(skipped_renderable(self.skips), id="skipped-list")
            else:
                yield Static("Every file was indexed.", classes="hint")
            yield Static("↑↓ PgUp PgDn scroll · Esc closes", classes="hint")
        yield KeyFooter(compact=True)

    def on_mount(self) -> None:
        scrolls = self.query("#skipped-scroll")
        if scrolls:
            scrolls.first().focus()

    def action_close(self) -> None:
        """Close the list."""
        self.dismiss(None)
