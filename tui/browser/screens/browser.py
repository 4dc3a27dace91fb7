"""The browser screen: query box, parameters, results, stage inspector and
journey; runs searches in a thread worker and shows the newest trace.

Layout: at 110 columns and wider, the results sit across the top and the
stage inspector and journey share the rest side by side. Narrower (80x24),
one pane shows at a time under a tab bar (keys r s j, or the tabs).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Iterator

from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Tab, Tabs
from textual.worker import get_current_worker

from engine import SearchParams, Store
from engine.pipeline import table as stages
from engine.pipeline.candidates import Candidate
from engine.pipeline.trace import Trace
from engine.store.chunkids import ChunkIds
from engine.store.errors import StoreError
from engine.store.rows import StoreCounts

from tui.present import safe
from tui.browser.actions import bindings, key_shown, keys_shown
from tui.browser.corpus_cache import SkipList
from tui.browser.facts import StoreFacts, describe_problem, read_facts, read_sessions
from tui.browser.link import BrowserLink, ChunkList
from tui.browser.options import AppOptions
from tui.present.render import retriever_warning
from tui.browser.screens.params import ParamsChange
from tui.browser.screens.work import Foreground, WorkScreen
from tui.browser.subject import Subject
from tui.browser.widgets.inspector import StageInspector
from tui.browser.widgets.params_bar import ParamsBar
from tui.browser.widgets.pinned_line import PinnedLine, PinnedParts
from tui.browser.widgets.preview import JourneyPane
from tui.browser.widgets.query_box import SEARCHING_SHOWN_AFTER_S, QueryBox
from tui.browser.widgets.results import ResultsPane
from tui.browser.widgets.footer import KeyFooter

if TYPE_CHECKING:  # imported where used (a lazy import keeps start-up fast)
    from engine.lab.explain import ChunkAnatomy, Versus
    from engine.pipeline.runcache import RunCache

    from tui.browser.judging import QueryJudging
    from tui.browser.userstate import Case, HistoryCursor, StoreState
    from tui.present.pinning import PinOutcome

PANES = ("results", "stages", "journey")
#: Characters of the query a notification quotes (:func:`tui.present.fmt.query_label`).
QUERY_SHOWN = 40
#: The longest the opening warm-up waits for a running search at each pause
#: (seconds): a search is waited for, a stuck one is not.
WARM_UP_YIELD_S = 2.0


@dataclass(frozen=True)
class StoreOverview:
    """What the start text, the dialogs and the palette say about the store
    (:mod:`tui.browser.facts`), read by the browser's own worker unless the
    screen that opened the store read it already.

    Attributes:
        stats: :meth:`engine.Store.stats` (``None`` when the counts could not be read).
        session_counts: (session id, chunks) pairs (:meth:`engine.Store.session_counts`).
        source_labels: every source label, in store order.
        problem: why the store's counts could not be read, or ``None``.
        skipped: the files the folder's indexing skipped (empty for a store file).
        suggestions: example queries to offer.
        sessions_pending: a large store's sessions are still being counted
            (``session_counts`` is then empty).
        reading: the counts are still being read (nothing else is known yet).
    """

    stats: StoreCounts | None = None
    session_counts: tuple[tuple[str, int], ...] = ()
    source_labels: tuple[str, ...] = ()
    problem: str | None = None
    skipped: SkipList = field(default_factory=SkipList)
    suggestions: tuple[str, ...] = ()
    sessions_pending: bool = False
    reading: bool = False

    def with_facts(self, facts: StoreFacts) -> StoreOverview:
        """This overview with the store's ``facts``."""
        return replace(
            self,
            stats=facts.stats,
            session_counts=tuple(facts.session_counts),
            source_labels=tuple(facts.source_labels),
            problem=None,
            sessions_pending=facts.sessions_pending,
            reading=False,
        )


class PaneTabs(Tabs):
    """The narrow-screen tab bar. It never takes focus (Tab goes from the
    query straight to the visible pane); keys r s j and clicks switch panes."""

    can_focus = False


class BrowserScreen(WorkScreen[None]):
    """Search one store and watch every stage of the pipeline.

    The screen runs its own workers: the search (and the query's stems and
    chunk ids, on the same connection), the pinned chunk's fate, the
    judgments' metrics, the store's counts and sessions, the selected
    chunk's score (and X vs Y with a chunk marked by v)."""

    #: Pane keys r s j, pin p, versus v, grades 0-3 and x (tui.browser.actions); the query
    #: box's keys run :meth:`action_query_down`, :meth:`action_history_older`
    #: and :meth:`action_search_history` here.
    BINDINGS = bindings("browser")
    WORK = {
        "search": "Search",
        "pin": "Following the pinned chunk",
        "judging": "Grading",
        "sessions": "Counting sessions",
        "facts": "Reading the store's counts",
        "explain": "Reading the score",
    }

    @dataclass
    class Searched(Message):
        """A search finished. ``seq``: the request's number (an older one
        than shown is dropped); ``stems``: the Porter words whose tokens
        differ (``throttling → throttl``)."""

        seq: int
        trace: Trace
        stems: tuple[str, ...] = ()

    @dataclass
    class IdsRead(Message):
        """The store's chunk ids as search ``seq`` found the store (``None``:
        they could not be read), for grading and cases."""

        seq: int
        ids: ChunkIds | None

    @dataclass
    class SearchFailed(Message):
        """A search failed (e.g. on a damaged part of the store); ``seq`` as in :class:`Searched`."""

        seq: int
        error: BaseException

    @dataclass
    class Pinned(Message):
        """The pinned chunk was followed: ``outcome``, or ``None`` with ``error``
        (the chunk is gone); ``seq``: the request's number (older ones are dropped)."""

        seq: int
        outcome: PinOutcome | None
        error: str = ""

    @dataclass
    class Judged(Message):
        """The grades and per-stage metrics of ``trace``'s query."""

        trace: Trace
        judged: QueryJudging

    @dataclass
    class FactsRead(Message):
        """The store's counts (``facts``), or why they could not be read (``problem``)."""

        facts: StoreFacts | None
        problem: str | None = None

    @dataclass
    class SessionsCounted(Message):
        """A large store's sessions, counted."""

        counts: list[tuple[str, int]]

    @dataclass
    class PinChanged(Message):
        """The pinned chunk changed (``None``: unpinned) while another screen
        is on top (it is posted to that screen; the agent view follows it)."""

        rowid: int | None

    @dataclass
    class ParamsChanged(Message):
        """The search parameters changed while a lab screen is on top (it is
        posted to that screen, which follows the change)."""

        params: SearchParams

    @dataclass
    class Explained(Message):
        """The selected chunk's score (:func:`engine.lab.explain.explain_chunk`),
        or ``None`` with ``error``; ``seq``: the request's number (older ones
        are dropped)."""

        seq: int
        anatomy: ChunkAnatomy | None
        error: str = ""

    @dataclass
    class Compared(Message):
        """The selected chunk against the marked one: ``versus`` (``None``
        with ``error``: not compared); ``searching`` while the change that
        would flip them is still being looked for."""

        seq: int
        versus: Versus | None
        searching: bool = False
        error: str = ""

    def __init__(
        self, store: Store, store_label: str, options: AppOptions, overview: StoreOverview | None = None
    ) -> None:
        """``overview``: what is known of the store (``None``: read it now, in a worker)."""
        super().__init__()
        self.store = store
        self.store_label = store_label
        self.overview = overview or StoreOverview(
            skipped=options.skipped, suggestions=options.suggestions, reading=True
        )
        self.params = options.params
        self.options = options
        self.trace: Trace | None = None
        #: The chunk ids of the store as the shown search found them (grading,
        #: cases); ``None`` until they are read, just after the search.
        self.ids: ChunkIds | None = None
        #: The searches running; the warm-up waits for them (:meth:`_warm_chunk_ids`).
        self.searching = Foreground()
        #: The store's chunk list for the why-not finder (read once, by the first finder).
        self.chunk_list = ChunkList()
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
        self.judged: QueryJudging | None = None
        #: The pinned chunk (p on a selected chunk): its row id, and what the last search did with it.
        self.pinned_rowid: int | None = None
        self.pin_outcome: PinOutcome | None = None
        self._pin_seq = 0
        #: The search and chunk id u last selected (the ungraded queue goes on after it).
        self._ungraded_last: tuple[Trace, str] | None = None
        #: The chunk marked with v: the journey of any other chunk says why one is above the other.
        self.versus_rowid: int | None = None
        #: The selected chunk's score, once its worker answered (``None`` before).
        self.anatomy: ChunkAnatomy | None = None
        self._explain_seq = 0
        self._flip_runs: RunCache | None = None
        #: The pinned chunk's handle on the store's run cache (engine.pipeline.runcache): its counters span pins.
        self._pin_runs: RunCache | None = None
        #: A reopened case's chunk id, pinned once its search is shown.
        self._case_chunk: str | None = None
        #: The last non-blank query whose search was shown (remembered once the box moves on to another).
        self._shown_query = ""
        #: The pane widget focused last (results table, inspector, journey): the journey follows its selection.
        self._last_pane: Widget | None = None

    @property
    def link(self) -> BrowserLink:
        """What a lab screen opened over this browser gets from it."""
        return BrowserLink(self.store, self.options.search_fn, self.chunk_list, self.pin, self.options.cursor_blink)

    # ── layout ─────────────────────────────────────────────────────────

    def compose(self) -> ComposeResult:
        yield QueryBox(self.params.query, cursor_blink=self.options.cursor_blink, id="query-box")
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
                yield StageInspector(show_timings=self.options.show_timings, id="inspector")
                yield JourneyPane(id="journey")
        yield KeyFooter(compact=True)

    def on_mount(self) -> None:
        self.load_user_state()
        self.add_class("pane-results")
        self.params_bar.show(self.params)
        self.results.show_welcome(self.welcome_text())
        self.query_box.focus_query()
        if self.overview.reading:
            self._read_facts()
        elif self.overview.sessions_pending:
            self._count_sessions()
        self._warm_chunk_ids()
        if self.params.query:
            self.request_search(force=True)

    # ── the store's counts ──────────────────────────────────────────────

    @work(thread=True, exclusive=True, exit_on_error=False, group="facts")
    def _read_facts(self) -> None:
        """Read the store's counts, sessions and labels (:func:`tui.browser.facts.read_facts`);
        a store they cannot be read from is browsed all the same (searches may fail)."""
        try:
            facts = read_facts(self.store)
        except Exception as exc:  # the launcher refuses such a store; browse what can be read
            self.post_message(self.FactsRead(None, describe_problem(exc)))
            return
        self.post_message(self.FactsRead(facts))

    @on(FactsRead)
    def _facts_read(self, event: FactsRead) -> None:
        if event.facts is None:
            problem = event.problem or ""
            self.overview = replace(self.overview, problem=problem, reading=False)
            self.notify(safe.line(f"{problem[:1].upper()}{problem[1:]}"), severity="warning", markup=False)
        else:
            self.overview = self.overview.with_facts(event.facts)
            if event.facts.sessions_pending:
                self._count_sessions()
        self._welcome_again()

    @work(thread=True, exclusive=True, exit_on_error=False, group="sessions")
    def _count_sessions(self) -> None:
        """Count a large store's sessions (every chunk is read:
        :func:`tui.browser.facts.read_facts` leaves them pending)."""
        with self.store.thread_connection() as conn:
            self.post_message(self.SessionsCounted(read_sessions(self.store, conn)))

    @on(SessionsCounted)
    def _sessions_counted(self, event: SessionsCounted) -> None:
        self.overview = replace(self.overview, session_counts=tuple(event.counts), sessions_pending=False)
        self._welcome_again()

    def _welcome_again(self) -> None:
        """Show the start text again with what is now known (never over a failed search's message)."""
        if self.results.welcome_shown:
            self.results.show_welcome(self.welcome_text())

    @work(thread=True, exclusive=True, exit_on_error=False, group="chunk-ids")
    def _warm_chunk_ids(self) -> None:
        """Ahead of the first search, examine the store's file-backed sources
        and watch their folders (:meth:`engine.store.store.Store.warm_freshness`:
        the search then reads the watch's queue instead of every source row
        and file), then compute the chunk ids once (the search finds them
        cached: :func:`engine.store.chunkids.chunk_ids`), pausing while a
        query is typed and searched (at most :data:`WARM_UP_YIELD_S` per pause): at a million
        chunks they take seconds of Python, which a search typed meanwhile
        would otherwise wait behind."""
        from engine.store.chunkids import chunk_ids

        try:
            with self.store.thread_connection() as conn:
                self.store.warm_freshness(conn)
                chunk_ids(self.store, conn, pause=lambda: self.searching.wait(WARM_UP_YIELD_S))
        except Exception:  # only a warm-up: a damaged store is reported by the search itself
            pass

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
        """Start-up text: what the store holds, then in one line what to try
        (type, the rank flow's key, the key list's key), example queries and
        the keys, each line short enough for 56 cells (the results pane at
        60x18), so the whole text shows without scrolling at 80x24 and 60x18."""
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
                t.append(f", {stats.vocabulary} words")
            if overview.sessions_pending:
                t.append(", sessions being counted.\n")
            else:
                t.append(f", {len(sessions)} session{'s' if len(sessions) != 1 else ''}.\n")
        if overview.reading:
            t.append("Reading the store's counts…\n", style="dim")
        skipped = overview.skipped
        if skipped.skipped:
            t.append(
                f"{skipped.summary()} when indexing: {key_shown('command-palette')} 'Skipped files' lists them.\n",
                style="bold",
            )
        t.append(
            f"Type a query · {key_shown('rank-flow')} shows its rank flow · {key_shown('help')} the keys\n",
            style="bold",
        )
        suggestions = overview.suggestions
        if suggestions:
            t.append("Try: ", style="italic")
            t.append(" · ".join(suggestions) + "\n")
        else:
            t.append(
                f"Try a word, a typo of one, or {key_shown('choose-sessions')} to filter by session.\n",
                style="italic",
            )
        t.append(
            f"{key_shown('leave-query')} results · {key_shown('pane.stages')} stages · "
            f"{key_shown('pane.journey')} journey · {keys_shown('judge-grade')} grade · {key_shown('pin')} pin\n"
        )
        t.append(
            f"{key_shown('lab-compare')} compare · {key_shown('lab-why')} why not? · "
            f"{key_shown('lab-doctor')} doctor · {key_shown('command-palette')} commands",
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

    def pane_widget(self, name: str) -> Widget:
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

    @on(QueryBox.Typed)
    def _typed(self) -> None:
        self.searching.touch()  # the warm-up steps aside while a query is typed and searched

    @on(QueryBox.QueryChanged)
    def _query_changed(self, event: QueryBox.QueryChanged) -> None:
        if event.submitted:
            self.remember_query(event.query)
        else:
            self._moved_on(event.query)
        self.params = replace(self.params, query=event.query)
        self.request_search(force=event.submitted)

    def update_params(self, change: ParamsChange) -> bool:
        """Apply ``change`` to the search parameters and search again. A value
        :class:`engine.SearchParams` refuses is reported in a notification
        and leaves the parameters unchanged (returns False)."""
        try:
            params = change.apply(self.params)
        except (ValueError, TypeError) as exc:
            self.notify(safe.line(str(exc)), title="Parameter not changed", severity="error", markup=False)
            return False
        if params == self.params:
            return True
        self.params = params
        self.params_bar.show(params)
        if params.query or self.trace is not None:
            self.request_search()
        if self.app.screen is not self:
            self.app.screen.post_message(self.ParamsChanged(params))  # a lab screen on top follows the change
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
        self.set_timer(SEARCHING_SHOWN_AFTER_S, functools.partial(self._still_searching, self._seq))
        self._search(self.params, self._seq)

    def _still_searching(self, seq: int) -> None:
        """Search ``seq`` is still running after :data:`SEARCHING_SHOWN_AFTER_S`:
        say so beneath the query box, in sight whichever pane is shown (a
        long query on a large store takes seconds)."""
        if seq == self._seq and self._shown_seq < seq:
            self.query_box.show_searching()

    @work(thread=True, exclusive=True, exit_on_error=False, group="search")
    def _search(self, params: SearchParams, seq: int) -> None:
        """Run the pipeline on a connection of this thread and read the
        query's stems on it; post :class:`Searched` (or :class:`SearchFailed`),
        then read the store's chunk ids and post :class:`IdsRead` (a large
        store's first reading never holds up the results). A cancelled
        search posts nothing."""
        from engine.lab.terms import porter_stems
        from engine.store.chunkids import chunk_ids

        from tui.present.flowtext import stems_words

        worker = get_current_worker()
        if worker.is_cancelled:
            return
        store = self.store
        try:
            with store.thread_connection() as conn:
                with self.searching.running():
                    trace = self.options.search_fn(store, params, conn=conn)
                    if worker.is_cancelled:
                        return
                    try:
                        stems = tuple(w for s in porter_stems(store, params.query, conn) if (w := stems_words((s,))))
                    except Exception:  # a tokenizer SQLite does not have: show no stems rather than fail the search
                        stems = ()
                if worker.is_cancelled:
                    return
                self.post_message(self.Searched(seq, trace, stems))
                try:
                    ids: ChunkIds | None = chunk_ids(store, conn)
                except Exception:  # grading then says the chunk ids cannot be read
                    ids = None
        except Exception as exc:  # a damaged store, or a bug: the browser explains it, never crashes
            if not worker.is_cancelled:
                self.post_message(self.SearchFailed(seq, exc))
            return
        self.post_message(self.IdsRead(seq, ids))

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
        self.clear_journey()
        self.set_pane("results")
        self.follow_pin()
        self.refresh_bindings()

    @on(Searched)
    def _finished(self, event: Searched) -> None:
        if event.seq <= self._shown_seq:
            return  # stale: a newer search is already on screen
        self._shown_seq = event.seq
        self._last_failure = None
        self.show_trace(event.trace, event.stems)

    @on(IdsRead)
    def _ids_read(self, event: IdsRead) -> None:
        if event.seq != self._shown_seq or self.trace is None:
            return  # another search is on screen (its own ids are on their way)
        self.ids = event.ids
        self._apply_case(self.trace)

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
        self.clear_journey("No journey: the search failed (Results says why).")
        text = describe_problem(error)
        if text != self._last_failure:
            self.notify(safe.line(text), title="Search failed", severity="error", markup=False)
        self._last_failure = text

    def show_trace(self, trace: Trace, stems: tuple[str, ...] = ()) -> None:
        """Show ``trace`` in every pane (``stems``: the Porter words whose
        tokens differ, under the query); the journey follows the top result.
        A failed retriever (a damaged FTS index, usually) is a warning on the
        results pane and in a notification (not repeated while the same
        failure recurs as you type)."""
        self.trace = trace
        if trace.params.query.strip():
            self._shown_query = trace.params.query
        self.ids = None  # read just after the search (IdsRead)
        self.query_box.show_queries(trace, stems)
        self.results.show_trace(trace)
        warning = retriever_warning(trace, self.store.path)
        if warning:
            self.results.border_subtitle = (self.results.border_subtitle or "") + " · ⚠ a retriever failed"
            if warning != self._last_warning:
                self.notify(safe.line(warning), title="A retriever failed", severity="warning", markup=False)
        self._last_warning = warning
        self.inspector.show_trace(trace)
        if trace.final:
            self.follow(Subject.from_candidate(trace.final[0].candidate, stages.title("final")))
        else:
            self.clear_journey(f"No results: {trace.empty_reason}. Pick any candidate in Stages to see where it left.")
        self.refresh_judging()
        self.follow_pin()
        self.refresh_bindings()  # ↓ goes to the stages when the results list is hidden

    # ── the pinned chunk ───────────────────────────────────────────────

    def action_pin_selected(self) -> None:
        """p: pin the selected chunk (p on the pinned chunk unpins it)."""
        subject = self.selected_chunk()
        if subject is None:
            self.notify("Select a chunk first (results, stages or journey), then p pins it.", severity="warning")
            return
        self.pin(None if subject.rowid == self.pinned_rowid else subject.rowid)

    def pin(self, rowid: int | None) -> None:
        """Pin chunk ``rowid`` (``None``: unpin) and follow it."""
        self.pinned_rowid = rowid
        self.pin_outcome = None
        self.follow_pin()
        if self.app.screen is not self:
            self.app.screen.post_message(self.PinChanged(rowid))  # the agent view follows the pin

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
        self._follow(self.trace, rowid, self._pin_seq)

    @work(thread=True, exclusive=True, exit_on_error=False, group="pin")
    def _follow(self, trace: Trace, rowid: int, seq: int) -> None:
        """The pinned chunk's fate and its counterfactual, re-running the
        pipeline through one run cache per store (kept across searches, so
        re-runs of the same query reuse its retriever runs); a newer request
        cancels this one between re-runs. Posts :class:`Pinned`."""
        from engine.lab.why import ChunkNotFoundError
        from engine.pipeline.runcache import RunCache

        from tui.present.pinning import pin_outcome

        worker = get_current_worker()
        if worker.is_cancelled:
            return
        store = self.store
        if self._pin_runs is None:
            self._pin_runs = RunCache(store)
        try:
            with store.thread_connection() as conn:
                outcome = pin_outcome(
                    store, trace, rowid, conn=conn, runs=self._pin_runs, stop=lambda: worker.is_cancelled
                )
        except ChunkNotFoundError as exc:
            self.post_message(self.Pinned(seq, None, str(exc)))
            return
        if not worker.is_cancelled:
            self.post_message(self.Pinned(seq, outcome))

    @on(Pinned)
    def _pin_finished(self, event: Pinned) -> None:
        if event.seq != self._pin_seq or self.pinned_rowid is None:
            return  # stale: a newer search or pin is on its way
        if event.outcome is None:
            self.pinned_line.show(PinnedParts(self.pinned_rowid, event.error))
            return
        from tui.present.flowtext import fate_text
        from tui.present.pinning import pin_lines

        outcome = self.pin_outcome = event.outcome
        _, second = pin_lines(outcome)
        self.pinned_line.show(PinnedParts(outcome.chunk.rowid, fate_text(outcome.fate), outcome.chunk.title, second))

    # ── the selected chunk's score, and X versus Y ─────────────────────

    def follow(self, subject: Subject) -> None:
        """The journey follows ``subject``; a worker reads its score (and,
        with a chunk marked by v, compares the two); a newer one cancels it."""
        assert self.trace is not None
        self.journey.show(subject, self.trace)
        self.anatomy = None
        self._explain_seq += 1
        other = self.versus_rowid if self.versus_rowid != subject.rowid else None
        if other is not None:
            self.journey.show_versus(Text(f"Versus row {other}: comparing…", style="dim italic"))
        self._explain(self.trace, subject.rowid, other, self._explain_seq)

    def clear_journey(self, text: str | None = None) -> None:
        """The journey follows no chunk (``text``: the hint it shows instead);
        a score still being read is dropped."""
        self._explain_seq += 1
        self.anatomy = None
        self.workers.cancel_group(self, "explain")
        if text is None:
            self.journey.clear()
        else:
            self.journey.clear(text)

    def action_mark_versus(self) -> None:
        """v: mark the selected chunk (v on the marked chunk unmarks it); the
        journey of any other chunk then says why one is above the other."""
        subject = self.selected_chunk()
        if subject is None:
            self.app.notify("Select a chunk first (results, stages or journey), then v marks it.", severity="warning")
            return
        if subject.rowid == self.versus_rowid:
            self.versus_rowid = None
            self.app.notify(f"Row {subject.rowid} unmarked.", timeout=3)
        else:
            self.versus_rowid = subject.rowid
            self.app.notify(
                f"Row {subject.rowid} marked: select another chunk to see why one is above the other.", timeout=5
            )
        self._mark_journey()

    @work(thread=True, exclusive=True, exit_on_error=False, group="explain")
    def _explain(self, trace: Trace, rowid: int, other: int | None, seq: int) -> None:
        """The score of chunk ``rowid`` (:func:`engine.lab.explain.explain_chunk`),
        then, with ``other``, what decided their order and the change that
        would flip it (:func:`engine.lab.counterfactual.would_reorder_with`,
        through one run cache per store; stopped by a newer request). A chunk
        gone or a damaged store is a result (posted with its error); anything
        else fails the worker (:meth:`worker_failed`)."""
        from engine.lab.counterfactual import would_reorder_with
        from engine.lab.explain import Versus, decide, explain_chunk, explained_run
        from engine.lab.why import ChunkNotFoundError
        from engine.pipeline.runcache import RunCache

        worker = get_current_worker()
        if worker.is_cancelled:
            return
        with self.store.thread_connection() as conn:
            try:
                anatomy = explain_chunk(self.store, trace, rowid, conn=conn)
            except (ChunkNotFoundError, StoreError) as exc:
                self.post_message(self.Explained(seq, None, describe_problem(exc)))
                return
            if worker.is_cancelled:
                return
            self.post_message(self.Explained(seq, anatomy))
            if other is None:
                return
            try:
                y = explain_chunk(self.store, trace, other, conn=conn)
                versus = Versus(anatomy, y, decide(explained_run(trace), anatomy, y))
                self.post_message(self.Compared(seq, versus, searching=True))
                d = versus.decision
                if d.above is None or d.below is None or worker.is_cancelled:
                    return
                if self._flip_runs is None:
                    self._flip_runs = RunCache(self.store)
                flip = would_reorder_with(
                    self.store,
                    trace.params,
                    above=d.above,
                    below=d.below,
                    trace=trace,
                    runs=self._flip_runs,
                    conn=conn,
                    stop=lambda: worker.is_cancelled,
                )
            except (ChunkNotFoundError, StoreError) as exc:
                self.post_message(self.Compared(seq, None, error=describe_problem(exc)))
                return
        if not worker.is_cancelled:
            self.post_message(self.Compared(seq, replace(versus, flip=flip)))

    def worker_failed(self, group: str, error: BaseException) -> None:
        """The score's worker failed: the journey says so where the score goes."""
        if group == "explain" and self.is_mounted:
            self.journey.show_score(Text(f"Score: not read ({safe.line(describe_problem(error))})", style="italic"))
            self.journey.show_versus(None)

    @on(Explained)
    def _explained(self, event: Explained) -> None:
        if event.seq != self._explain_seq:
            return  # stale: another chunk is selected by now
        from tui.present.anatomy import score_renderable

        self.anatomy = event.anatomy
        if event.anatomy is None:
            self.journey.show_score(Text(f"Score: not read ({safe.line(event.error)})", style="italic"))
            self.journey.show_versus(None)
            return
        self.journey.show_score(score_renderable(event.anatomy))
        self.inspector.show_anatomy(event.anatomy)

    @on(Compared)
    def _compared(self, event: Compared) -> None:
        if event.seq != self._explain_seq:
            return
        if event.versus is None:
            self.journey.show_versus(Text(f"Versus: not compared ({safe.line(event.error)})", style="italic"))
            return
        from tui.present.anatomy import versus_renderable

        self.journey.show_versus(versus_renderable(event.versus, searching=event.searching))

    # ── picking ────────────────────────────────────────────────────────

    def pick(self, subject: Subject, chosen: bool = False) -> None:
        """Show ``subject``'s journey; on narrow screens ``chosen`` switches to it."""
        if self.trace is None:
            return
        self.follow(subject)
        self._mark_journey()
        if chosen and self.narrow:
            self.action_show_pane("journey")

    def pane_subject(self, widget: Widget) -> Subject | None:
        """The chunk selected in the pane ``widget`` is (the results table's
        cursor row, the inspector's highlighted candidate), or ``None``."""
        if widget is self.results.table:
            return self.results.subject_at(self.results.table.cursor_row) if self.results.table.display else None
        if widget is self.inspector:
            return self.inspector.subject_at(self.inspector.highlighted)
        return None

    @on(events.DescendantFocus)
    def _pane_focused(self, event: events.DescendantFocus) -> None:
        """Focus moved to another pane (r s j, Tab, a click): the journey
        follows the chunk selected there (it showed the last one picked in
        the pane left). Focus coming back to the same pane (after a dialog)
        changes nothing."""
        widget = event.widget
        if widget not in (self.results.table, self.inspector, self.journey) or widget is self._last_pane:
            return
        self._last_pane = widget
        subject = self.pane_subject(widget)
        if subject is not None and subject != self.journey.subject:
            self.pick(subject)

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

        self.state = StoreState.load(self.store.path, self.options.qrels_path)
        self.history_cursor = HistoryCursor()
        for problem in self.state.problems():
            self.notify(safe.line(problem), title="Not read", severity="warning", markup=False)

    def _save_failed(self, what: str, exc: Exception) -> None:
        text = f"{exc.strerror}: {exc.filename}" if isinstance(exc, OSError) and exc.strerror else str(exc)
        self.notify(safe.line(text), title=f"{what} not saved", severity="error", markup=False)

    def _moved_on(self, query: str) -> None:
        """The query box now reads ``query``: when it is another query (not
        the last shown query typed on, or cut back), that one was used:
        remember it. Searches run as you type, so few are submitted."""
        shown = self._shown_query
        if shown and query.strip() and not (query.startswith(shown) or shown.startswith(query)):
            if self.history_cursor is None or not self.history_cursor.stepped_to(shown):
                self._record(shown)  # a query stepped to is in the history: moving it would reorder the steps
            self._shown_query = ""

    def remember_shown(self) -> None:
        """Remember the query whose search is shown, if the box still reads it
        (a dialog, a lab screen or ctrl+r opens over the browser)."""
        if self.trace is not None and self.trace.params.query == self.query_box.value:
            self.remember_query(self.trace.params.query)

    def on_screen_suspend(self) -> None:
        self.remember_shown()

    def remember_query(self, query: str) -> None:
        """Add ``query`` to the history (Enter, or leaving the query box)
        and end stepping through the history."""
        if self.history_cursor is not None:
            self.history_cursor.reset()
        self._record(query)

    def _record(self, query: str) -> None:
        """Add ``query`` to the history, leaving any stepping through it as it is."""
        if self.state is None:
            return
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
        text = self.history_cursor.newer()
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

        self.remember_shown()
        self.app.push_screen(HistorySearchScreen(self.state.history), callback=chosen)

    # judging

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "query_down" and parameters:
            return parameters[0] == self.leave_target()  # the others are hidden: one ↓ in the footer
        return True

    def selected_chunk(self) -> Subject | None:
        """The chunk the journey follows (the row selected in any pane)."""
        return self.journey.subject if self.trace is not None else None

    def results_pending(self, what: str) -> bool:
        """True (and say so, ``what`` naming the refused action) when the
        query box holds a query whose results are not shown yet: typed, its
        search waiting for the pause or still running. The panes then show
        the previous query's search, and a grade, a rank flow, an export or
        a comparison would silently be about that one."""
        text = self.query_box.input.value
        shown = self.trace.params.query if self.trace is not None else None
        waiting = text != self.params.query or self._shown_seq < self._seq  # the pause, or the search running
        if not text.strip() or text == shown or not waiting:  # (a search that failed is not pending)
            return False
        head = f"The results for {safe.line(text)[:60]!r} are not shown yet"
        if shown is not None:
            head += f" (the panes still show {safe.line(shown)[:60]!r})"
        self.notify(f"{head}: {what} once they are.", severity="warning", markup=False)
        return True

    def action_grade(self, grade: int) -> None:
        """Grade the selected chunk ``grade`` (0-3; -1 removes the grade) for
        the current query (:meth:`grade_subject`); refused while the query
        box's results are pending (:meth:`results_pending`)."""
        if self.results_pending("grade"):
            return
        subject = self.selected_chunk()
        if subject is None or self.state is None or self.trace is None:
            first = "Search, then select a chunk" if self.trace is None else "Select a chunk first"
            self.notify(f"{first} (results, stages or journey) to grade it.", severity="warning")
            return
        self.grade_subject(subject, grade)

    def chunk_id(self, rowid: int) -> str:
        """The chunk id of row ``rowid`` as the shown search found it.

        Raises:
            ValueError: the chunk ids could not be read, or the row is gone.
        """
        if self.ids is None:
            raise ValueError("the store's chunk ids are not read (yet); search again")
        cid = self.ids.by_rowid.get(rowid)
        if cid is None:
            raise ValueError(f"row {rowid} is no longer in the store; search again")
        return cid

    def grade_subject(self, subject: Subject, grade: int, notice: bool = True) -> bool:
        """Grade ``subject`` ``grade`` (0-3; -1 removes the grade) for the
        shown query, save the judgments and refresh the badges and metrics.
        Removing a grade the chunk does not have only says so (nothing is
        written). Returns True when the chunk's grade is now ``grade``
        (``-1``: none); False when it could not be saved (said why). Without
        ``notice`` the outcome is not notified (the caller shows it in place);
        a failure always is."""
        if self.state is None or self.trace is None:
            return False
        query = self.trace.params.query
        try:
            qid = self.state.judgments.grade(query, self.chunk_id(subject.rowid), None if grade < 0 else grade)
        except (OSError, ValueError) as exc:
            self._save_failed("Judgment", exc)
            return False
        from tui.present.fmt import query_label
        from tui.browser.judging import grade_words

        label = query_label(query, QUERY_SHOWN)
        if not notice:
            if qid is not None:
                self.refresh_judging()
            return True
        if qid is None:
            self.notify(
                safe.line(f"{subject.title} · not graded for query {label}: no grade to remove"),
                title="Not graded",
                timeout=4,
                markup=False,
            )
            return True
        words = "grade removed" if grade < 0 else f"graded {grade_words(grade)}"
        self.notify(
            safe.line(f"{subject.title} · {words} for query {label} (id {qid})"),
            title="Judged",
            timeout=4,
            markup=False,
        )
        self.refresh_judging()
        return True

    def grade_row(self, trace: Trace, pass_name: str, rowid: int, grade: int) -> bool:
        """Grade chunk ``rowid`` of pass ``pass_name`` (``"first"`` or
        ``"fuzzy"``) of ``trace`` (from the rank flow): the browser follows
        the chunk (its journey shows it) and grades it (:meth:`grade_subject`,
        without a notice: notices piled up over the flow's table, which shows
        the grade in place).
        Refused, with a notice, when the browser shows another search by now
        or the row is not among the pass's candidates."""
        from tui.browser.subject import row_subject

        if trace is not self.trace:
            self.notify("The browser shows another search now: grade there.", severity="warning")
            return False
        run = trace.first if pass_name == "first" else trace.fuzzy.rerun
        subject = row_subject(run, rowid, "Rank flow") if run is not None else None
        if subject is None:
            self.notify(
                f"Row {rowid} is not among this search's candidates: nothing to grade here.", severity="warning"
            )
            return False
        self.pick(subject)
        return self.grade_subject(subject, grade, notice=False)  # the flow shows the grade in place

    def action_next_ungraded(self) -> None:
        """u: select the next chunk of the current query's ungraded queue
        (:func:`engine.lab.evaluation.ungraded_in` over every stage's top
        :data:`~engine.lab.evaluation.DEFAULT_DEPTH`): the one after the chunk
        u selected last in this search, else the first; a graded chunk leaves the queue."""
        from engine.lab.evaluation import DEFAULT_DEPTH, ranked_ids, ungraded_in
        from engine.pipeline.table import ranked_lists

        if self.trace is None or self.state is None:
            self.notify("Search first: the ungraded queue is the current query's.", severity="warning")
            return
        if self.ids is None:
            self.notify("The store's chunk ids are not read yet: press u again in a moment.", severity="warning")
            return
        trace, ids = self.trace, self.ids
        queue = ungraded_in([("", ranked_ids(trace, ids))], self.state.judgments.for_query(trace.params.query))
        if not queue:
            self.notify(
                f"Nothing to grade: every chunk in the top {DEFAULT_DEPTH} of every stage has a grade for this query.",
                title="Ungraded",
                timeout=4,
            )
            return
        last = self._ungraded_last[1] if self._ungraded_last is not None and self._ungraded_last[0] is trace else None
        at = next((i for i, u in enumerate(queue) if u.chunk_id == last), -1)
        item = queue[(at + 1) % len(queue)]
        self._ungraded_last = (trace, item.chunk_id)
        rowid = ids.by_id.get(item.chunk_id)
        stage = item.stages[0]
        chunk = next((c for c in ranked_lists(trace).get(stage, ()) if c.rowid == rowid), None)
        if chunk is None:
            return
        from engine.pipeline.candidates import Hit

        origin = stages.title(stages.base_id(stage))
        self.pick(
            Subject.from_hit(chunk, origin) if isinstance(chunk, Hit) else Subject.from_candidate(chunk, origin),
            chosen=True,
        )
        self.notify(
            safe.line(
                f"{chunk.title} · in {item.lists} of the lists' top {DEFAULT_DEPTH}, best rank {item.best_rank} "
                f"({queue.index(item) + 1} of {len(queue)} to grade): 0-3 grades it, u goes on"
            ),
            title="Ungraded",
            timeout=6,
            markup=False,
        )

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
        self._judge(self.trace, qid, judgments, self.ids)

    @work(thread=True, exclusive=True, exit_on_error=False, group="judging")
    def _judge(self, trace: Trace, qid: str | None, judgments: dict[str, int], ids: ChunkIds | None) -> None:
        """The query's grades and per-stage metrics; posts :class:`Judged`."""
        from tui.browser.judging import judge_trace

        worker = get_current_worker()
        with self.store.thread_connection() as conn:
            judged = judge_trace(self.store, trace, qid, judgments, conn, ids)
        if not worker.is_cancelled:
            self.post_message(self.Judged(trace, judged))

    @on(Judged)
    def _judged(self, event: Judged) -> None:
        self._show_judging(event.trace, event.judged)

    def _show_judging(self, trace: Trace, judged: QueryJudging) -> None:
        if trace is not self.trace:
            return  # a newer search is on screen
        from tui.browser.judging import metrics_lines

        self.judged = judged
        self.results.show_grades(judged.grades)
        self.inspector.show_judging(judged.grades, metrics_lines(judged, self.inspector._content_width()))
        self._mark_journey()

    def _mark_journey(self) -> None:
        """The journey pane's subtitle names the followed chunk's grade and
        the chunk marked with v."""
        subject = self.journey.subject
        grade = None if subject is None or self.judged is None else self.judged.grades.get(subject.rowid)
        from tui.browser.judging import grade_words

        marks = [] if grade is None else [f"graded {grade_words(grade)}"]
        if self.versus_rowid is not None:
            marks.append(f"v: versus row {self.versus_rowid}")
        self.journey.border_subtitle = " · ".join(marks)

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
        from tui.browser.userstate import Case

        if self.state is None or self.trace is None or not self.trace.params.query.strip():
            self.notify("Search for something first: a case is a query.", severity="warning")
            return
        rowid = self.case_chunk()
        if rowid is not None and self.ids is None:
            self._save_failed("Case", ValueError("the store's chunk ids are not read (yet); search again"))
            return
        params = self.trace.params
        judgments = self.state.judgments
        qid = judgments.qid_for(params.query, create=True) or "query"
        pinned = self.ids.by_rowid.get(rowid) if rowid is not None and self.ids is not None else None
        case = Case.from_search(qid, params, pinned, judgments.qrels.for_query(qid))
        try:
            if params.query not in judgments.qrels.queries.values():
                judgments.qrels.queries[qid] = params.query
                judgments.save()  # the case's id now names this query's judgments
            self.state.cases.save_case(case)
        except (OSError, ValueError) as exc:
            self._save_failed("Case", exc)
            return
        self.notify(
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
            from tui.browser.delivery import route_for

            route = route_for(self.app.is_web, self.options.demo)
            self.app.push_screen(
                CasesScreen(self.state.cases, db=self.store.path, route=route), callback=self.reopen_case
            )

    def reopen_case(self, case: Case | None) -> None:
        """Search a saved case again: its query and parameters; once the
        search is shown (and the chunk ids read) its chunk is pinned and
        selected (:meth:`_apply_case`)."""
        if case is None:
            return
        try:
            params = case.params()
        except ValueError as exc:
            self.notify(safe.line(str(exc)), title="Cannot reopen the case", severity="error", markup=False)
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
        chunk_id = self._case_chunk
        if chunk_id is None:
            return
        self._case_chunk = None
        rowid = self.ids.by_id.get(chunk_id) if self.ids is not None else None
        if rowid is None:
            self.notify(
                safe.line(f"The case's pinned chunk {chunk_id} is no longer in this store."),
                severity="warning",
                markup=False,
            )
            return
        self.pin(rowid)
        position = next((i for i, r in enumerate(trace.final) if r.candidate.rowid == rowid), None)
        if position is not None:
            self.results.table.move_cursor(row=position, animate=False)
        candidate = next((c for c in self._all_candidates(trace) if c.rowid == rowid), None)
        if candidate is not None:
            self.pick(Subject.from_candidate(candidate, "Saved case"))

    @staticmethod
    def _all_candidates(trace: Trace) -> Iterator[Candidate]:
        runs = [trace.first] + ([trace.fuzzy.rerun] if trace.fuzzy.rerun is not None else [])
        yield from (r.candidate for r in trace.final)
        for run in runs:
            yield from run.fusion.candidates
