"""ctrl+r in the query box: search the store's query history, fzf-style.

It starts with every query, newest first (the query shown is remembered as
it opens; starting from the box's text listed "No match." for a query not yet
remembered). Type to narrow (every typed character must appear in order); ↑↓ choose;
Enter puts the query in the box and searches; Escape leaves the box as it was.
"""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from tui.present import safe
from tui.browser.actions import close_keys
from tui.browser.userstate import QueryHistory
from tui.browser.widgets.footer import KeyFooter


class HistorySearchScreen(ModalScreen[str | None]):
    """Pick a query from the history; dismisses with it (or ``None``)."""

    BINDINGS = [
        *close_keys("history", "", escape_tooltip="Close; the query box keeps its text"),
        Binding(
            "down",
            "to_list",
            "Matches",
            key_display="↓",
            id="history.list",
            show=False,
            tooltip="Move to the matching queries",
        ),
        Binding("ctrl+r", "to_list", "Matches", show=False, id="history.again", tooltip="Move to the matching queries"),
    ]

    def __init__(self, history: QueryHistory, text: str = "") -> None:
        super().__init__()
        self.history = history
        self.text = text
        self.matches: list[str] = []

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="dialog"):
            yield Static(Text("Query history", style="bold"), classes="dialog-title")
            yield Input(self.text, placeholder="Type to narrow (fuzzy)…", id="history-filter")
            yield OptionList(id="history-list")
            yield Static("Enter searches the chosen query · ↓ to the list · Esc closes", classes="hint")
        yield KeyFooter(compact=True)

    def on_mount(self) -> None:
        self.refill(self.text)
        box = self.query_one("#history-filter", Input)
        box.focus()
        box.select_all()  # a text given (none from ctrl+r): typing replaces it

    @property
    def options(self) -> OptionList:
        return self.query_one("#history-list", OptionList)

    def refill(self, text: str) -> None:
        """Show the queries matching ``text``, best first."""
        self.matches = self.history.search(text)
        if self.matches:
            self.options.set_options([Option(Text(safe.line(q)), id=f"h{i}") for i, q in enumerate(self.matches)])
            self.options.highlighted = 0
        else:
            empty = "No query searched in this store yet." if not self.history.entries else "No match."
            self.options.set_options([Option(Text(empty, style="italic"), disabled=True)])

    @on(Input.Changed, "#history-filter")
    def _changed(self, event: Input.Changed) -> None:
        event.stop()
        self.refill(event.value)

    @on(Input.Submitted, "#history-filter")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.choose(self.options.highlighted)

    @on(OptionList.OptionSelected, "#history-list")
    def _selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.choose(event.option_index)

    def choose(self, index: int | None) -> None:
        """Dismiss with match ``index`` (nothing happens without a match)."""
        if index is not None and 0 <= index < len(self.matches):
            self.dismiss(self.matches[index])

    def action_to_list(self) -> None:
        """Focus the matches."""
        if self.matches:
            self.options.focus()

    def action_close(self) -> None:
        """Close without choosing."""
        self.dismiss(None)
