"""The browser screen: query box, parameters, results, stage inspector and
journey; runs searches in a thread worker and shows the newest trace.

Layout: at 110 columns and wider, the results sit across the top and the
stage inspector and journey share the rest side by side. Narrower (80x24),
one pane shows at a time under a tab bar (keys 1 2 3, or the tabs).
"""

from __future__ import annotations

from dataclasses import replace

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Footer, Tab, Tabs

from engine import SearchParams, Store
from engine.model import Trace

from .. import safe
from ..facts import describe_problem
from ..messages import ParamsChanged, SearchFailed, SearchFinished
from ..subject import Subject
from ..widgets.inspector import StageInspector
from ..widgets.params_bar import ParamsBar
from ..widgets.preview import JourneyPane
from ..widgets.query_box import QueryBox
from ..widgets.results import ResultsPane

PANES = ("results", "stages", "journey")
_PANES_GROUP = Binding.Group("Panes", compact=True)


class PaneTabs(Tabs):
    """The narrow-screen tab bar. It never takes focus (Tab goes from the
    query straight to the visible pane); keys 1 2 3 and clicks switch panes."""

    can_focus = False


class BrowserScreen(Screen):
    """Search one store and watch every stage of the pipeline."""

    BINDINGS = [
        Binding("1", "show_pane('results')", "Results", id="pane.results", group=_PANES_GROUP,
                tooltip="Show and focus the results (narrow screens show one pane at a time)"),
        Binding("2", "show_pane('stages')", "Stages", id="pane.stages", group=_PANES_GROUP,
                tooltip="Show and focus the stage inspector"),
        Binding("3", "show_pane('journey')", "Journey", id="pane.journey", group=_PANES_GROUP,
                tooltip="Show and focus the journey of the selected chunk"),
    ]

    def __init__(self, store: Store, store_label: str, params: SearchParams, *, show_timings: bool = True,
                 cursor_blink: bool = True) -> None:
        super().__init__()
        self.store = store
        self.store_label = store_label
        self.params = params
        self.show_timings = show_timings
        self.cursor_blink = cursor_blink
        self.trace: Trace | None = None
        self._seq = 0
        self._shown_seq = 0
        self._requested: SearchParams | None = None
        self._last_failure: str | None = None
        self.pane = "results"

    # ── layout ─────────────────────────────────────────────────────────

    def compose(self) -> ComposeResult:
        yield QueryBox(self.params.query, cursor_blink=self.cursor_blink, id="query-box")
        yield ParamsBar(self.store_label, id="params-bar")
        yield PaneTabs(
            Tab("1 Results", id="tab-results"), Tab("2 Stages", id="tab-stages"), Tab("3 Journey", id="tab-journey"),
            id="pane-tabs",
        )
        with Vertical(id="panes"):
            yield ResultsPane(id="results")
            with Horizontal(id="lower"):
                yield StageInspector(show_timings=self.show_timings, id="inspector")
                yield JourneyPane(id="journey")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.add_class("pane-results")
        self.params_bar.show(self.params)
        self.results.show_welcome(self.welcome_text())
        self.query_box.focus_query()
        if self.params.query:
            self.request_search(force=True)

    @property
    def query_box(self) -> QueryBox:
        """The query box."""
        return self.query_one(QueryBox)

    @property
    def params_bar(self) -> ParamsBar:
        """The parameters bar."""
        return self.query_one(ParamsBar)

    @property
    def results(self) -> ResultsPane:
        """The result list."""
        return self.query_one(ResultsPane)

    @property
    def inspector(self) -> StageInspector:
        """The stage inspector."""
        return self.query_one(StageInspector)

    @property
    def journey(self) -> JourneyPane:
        """The journey / preview pane."""
        return self.query_one(JourneyPane)

    def welcome_text(self) -> Text:
        """Start-up text: what the store holds and what to try."""
        stats = getattr(self.app, "store_stats", None) or {}
        sessions = [s for s, _ in getattr(self.app, "session_counts", []) if s]
        t = Text("rankscope", style="bold")
        t.append(f" · {safe.line(self.store_label)}\n", style="bold")
        problem = getattr(self.app, "store_problem", None)
        if problem:
            t.append(f"⚠ The store's counts could not be read ({safe.line(problem)}); searches may fail.\n",
                     style="bold")
        if stats:
            t.append(f"{stats.get('sources', 0)} sources, {stats.get('chunks', 0)} chunks "
                     f"({stats.get('code_chunks', 0)} code)")
            if stats.get("vocabulary") is not None:
                t.append(f", {stats['vocabulary']} vocabulary words")
            if getattr(self.app, "sessions_pending", False):
                t.append(", sessions being counted.\n")
            else:
                t.append(f", {len(sessions)} session{'s' if len(sessions) != 1 else ''}.\n")
        skipped = getattr(self.app, "skipped", None)
        if skipped is not None and skipped.skipped:
            t.append(f"{skipped.summary()} when indexing: ctrl+p 'Skipped files' lists them.\n", style="bold")
        t.append("\nType a query: results appear as you type (Enter searches at once).\n")
        t.append("Stages (2) shows what every step of the pipeline did; Journey (3) follows one chunk.\n")
        suggestions = getattr(self.app, "suggestions", ())
        if suggestions:
            t.append("Try: ", style="italic")
            t.append(" · ".join(suggestions) + "\n", style="bold")
        else:
            t.append("Try a plain word, a typo of one (fuzzy correction), or F3 to filter by session.\n",
                     style="italic")
        t.append("F1 explains each stage · ctrl+p lists every command.\n", style="dim")
        t.append("What-if lab: F7 compares two pipeline variants · F8 asks why a chunk is missing · F9 diagnoses "
                 "the store.", style="dim")
        return t

    # ── panes ──────────────────────────────────────────────────────────

    @property
    def narrow(self) -> bool:
        """True when one pane shows at a time."""
        return self.has_class("-narrow")

    def set_pane(self, name: str) -> None:
        """Make ``name`` the visible pane on narrow screens (no focus change)."""
        if name not in PANES:
            raise ValueError(f"pane must be one of {', '.join(PANES)}; got {name!r}")
        self.pane = name
        for p in PANES:
            self.set_class(p == name, f"pane-{p}")
        tabs = self.query_one("#pane-tabs", Tabs)
        if tabs.active != f"tab-{name}":
            tabs.active = f"tab-{name}"

    def pane_widget(self, name: str):
        """The focus target of a pane."""
        if name == "results":
            return self.results.table if self.results.table.display else self.results
        return self.inspector if name == "stages" else self.journey

    def action_show_pane(self, name: str) -> None:
        """Show pane ``name`` (on narrow screens) and focus it."""
        self.set_pane(name)
        self.app.update_styles(self)  # apply the pane classes now, so the target can take focus at once
        target = self.pane_widget(name)
        if target.focusable:
            self.set_focus(target)
        else:
            self.call_after_refresh(target.focus)

    def go_to_stage(self, stage: str) -> None:
        """Show the stage inspector scrolled to ``stage`` and focus it."""
        self.action_show_pane("stages")
        self.call_after_refresh(self.inspector.show_stage, stage)

    @on(Tabs.TabActivated, "#pane-tabs")
    def _tab(self, event: Tabs.TabActivated) -> None:
        event.stop()
        name = (event.tab.id or "tab-results").removeprefix("tab-")
        if name != self.pane:
            self.set_pane(name)

    def action_leave_query(self) -> None:
        """Down in the query box: focus the results (or, narrow, the visible pane)."""
        name = self.pane if self.narrow else "results"
        if name == "results" and not self.results.table.display:
            name = "stages" if self.trace is not None else name
        self.action_show_pane(name)

    # ── searching ──────────────────────────────────────────────────────

    @on(QueryBox.QueryChanged)
    def _query_changed(self, event: QueryBox.QueryChanged) -> None:
        self.params = replace(self.params, query=event.query)
        self.request_search(force=event.submitted)

    def update_params(self, **changes) -> bool:
        """Change search parameters (``limit``, ``source``, ``source_match``,
        ``content_type``, ``sessions``) and search again. Invalid values are
        reported in a notification and leave the parameters unchanged."""
        try:
            params = replace(self.params, **changes)
        except (ValueError, TypeError) as exc:
            self.app.notify(safe.line(str(exc)), title="Parameter not changed", severity="error", markup=False)
            return False
        if params == self.params:
            return True
        self.params = params
        self.params_bar.show(params)
        if params.query or self.trace is not None:
            self.request_search()
        if self.app.screen is not self:
            self.app.screen.post_message(ParamsChanged(params))  # a lab screen on top follows the change
        return True

    def request_search(self, force: bool = False) -> None:
        """Search with the current parameters (skipped when they equal the
        last request, unless ``force``)."""
        if not force and self.params == self._requested:
            return
        self._requested = self.params
        self._seq += 1
        self.results.border_subtitle = "searching…"
        self.app.run_search(self.params, self._seq, self)  # type: ignore[attr-defined]

    @on(SearchFinished)
    def _finished(self, event: SearchFinished) -> None:
        if event.seq <= self._shown_seq:
            return  # stale: a newer search is already on screen
        self._shown_seq = event.seq
        self._last_failure = None
        self.show_trace(event.trace)

    @on(SearchFailed)
    def _failed(self, event: SearchFailed) -> None:
        if event.seq <= self._shown_seq:
            return  # stale: a newer search is already on screen
        self._shown_seq = event.seq
        self.show_failure(event.error)

    def show_failure(self, error: BaseException) -> None:
        """The search failed (e.g. on a damaged part of the store): say why in
        the results and in a notification (not repeated while the same error
        recurs as you type); the other panes are cleared."""
        self.trace = None
        self.query_box.show_queries(None)
        self.results.show_failure(error)
        self.inspector.show_placeholder("No stages: the search failed (Results says why).")
        self.journey.clear("No journey: the search failed (Results says why).")
        text = describe_problem(error)
        if text != self._last_failure:
            self.app.notify(safe.line(text), title="Search failed", severity="error", timeout=10, markup=False)
        self._last_failure = text

    def show_trace(self, trace: Trace) -> None:
        """Show ``trace`` in every pane; the journey follows the top result."""
        self.trace = trace
        self.query_box.show_queries(trace)
        self.results.show_trace(trace)
        self.inspector.show_trace(trace)
        if trace.final:
            self.journey.show(Subject.from_candidate(trace.final[0].candidate, "Final"), trace)
        else:
            self.journey.clear(f"No results: {trace.empty_reason}. Pick any candidate in Stages to see where it left.")

    # ── picking ────────────────────────────────────────────────────────

    def pick(self, subject: Subject, chosen: bool = False) -> None:
        """Show ``subject``'s journey; on narrow screens ``chosen`` switches to it."""
        if self.trace is None:
            return
        self.journey.show(subject, self.trace)
        if chosen and self.narrow:
            self.action_show_pane("journey")

    @on(ResultsPane.Picked)
    def _result_picked(self, event: ResultsPane.Picked) -> None:
        self.pick(event.subject, event.chosen)

    @on(StageInspector.Picked)
    def _stage_picked(self, event: StageInspector.Picked) -> None:
        self.pick(event.subject, event.chosen)
