"""The query box: search as you type (debounced) and on Enter, with the
sanitised Porter and trigram queries shown beneath it."""

from __future__ import annotations

import functools
import io
from collections.abc import Sequence
from typing import Any
from dataclasses import dataclass

from rich.cells import cell_len
from rich.console import Console
from rich.text import Text
from textual import on
from textual import events
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.timer import Timer
from textual.widgets import Input, Static

from engine.pipeline.params import MAX_QUERY_CHARS
from engine.pipeline.trace import Trace

from tui.present import safe
from tui.browser.actions import bindings, key_shown
from tui.present.cut import ELLIPSIS, terms_cut

#: Pause after the last keystroke before searching (seconds).
DEBOUNCE_S = 0.15
#: Lines the sanitised queries may take beneath the input (app.tcss: ``#sanitised`` max-height).
QUERY_LINES = 2
#: The line beneath the input while a search runs longer than
#: :data:`SEARCHING_SHOWN_AFTER_S` (the panes still show the previous search).
SEARCHING_TEXT = "searching… (the panes show the previous query until it is done)"
#: A search running this long (seconds) is shown as such beneath the input;
#: a quicker one is not, so typing does not make the line flicker.
SEARCHING_SHOWN_AFTER_S = 0.3


@dataclass(frozen=True)
class QueryParts:
    """What the line beneath the query box shows, as plain text (control
    characters made visible).

    Attributes:
        porter: the sanitised Porter query (``'"" (no words)'`` when empty).
        trigram: the sanitised trigram query, or why the trigram run was skipped.
        stems: ``throttling → throttl``: one string per Porter word whose tokens differ.
        fuzzy: the corrected query when the fuzzy re-run answered, else ``None``.
    """

    porter: str
    trigram: str
    stems: tuple[str, ...] = ()
    fuzzy: str | None = None

    @classmethod
    def of(cls, trace: Trace, stems: Sequence[str] = ()) -> "QueryParts":
        """The parts of ``trace`` (its first pass's queries) with ``stems``."""
        porter, trigram = trace.first.porter, trace.first.trigram
        fuzzy = None
        if trace.fuzzy.rerun is not None and trace.layer == "rrf-fuzzy":
            fuzzy = safe.line(trace.fuzzy.corrected_query)
        return cls(
            safe.line(porter.query) or '"" (no words)',
            safe.line(trigram.query) or f"(skipped{': ' + trigram.skipped if trigram.skipped else ''})",
            tuple(safe.line(w) for w in stems),
            fuzzy,
        )


@functools.cache
def _console() -> Console:
    """A console that prints nowhere: :meth:`rich.text.Text.wrap` needs one."""
    return Console(file=io.StringIO(), color_system=None)


def _wrapped(text: Text, width: int) -> list[Text]:
    """``text`` wrapped at spaces to ``width`` cells (a word wider than a
    line is folded), as Rich wraps it; trailing spaces dropped."""
    lines = list(text.wrap(_console(), width))
    for line in lines:
        line.rstrip()
    return lines


def queries_text(parts: QueryParts | None, stems: str | None = None, porter: str = "", trigram: str = "") -> Text:
    """``porter "write" OR "quorum" (stems) · trigram "write" OR "quorum"``
    (and ``· fuzzy …``) styled; ``stems``, ``porter`` and ``trigram``
    replace the parts' own (shortened) text. ``None``: nothing searched
    (``porter — · trigram —``). The parts are separated by a visible ``·``:
    with spaces alone (in a dim span after a bold one) a new user read
    ``"quorum"trigram``."""
    t = Text("porter ", style="dim")
    if parts is None:
        t.append("—", style="dim")
        t.append(" · trigram ", style="dim")
        t.append("—", style="dim")
        return t
    t.append(porter or parts.porter, style="bold")
    stems = ", ".join(parts.stems) if stems is None else stems
    if stems:
        t.append(f" ({stems})", style="italic")
    t.append(" · trigram ", style="dim")
    t.append(trigram or parts.trigram, style="bold")
    if parts.fuzzy is not None:
        t.append(" · fuzzy ", style="dim")
        t.append(parts.fuzzy, style="bold underline")
    return t


def fit_queries(parts: QueryParts | None, width: int, lines: int = QUERY_LINES) -> Text:
    """:func:`queries_text` in at most ``lines`` lines of ``width`` cells,
    broken into lines here (so the widget has nothing left to wrap or cut).

    When it does not fit, the stems go first (``(throttling → throttl, …)``,
    then ``(…)``), then both queries are shortened in the middle
    (:func:`tui.present.cut.terms_cut`) to the longest equal share that fits; both queries
    always show. Only when not even that fits is the end cut. Every cut shows
    ``…``. ``width`` 0 or less: the whole text, unbroken."""
    full = queries_text(parts)
    if parts is None or width <= 0:
        return full

    def fitted(text: Text) -> Text | None:
        wrapped = _wrapped(text, width)
        return Text("\n").join(wrapped) if len(wrapped) <= lines else None

    found = fitted(full)
    if found is not None:
        return found
    stems = list(parts.stems)
    for kept in range(len(stems) - 1, -1, -1):
        found = fitted(queries_text(parts, ", ".join([*stems[:kept], ELLIPSIS])))
        if found is not None:
            return found
    fewer = ELLIPSIS if stems else ""

    def shortened(share: int) -> Text:
        return queries_text(parts, fewer, terms_cut(parts.porter, share), terms_cut(parts.trigram, share))

    low, high = 1, min(max(cell_len(parts.porter), cell_len(parts.trigram)), width * lines)
    if fitted(shortened(low)) is None:  # too narrow for both: the end goes
        wrapped = _wrapped(shortened(low), width)[:lines]
        last = wrapped[-1]
        last.truncate(max(width - 1, 0))
        last.append(ELLIPSIS)
        return Text("\n").join(wrapped)
    while low < high:  # the longest share that fits
        mid = (low + high + 1) // 2
        if fitted(shortened(mid)) is not None:
            low = mid
        else:
            high = mid - 1
    result = fitted(shortened(low))
    assert result is not None
    return result


class SanitisedLine(Static):
    """The sanitised queries beneath the input, fitted to its width (again
    on every resize): :func:`fit_queries`."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(queries_text(None), id=id)
        self.parts: QueryParts | None = None
        self.searching = False

    def show(self, parts: QueryParts | None) -> None:
        """Show ``parts`` (``None``: nothing searched); a search shown ends :attr:`searching`."""
        self.parts = parts
        self.searching = False
        self.refit()

    def show_searching(self) -> None:
        """A search is taking a while: say so (:data:`SEARCHING_TEXT`) in
        place of the previous query's parts, until :meth:`show`."""
        self.searching = True
        self.refit()

    def refit(self) -> None:
        """Lay the parts out for the current width."""
        width = self.size.width
        if self.searching:
            text = Text(SEARCHING_TEXT, style="italic")
            self.update(Text("\n").join(_wrapped(text, width)[:QUERY_LINES]) if width > 0 else text)
        else:
            self.update(fit_queries(self.parts, width))

    def on_resize(self) -> None:
        self.refit()


class QueryInput(Input):
    """The query input. Up steps to older queries of the store's history and
    Down back to newer ones; otherwise Down leaves it for the results (a
    priority binding, so keys typed right after Down already reach the pane).
    ctrl+r searches the history. The keys come from :mod:`tui.browser.actions` and
    run the browser screen's actions (``screen.query_down`` ...)."""

    BINDINGS = bindings("query")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._cut_told = False  # the query reached the limit and typing past it was reported

    def on_paste(self, event: events.Paste) -> None:
        """A paste that would make the query longer than a query may be
        (:data:`engine.pipeline.params.MAX_QUERY_CHARS`) is refused with a warning
        naming both lengths, instead of being dropped without a word (the
        input's ``max_length``). Only the first line is pasted, as
        :class:`~textual.widgets.Input` pastes."""
        if not event.text:
            return
        line = event.text.splitlines()[0] if event.text.splitlines() else ""
        start, end = sorted(self.selection)
        length = len(self.value) - (end - start) + len(line)
        if length > MAX_QUERY_CHARS:
            event.prevent_default()
            event.stop()
            self._paste_refused(length)

    def _paste_refused(self, length: int) -> None:
        """Say that a paste making the query ``length`` characters was refused."""
        self.notify(
            f"The query would be {length:,} characters; a query holds at most {MAX_QUERY_CHARS:,}. Nothing was pasted.",
            title="Paste too long",
            severity="warning",
        )

    def replace(self, text: str, start: int, end: int) -> None:
        """:meth:`textual.widgets.Input.replace`, which refuses without a word
        a change making the query longer than :data:`MAX_QUERY_CHARS`: a
        paste (ctrl+v) is then refused with :meth:`_paste_refused`; typed
        characters (one key at a time: a terminal without bracketed paste,
        tmux send-keys) stop at the limit, and the first refused one says
        the query was cut there (once, until the query is shorter again)."""
        lo, hi = sorted((max(0, start), min(len(self.value), end)))
        length = len(self.value) - (hi - lo) + len(text)
        if length > MAX_QUERY_CHARS:
            if len(text) > 1:
                self._paste_refused(length)
            elif not self._cut_told:
                self._cut_told = True
                self.notify(
                    f"Query cut to {MAX_QUERY_CHARS:,} characters (the limit): what was typed past it was not added.",
                    title="Query cut",
                    severity="warning",
                )
        super().replace(text, start, end)

    def watch_value(self, value: str) -> None:
        if len(value) < MAX_QUERY_CHARS:
            self._cut_told = False


class QueryBox(Vertical):
    """An :class:`~textual.widgets.Input` plus the sanitised FTS5 queries.

    Posts :class:`QueryBox.QueryChanged` 150 ms after typing stops, and at
    once on Enter.
    """

    @dataclass
    class QueryChanged(Message):
        """The query text to search for."""

        query: str
        submitted: bool

    @dataclass
    class Typed(Message):
        """The query text changed (every keystroke; its search follows
        :data:`DEBOUNCE_S` later in :class:`QueryChanged`)."""

    def __init__(self, value: str = "", *, cursor_blink: bool = True, id: str | None = None) -> None:
        super().__init__(id=id)
        self._value = value
        self._cursor_blink = cursor_blink
        self._timer: Timer | None = None

    def compose(self) -> ComposeResult:
        yield QueryInput(
            self._value,
            placeholder=f"Search… ({key_shown('search-now')} searches now · {key_shown('help')} help · "
            f"{key_shown('command-palette')} commands)",
            id="query",
            max_length=MAX_QUERY_CHARS,
        )
        yield SanitisedLine(id="sanitised")

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

    def set_query(self, text: str) -> None:
        """Put ``text`` in the input, cursor at its end (it is then searched
        like typed text, after the pause)."""
        self.input.value = text
        self.input.cursor_position = len(text)

    def show_queries(self, trace: Trace | None, stems: Sequence[str] = ()) -> None:
        """Show the sanitised queries of ``trace`` beneath the input (``None``:
        nothing searched), with ``stems`` (``throttling → throttl``, one
        string per word, :func:`tui.present.flowtext.stems_words`) after the Porter
        query; fitted to two lines (:func:`fit_queries`)."""
        self.query_one(SanitisedLine).show(None if trace is None else QueryParts.of(trace, stems))

    def show_searching(self) -> None:
        """Say beneath the input that a search is running (:meth:`SanitisedLine.show_searching`)."""
        self.query_one(SanitisedLine).show_searching()

    def _fire(self) -> None:
        self._timer = None
        self.post_message(self.QueryChanged(self.input.value, submitted=False))

    @on(Input.Changed, "#query")
    def _changed(self, event: Input.Changed) -> None:
        event.stop()
        if self._timer is not None:
            self._timer.stop()
        self._timer = self.set_timer(DEBOUNCE_S, self._fire)
        self.post_message(self.Typed())

    @on(Input.Submitted, "#query")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        self.post_message(self.QueryChanged(event.value, submitted=True))
