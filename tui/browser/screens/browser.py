"""The browser screen: query box, parameters, results, stage inspector and
journey; runs searches in a thread worker and shows the newest trace.

Layout: at 110 columns and wider, the results sit across the top and the
stage inspector and journey share the rest side by side. Narrower (80x24),
one pane shows at a time under a tab bar (keys r s j, or the tabs).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Footer, Tab, Tabs
from textual.worker import get_current_worker

from engine import SearchParams, Store
from engine.pipeline import table as stages
from engine.pipeline.trace import Trace
from engine.store.rows import StoreCounts

from tui.present import safe
from tui.browser.actions import bindings, key_shown, keys_shown
from tui.browser.corpus_cache import SkipList
from tui.browser.facts import describe_problem
from tui.browser.messages import ParamsChanged, PinFinished, RunPin, RunSearch, SearchFailed, SearchFinished
from tui.present.render import retriever_warning
from tui.browser.subject import Subject
from tui.browser.widgets.inspector import StageInspector
from tui.browser.widgets.params_bar import ParamsBar
from tui.browser.widgets.pinned_line import PinnedLine, PinnedParts
from tui.browser.widgets.preview import JourneyPane
from tui.browser.widgets.query_box import QueryBox
from tui.browser.widgets.results import ResultsPane

if TYPE_CHECKING:  # imported where used (a lazy import keeps start-up fast)
    from tui.browser.userstate import HistoryCursor, StoreState

PANES = ("results", "stages", "journey")
#: Characters of the query a notification quotes (:func:`tui.present.fmt.query_label`).
QUERY_SHOWN = 40


@dataclass(frozen=True)
class StoreOverview:
    """What the start text says about the store: given to the browser by the
    app when it is built (the browser never reads the app's state).

    Attributes:
        stats: :meth:`engine.Store.stats` (``None`` when the counts could not be read).
        session_counts: (session id, chunks) pairs (:meth:`engine.Store.session_counts`).
        problem: why the store's counts could not be read, or ``None``.
        skipped: the files the folder's indexing skipped (empty for a store file).
        suggestions: example queries to offer.
        sessions_pending: a large store's sessions are still being counted
            (``session_counts`` is then empty; :meth:`tui.browser.app.RankscopeApp.count_sessions`).
    """

    stats: StoreCounts | None = None
    session_counts: tuple[tuple[str, int], ...] = ()
    problem: str | None = None
    skipped: SkipList = field(default_factory=SkipList)
    suggestions: tuple[str, ...] = ()
    sessions_pending: bool = False


class PaneTabs(Tabs):
    """The narrow-screen tab bar. It never takes focus (Tab goes from the
    query straight to the visible pane); keys r s j and clicks switch panes."""

    can_focus = False


class BrowserScreen(Screen):
    """Search one store and watch every stage of the pipeline."""

    #: Pane keys r s j, pin p, grades 0-3 and x (tui.browser.actions); the query
    #: box's keys run :meth:`action_query_down`, :meth:`action_history_older`
    #: and :meth:`action_search_history` here.
    BINDINGS = bindings("browser")

    def __init__(
        self,
        store: Store,
        store_label: str,
        params: SearchParams,
        *,
        overview: StoreOverview | None = None,
        show_timings: bool = True,
        cursor_blink: bool = True,
        qrels_path: Path | None = None,
    ) -> None:
        super().__init__()
        self.store = store
        self.store_label = store_label
        self.overview = overview or StoreOverview()
        self.params = params
        self.show_timings = show_timings
        self.cursor_blink = cursor_blink
        #: ``--qrels``: the judgments file to grade into (``None``: the store's own).
        self.qrels_path = qrels_path
        self.trace: Trace | None = None
        self._seq = 0
        self._shown_seq = 0
        self._requested: SearchParams | None = None
        self._last_failure: str | None = None
        self._last_warning: str | None = None
        self.pane = "results"
        #: History, saved cases and judgments of this store (loaded on mount).
        self.state: StoreState | None = None
        self.history_cursor: HistoryCursor | None = None
        #: The current query's judgments as shown (grades by row, metrics).
        self.judged = None
        #: The pinned chunk (p on a selected chunk): its row id, and what the last search did with it.
        self.pinned_rowid: int | None = None
        self.pin_outcome = None
        self._pin_seq = 0

    # ── layout ─────────────────────────────────────────────────────────

    def compose(self) -> ComposeResult:
        yield QueryBox(self.params.query, cursor_blink=self.cursor_blink, id="query-box")
        yield PinnedLine(id="pinned-line")
        yield ParamsBar(self.store_label, id="params-bar")
        yield PaneTabs(
            Tab("r Results", id="tab-results"),
            Tab("s Stages", id="tab-stages"),
            Tab("j Journey", id="tab-journey"),
            id="pane-tabs",
        )
        with Vertical(id="panes"):
            yield ResultsPane(id="results")
            with Horizontal(id="lower"):
                yield StageInspector(show_timings=self.show_timings, id="inspector")
                yield JourneyPane(id="journey")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.load_user_state()
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
        overview = self.overview
        stats = overview.stats
        sessions = [s for s, _ in overview.session_counts if s]
        t = Text("rankscope", style="bold")
        t.append(f" · {safe.line(self.store_label)}\n", style="bold")
        problem = overview.problem
        if problem:
            t.append(
                f"⚠ The store's counts could not be read ({safe.line(problem)}); searches may fail.\n", style="bold"
            )
        if stats is not None:
            t.append(f"{stats.sources} sources, {stats.chunks} chunks ({stats.code_chunks} code)")
            if stats.vocabulary is not None:
                t.append(f", {stats.vocabulary} vocabulary words")
            if overview.sessions_pending:
                t.append(", sessions being counted.\n")
            else:
                t.append(f", {len(sessions)} session{'s' if len(sessions) != 1 else ''}.\n")
        skipped = overview.skipped
        if skipped.skipped:
            t.append(
                f"{skipped.summary()} when indexing: {key_shown('command-palette')} 'Skipped files' lists them.\n",
                style="bold",
            )
        down, enter = key_shown("leave-query"), key_shown("search-now")
        t.append(
            f"\nType a query: results appear as you type ({enter} searches at once); {down} leaves the query box.\n"
        )
        t.append(
            f"Then {key_shown('pane.stages')} shows what every step of the pipeline did (Stages), "
            f"{key_shown('pane.journey')} follows the selected chunk (Journey), "
            f"{key_shown('pane.results')} comes back to the results; {keys_shown('judge-grade')} grade the "
            f"selected chunk, {key_shown('pin')} pins it.\n"
        )
        suggestions = overview.suggestions
        if suggestions:
            t.append("Try: ", style="italic")
            t.append(" · ".join(suggestions) + "\n", style="bold")
        else:
            t.append(
                "Try a plain word, a typo of one (fuzzy correction), or "
                f"{key_shown('choose-sessions')} to filter by session.\n",
                style="italic",
            )
        t.append(
            f"{key_shown('help')} explains each stage · {key_shown('command-palette')} lists every command.\n",
            style="dim",
        )
        t.append(
            f"What-if lab: {key_shown('lab-compare')} compares two pipeline variants · "
            f"{key_shown('lab-why')} asks why a chunk is missing · {key_shown('lab-doctor')} diagnoses the store.",
            style="dim",
        )
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
        self.refresh_bindings()  # the footer's ↓ names the pane shown

    def pane_widget(self, name: str):
        """The focus target of a pane."""
        if name == "results":
            return self.results.table if self.results.table.display else self.results.message
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

    def on_resize(self) -> None:
        self.refresh_bindings()  # wide ↔ narrow changes where ↓ goes (leave_target)

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

    def action_query_down(self, pane: str = "") -> None:
        """Down in the query box: while stepping through the history (after
        Up), the next newer query (then the text that was being typed);
        otherwise leave the query box (:meth:`action_leave_query`). ``pane``
        only picks the footer's label (one binding per pane, the one of
        :meth:`leave_target` enabled)."""
        if not self.history_newer():
            self.action_leave_query()

    def leave_target(self) -> str:
        """The pane ↓ from the query box goes to: the results (on a narrow
        screen the pane shown), or the stages when the results list is
        hidden after a search."""
        name = self.pane if self.narrow else "results"
        if name == "results" and not self.results.table.display:
            name = "stages" if self.trace is not None else name
        return name

    def action_history_older(self) -> None:
        """Up in the query box: the previous (older) query of the store's history."""
        self.history_older()

    def action_leave_query(self) -> None:
        """Focus the results (or, narrow, the visible pane), keeping the query in the history."""
        self.remember_query(self.query_box.value)
        self.action_show_pane(self.leave_target())

    # ── searching ──────────────────────────────────────────────────────

    @on(QueryBox.QueryChanged)
    def _query_changed(self, event: QueryBox.QueryChanged) -> None:
        if event.submitted:
            self.remember_query(event.query)
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

    def open_search(self, params: SearchParams) -> None:
        """Show ``params`` (query included) and search them at once (the agent
        log opens a recorded call this way)."""
        self.params = params
        self.query_box.input.value = params.query
        self.params_bar.show(params)
        self.request_search(force=True)

    def request_search(self, force: bool = False) -> None:
        """Search with the current parameters (skipped when they equal the
        last request, unless ``force``). A blank query is not searched: the
        welcome text shows again (:meth:`show_welcome`)."""
        if not force and self.params == self._requested:
            return
        self._requested = self.params
        self._seq += 1
        if not self.params.query.strip():
            self.show_welcome()
            return
        self.results.border_subtitle = "searching…"
        self.app.post_message(RunSearch(self, self.store, self.params, self._seq))

    def show_welcome(self) -> None:
        """Back to the start: the welcome text in the results (the results
        pane shown), the other panes' hints, no sanitised queries; a search
        still running is dropped when it finishes."""
        self._shown_seq = self._seq
        self._last_failure = self._last_warning = None
        self.trace = None
        self.judged = None
        self.query_box.show_queries(None)
        self.results.show_welcome(self.welcome_text())
        self.inspector.show_placeholder()
        self.journey.clear()
        self.set_pane("results")
        self.follow_pin()
        self.refresh_bindings()

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
        """Show ``trace`` in every pane; the journey follows the top result.
        A failed retriever (a damaged FTS index, usually) is a warning on the
        results pane and in a notification (not repeated while the same
        failure recurs as you type)."""
        self.trace = trace
        self.query_box.show_queries(trace, self.stems_words(trace.params.query))
        self.results.show_trace(trace)
        warning = retriever_warning(trace, self.store.path)
        if warning:
            self.results.border_subtitle = (self.results.border_subtitle or "") + " · ⚠ a retriever failed"
            if warning != self._last_warning:
                self.app.notify(
                    safe.line(warning), title="A retriever failed", severity="warning", timeout=15, markup=False
                )
        self._last_warning = warning
        self.inspector.show_trace(trace)
        if trace.final:
            self.journey.show(Subject.from_candidate(trace.final[0].candidate, stages.title("final")), trace)
        else:
            self.journey.clear(f"No results: {trace.empty_reason}. Pick any candidate in Stages to see where it left.")
        self._apply_case(trace)
        self.refresh_judging()
        self.follow_pin()
        self.refresh_bindings()  # ↓ goes to the stages when the results list is hidden

    def stems_words(self, query: str) -> tuple[str, ...]:
        """``("throttling → throttl", ...)``: the Porter query's words whose
        tokens differ, one string per word, from the store's own tokenizer
        (read once) run in memory."""
        from engine.pipeline.query import porter_words
        from engine.lab.terms import Stems, tokenize, tokenizer_of

        from tui.present.flowtext import stems_words

        words = porter_words(query)
        if not words:
            return ()
        try:
            if getattr(self, "_tokenizer", None) is None:
                with self.store.thread_connection() as conn:
                    self._tokenizer = tokenizer_of(self.store, conn)
            tokens = tokenize(words, self._tokenizer)
        except Exception:  # a tokenizer SQLite does not have: show no stems rather than fail the search
            return ()
        found = (stems_words((Stems(w, t),)) for w, t in zip(words, tokens))
        return tuple(f for f in found if f)

    # ── the pinned chunk ───────────────────────────────────────────────

    def action_pin_selected(self) -> None:
        """p: pin the selected chunk (p on the pinned chunk unpins it)."""
        subject = self.selected_chunk()
        if subject is None:
            self.app.notify("Select a chunk first (results, stages or journey), then p pins it.", severity="warning")
            return
        self.pin(None if subject.rowid == self.pinned_rowid else subject.rowid)

    def pin(self, rowid: int | None) -> None:
        """Pin chunk ``rowid`` (``None``: unpin) and follow it."""
        self.pinned_rowid = rowid
        self.pin_outcome = None
        self.follow_pin()

    @property
    def pinned_line(self) -> PinnedLine:
        """The pinned chunk's line under the query box."""
        return self.query_one(PinnedLine)

    def follow_pin(self) -> None:
        """Show the pinned chunk's fate in the current search at once (read
        off the rank flow when a retriever returned it) and ask a worker for
        the rest (a chunk no retriever returned, and the smallest change that
        returns it); a newer search cancels it. Typing is never held up."""
        line = self.pinned_line
        rowid = self.pinned_rowid
        if rowid is None:
            line.show(None)
            return
        if self.trace is None:
            line.show(PinnedParts(rowid, "search to see its fate"))
            return
        from engine.pipeline.paths import fate as path_fate

        from tui.present.flowtext import fate_text

        fate = path_fate(self.trace, rowid)
        title = next((c.title for c in self._all_candidates(self.trace) if c.rowid == rowid), None)
        line.show(
            PinnedParts(
                rowid,
                fate_text(fate) if fate is not None else "…",
                title,
                "finding the smallest change that returns it…",
                "italic",
            )
        )
        self._pin_seq += 1
        self.app.post_message(RunPin(self, self.store, self.trace, rowid, self._pin_seq))

    @on(PinFinished)
    def _pin_finished(self, event: PinFinished) -> None:
        if event.seq != self._pin_seq or self.pinned_rowid is None:
            return  # stale: a newer search or pin is on its way
        if event.outcome is None:
            self.pinned_line.show(PinnedParts(self.pinned_rowid, event.error or ""))
            return
        from tui.present.flowtext import fate_text
        from tui.present.pinning import pin_lines

        outcome = self.pin_outcome = event.outcome
        _, second = pin_lines(outcome)
        self.pinned_line.show(PinnedParts(outcome.chunk.rowid, fate_text(outcome.fate), outcome.chunk.title, second))

    # ── picking ────────────────────────────────────────────────────────

    def pick(self, subject: Subject, chosen: bool = False) -> None:
        """Show ``subject``'s journey; on narrow screens ``chosen`` switches to it."""
        if self.trace is None:
            return
        self.journey.show(subject, self.trace)
        self._mark_journey()
        if chosen and self.narrow:
            self.action_show_pane("journey")

    @on(ResultsPane.Picked)
    def _result_picked(self, event: ResultsPane.Picked) -> None:
        self.pick(event.subject, event.chosen)

    @on(StageInspector.Picked)
    def _stage_picked(self, event: StageInspector.Picked) -> None:
        self.pick(event.subject, event.chosen)

    # ── history, judgments and cases (tui/browser/userstate.py, tui/browser/judging.py) ──

    def load_user_state(self) -> None:
        """Read this store's history, cases and judgments; say which files
        could not be read (they are left untouched)."""
        from tui.browser.userstate import HistoryCursor, StoreState

        self.state = StoreState.load(self.store.path, self.qrels_path)
        self.history_cursor = HistoryCursor()
        self._warm_chunk_ids()
        for problem in self.state.problems():
            self.app.notify(safe.line(problem), title="Not read", severity="warning", timeout=10, markup=False)

    @work(thread=True, exclusive=True, exit_on_error=False, group="chunk-ids")
    def _warm_chunk_ids(self) -> None:
        """Compute the store's chunk ids once, off the main thread (grading
        and saving cases then find them cached)."""
        from engine.store.chunkids import chunk_ids

        try:
            with self.store.thread_connection() as conn:
                chunk_ids(self.store, conn)
        except Exception:  # only a warm-up: a damaged store is reported by the search itself
            pass

    def _save_failed(self, what: str, exc: Exception) -> None:
        text = f"{exc.strerror}: {exc.filename}" if isinstance(exc, OSError) and exc.strerror else str(exc)
        self.app.notify(safe.line(text), title=f"{what} not saved", severity="error", timeout=10, markup=False)

    def remember_query(self, query: str) -> None:
        """Add ``query`` to the history (Enter, or leaving the query box)."""
        if self.state is None:
            return
        if self.history_cursor is not None:
            self.history_cursor.reset()
        try:
            self.state.history.add(query)
        except (OSError, ValueError) as exc:
            self._save_failed("History", exc)

    def history_older(self) -> bool:
        """↑ in the query box: show the previous query of the history."""
        if self.state is None or self.history_cursor is None:
            return False
        text = self.history_cursor.older(self.state.history, self.query_box.value)
        if text is None:
            return False
        self.query_box.set_query(text)
        return True

    def history_newer(self) -> bool:
        """↓ in the query box while stepping through the history: the next
        newer query (then the draft). False when not stepping (↓ then leaves)."""
        if self.state is None or self.history_cursor is None or not self.history_cursor.browsing:
            return False
        text = self.history_cursor.newer(self.state.history)
        if text is not None:
            self.query_box.set_query(text)
        return True

    def action_search_history(self) -> None:
        """ctrl+r: pick a query from the history (fuzzy) and search it."""
        from tui.browser.screens.history import HistorySearchScreen

        if self.state is None:
            return

        def chosen(query: str | None) -> None:
            if query is None:
                self.query_box.focus_query()
                return
            self.query_box.set_query(query)
            self.remember_query(query)
            self.params = replace(self.params, query=query)
            self.request_search(force=True)
            self.query_box.focus_query()

        self.app.push_screen(HistorySearchScreen(self.state.history, self.query_box.value), callback=chosen)

    # judging

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "query_down" and parameters:
            return parameters[0] == self.leave_target()  # the others are hidden: one ↓ in the footer
        return True

    def selected_chunk(self) -> Subject | None:
        """The chunk the journey follows (the row selected in any pane)."""
        return self.journey.subject if self.trace is not None else None

    def action_grade(self, grade: int) -> None:
        """Grade the selected chunk ``grade`` (0-3; -1 removes the grade) for
        the current query, save the judgments and refresh the badges and
        metrics. Removing a grade the chunk does not have only says so
        (nothing is written)."""
        from engine.store.chunkids import chunk_ids

        subject = self.selected_chunk()
        if subject is None or self.state is None or self.trace is None:
            first = "Search, then select a chunk" if self.trace is None else "Select a chunk first"
            self.app.notify(f"{first} (results, stages or journey) to grade it.", severity="warning")
            return
        query = self.trace.params.query
        try:
            with self.store.thread_connection() as conn:
                ids = chunk_ids(self.store, conn)
            cid = ids.by_rowid.get(subject.rowid)
            if cid is None:
                raise ValueError(f"row {subject.rowid} is no longer in the store; search again")
            qid = self.state.judgments.grade(query, cid, None if grade < 0 else grade)
        except (OSError, ValueError) as exc:
            self._save_failed("Judgment", exc)
            return
        from tui.present.fmt import query_label
        from tui.browser.judging import grade_words

        label = query_label(query, QUERY_SHOWN)
        if qid is None:
            self.app.notify(
                safe.line(f"{subject.title} · not graded for query {label}: no grade to remove"),
                title="Not graded",
                timeout=4,
                markup=False,
            )
            return
        words = "grade removed" if grade < 0 else f"graded {grade_words(grade)}"
        self.app.notify(
            safe.line(f"{subject.title} · {words} for query {label} (id {qid})"),
            title="Judged",
            timeout=4,
            markup=False,
        )
        self.refresh_judging()

    def refresh_judging(self) -> None:
        """Recompute the current query's grades and per-stage metrics (in a thread)."""
        if self.trace is None or self.state is None:
            return
        qid = self.state.judgments.qid_for(self.trace.params.query)
        judgments = self.state.judgments.qrels.for_query(qid) if qid is not None else {}
        if not judgments and (self.judged is None or not self.judged.grades):
            from tui.browser.judging import QueryJudging

            self._show_judging(self.trace, QueryJudging(qid))
            return
        self._judge(self.trace, qid, judgments)

    @work(thread=True, exclusive=True, exit_on_error=False, group="judging")
    def _judge(self, trace: Trace, qid: str | None, judgments: dict[str, int]) -> None:
        from tui.browser.judging import judge_trace

        worker = get_current_worker()
        with self.store.thread_connection() as conn:
            judged = judge_trace(self.store, trace, qid, judgments, conn)
        if not worker.is_cancelled:
            self.app.call_from_thread(self._show_judging, trace, judged)

    def _show_judging(self, trace: Trace, judged) -> None:
        if trace is not self.trace:
            return  # a newer search is on screen
        from tui.browser.judging import metrics_lines

        self.judged = judged
        self.results.show_grades(judged.grades)
        self.inspector.show_judging(judged.grades, metrics_lines(judged, self.inspector._content_width()))
        self._mark_journey()

    def _mark_journey(self) -> None:
        """The journey pane's subtitle names the followed chunk's grade."""
        subject = self.journey.subject
        grade = None if subject is None or self.judged is None else self.judged.grades.get(subject.rowid)
        from tui.browser.judging import grade_words

        self.journey.border_subtitle = "" if grade is None else f"graded {grade_words(grade)}"

    # cases

    def case_chunk(self) -> int | None:
        """The row id a saved case pins: the chunk pinned with p, else the
        selected one (``None`` when neither)."""
        if self.pinned_rowid is not None:
            return self.pinned_rowid
        subject = self.selected_chunk()
        return None if subject is None else subject.rowid

    def action_save_case(self) -> None:
        """Save the current query, parameters, pinned chunk (:meth:`case_chunk`)
        and judgments as a case."""
        from engine.store.chunkids import chunk_ids

        from tui.browser.userstate import Case

        if self.state is None or self.trace is None or not self.trace.params.query.strip():
            self.app.notify("Search for something first: a case is a query.", severity="warning")
            return
        params = self.trace.params
        judgments = self.state.judgments
        qid = judgments.qid_for(params.query, create=True) or "query"
        pinned = None
        rowid = self.case_chunk()
        if rowid is not None:
            with self.store.thread_connection() as conn:
                pinned = chunk_ids(self.store, conn).by_rowid.get(rowid)
        case = Case.from_search(qid, params, pinned, judgments.qrels.for_query(qid))
        try:
            if params.query not in judgments.qrels.queries.values():
                judgments.qrels.queries[qid] = params.query
                judgments.save()  # the case's id now names this query's judgments
            self.state.cases.save_case(case)
        except (OSError, ValueError) as exc:
            self._save_failed("Case", exc)
            return
        self.app.notify(
            safe.line(
                f"{params.query!r} as {qid} ({len(case.judgments)} judged"
                + (f", pinned {case.pinned}" if case.pinned else "")
                + ")"
            ),
            title="Case saved",
            timeout=5,
            markup=False,
        )

    def action_open_cases(self) -> None:
        """List the saved cases; Enter reopens one."""
        from tui.browser.screens.cases import CasesScreen

        if self.state is not None:
            self.app.push_screen(CasesScreen(self.state.cases, db=self.store.path), callback=self.reopen_case)

    def reopen_case(self, case) -> None:
        """Search a saved case again: its query and parameters; once the
        search is shown its chunk is pinned and selected (:meth:`_apply_case`)."""
        if case is None:
            return
        try:
            params = case.params()
        except ValueError as exc:
            self.app.notify(safe.line(str(exc)), title="Cannot reopen the case", severity="error", markup=False)
            return
        self._case_chunk = case.pinned
        self.params = params
        self.query_box.set_query(params.query)
        self.params_bar.show(params)
        self.request_search(force=True)

    def _apply_case(self, trace: Trace) -> None:
        """After a reopened case's search: its chunk is the pinned chunk (the
        pinned line follows it) and the selected one (the journey follows it,
        and the results cursor is on it when it is a result)."""
        chunk_id = getattr(self, "_case_chunk", None)
        if chunk_id is None:
            return
        self._case_chunk = None
        from engine.store.chunkids import chunk_ids

        with self.store.thread_connection() as conn:
            rowid = chunk_ids(self.store, conn).by_id.get(chunk_id)
        if rowid is None:
            self.app.notify(
                safe.line(f"The case's pinned chunk {chunk_id} is no longer in this store."),
                severity="warning",
                markup=False,
            )
            return
        self.pinned_rowid, self.pin_outcome = rowid, None  # show_trace follows the pin next
        position = next((i for i, r in enumerate(trace.final) if r.candidate.rowid == rowid), None)
        if position is not None:
            self.results.table.move_cursor(row=position, animate=False)
        candidate = next((c for c in self._all_candidates(trace) if c.rowid == rowid), None)
        if candidate is not None:
            self.pick(Subject.from_candidate(candidate, "Saved case"))

    @staticmethod
    def _all_candidates(trace: Trace):
        runs = [trace.first] + ([trace.fuzzy.rerun] if trace.fuzzy.rerun is not None else [])
        yield from (r.candidate for r in trace.final)
        for run in runs:
            yield from run.fusion.candidates
