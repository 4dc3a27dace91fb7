"""The rankscope browser application.

Build it with :func:`make_app` (the CLI launcher and the tests use the same
factory). The app owns the open store and the global keys; the
:class:`~tui.screens.browser.BrowserScreen` does the searching and showing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from textual import work
from textual.app import App
from textual.binding import Binding
from textual.screen import Screen
from textual.worker import Worker, WorkerState, get_current_worker

from engine import SearchParams, Store, search, trace_to_dict
from engine.compare import compare_traces
from engine.doctor import diagnose
from engine.model import Trace, Variant
from engine.why import ChunkNotFoundError, why_not

from . import safe
from .cache import CacheEntry, SkipList, build_cache, corpus_files
from .cmdline import command_line, export_path
from .commands import RankscopeCommands
from .facts import describe_problem, read_facts, read_sessions
from .fmt import json_text
from .messages import (ChunkMatches, ChunksLoaded, CompareFinished, DoctorFinished, SearchFailed, SearchFinished,
                       StoreReady, WhyFinished)
from .screens.browser import BrowserScreen
from .screens.compare import CompareScreen
from .screens.doctor import DoctorScreen
from .screens.help import HelpScreen
from .screens.loading import LoadingScreen
from .screens.params import ParamsScreen
from .screens.sessions import SessionsScreen
from .screens.skipped import SkippedScreen
from .screens.stores import StorePickerScreen
from .screens.why import ChunkEntry, WhyScreen, chunk_entries, finder_keys, match_chunks

_QUERY_GROUP = Binding.Group("Query ", compact=True)
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
    BINDINGS = [
        Binding("ctrl+l", "focus_query", "Query", priority=True, id="focus-query", group=_QUERY_GROUP,
                tooltip="Focus the query box with its text selected (also closes dialogs)"),
        Binding("slash", "focus_query_slash", "Query", key_display="/", id="focus-query-slash", group=_QUERY_GROUP,
                tooltip="Focus the query box (when focus is elsewhere)"),
        Binding("f1", "help", "Help", id="help", tooltip="What each pipeline stage does, and the keys"),
        # Tab and shift+Tab as priority bindings: they run as the key arrives, so keys typed right
        # after them (one burst) reach the newly focused widget, not the one that had focus.
        Binding("tab", "focus_next", "Next", show=False, priority=True, id="focus-next",
                tooltip="Focus the next widget"),
        Binding("shift+tab", "focus_previous", "Previous", show=False, priority=True, id="focus-previous",
                tooltip="Focus the previous widget"),
        Binding("f2", "edit_params", "Params", id="edit-params",
                tooltip="Limit, source filter (substring or exact) and content type"),
        Binding("f3", "choose_sessions", "Sessions", id="choose-sessions",
                tooltip="Turn the session filter on or off and choose the allow-set"),
        Binding("f4", "copy_command", "Copy", id="copy-command",
                tooltip="Copy this search as a 'rankscope search' command line"),
        Binding("f6", "export_trace", "Export", id="export-trace",
                tooltip="Write the whole trace as JSON into the current folder"),
        # The what-if lab: not in the footer (it is full at 80 columns); listed in F1 and ctrl+p.
        Binding("f7", "compare", "Compare", id="lab-compare", show=False,
                tooltip="Compare this search under two pipeline variants (A = reference, B = your choice)"),
        Binding("f8", "why_not", "Why not?", id="lab-why", show=False,
                tooltip="Why is chunk X missing? Find any chunk and see where it left the pipeline"),
        Binding("f9", "doctor", "Doctor", id="lab-doctor", show=False,
                tooltip="Store diagnostics: key collisions, oversized and Untitled chunks, counts, staleness"),
    ]

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
    ) -> None:
        super().__init__()
        self.suggestions = suggestions
        #: The files the browsed folder's indexing skipped (empty for a store file).
        self.skipped = skipped or SkipList()
        self.store = store
        self.store_label = store_label or (Path(store.path).name if store and store.path else "in-memory store")
        self.index_job = index_job
        self.store_finder = store_finder
        self.initial_params = params or SearchParams("")
        self.show_timings = show_timings
        self.cursor_blink = cursor_blink
        self.search_fn = search_fn
        self.notice = notice
        self.store_stats: dict = {}
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
            self.store_stats, self.session_counts, self.source_labels = {}, [], []
            self.sessions_pending = False
            self.store_problem = describe_problem(exc)
            self.notice = f"{self.store_problem[0].upper()}{self.store_problem[1:]}"
        else:
            self.store_problem = None
        return self._new_browser(store)

    def _new_browser(self, store: Store) -> BrowserScreen:
        return BrowserScreen(store, self.store_label, self.initial_params, show_timings=self.show_timings,
                             cursor_blink=self.cursor_blink)

    def _load_store_facts(self, store: Store) -> None:
        """Read the store's counts, sessions and source labels.

        Raises:
            StoreError: the store cannot be read (see :func:`tui.facts.read_facts`).
        """
        facts = read_facts(store)
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
            self.notify_plain(f"{self.skipped.summary()}. The start screen says so; ctrl+p 'Skipped files' lists them.",
                              title=f"Indexed {event.label}", severity="warning", timeout=12)

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
        if action in ("edit_params", "choose_sessions", "copy_command", "export_trace") and isinstance(
            self.screen, (CompareScreen, WhyScreen, DoctorScreen)
        ):
            return False  # browser keys: off on the lab screens (Esc first), which keeps their footer readable
        if action in ("focus_query", "focus_query_slash", "edit_params", "choose_sessions", "copy_command", "export_trace",
                      "compare", "why_not", "why_selected", "doctor", "show_skipped"):
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
            self.push_screen(SessionsScreen(self.session_counts, browser.params.sessions),
                             callback=self._after_dialog)

    def action_show_skipped(self) -> None:
        """List the files the folder's indexing skipped, and why."""
        browser = self._close_dialogs()
        if browser is not None:
            self.push_screen(SkippedScreen(self.skipped, self.store_label), callback=self._after_dialog)

    # ── the what-if lab ────────────────────────────────────────────────

    def remember_variants(self, a: Variant, b: Variant) -> None:
        """Keep the compare screen's variants for its next opening."""
        self.compare_variants = (a, b)

    def action_compare(self, spec_b: str | None = None) -> None:
        """Open the compare screen for the current search (B from ``spec_b`` if given)."""
        browser = self._close_dialogs()
        if browser is None:
            return
        a, b = self.compare_variants
        if spec_b is not None:
            from engine.compare import parse_variant

            b = parse_variant(spec_b)
            self.compare_variants = (a, b)
        self.push_screen(CompareScreen(browser.params, a, b), callback=self._after_dialog)

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
        self.push_screen(WhyScreen(browser.params, rowid=rowid, trace=browser.trace), callback=self._after_dialog)

    def action_open_stores(self) -> None:
        """Show the picker of context-mode content stores on this machine
        (as ``rankscope --stores``); picking one browses it read-only, Escape
        returns to the current store."""
        if self.store_finder is None:
            from engine.discovery import find_stores

            self.store_finder = find_stores
        self.push_screen(StorePickerScreen(self.store_finder))

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
        path = export_path(trace.params.query, folder)
        try:
            path.write_text(json_text(trace_to_dict(trace)), "utf-8")
        except OSError as exc:
            self.notify_plain(f"Cannot write {path}: {exc.strerror or exc}", title="Export failed", severity="error")
            return None
        self.notify_plain(str(path.absolute()), title="Trace exported", timeout=8)
        return path

    # ── workers (all on the app, so one handler reports their errors) ──

    @work(thread=True, exclusive=True, exit_on_error=False, group="search")
    def run_search(self, params: SearchParams, seq: int, target: BrowserScreen) -> None:
        """Run the pipeline in a thread on its own SQLite connection and post
        :class:`SearchFinished` to ``target``; a cancelled search posts nothing."""
        worker = get_current_worker()
        if worker.is_cancelled:
            return
        store = target.store
        try:
            with store.thread_connection() as conn:
                trace = self.search_fn(store, params, conn=conn)
        except Exception as exc:  # a damaged store, or a bug: the browser explains it, never crashes
            if not worker.is_cancelled:
                target.post_message(SearchFailed(seq, exc))
            return
        if not worker.is_cancelled:
            target.post_message(SearchFinished(seq, trace))

    def _lab_store(self) -> Store:
        browser = self.browser
        store = browser.store if browser is not None else self.store
        if store is None:
            raise RuntimeError("no store is open")
        return store

    @work(thread=True, exclusive=True, exit_on_error=False, group="compare")
    def run_compare(self, params_a: SearchParams, params_b: SearchParams, seq: int, target: Screen) -> None:
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
    def run_why(self, params: SearchParams, rowid: int, seq: int, target: Screen, trace: Trace | None = None) -> None:
        """Explain chunk ``rowid`` for ``params`` and post :class:`WhyFinished`."""
        worker = get_current_worker()
        store = self._lab_store()
        with store.thread_connection() as conn:
            try:
                explanations = why_not(store, params, rowid=rowid, conn=conn,
                                       trace=trace if trace is not None and trace.params == params else None)
            except ChunkNotFoundError as exc:
                target.post_message(WhyFinished(seq, [], str(exc)))
                return
        if not worker.is_cancelled:
            target.post_message(WhyFinished(seq, explanations))

    @work(thread=True, exclusive=True, exit_on_error=False, group="sessions")
    def count_sessions(self, store: Store) -> None:
        """Count a large store's sessions off the UI thread (every chunk is
        read: :func:`tui.facts.read_facts` leaves them pending); then the start
        text, the session picker and the palette list them."""
        with store.thread_connection() as conn:
            counts = read_sessions(store, conn)

        def keep() -> None:
            if self.store is not store:
                return  # another store was opened meanwhile
            self.session_counts, self.sessions_pending = counts, False
            browser = self.browser
            if browser is not None and browser.results.trace is None:
                browser.results.show_welcome(browser.welcome_text())

        self.call_from_thread(keep)

    @work(thread=True, exclusive=True, exit_on_error=False, group="chunks")
    def load_chunks(self, target: Screen) -> None:
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
    def match_chunks(self, text: str, seq: int, target: Screen) -> None:
        """Fuzzy-match ``text`` against the chunk list; post :class:`ChunkMatches`."""
        worker = get_current_worker()
        entries, keys = self.chunk_index or [], self._chunk_keys
        matches = match_chunks(text, entries, keys if len(keys) == len(entries) else None)
        if not worker.is_cancelled:
            target.post_message(ChunkMatches(seq, matches))

    @work(thread=True, exclusive=True, exit_on_error=False, group="doctor")
    def run_doctor(self, target: Screen) -> None:
        """Diagnose the store (read-only) and post :class:`DoctorFinished`."""
        store = self._lab_store()
        with store.thread_connection() as conn:
            report = diagnose(store, conn=conn)
        target.post_message(DoctorFinished(report))

    @work(thread=True, exclusive=True, exit_on_error=False, group="index")
    def index_folder(self, entry: CacheEntry, target: LoadingScreen) -> None:
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
        self.post_message(StoreReady(store, target.label, skips[0] if skips else SkipList()))

    @work(thread=True, exclusive=True, exit_on_error=False, group="discover")
    def discover_stores(self, finder: Callable[[], list[Any]], target: StorePickerScreen) -> None:
        """Find content stores in a thread (it may walk folders) and list them."""
        infos = list(finder())
        self.call_from_thread(target.show_stores, infos)

    # ── errors ─────────────────────────────────────────────────────────

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """Report every failed worker as a notification; the app keeps running."""
        if event.state != WorkerState.ERROR:
            return
        error = event.worker.error
        what = {
            "search": "Search", "index": "Indexing", "discover": "Store discovery", "compare": "Compare",
            "why": "Why not?", "chunks": "Reading the chunk list", "find": "Finding chunks", "doctor": "Doctor",
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
    """
    p = params or SearchParams("")
    if query:
        from dataclasses import replace

        p = replace(p, query=query)
    return RankscopeApp(
        store=store, store_label=store_label, index_job=index_job, store_finder=store_finder, params=p,
        show_timings=show_timings, cursor_blink=cursor_blink, search_fn=search_fn, notice=notice,
        suggestions=suggestions, skipped=skipped,
    )
