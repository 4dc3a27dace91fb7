"""The session dialog: turn the session filter on or off and choose the
allow-set from the store's sessions (``Store.session_counts``)."""

from __future__ import annotations

from typing import Sequence

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.strip import Strip
from textual.widgets import Checkbox, Label, SelectionList, Static, Switch
from textual.widgets.selection_list import Selection

from engine.pipeline import table as stages

from tui.present import safe
from tui.browser.actions import close_keys
from tui.browser.screens.params import ApplyFn, ParamsChange
from tui.browser.widgets.footer import KeyFooter


def session_prompt(session: str, chunks: int, allowed: bool) -> Text:
    """One session line: the id first (the ids line up under the boxes),
    its chunk count, and "✓ allowed" when allowed: in words, not only in
    colour (the box's ``[x]`` says it too)."""
    t = Text(safe.line(session), style="bold" if allowed else "")
    t.append(f"  ({chunks} chunk{'s' if chunks != 1 else ''})", style="dim")
    if allowed:
        t.append("  ✓ allowed", style="bold")
    return t


#: The switch's hint, by state: it says what the filter does now.
FILTER_ON = "on: only the allowed sessions pass"
FILTER_OFF = "off: every session passes"
#: The switch's hint when it is on and no session is allowed.
FILTER_ON_NONE = "on, no session allowed: only unattributed chunks pass"
#: The keys, in words (Tab goes between the switch and the list, not between sessions).
KEYS_HINT = "↑↓ a session · Space allows it (the filter turns on) · Tab the switch · Esc closes"


def filter_state(on: bool, allowed: int) -> str:
    """The switch's hint: the filter ``on`` or off, with ``allowed`` sessions allowed."""
    if not on:
        return FILTER_OFF
    return FILTER_ON if allowed else FILTER_ON_NONE


class CheckList(SelectionList[str]):
    """A selection list whose boxes read ``[x]`` / ``[ ]``: the state shows
    without colour (NO_COLOR), where the stock ``▐X▌`` looks the same on and off."""

    def render_line(self, y: int) -> Strip:
        strip = super().render_line(y)
        segments = list(strip)
        if len(segments) < 3 or segments[1].text != Checkbox.BUTTON_INNER:
            return strip
        try:
            selection = self.get_option_at_index(self.scroll_offset.y + y)
        except Exception:
            return strip
        chosen = selection.value in self._selected
        # drawn in the row's own colours (the stock box's are dark on dark, 1.2:1), bold when chosen
        row = segments[-1].style or Style()
        box = Segment("[x]" if chosen else "[ ]", row + Style(bold=True) if chosen else row)
        return Strip([box, *segments[3:]], strip.cell_length)


class SessionsScreen(ModalScreen[None]):
    """Choose the session allow-set; each change re-runs the search behind the dialog.

    Unattributed chunks (session ``""``) always pass the filter, as in the
    reference; with the filter on and nothing chosen, only they pass.
    """

    BINDINGS = [
        *close_keys("sessions", "the dialog", toggle="f3"),
    ]

    def __init__(self, counts: Sequence[tuple[str, int]], allow: tuple[str, ...] | None, apply: ApplyFn) -> None:
        super().__init__()
        self.counts = counts
        self.allow = allow
        self.apply_change = apply

    def compose(self) -> ComposeResult:
        chosen = set(self.allow or ())
        unattributed = sum(n for s, n in self.counts if not s)
        with Vertical(id="dialog", classes="dialog"):
            yield Static(stages.title("filter"), classes="dialog-title")
            with Horizontal(classes="field"):
                yield Label("Filter", classes="field-label")
                yield Switch(self.allow is not None, id="filter-on")
                yield Label(filter_state(self.allow is not None, len(chosen)), id="filter-state", classes="hint")
            sessions = [(s, n) for s, n in self.counts if s]
            if sessions:
                yield CheckList(
                    *(Selection(session_prompt(s, n, s in chosen), s, s in chosen) for s, n in sessions),
                    id="sessions",
                )
            else:
                yield Static("This store has no attributed sessions.", classes="hint")
            yield Static(
                f"{unattributed} unattributed chunk{'s' if unattributed != 1 else ''} always pass.", classes="hint"
            )
            yield Static(KEYS_HINT if sessions else "Space toggles · Esc closes", classes="hint")
        yield KeyFooter(compact=True)

    def on_mount(self) -> None:
        lists = self.query(SelectionList)
        (lists.first() if lists else self.query_one("#filter-on", Switch)).focus()

    def _allow_set(self) -> tuple[str, ...] | None:
        if not self.query_one("#filter-on", Switch).value:
            return None
        lists = self.query(SelectionList)
        if not lists:
            return ()
        chosen = set(lists.first().selected)
        return tuple(s for s, _ in self.counts if s and s in chosen)

    def _apply(self) -> None:
        allow = self._allow_set()
        self.query_one("#filter-state", Label).update(filter_state(allow is not None, len(allow or ())))
        self.apply_change(ParamsChange(sessions=allow))

    @on(Switch.Changed, "#filter-on")
    def _toggled(self, event: Switch.Changed) -> None:
        self._apply()

    @on(SelectionList.SelectedChanged)
    def _chosen(self, event: SelectionList.SelectedChanged[str]) -> None:
        lst = event.selection_list
        chosen = set(lst.selected)
        counts = dict(self.counts)
        for i in range(lst.option_count):
            value = lst.get_option_at_index(i).value
            lst.replace_option_prompt_at_index(i, session_prompt(value, counts.get(value, 0), value in chosen))
        switch = self.query_one("#filter-on", Switch)
        if event.selection_list.selected and not switch.value:
            switch.value = True  # posts Switch.Changed, which applies
            return
        self._apply()

    def action_close(self) -> None:
        """Close the dialog."""
        self.dismiss(None)
