"""The rankscope browser application.

Build it with :func:`make_app` (the CLI launcher and the tests use the same
factory). The app owns the open store and the global keys; the
:class:`~tui.browser.screens.browser.BrowserScreen` does the searching and showing.

Screens never call the app's methods or read its attributes: they get what
they show when they are built, and ask for work with request messages
(:class:`tui.browser.messages.Request`: ``RunSearch``, ``RunCompare``,
``ExplainChunk``...), which the app's ``on_...`` handlers run in thread
workers, posting the answer back to the screen that asked. The keys, the
palette's actions and the F1 key list come from one table,
:mod:`tui.browser.actions`.
"""

from __future__ import annotations

import dataclasses

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from textual import work
from textual.app import App
from textual.message_pump import MessagePump
from textual.screen import Screen
from textual.worker import Worker, WorkerState, get_current_worker

from engine import SearchParams, Store, search, trace_to_dict
from engine.pipeline import table as stages
from engine.lab.compare import compare_traces
from engine.lab.doctor import diagnose
from engine.pipeline.trace import Trace
from engine.pipeline.variants import Variant
from engine.lab.why import ChunkNotFoundError, why_not
from engine.store.rows import StoreCounts

from tui.present import safe
from tui.browser.actions import app_action, bindings
from tui.browser.corpus_cache import CacheEntry, SkipList, build_cache, corpus_files
from tui.browser.cmdline import command_line, export_path
from tui.browser.palette import RankscopeCommands
from tui.browser.facts import describe_problem, read_facts, read_sessions
from tui.present.fmt import json_text
from tui.browser.messages import (
    AgentLogLoaded,
    AgentViewFinished,
    ApplyParams,
    ChunkGraded,
    ChunkMatches,
    ChunksLoaded,
    CompareFinished,
    Diagnose,
    DiscoverStores,
    DoctorFinished,
    ExplainChunk,
    FindChunks,
    GradeChunk,
    IndexFolder,
    LoadAgentLog,
    LoadChunks,
    OpenRecordedCall,
    PinChunk,
    PinFinished,
    RunAgentView,
    RunCompare,
    RunPin,
    RunSearch,
    SearchFailed,
    SearchFinished,
    StoreReady,
    StoresFound,
    VariantsChosen,
    WhyFinished,
)
from engine.files.writing import write_text_file
from tui.browser.screens.agent import AgentRequest, AgentViewScreen
from tui.browser.screens.agent_log import AgentLogScreen
from tui.browser.screens.browser import BrowserScreen, StoreOverview
from tui.browser.screens.compare import CompareScreen
from tui.browser.screens.doctor import DoctorScreen
from tui.browser.screens.help import HelpScreen
from tui.browser.screens.loading import LoadingScreen
from tui.browser.screens.params import ParamsScreen
from tui.browser.screens.sessions import SessionsScreen
from tui.browser.screens.skipped import SkippedScreen
from tui.browser.screens.stores import StorePickerScreen
from tui.browser.screens.why import ChunkEntry, WhyScreen, chunk_entries, finder_keys, match_chunks
from tui.browser.theme import ANSI_DARK, ANSI_NO_COLOR, RANKSCOPE_DARK, THEME_NAME

if TYPE_CHECKING:  # imported where used (a lazy import keeps start-up fast)
    from engine.pipeline.runcache import RunCache

SearchFn = Callable[..., Trace]


class RankscopeApp(App[None]):
    """Type a query and watch context-mode's lexical retrieval pipeline work.

    Exactly one of ``store``, ``index_job`` or ``store_finder`` says where the
    data comes from: an open store, a folder to index into the cache first
    (loading screen), or a store picker.
    """

    CSS_PATH = "app.tcss"
    TITLE = "rankscope"
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (110, "-wide")]
    COMMANDS = App.COMMANDS | {RankscopeCommands}
    #: Every app key, from the one action table (tui.browser.actions), which also feeds
    #: the command palette and the F1 key list.
    BINDINGS = bindings("app")

    def __init__(
        self,
        *,
        store: Store | None = None,
        store_label: str = "",
        index_job: CacheEntry | None = None,
        store_finder: Callable[[], list[Any]] | None = None,
        params: SearchParams | None = None,
        show_timings: bool = True,
        cursor_blink: bool = True,
        search_fn: SearchFn = search,
        notice: str | None = None,
        suggestions: tuple[str, ...] = (),
        skipped: SkipList | None = None,
        session_db: str | None = None,
        qrels_path: Path | None = None,
    ) -> None:
        super().__init__()
        # colours that stay readable at 256 colours and with NO_COLOR (tui.browser.theme)
        self.register_theme(RANKSCOPE_DARK)
        self.theme = THEME_NAME
        self.ansi_theme_dark = ANSI_NO_COLOR if self.no_color else ANSI_DARK
        #: The open store's session DB (given, or paired by name in ../sessions/), or ``None``.
        self.session_db = session_db
        self._session_db_given = session_db is not None
        #: ``--qrels``: the judgments file the browser grades into (default: the store's own).
        self.qrels_path = qrels_path
        self.suggestions = suggestions
        #: The files the browsed folder's indexing skipped (empty for a store file).
        self.skipped = skipped or SkipList()
        #: The pinned chunk's handle on the store's run cache (engine.pipeline.runcache): its counters span pins.
        self._pin_runs: RunCache | None = None
        self.store = store
        self.store_label = store_label or (Path(store.path).name if store and store.path else "in-memory store")
        self.index_job = index_job
        self.store_finder = store_finder
        self.initial_params = params or SearchParams("")
        self.show_timings = show_timings
        self.cursor_blink = cursor_blink
        self.search_fn = search_fn
        self.notice = notice
        self.store_stats: StoreCounts | None = None
        #: Why the store's counts could not be read (the browser then says so), or ``None``.
        self.store_problem: str | None = None
        self.session_counts: list[tuple[str, int]] = []
        #: A large store's sessions are being counted in a worker (:meth:`count_sessions`).
        self.sessions_pending = False
        self.source_labels: list[str] = []
        #: The what-if lab's last variants (A, B), kept between openings of the compare screen.
        self.compare_variants: tuple[Variant, Variant] = (Variant(), Variant(fusion_key="rowid"))
        #: The finder's chunk list (and its ``source::title`` keys), read once per store.
        self.chunk_index: list[ChunkEntry] | None = None
        self._chunk_keys: list[str] = []

    # ── screens ────────────────────────────────────────────────────────

    def get_default_screen(self) -> Screen:
        if self.store is not None:
            return self._browser_for(self.store)
        if self.index_job is None and self.store_finder is None:
            raise ValueError("make_app needs a store, a folder to index or a store finder")
        return Screen()  # a blank base; the loading screen or picker goes on top and is then replaced

    def on_mount(self) -> None:
        if self.store is None and self.index_job is not None:
            self.push_screen(LoadingScreen(self.index_job, self.store_label))
        elif self.store is None and self.store_finder is not None:
            self.push_screen(StorePickerScreen(self.store_finder))
        if self.notice:
            self.notify_plain(self.notice, severity="warning")
        if self.store is not None and self.sessions_pending:
            self.count_sessions(self.store)

    def _browser_for(self, store: Store) -> BrowserScreen:
        try:
            self._load_store_facts(store)
        except Exception as exc:  # the launcher refuses such a store; browse what can be read
            self.store_stats, self.session_counts, self.source_labels = None, [], []
            self.sessions_pending = False
            self.store_problem = describe_problem(exc)
            self.notice = f"{self.store_problem[0].upper()}{self.store_problem[1:]}"
        else:
            self.store_problem = None
        return self._new_browser(store)

    def _new_browser(self, store: Store) -> BrowserScreen:
        overview = StoreOverview(
            stats=self.store_stats,
            session_counts=tuple(self.session_counts),
            problem=self.store_problem,
            skipped=self.skipped,
            suggestions=self.suggestions,
            sessions_pending=self.sessions_pending,
        )
        return BrowserScreen(
            store,
            self.store_label,
            self.initial_params,
            overview=overview,
            show_timings=self.show_timings,
            cursor_blink=self.cursor_blink,
            qrels_path=self.qrels_path,
        )

    def _load_store_facts(self, store: Store) -> None:
        """Read the store's counts, sessions and source labels.

        Raises:
            StoreError: the store cannot be read (see :func:`tui.browser.facts.read_facts`).
        """
        facts = read_facts(store)
        if not self._session_db_given:
            from engine.store.discovery import session_dbs_for_store

            paired = session_dbs_for_store(store.path) if store.path and store.path != ":memory:" else []
            self.session_db = str(paired[0]) if paired else None
        self.store_stats = facts.stats
        self.session_counts = facts.session_counts
        self.source_labels = facts.source_labels
        self.sessions_pending = facts.sessions_pending

    def notify_plain(self, message: str, **kwargs) -> None:
        """A notification whose text is shown as is (no markup; controls made visible)."""
        kwargs["title"] = safe.line(kwargs.get("title", ""))
        self.notify(safe.line(message), markup=False, **kwargs)

    async def on_store_ready(self, event: StoreReady) -> None:
        """A store finished indexing (or was picked): browse it, unless its
        counts cannot be read (a damaged file): then it is closed and the
        picker or loading screen stays, saying why."""
        self._session_db_given = False  # a new store: pair its own session DB
        try:
            self._load_store_facts(event.store)
        except Exception as exc:
            event.store.close()
            self.notify_plain(describe_problem(exc), title="Cannot open the store", severity="error", timeout=10)
            for screen in self.screen_stack:
                hook = getattr(screen, "store_refused", None)
                if hook is not None:
                    hook(exc)
            return
        if self.store is not None and self.store is not event.store:
            self.store.close()
        self.store = event.store
        self.store_label = event.label
        self.chunk_index = None
        self._chunk_keys = []
        self.store_problem = None
        self.skipped = event.skipped or SkipList()
        browser = self._new_browser(event.store)
        if isinstance(self.screen, StorePickerScreen) and self.screen.opened_from_browser:
            # the picker was opened from a browser: close it, then replace that browser
            # (the browser may be the app's base screen, which cannot be
            # switched: the new browser goes on top and is the one in use)
            await self.pop_screen()
            await self.push_screen(browser)
        else:
            self.switch_screen(browser)
        if self.sessions_pending:
            self.count_sessions(event.store)
        if self.skipped.skipped:
            self.notify_plain(
                f"{self.skipped.summary()}. The start screen says so; ctrl+p 'Skipped files' lists them.",
                title=f"Indexed {event.label}",
                severity="warning",
                timeout=12,
            )

    def on_unmount(self) -> None:
        if self.store is not None:
            self.store.close()

    @property
    def browser(self) -> BrowserScreen | None:
        """The browser screen in use (the topmost), once a store is open."""
        for screen in reversed(self.screen_stack):
            if isinstance(screen, BrowserScreen):
                return screen
        return None

    # ── actions ────────────────────────────────────────────────────────

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """What the action table (:mod:`tui.browser.actions`) says: browser keys are off on
        the lab screens (Esc first), which keeps their footer readable; actions
        that need a browser wait for one."""
        row = app_action(action)
        if row is None:
            return True
        if row.browser_key and isinstance(self.screen, (CompareScreen, WhyScreen, DoctorScreen, AgentLogScreen)):
            return False
        if row.needs:
            return self.browser is not None
        return True

    def _close_dialogs(self) -> BrowserScreen | None:
        browser = self.browser
        if browser is None:
            return None
        while self.screen is not browser and len(self.screen_stack) > 1:
            self.pop_screen()
        return browser

    def action_focus_query(self) -> None:
        """Focus the query box, text selected; closes any dialog first."""
        browser = self._close_dialogs()
        if browser is not None:
            browser.query_box.focus_query()

    def action_focus_query_slash(self) -> None:
        """``/`` from outside the query box: same as ctrl+l."""
        self.action_focus_query()

    def _after_dialog(self, _result: object = None) -> None:
        """A dialog or lab screen closed: focus is back where it was before it
        opened (the browser screen keeps its focused widget, and the query its
        cursor and selection). Only if that widget is gone or now hidden (e.g.
        the results table after a search with no results) does the query box
        take focus."""
        browser = self.browser
        if browser is None:
            return

        def check() -> None:
            if self.screen is not browser:
                return
            focused = browser.focused
            if focused is None or focused not in browser.focus_chain:
                browser.query_box.focus_query()

        self.call_after_refresh(check)

    def action_help(self) -> None:
        """Open (or close) the help screen."""
        if isinstance(self.screen, HelpScreen):
            self.screen.dismiss(None)
            return
        self._close_dialogs()
        self.push_screen(HelpScreen(), callback=self._after_dialog)

    def action_edit_params(self) -> None:
        """Open the parameters dialog."""
        browser = self._close_dialogs()
        if browser is not None:
            self.push_screen(ParamsScreen(browser.params, self.source_labels), callback=self._after_dialog)

    def action_choose_sessions(self) -> None:
        """Open the session dialog."""
        browser = self._close_dialogs()
        if browser is not None:
            self.push_screen(SessionsScreen(self.session_counts, browser.params.sessions), callback=self._after_dialog)

    def action_show_skipped(self) -> None:
        """List the files the folder's indexing skipped, and why."""
        browser = self._close_dialogs()
        if browser is not None:
            self.push_screen(SkippedScreen(self.skipped, self.store_label), callback=self._after_dialog)

    # ── the what-if lab ────────────────────────────────────────────────

    def on_variants_chosen(self, event: VariantsChosen) -> None:
        """Keep the compare screen's variants for its next opening."""
        self.compare_variants = (event.variant_a, event.variant_b)

    def action_compare(self, spec_b: str | None = None) -> None:
        """Open the compare screen for the current search (B from ``spec_b`` if given)."""
        browser = self._close_dialogs()
        if browser is None:
            return
        a, b = self.compare_variants
        if spec_b is not None:
            from engine.pipeline.variants import parse_variant

            b = parse_variant(spec_b)
            self.compare_variants = (a, b)
        self.push_screen(
            CompareScreen(browser.params, a, b, cursor_blink=self.cursor_blink), callback=self._after_dialog
        )

    def selected_subject(self):
        """The chunk the browser's journey pane follows, or ``None``."""
        browser = self.browser
        return None if browser is None or browser.trace is None else browser.journey.subject

    def action_why_not(self) -> None:
        """Open "why not?" (the finder); from the results, stages or journey
        pane it explains the chunk selected there at once."""
        browser = self._close_dialogs()
        if browser is None:
            return
        focused = self.focused
        browsing = focused is not None and focused is not browser.query_box.input and focused.screen is browser
        subject = self.selected_subject() if browsing else None
        self._open_why(browser, subject.rowid if subject is not None else None)

    def action_why_selected(self) -> None:
        """Explain the chunk the journey pane follows."""
        browser = self._close_dialogs()
        subject = self.selected_subject()
        if browser is not None:
            self._open_why(browser, subject.rowid if subject is not None else None)

    def _open_why(self, browser: BrowserScreen, rowid: int | None) -> None:
        self.push_screen(
            WhyScreen(browser.params, rowid=rowid, trace=browser.trace, cursor_blink=self.cursor_blink),
            callback=self._after_dialog,
        )

    def action_open_stores(self) -> None:
        """Show the picker of context-mode content stores on this machine
        (as ``rankscope --stores``); picking one browses it read-only, Escape
        returns to the current store."""
        if self.store_finder is None:
            from engine.store.discovery import StoreFinder

            self.store_finder = StoreFinder()
        self.push_screen(StorePickerScreen(self.store_finder))

    # ── the agent view ─────────────────────────────────────────────────

    def action_agent_view(self) -> None:
        """Open (or close) the agent view for the current search."""
        if isinstance(self.screen, AgentViewScreen):
            self.screen.dismiss(None)
            return
        browser = self._close_dialogs()
        if browser is not None:
            self.push_screen(AgentViewScreen(browser.params, session_db=self.session_db), callback=self._after_dialog)

    def action_agent_log(self) -> None:
        """Open the agent's recorded searches (the store's session DB)."""
        browser = self._close_dialogs()
        if browser is not None:
            self.push_screen(AgentLogScreen(self.session_db), callback=self._after_dialog)

    def on_open_recorded_call(self, event: OpenRecordedCall) -> None:
        """Open a recorded call (from the agent log): the browser searches its
        first query with the limit, filters and allow-set the server used, and
        the agent view answers the call's own arguments at its throttle position."""
        self.open_recorded_call(event.replay)

    def open_recorded_call(self, replay) -> None:
        """Open the recorded call ``replay`` (an :class:`engine.agent.log.Replay`
        whose call has params); see :meth:`on_open_recorded_call`."""
        from dataclasses import replace as _replace

        from engine.agent import parse_arguments

        browser = self._close_dialogs()
        if browser is None:
            return
        call = replay.call
        parsed = parse_arguments(call.params, plugin_mode=True)
        trace = replay.trace
        limit = trace.effective_limit if trace is not None and trace.effective_limit is not None else 2
        scope = trace.scope.allow_set if trace is not None else None
        params = _replace(
            browser.params,
            query=(parsed.queries or ("",))[0],
            limit=limit,
            source=parsed.source or None,
            source_match="like",
            content_type=parsed.content_type,
            sessions=scope,
            variant=Variant(),
        )
        browser.open_search(params)
        wanted = int(parsed.limit) if parsed.limit == int(parsed.limit) and parsed.limit >= 0 else None
        request = AgentRequest(
            dict(call.params),
            replay.context,
            replay.position.count if replay.position else 1,
            wanted,
            (f"recorded call of {call.created_at} UTC, session {call.session_id[:8]}",),
        )
        self.push_screen(AgentViewScreen(params, request, session_db=self.session_db), callback=self._after_dialog)

    def action_rank_flow(self) -> None:
        """Open the rank flow of the search shown (F5 closes it again)."""
        from tui.browser.screens.flow import FlowScreen

        browser = self._close_dialogs()
        if browser is None:
            return
        if browser.trace is None:
            self.notify("Search something first: the rank flow shows a search's candidates.", severity="warning")
            return
        absent = browser.pin_outcome.absent if browser.pin_outcome is not None else None
        grades: dict[int, int] = browser.judged.grades if browser.judged is not None else {}
        self.push_screen(
            FlowScreen(
                browser.trace,
                browser.pinned_rowid,
                absent,
                grades=grades,
                selected=subject.rowid if (subject := browser.selected_chunk()) is not None else None,
            ),
            callback=self._after_dialog,
        )

    def action_doctor(self) -> None:
        """Open the store diagnostics."""
        browser = self._close_dialogs()
        if browser is not None:
            self.push_screen(DoctorScreen(self.store_label), callback=self._after_dialog)

    def command_text(self) -> str | None:
        """The ``rankscope search`` command line of the current search."""
        browser = self.browser
        if browser is None:
            return None
        return command_line(browser.params, browser.store.path)

    def action_copy_command(self) -> None:
        """Copy the current query and parameters as a command line."""
        text = self.command_text()
        if text is None:
            return
        self.copy_to_clipboard(text)
        self.notify_plain(text, title="Copied command line", timeout=8)

    def action_export_trace(self, folder: Path | None = None) -> Path | None:
        """Write the shown trace as JSON into ``folder`` (the current directory)."""
        browser = self.browser
        if browser is None or browser.trace is None:
            self.notify_plain("Nothing to export yet: search first.", severity="warning")
            return None
        trace = browser.trace
        text = json_text(trace_to_dict(trace))
        # A new file only: never through a symlink at the name, never over
        # anything (a name taken meanwhile moves on to the next one).
        for _ in range(100):
            path = export_path(trace.params.query, folder)
            try:
                write_text_file(path, text, overwrite=False)
            except FileExistsError:
                continue
            except OSError as exc:
                self.notify_plain(
                    f"Cannot write {path}: {exc.strerror or exc}", title="Export failed", severity="error"
                )
                return None
            break
        else:
            self.notify_plain(f"Cannot write {path}: every name is taken", title="Export failed", severity="error")
            return None
        self.notify_plain(str(path.absolute()), title="Trace exported", timeout=8)
        return path

    # ── requests from the screens (tui.browser.messages) ───────────────────────

    def on_apply_params(self, event: ApplyParams) -> None:
        """A dialog changed search parameters: the browser searches again."""
        browser = self.browser
        if browser is not None:
            browser.update_params(**event.changes)

    def on_pin_chunk(self, event: PinChunk) -> None:
        """The why-not finder or the rank flow pinned a chunk (or unpinned
        it): the browser follows it."""
        browser = self.browser
        if browser is not None:
            browser.pin(event.rowid)

    def on_grade_chunk(self, event: GradeChunk) -> None:
        """The rank flow grades a chunk: the browser follows it and grades it
        with its own grade code; the flow is told the grade now recorded."""
        from engine import StoreError
        from engine.store.chunkids import chunk_ids

        from tui.browser.subject import row_subject

        browser = self.browser
        if browser is None or browser.trace is not event.trace:
            self.notify_plain("The browser shows another search now: grade there.", severity="warning")
            return
        trace = event.trace
        run = trace.first if event.pass_name == "first" else trace.fuzzy.rerun
        subject = row_subject(run, event.rowid, "Rank flow") if run is not None else None
        if subject is None:
            self.notify_plain(
                f"Row {event.rowid} is not among this search's candidates: nothing to grade here.",
                severity="warning",
            )
            return
        browser.pick(subject)
        browser.action_grade(event.grade)
        recorded: int | None = None
        if browser.state is not None:
            try:
                with browser.store.thread_connection() as conn:
                    cid = chunk_ids(browser.store, conn).by_rowid.get(event.rowid)
            except StoreError:  # the grading itself has said what went wrong
                cid = None
            if cid is not None:
                recorded = browser.state.judgments.for_query(trace.params.query).get(cid)
        event.requester.post_message(ChunkGraded(event.rowid, recorded))

    def on_run_search(self, event: RunSearch) -> None:
        self.run_search(event.store, event.params, event.seq, event.requester)

    def on_run_compare(self, event: RunCompare) -> None:
        self.run_compare(event.params_a, event.params_b, event.seq, event.requester)

    def on_explain_chunk(self, event: ExplainChunk) -> None:
        self.run_why(event.params, event.rowid, event.seq, event.requester, event.trace)

    def on_load_chunks(self, event: LoadChunks) -> None:
        """The finder's chunk list: at once when already read for this store."""
        if self.chunk_index is not None:
            event.requester.post_message(ChunksLoaded(self.chunk_index))
        else:
            self.load_chunks(event.requester)

    def on_find_chunks(self, event: FindChunks) -> None:
        self.match_chunks(event.text, event.seq, event.requester)

    def on_diagnose(self, event: Diagnose) -> None:
        self.run_doctor(event.requester)

    def on_index_folder(self, event: IndexFolder) -> None:
        self.index_folder(event.entry, event.label, event.requester)

    def on_discover_stores(self, event: DiscoverStores) -> None:
        self.discover_stores(event.finder, event.requester)

    def on_run_agent_view(self, event: RunAgentView) -> None:
        self.run_agent_view(event.request, event.seq, event.requester)

    def on_load_agent_log(self, event: LoadAgentLog) -> None:
        self.load_agent_log(event.session_db, event.requester)

    def on_run_pin(self, event: RunPin) -> None:
        self.run_pin(event.store, event.trace, event.rowid, event.seq, event.requester)

    # ── workers (all on the app, so one handler reports their errors) ──

    @work(thread=True, exclusive=True, exit_on_error=False, group="search")
    def run_search(self, store: Store, params: SearchParams, seq: int, target: MessagePump) -> None:
        """Run the pipeline in a thread on its own SQLite connection and post
        :class:`SearchFinished` to ``target``; a cancelled search posts nothing."""
        worker = get_current_worker()
        if worker.is_cancelled:
            return
        try:
            with store.thread_connection() as conn:
                trace = self.search_fn(store, params, conn=conn)
        except Exception as exc:  # a damaged store, or a bug: the browser explains it, never crashes
            if not worker.is_cancelled:
                target.post_message(SearchFailed(seq, exc))
            return
        if not worker.is_cancelled:
            target.post_message(SearchFinished(seq, trace))

    @work(thread=True, exclusive=True, exit_on_error=False, group="pin")
    def run_pin(self, store: Store, trace: Trace, rowid: int, seq: int, target: MessagePump) -> None:
        """The pinned chunk's fate and its counterfactual, re-running the
        pipeline through one run cache per store (kept across searches, so
        re-runs of the same query reuse its retriever runs); a newer request
        cancels this one between re-runs."""
        from engine.pipeline.runcache import RunCache
        from engine.lab.why import ChunkNotFoundError

        from tui.present.pinning import pin_outcome

        worker = get_current_worker()
        if worker.is_cancelled:
            return
        if self._pin_runs is None or self._pin_runs.store is not store:
            self._pin_runs = RunCache(store)
        try:
            with store.thread_connection() as conn:
                outcome = pin_outcome(
                    store, trace, rowid, conn=conn, runs=self._pin_runs, stop=lambda: worker.is_cancelled
                )
        except ChunkNotFoundError as exc:
            target.post_message(PinFinished(seq, None, str(exc)))
            return
        if not worker.is_cancelled:
            target.post_message(PinFinished(seq, outcome))

    def _lab_store(self) -> Store:
        browser = self.browser
        store = browser.store if browser is not None else self.store
        if store is None:
            raise RuntimeError("no store is open")
        return store

    @work(thread=True, exclusive=True, exit_on_error=False, group="compare")
    def run_compare(self, params_a: SearchParams, params_b: SearchParams, seq: int, target: MessagePump) -> None:
        """Search ``params_a`` and ``params_b`` on one connection and post
        :class:`CompareFinished` (the comparison) to ``target``."""
        worker = get_current_worker()
        store = self._lab_store()
        with store.thread_connection() as conn:
            trace_a = self.search_fn(store, params_a, conn=conn)
            if worker.is_cancelled:
                return
            trace_b = self.search_fn(store, params_b, conn=conn)
        if not worker.is_cancelled:
            target.post_message(CompareFinished(seq, compare_traces(trace_a, trace_b)))

    @work(thread=True, exclusive=True, exit_on_error=False, group="why")
    def run_why(
        self, params: SearchParams, rowid: int, seq: int, target: MessagePump, trace: Trace | None = None
    ) -> None:
        """Explain chunk ``rowid`` for ``params`` and post :class:`WhyFinished`."""
        worker = get_current_worker()
        store = self._lab_store()
        with store.thread_connection() as conn:
            try:
                explanations = why_not(
                    store,
                    params,
                    rowid=rowid,
                    conn=conn,
                    trace=trace if trace is not None and trace.params == params else None,
                )
            except ChunkNotFoundError as exc:
                target.post_message(WhyFinished(seq, [], str(exc)))
                return
        if not worker.is_cancelled:
            target.post_message(WhyFinished(seq, explanations))

    @work(thread=True, exclusive=True, exit_on_error=False, group="sessions")
    def count_sessions(self, store: Store) -> None:
        """Count a large store's sessions off the UI thread (every chunk is
        read: :func:`tui.browser.facts.read_facts` leaves them pending); then the start
        text, the session picker and the palette list them."""
        with store.thread_connection() as conn:
            counts = read_sessions(store, conn)

        def keep() -> None:
            if self.store is not store:
                return  # another store was opened meanwhile
            self.session_counts, self.sessions_pending = counts, False
            browser = self.browser
            if browser is not None:
                browser.overview = dataclasses.replace(
                    browser.overview, session_counts=tuple(counts), sessions_pending=False
                )
                if browser.results.welcome_shown:  # not over a failed search's message
                    browser.results.show_welcome(browser.welcome_text())

        self.call_from_thread(keep)

    @work(thread=True, exclusive=True, exit_on_error=False, group="chunks")
    def load_chunks(self, target: MessagePump) -> None:
        """Read the store's chunk list once for the finder; post :class:`ChunksLoaded`."""
        store = self._lab_store()
        with store.thread_connection() as conn, store.lock:
            rows = store.iter_chunks(conn, with_content=False)
        entries = chunk_entries(rows)
        del rows
        keys = finder_keys(entries)

        def keep() -> None:
            self.chunk_index, self._chunk_keys = entries, keys

        self.call_from_thread(keep)
        target.post_message(ChunksLoaded(entries))

    @work(thread=True, exclusive=True, exit_on_error=False, group="find")
    def match_chunks(self, text: str, seq: int, target: MessagePump) -> None:
        """Fuzzy-match ``text`` against the chunk list; post :class:`ChunkMatches`."""
        worker = get_current_worker()
        entries, keys = self.chunk_index or [], self._chunk_keys
        matches = match_chunks(text, entries, keys if len(keys) == len(entries) else None)
        if not worker.is_cancelled:
            target.post_message(ChunkMatches(seq, matches))

    @work(thread=True, exclusive=True, exit_on_error=False, group="agent")
    def run_agent_view(self, request: AgentRequest, seq: int, target: MessagePump) -> None:
        """Answer ``request`` with :func:`engine.agent.ctx_search` on a thread
        connection and post :class:`AgentViewFinished` to ``target``."""
        from engine.agent import AgentViewError, ctx_search

        worker = get_current_worker()
        store = self._lab_store()
        with store.thread_connection() as conn:
            try:
                trace = ctx_search(
                    store, request.arguments, request.context, call_number=request.call_number, conn=conn
                )
            except AgentViewError as exc:
                target.post_message(AgentViewFinished(seq, None, str(exc)))
                return
        if not worker.is_cancelled:
            target.post_message(AgentViewFinished(seq, trace))

    @work(thread=True, exclusive=True, exit_on_error=False, group="agent-log")
    def load_agent_log(self, session_db: str, target: MessagePump) -> None:
        """Read the recorded calls of ``session_db``, replay them on the open
        store and post :class:`AgentLogLoaded`."""
        from engine.agent import SessionDbError
        from engine.agent.log import load_calls, replay_calls

        store = self._lab_store()
        try:
            calls = load_calls(session_db)
            with store.thread_connection() as conn:
                replays = replay_calls(store, session_db, calls, conn=conn)
        except SessionDbError as exc:
            target.post_message(AgentLogLoaded([], str(exc)))
            return
        target.post_message(AgentLogLoaded(replays))

    @work(thread=True, exclusive=True, exit_on_error=False, group="doctor")
    def run_doctor(self, target: MessagePump) -> None:
        """Diagnose the store (read-only) and post :class:`DoctorFinished`."""
        store = self._lab_store()
        with store.thread_connection() as conn:
            report = diagnose(store, conn=conn)
        target.post_message(DoctorFinished(report))

    @work(thread=True, exclusive=True, exit_on_error=False, group="index")
    def index_folder(self, entry: CacheEntry, label: str, target: MessagePump) -> None:
        """Index ``entry.folder`` into the cache, posting progress to ``target``,
        then :class:`StoreReady` to the app."""
        worker = get_current_worker()
        total = len(corpus_files(entry.folder))
        done = 0
        target.post_message(LoadingScreen.Progress(0, total, ""))

        def progress(label: str, nbytes: int) -> None:
            nonlocal done
            done += 1
            target.post_message(LoadingScreen.Progress(done, total, label))

        skips: list[SkipList] = []
        store = build_cache(entry, progress=progress, cancelled=lambda: worker.is_cancelled, on_skips=skips.append)
        if worker.is_cancelled:
            store.close()
            return
        self.post_message(StoreReady(store, label, skips[0] if skips else SkipList()))

    @work(thread=True, exclusive=True, exit_on_error=False, group="discover")
    def discover_stores(self, finder: Callable[[], list[Any]], target: MessagePump) -> None:
        """Find content stores in a thread (it may walk folders); post :class:`StoresFound`
        (with the folders searched, when the finder tells: ``engine.store.discovery.StoreFinder``)."""
        infos = list(finder())
        locations = getattr(finder, "locations", None)
        target.post_message(StoresFound(infos, tuple(locations()) if locations is not None else ()))

    # ── errors ─────────────────────────────────────────────────────────

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """Report every failed worker as a notification; the app keeps running."""
        if event.state != WorkerState.ERROR:
            return
        error = event.worker.error
        assert error is not None  # set in the ERROR state
        what = {
            "search": "Search",
            "index": "Indexing",
            "discover": "Store discovery",
            "compare": "Compare",
            "why": "Why not?",
            "chunks": "Reading the chunk list",
            "find": "Finding chunks",
            "doctor": "Doctor",
            "agent": stages.title("agent"),
            "agent-log": "Agent log",
            "pin": "Following the pinned chunk",
            "sessions": "Counting sessions",
        }.get(event.worker.group, "Background task")
        self.notify_plain(describe_problem(error), title=f"{what} failed", severity="error", timeout=10)
        browser = self.browser
        if browser is not None and event.worker.group == "search":
            browser.results.border_subtitle = "search failed"
        for screen in self.screen_stack:
            if isinstance(screen, LoadingScreen) and event.worker.group == "index":
                screen.show_error(error)
            hook = getattr(screen, "worker_failed", None)
            if hook is not None:
                hook(event.worker.group, error)


def make_app(
    store: Store | None = None,
    *,
    store_label: str = "",
    index_job: CacheEntry | None = None,
    store_finder: Callable[[], list[Any]] | None = None,
    query: str = "",
    params: SearchParams | None = None,
    show_timings: bool = True,
    cursor_blink: bool = True,
    search_fn: SearchFn = search,
    notice: str | None = None,
    suggestions: tuple[str, ...] = (),
    skipped: SkipList | None = None,
    session_db: str | None = None,
    qrels_path: Path | None = None,
) -> RankscopeApp:
    """Build the browser. Used by ``rankscope`` and by the tests.

    Args:
        store: an open store to browse (the app closes it on exit).
        store_label: how to name the store or corpus in the interface.
        index_job: index this cache entry's folder first (loading screen).
        store_finder: show a store picker fed by this callable.
        query: start with this query (searched at once).
        params: start with these parameters (``query`` wins over ``params.query``).
        show_timings: show per-stage milliseconds (off for snapshot tests).
        cursor_blink: blink the query cursor (off for snapshot tests).
        search_fn: the pipeline entry point (tests inject failures here).
        notice: a warning to show once the app starts.
        suggestions: example queries for the start screen.
        skipped: the files the folder's (cached) indexing skipped.
        session_db: the store's context-mode session DB (default: paired by
            name in ``../sessions/``) for the agent view's plugin scope.
        qrels_path: the judgments file to grade into (``--qrels``); default
            the store's own ``qrels.json`` in the user's data folder.
    """
    p = params or SearchParams("")
    if query:
        from dataclasses import replace

        p = replace(p, query=query)
    return RankscopeApp(
        store=store,
        store_label=store_label,
        index_job=index_job,
        store_finder=store_finder,
        params=p,
        show_timings=show_timings,
        cursor_blink=cursor_blink,
        search_fn=search_fn,
        notice=notice,
        suggestions=suggestions,
        skipped=skipped,
        session_db=session_db,
        qrels_path=qrels_path,
    )
