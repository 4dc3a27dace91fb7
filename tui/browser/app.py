"""The rankscope browser application.

Build it with :class:`RankscopeApp` and one :class:`~tui.browser.options.AppOptions`
(the CLI launcher and the tests alike). The app keeps what is app-wide: the
open store, the theme, the keys and the actions that open screens, and what
outlives a screen (the compare screen's variants). Every screen runs its own
workers and receives their results (:class:`~tui.browser.screens.work.WorkScreen`
reports their failures); a screen opened over the browser gets what it needs
when it is built (:class:`~tui.browser.link.BrowserLink`, callbacks). The
keys, the palette's actions and the F1 key list come from one table,
:mod:`tui.browser.actions`.
"""

from __future__ import annotations

import time
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from textual import events
from textual.app import App
from textual.notifications import SeverityLevel
from textual.screen import Screen

from engine import Store
from engine.pipeline.variants import Variant

from tui.present import safe
from tui.browser.actions import app_action, bindings
from tui.browser.cmdline import command_line, export_name, export_path
from tui.browser.delivery import REFUSED_OVER_SSH, TEMPORARY_NOTE, ExportRoute, route_for, send_download
from tui.browser.messages import StoreReady
from tui.browser.options import AppOptions
from tui.browser.palette import RankscopeCommands
from tui.browser.subject import Subject
from tui.present.fmt import json_text
from engine.files.writing import write_text_file
from tui.browser.screens.browser import BrowserScreen, StoreOverview
from tui.browser.screens.work import WorkScreen
from tui.browser.theme import ANSI_DARK, ANSI_NO_COLOR, RANKSCOPE_DARK, THEME_NAME

#: Seconds a notification stays up by severity (when its caller gives none):
#: a toast covers the journey pane and dialogs at 80x24, so information goes
#: soon; warnings and errors stay longer.
NOTIFY_SECONDS: dict[SeverityLevel, float] = {"information": 5.0, "warning": 8.0, "error": 12.0}

# The other screens (and through them the agent layer and most of the lab)
# are imported when first opened: the first paint needs the browser only.
if TYPE_CHECKING:
    from engine.agent.log import Replay
    from tui.browser.screens.agent import AgentViewScreen
    from tui.browser.screens.agent_log import AgentLogScreen
    from tui.browser.screens.compare import CompareScreen


#: The events that show someone is at the keyboard (the idle timeout starts again).
PRESENCE_EVENTS = (
    events.Key,
    events.MouseDown,
    events.MouseScrollDown,
    events.MouseScrollUp,
    events.Paste,
    events.Resize,
)
#: Said when a demo session starts.
DEMO_NOTICE = "The store is read-only; your grades, history and saved cases last until you leave."
#: Said when the store picker is asked for in a demo.
NO_PICKER_IN_DEMO = "This is a demo: it shows one store, and never lists this machine's others."


def idle_warning(timeout: float) -> float:
    """Seconds before an idle timeout of ``timeout`` seconds that the app
    warns: 60, or a quarter of a shorter timeout."""
    return min(60.0, timeout / 4)


def paired_session_db(store: Store | None) -> str | None:
    """The session DB paired by name with ``store`` (in ``../sessions/``), or ``None``."""
    from engine.store.discovery import session_dbs_for_store

    paired = session_dbs_for_store(store.path) if store and store.path and store.path != ":memory:" else []
    return str(paired[0]) if paired else None


#: Refreshes :meth:`RankscopeApp._restore_focus` waits for a closing screen
#: to leave the stack (it does within one or two) before it gives up.
RESTORE_FOCUS_WAITS = 100


class RankscopeApp(App[None]):
    """Type a query and watch context-mode's lexical retrieval pipeline work.

    Exactly one of ``options.store``, ``options.index_job`` or
    ``options.store_finder`` says where the data comes from: an open store, a
    folder to index into the cache first (loading screen), or a store picker.
    """

    CSS_PATH = "app.tcss"
    TITLE = "rankscope"
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (110, "-wide")]
    COMMANDS = App.COMMANDS | {RankscopeCommands}
    #: Every app key, from the one action table (tui.browser.actions), which also feeds
    #: the command palette and the F1 key list.
    BINDINGS = bindings("app")

    def __init__(self, options: AppOptions | None = None) -> None:
        super().__init__()
        options = options or AppOptions()
        if options.store is None and options.index_job is None and options.store_finder is None:
            raise ValueError("the browser needs a store, a folder to index or a store finder")
        # colours that stay readable at 256 colours and with NO_COLOR (tui.browser.theme)
        self.register_theme(RANKSCOPE_DARK)
        self.theme = THEME_NAME
        self.ansi_theme_dark = ANSI_NO_COLOR if self.no_color else ANSI_DARK
        self.options = options
        self.store = options.store
        self.store_label = options.store_label or (
            Path(options.store.path).name if options.store and options.store.path else "in-memory store"
        )
        #: The open store's session DB (given, or paired by name in ../sessions/), or ``None``.
        self.session_db = options.session_db if options.session_db is not None else paired_session_db(options.store)
        #: The what-if lab's last variants (A, B), kept between openings of the compare screen.
        self.compare_variants: tuple[Variant, Variant] = (Variant(), Variant(fusion_key="rowid"))
        #: The agent view the live agent log opened last for a new call (following on), or ``None``.
        self._followed_view: AgentViewScreen | None = None
        #: When someone last pressed a key, clicked or resized (``time.monotonic()``).
        self.last_input = time.monotonic()
        self._idle_warned = False

    # ── screens ────────────────────────────────────────────────────────

    def get_default_screen(self) -> Screen[None]:
        if self.store is not None:
            return BrowserScreen(self.store, self.store_label, self.options)
        return Screen()  # a blank base; the loading screen or picker goes on top and is then replaced

    def on_mount(self) -> None:
        if self.store is None and self.options.index_job is not None:
            from tui.browser.screens.loading import LoadingScreen

            self.push_screen(LoadingScreen(self.options.index_job, self.store_label, writable=not self.demo))
        elif self.store is None and self.options.store_finder is not None:
            from tui.browser.screens.stores import StorePickerScreen

            self.push_screen(StorePickerScreen(self.options.store_finder))
        if self.options.notice:
            self.notify_plain(self.options.notice, severity="warning")
        if self.demo:
            self.notify_plain(DEMO_NOTICE, title="Demo")
        timeout = self.options.idle_timeout
        if timeout is not None:
            self.set_interval(max(0.05, min(5.0, idle_warning(timeout) / 4)), self._check_idle)

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None:
        """Textual's notification; without ``timeout`` it stays up
        :data:`NOTIFY_SECONDS` of its severity."""
        seconds = NOTIFY_SECONDS[severity] if timeout is None else timeout
        super().notify(message, title=title, severity=severity, timeout=seconds, markup=markup)

    def notify_plain(
        self, message: str, *, title: str = "", severity: SeverityLevel = "information", timeout: float | None = None
    ) -> None:
        """A notification whose text is shown as is (no markup; controls made visible)."""
        self.notify(safe.line(message), title=safe.line(title), severity=severity, timeout=timeout, markup=False)

    async def on_store_ready(self, event: StoreReady) -> None:
        """A store finished indexing (or was picked), its counts read: browse
        it (then the store browsed before is closed)."""
        from tui.browser.screens.stores import StorePickerScreen

        old = self.store
        self.store, self.store_label, self.session_db = event.store, event.label, paired_session_db(event.store)
        overview = StoreOverview(skipped=event.skipped, suggestions=self.options.suggestions).with_facts(event.facts)
        browser = BrowserScreen(event.store, event.label, self.options, overview)
        if isinstance(self.screen, StorePickerScreen) and self.screen.opened_from_browser:
            # the picker was opened from a browser: close it, then replace that browser
            # (the browser may be the app's base screen, which cannot be
            # switched: the new browser goes on top and is the one in use)
            await self.pop_screen()
            await self.push_screen(browser)
        else:
            await self.switch_screen(browser)
        if old is not None and old is not event.store:
            old.close()
        if event.skipped.skipped:
            self.notify_plain(
                f"{event.skipped.summary()}. The start screen says so; ctrl+p 'Skipped files' lists them.",
                title=f"Indexed {event.label}",
                severity="warning",
            )

    def on_unmount(self) -> None:
        if self.store is not None:
            self.store.close()

    @property
    def demo(self) -> bool:
        """A demo session (``rankscope --demo``)."""
        return self.options.demo is not None

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
        if self.demo and not row.in_demo:
            return False
        if row.browser_key and isinstance(self.screen, WorkScreen) and not self.screen.BROWSER_KEYS:
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
        """Focus the query box, text selected; closes any dialog first. In
        "why not?" it is the finder's query (the screen stays open)."""
        from tui.browser.screens.why import WhyScreen

        if isinstance(self.screen, WhyScreen):
            self.screen.focus_finder()
            return
        browser = self._close_dialogs()
        if browser is not None:
            browser.query_box.focus_query()

    def action_focus_query_slash(self) -> None:
        """``/`` from outside the query box: same as ctrl+l."""
        self.action_focus_query()

    def _after_dialog(self, _result: object = None) -> None:
        """A dialog closed: focus is back where it was before it opened (the
        browser screen keeps its focused widget, and the query its cursor and
        selection). Only if that widget is gone or now hidden (e.g. the
        results table after a search with no results) does the query box
        take focus."""
        self._restore_focus(lab=False)

    def _after_lab(self, _result: object = None) -> None:
        """A lab screen (rank flow, compare, why not?, doctor, agent view or
        log) closed: as :meth:`_after_dialog`, but focus that was in the query
        box goes to the pane shown, as ↓ does: a lab screen looks at the
        results, and r / s / j pressed next were typed into the query."""
        self._restore_focus(lab=True)

    def _restore_focus(self, lab: bool) -> None:
        """Apply :meth:`_after_dialog`'s or :meth:`_after_lab`'s rule once
        the browser screen is back on top. Textual calls a screen's result
        callback before or after popping it depending on timing, so the rule
        waits for the closing screen to leave the stack (not on a refresh:
        under load the pop came later and the rule was skipped). A key
        pressed or a click made after the close wins: the rule is then not
        applied (Esc then Ctrl+L typed quickly leaves focus in the query box)."""
        browser = self.browser
        if browser is None:
            return
        closing = self.screen if self.screen is not browser else None
        closed_at = time.monotonic()
        waits = [0]

        def check() -> None:
            if closing is not None and closing in self.screen_stack:
                waits[0] += 1
                if waits[0] <= RESTORE_FOCUS_WAITS:
                    self.call_after_refresh(check)  # not popped yet
                return
            if self.screen is not browser:  # another screen opened meanwhile: it owns the focus
                return
            if self.last_input > closed_at:  # someone acted since the close: their focus stands
                return
            focused = browser.focused
            if lab and (focused is None or focused is browser.query_box.input or focused not in browser.focus_chain):
                browser.action_leave_query()
            elif not lab and (focused is None or focused not in browser.focus_chain):
                browser.query_box.focus_query()

        self.call_after_refresh(check)

    def action_help(self) -> None:
        """Open (or close) the help screen."""
        from tui.browser.screens.help import HelpScreen

        if isinstance(self.screen, HelpScreen):
            self.screen.dismiss(None)
            return
        self._close_dialogs()
        self.push_screen(HelpScreen(), callback=self._after_dialog)

    def action_edit_params(self) -> None:
        """Open the parameters dialog."""
        from tui.browser.screens.params import ParamsScreen

        browser = self._close_dialogs()
        if browser is not None:
            labels = list(browser.overview.source_labels)
            self.push_screen(ParamsScreen(browser.params, labels, browser.update_params), callback=self._after_dialog)

    def action_choose_sessions(self) -> None:
        """Open the session dialog."""
        from tui.browser.screens.sessions import SessionsScreen

        browser = self._close_dialogs()
        if browser is not None:
            dialog = SessionsScreen(browser.overview.session_counts, browser.params.sessions, browser.update_params)
            self.push_screen(dialog, callback=self._after_dialog)

    def action_show_skipped(self) -> None:
        """List the files the folder's indexing skipped, and why."""
        from tui.browser.screens.skipped import SkippedScreen

        browser = self._close_dialogs()
        if browser is not None:
            self.push_screen(SkippedScreen(browser.overview.skipped, self.store_label), callback=self._after_dialog)

    # ── the what-if lab ────────────────────────────────────────────────

    def on_compare_screen_variants_chosen(self, event: CompareScreen.VariantsChosen) -> None:
        """Keep the compare screen's variants for its next opening."""
        self.compare_variants = (event.variant_a, event.variant_b)

    def action_compare(self, spec_b: str | None = None) -> None:
        """Open the compare screen for the current search (B from ``spec_b`` if given)."""
        from tui.browser.screens.compare import CompareScreen

        browser = self._close_dialogs()
        if browser is None or browser.results_pending("compare"):
            return
        a, b = self.compare_variants
        if spec_b is not None:
            from engine.pipeline.variants import parse_variant

            b = parse_variant(spec_b)
            self.compare_variants = (a, b)
        self.push_screen(CompareScreen(browser.link, browser.params, a, b), callback=self._after_lab)

    def selected_subject(self) -> Subject | None:
        """The chunk the browser's journey pane follows, or ``None``."""
        browser = self.browser
        return None if browser is None else browser.selected_chunk()

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
        from tui.browser.screens.why import WhyScreen

        if browser.results_pending("ask why not"):
            return
        self.push_screen(
            WhyScreen(browser.link, browser.params, rowid=rowid, trace=browser.trace), callback=self._after_lab
        )

    def action_open_stores(self) -> None:
        """Show the picker of context-mode content stores on this machine
        (as ``rankscope --stores``); picking one browses it read-only, Escape
        returns to the current store. Not in a demo."""
        if self.options.demo is not None:
            self.notify_plain(NO_PICKER_IN_DEMO, severity="warning")
            return
        finder = self.options.store_finder
        if finder is None:
            from engine.store.discovery import StoreFinder

            finder = StoreFinder()
            self.options = replace(self.options, store_finder=finder)
        from tui.browser.screens.stores import StorePickerScreen

        self.push_screen(StorePickerScreen(finder))

    # ── the agent view ─────────────────────────────────────────────────

    def action_agent_view(self) -> None:
        """Open (or close) the agent view for the current search."""
        from tui.browser.screens.agent import AgentViewScreen

        if isinstance(self.screen, AgentViewScreen):
            self.screen.dismiss(None)
            return
        browser = self._close_dialogs()
        if browser is not None and not browser.results_pending("open the agent view"):
            screen = AgentViewScreen(
                browser.store, browser.params, session_db=self.session_db, pinned=browser.pinned_rowid
            )
            self.push_screen(screen, callback=self._after_lab)

    def action_agent_log(self) -> None:
        """Open the agent's recorded searches (the store's session DB): from
        an agent view opened from the live agent log, go back to that log;
        from another agent view, over it (Esc returns there); else over the
        browser."""
        from tui.browser.screens.agent import AgentViewScreen
        from tui.browser.screens.agent_log import AgentLogScreen

        stack = self.screen_stack
        if isinstance(self.screen, AgentViewScreen) and len(stack) > 1 and isinstance(stack[-2], AgentLogScreen):
            self.screen.dismiss(None)
            return
        if isinstance(self.screen, AgentViewScreen):
            self.push_screen(AgentLogScreen(self.screen.store, self.session_db))
            return
        browser = self._close_dialogs()
        if browser is not None:
            self.push_screen(AgentLogScreen(browser.store, self.session_db), callback=self._after_lab)

    def on_agent_log_screen_call_opened(self, event: AgentLogScreen.CallOpened) -> None:
        """Open a recorded call (from the agent log)."""
        self.open_recorded_call(event.replay)

    def on_agent_log_screen_call_followed(self, event: AgentLogScreen.CallFollowed) -> None:
        """A new call arrived in the live agent log with following on: open it
        on top of the log (replacing the previous followed call's agent view),
        unless the user is looking at something else (the log lists it)."""
        top = self.screen
        browser = self.browser
        followed = top is self._followed_view and len(self.screen_stack) > 1 and self.screen_stack[-2] is event.log
        if browser is None or event.replay.call.params is None or (top is not event.log and not followed):
            return
        view = self.recorded_call_view(browser, event.replay)
        self._followed_view = view
        if followed:
            self.switch_screen(view)
        else:
            self.push_screen(view)

    def open_recorded_call(self, replay: Replay) -> None:
        """Open the recorded call ``replay`` (its call has params)
        (:meth:`recorded_call_view`): on top of the agent log when it is
        shown (Esc returns to it, still following), else over the browser."""
        from tui.browser.screens.agent_log import AgentLogScreen

        browser = self.browser if isinstance(self.screen, AgentLogScreen) else self._close_dialogs()
        if browser is None or replay.call.params is None:
            return
        self.push_screen(self.recorded_call_view(browser, replay), callback=self._after_lab)

    def recorded_call_view(self, browser: BrowserScreen, replay: Replay) -> AgentViewScreen:
        """The browser searches the recorded call's first query with the
        limit, filters and allow-set the server used (the pipeline), and the
        agent view returned answers the call's own arguments at its throttle
        position. ``replay.call.params`` is not ``None``."""
        from engine.agent import AgentContext, parse_arguments
        from tui.browser.screens.agent import AgentRequest, AgentViewScreen

        call = replay.call
        assert call.params is not None
        parsed = parse_arguments(call.params, plugin_mode=True)
        trace = replay.trace
        limit = trace.effective_limit if trace is not None and trace.effective_limit is not None else 2
        scope = trace.scope.allow_set if trace is not None else None
        params = replace(
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
            replay.context or AgentContext(),
            replay.position.count if replay.position else 1,
            wanted,
            (f"recorded call of {call.created_at} UTC, session {call.session_id[:8]}",),
        )
        return AgentViewScreen(browser.store, params, request, session_db=self.session_db, pinned=browser.pinned_rowid)

    def action_rank_flow(self) -> None:
        """Open the rank flow of the search shown (F5 closes it again)."""
        from tui.browser.screens.flow import FlowScreen

        browser = self._close_dialogs()
        if browser is None or browser.results_pending("open the rank flow"):
            return
        if browser.trace is None:
            self.notify("Search something first: the rank flow shows a search's candidates.", severity="warning")
            return
        absent = browser.pin_outcome.absent if browser.pin_outcome is not None else None
        grades: dict[int, int] = browser.judged.grades if browser.judged is not None else {}
        subject = browser.selected_chunk()
        flow = FlowScreen(
            browser.trace,
            browser.pinned_rowid,
            absent,
            pin=browser.pin,
            grade=browser.grade_row,
            grades=grades,
            selected=subject.rowid if subject is not None else None,
        )
        self.push_screen(flow, callback=self._after_lab)

    def action_doctor(self) -> None:
        """Open the store diagnostics."""
        from tui.browser.screens.doctor import DoctorScreen

        browser = self._close_dialogs()
        if browser is not None:
            self.push_screen(DoctorScreen(browser.store, self.store_label), callback=self._after_lab)

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
        self.notify_plain(text, title="Copied command line")

    def export_route(self, folder: Path | None = None) -> ExportRoute:
        """Where an export goes from this session (:mod:`tui.browser.delivery`);
        ``folder``: a user's own terminal session's folder (default: the current one)."""
        return route_for(self.is_web, self.options.demo, folder)

    def notify_refused(self) -> None:
        """Say that exports are off in this session (a demo over SSH)."""
        self.notify_plain(REFUSED_OVER_SSH, title="Export refused", severity="error")

    def action_export_trace(self, folder: Path | None = None) -> Path | None:
        """Export the shown trace as JSON (:mod:`tui.browser.delivery`): a
        download in a web page, else a new file in ``folder`` (the current
        folder; a demo's visitor folder), refused in a demo over SSH. Returns
        the file written (``None``: none)."""
        browser = self.browser
        if browser is not None and browser.results_pending("export"):
            return None
        if browser is None or browser.trace is None:
            self.notify_plain("Nothing to export yet: search first.", severity="warning")
            return None
        route = self.export_route(folder)
        if route.kind == "refused":
            self.notify_refused()
            return None
        from engine import trace_to_dict

        trace = browser.trace
        text = json_text(trace_to_dict(trace))
        if route.kind == "download":
            name = export_name(trace.params.query)
            send_download(self, name, text.encode("utf-8"), "application/json")
            self.notify_plain(f"{name}: sent to your web browser as a download", title="Trace exported")
            return None
        try:
            target = route.ready_folder()
        except OSError as exc:
            self.notify_plain(f"Cannot write there: {exc.strerror or exc}", title="Export failed", severity="error")
            return None
        # A new file only: never through a symlink at the name, never over
        # anything (a name taken meanwhile moves on to the next one).
        for _ in range(100):
            path = export_path(trace.params.query, target)
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
        shown = str(path.absolute()) + (f" ({TEMPORARY_NOTE})" if route.temporary else "")
        self.notify_plain(shown, title="Trace exported")
        return path

    def deliver_screenshot(
        self, filename: str | None = None, path: str | None = None, time_format: str | None = None
    ) -> str | None:
        """Textual's screenshot (ctrl+p "Screenshot"); in a terminal demo it
        follows the export route instead of writing to this machine's
        Downloads folder: the visitor's folder, or refused over SSH."""
        demo = self.options.demo
        if demo is None or self.is_web:
            return super().deliver_screenshot(filename, path, time_format)
        route = self.export_route()
        if route.kind == "refused":
            self.notify_refused()
            return None
        name = Path(filename or f"rankscope-screenshot-{datetime.now():%Y%m%d-%H%M%S}.svg").name
        try:
            target = route.ready_folder() / name
            write_text_file(target, self.export_screenshot(), overwrite=False)
        except OSError as exc:
            self.notify_plain(f"Cannot write {name}: {exc.strerror or exc}", title="Screenshot", severity="error")
            return None
        self.notify_plain(f"{target} ({TEMPORARY_NOTE})", title="Screenshot saved")
        return None

    # ── idle sessions ──────────────────────────────────────────────────

    async def on_event(self, event: events.Event) -> None:
        """Every key, click, scroll, paste and resize counts as someone being
        there (:attr:`~tui.browser.options.AppOptions.idle_timeout`)."""
        if isinstance(event, PRESENCE_EVENTS):
            self.last_input = time.monotonic()
        await super().on_event(event)

    def _check_idle(self) -> None:
        """Warn once, :func:`idle_warning` seconds before the idle timeout; then quit."""
        timeout = self.options.idle_timeout
        if timeout is None:
            return
        idle = time.monotonic() - self.last_input
        if idle >= timeout:
            self.exit(
                return_code=0,
                message=f"rankscope: closed after {timeout:g} s without a key press (--idle-timeout {timeout:g})",
            )
        elif idle >= timeout - idle_warning(timeout) and not self._idle_warned:
            self._idle_warned = True
            self.notify_plain(
                f"No key pressed for a while: this session closes in {timeout - idle:.0f} s. Press any key to stay.",
                title="Still there?",
                severity="warning",
                timeout=idle_warning(timeout),
            )
        elif idle < timeout - idle_warning(timeout):
            self._idle_warned = False
