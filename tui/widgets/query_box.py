"""The query box: search as you type (debounced) and on Enter, with the
sanitised Porter and trigram queries shown beneath it."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.timer import Timer
from textual.widgets import Input, Static

from engine.model import Trace

from .. import safe
from ..actions import bindings

#: Pause after the last keystroke before searching (seconds).
DEBOUNCE_S = 0.15


class QueryInput(Input):
    """The query input. Up steps to older queries of the store's history and
    Down back to newer ones; otherwise Down leaves it for the results (a
    priority binding, so keys typed right after Down already reach the pane).
    ctrl+r searches the history. The keys come from :mod:`tui.actions` and
    run the browser screen's actions (``screen.query_down`` ...)."""

    BINDINGS = bindings("query")


class QueryBox(Vertical):
    """An :class:`~textual.widgets.Input` plus the sanitised FTS5 queries.

    Posts :class:`QueryBox.QueryChanged` 150 ms after typing stops, and at
    once on Enter.
    """

    class QueryChanged(Message):
        """The query text to search for."""

        def __init__(self, query: str, submitted: bool) -> None:
            self.query = query
            self.submitted = submitted
            super().__init__()

    def __init__(self, value: str = "", *, cursor_blink: bool = True, id: str | None = None) -> None:
        super().__init__(id=id)
        self._value = value
        self._cursor_blink = cursor_blink
        self._timer: Timer | None = None

    def compose(self) -> ComposeResult:
        yield QueryInput(
            self._value,
            placeholder="Search… (Enter searches now · F1 help · ctrl+p commands)",
            id="query",
            max_length=10_000,
        )
        yield Static(self._sanitised_text(None), id="sanitised")

    def on_mount(self) -> None:
        self.input.cursor_blink = self._cursor_blink

    @property
    def input(self) -> Input:
        """The text input."""
        return self.query_one("#query", Input)

    @property
    def value(self) -> str:
        """The current query text."""
        return self.input.value

    def focus_query(self) -> None:
        """Focus the input with its whole text selected, so typing replaces it.

        The focus moves at once (``Screen.set_focus``, not the deferred
        ``Widget.focus``): keys already on their way land in the query."""
        self.screen.set_focus(self.input)
        self.input.select_all()

    @staticmethod
    def _sanitised_text(trace: Trace | None, stems: str = "") -> Text:
        """``porter "write" OR "quorum" · trigram "write" OR "quorum"`` (and
        ``· fuzzy …`` when the corrected query answered), with the Porter
        stems (``stems``) beside the Porter query. The parts are separated by
        a visible ``·``: with spaces alone (in a dim span after a bold one) a
        new user read ``"quorum"trigram``."""
        t = Text("porter ", style="dim")
        if trace is None:
            t.append("—", style="dim")
            t.append(" · trigram ", style="dim")
            t.append("—", style="dim")
            return t
        porter, trigram = trace.first.porter, trace.first.trigram
        t.append(safe.line(porter.query) or '"" (no words)', style="bold")
        if stems:
            t.append(f" ({safe.line(stems)})", style="italic")
        t.append(" · trigram ", style="dim")
        t.append(
            safe.line(trigram.query) or f"(skipped{': ' + trigram.skipped if trigram.skipped else ''})", style="bold"
        )
        if trace.fuzzy.rerun is not None and trace.layer == "rrf-fuzzy":
            t.append(" · fuzzy ", style="dim")
            t.append(safe.line(trace.fuzzy.corrected_query), style="bold underline")
        return t

    def set_query(self, text: str) -> None:
        """Put ``text`` in the input, cursor at its end (it is then searched
        like typed text, after the pause)."""
        self.input.value = text
        self.input.cursor_position = len(text)

    def show_queries(self, trace: Trace | None, stems: str = "") -> None:
        """Show the sanitised queries of ``trace`` beneath the input, with
        ``stems`` (``throttling → throttl``, :func:`tui.flowtext.stems_words`)
        after the Porter query."""
        self.query_one("#sanitised", Static).update(self._sanitised_text(trace, stems))

    def _fire(self) -> None:
        self._timer = None
        self.post_message(self.QueryChanged(self.input.value, submitted=False))

    @on(Input.Changed, "#query")
    def _changed(self, event: Input.Changed) -> None:
        event.stop()
        if self._timer is not None:
            self._timer.stop()
        self._timer = self.set_timer(DEBOUNCE_S, self._fire)

    @on(Input.Submitted, "#query")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        self.post_message(self.QueryChanged(event.value, submitted=True))
