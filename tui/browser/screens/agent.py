"""The agent view (F12): the stage after Final (``agent`` in
:data:`engine.pipeline.table.STAGES`). What a coding agent receives from
context-mode's ``ctx_search`` tool for the current query and parameters
(:func:`engine.agent.ctx_search`): the per-query limit ("the agent gets 2 of
your 3"), each result's snippet windows marked on its chunk, a flag when a
returned chunk's matched terms lie outside its snippet, the waste in what was
delivered (:mod:`engine.agent.waste`: the share of the 40 KiB cap used,
repeated deliveries, snippets showing none of their matches), for the
browser's pinned chunk what the agent should have asked to get it
(:mod:`engine.agent.advice`, found by re-running the call in a worker), and
the exact text.

Keys (rows of :mod:`tui.browser.actions`): ``p`` runs it as the Claude Code plugin
does (the allow-set from the store's session DB), ``+`` / ``-`` move the
call's place in the throttle window, ``a`` switches between the selected
chunk and the whole answer, ``l`` opens the agent log.

The screen answers in its own thread worker (reading the session DB's
project there too); the store, the session DB and the throttle settings are
given when it is built.

The pure helpers (:func:`summary_text`, :func:`result_label`,
:func:`chunk_with_windows`, :func:`answer_renderable`) are what the tests
look at.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option
from textual.worker import get_current_worker

from engine import SearchParams, Store
from engine.pipeline.variants import variant_spec
from engine.pipeline import table as stages
from engine.agent import AgentContext, AgentTrace, ResultView, SessionDb, SessionDbError, ThrottleConfig
from engine.agent.advice import Advice
from engine.agent.jsvalue import js_json
from engine.agent.waste import Waste
from engine.agent.snippet import SNIPPET_MAX, SnippetTrace
from engine.js.strings import utf16_units

from tui.present import safe
from tui.present.agentwords import advice_short, waste_words
from tui.browser.actions import bindings, close_keys
from tui.browser.screens.browser import BrowserScreen
from tui.browser.screens.work import WorkScreen
from tui.browser.widgets.footer import KeyFooter

#: Largest call number the +/- keys reach (the block is at 8 by default).
MAX_CALL = 20


@dataclass(frozen=True)
class AgentRequest:
    """What the agent view answers.

    Attributes:
        arguments: the tool's arguments object.
        context: the server settings (plugin mode or not).
        call_number: the call's count in its throttle window.
        browser_limit: the limit the browser asked for (``None`` when the
            arguments are a recorded call's own).
        notes: how the arguments were derived from the browser's parameters.
    """

    arguments: dict[str, Any]
    context: AgentContext
    call_number: int = 1
    browser_limit: int | None = None
    notes: tuple[str, ...] = ()


def plugin_project_dir(session_db: str | None) -> str | None:
    """Plugin mode's project directory: the one project of the session DB's
    events (``None`` when there is no session DB, it cannot be read, or its
    events name several projects)."""
    if not session_db:
        return None
    try:
        with SessionDb(session_db) as db:
            dirs = db.project_dirs()
    except SessionDbError:
        return None
    return dirs[0] if len(dirs) == 1 else None


def arguments_from_params(params: SearchParams) -> tuple[dict[str, Any], tuple[str, ...]]:
    """The ``ctx_search`` arguments for the browser's search, and what could
    not be carried over (ctx_search has no exact source match, no variants)."""
    args: dict[str, Any] = {"queries": [params.query], "limit": params.limit}
    notes: list[str] = []
    if params.source:
        args["source"] = params.source
        if params.source_match == "exact":
            notes.append("ctx_search matches the source filter as a substring (LIKE), not exactly")
    if params.content_type:
        args["contentType"] = params.content_type
    if not params.variant.is_reference:
        notes.append(f"ctx_search runs the reference pipeline, not the variant {variant_spec(params.variant)}")
    return args, tuple(notes)


def _utf16_index(content: str) -> list[int]:
    """``index[u]`` = the Python index of UTF-16 offset ``u`` (a unit inside a
    surrogate pair maps to its character); one entry past the end."""
    index: list[int] = []
    for i, ch in enumerate(content):
        index.append(i)
        if ch > "\uffff":
            index.append(i)
    index.append(len(content))
    return index


def chunk_with_windows(result: ResultView) -> Text:
    """The whole chunk with what the agent saw marked.

    Shown ranges sit between ``⟦`` and ``⟧`` in normal text; what was cut
    away is dim; matched terms are bold underlined, and a match the agent
    never saw is also red and preceded by ``⚠``. Control characters are made
    visible (CR dropped), one segment at a time so offsets stay aligned."""
    content = result.content
    idx = _utf16_index(content)
    n = result.snippet.content_units
    shown = list(result.snippet.shown)
    unseen = set(result.snippet.unseen_matches)
    # boundaries in UTF-16 units
    cuts = {0, n}
    for a, b in shown:
        cuts.update((a, b))
    for a, b in result.snippet.marker_spans:
        cuts.update((a, b))
    cuts_sorted = sorted(c for c in cuts if 0 <= c <= n)
    out = Text()
    starts = {a for a, _ in shown}
    ends = {b for _, b in shown}
    for lo, hi in zip(cuts_sorted, cuts_sorted[1:]):
        if lo in starts:
            out.append("⟦", style="bold")
        inside = any(a <= lo and hi <= b for a, b in shown)
        match = next(((a, b) for a, b in result.snippet.marker_spans if a <= lo and hi <= b), None)
        style = "" if inside else "dim"
        if match is not None:
            if match in unseen:
                if lo == match[0]:
                    out.append("⚠", style="bold red")
                style = "bold underline red"
            else:
                style = "bold underline"
        out.append(safe.block(content[idx[lo] : idx[hi]]), style=style)
        if hi in ends:
            out.append("⟧", style="bold")
    return out


def result_label(
    query_position: int, query: str, result: ResultView, waste: Waste | None = None, pinned: int | None = None
) -> Text:
    """One result line: query, place, label › title, how it was cut, flags
    (``waste``: a delivery that repeats an earlier one, a snippet showing
    none of the chunk's matches; ``pinned``: the pinned chunk's row id, its
    result marked ``▸``)."""
    s = result.snippet
    t = Text("▸ " if pinned is not None and result.rowid == pinned else "", style="bold")
    t.append(f"Q{query_position} ", style="bold")
    t.append(f"{result.position}. ")
    t.append(safe.line(result.source), style="bold")
    t.append(" › " + safe.line(result.title))
    if s.mode == "whole":
        how = f"whole chunk ({s.content_units} units)"
    elif s.mode == "prefix":
        how = f"first {min(1500, s.content_units)} of {s.content_units} units"
    else:
        shown = sum(b - a for a, b in s.slices)
        how = (
            f"{len(s.slices)} window{'s' if len(s.slices) != 1 else ''} from {s.source_of_positions}, "
            f"{shown} of {s.content_units} units"
        )
    t.append(f"\n   {how}", style="dim")
    if result.matched_outside_snippet:
        k = len(s.unseen_matches)
        t.append(f"  ⚠ {k} matched term{'s' if k != 1 else ''} outside the snippet", style="bold yellow")
    if result.no_match_in_text:
        t.append("  ⚠ no query term in its text (a title match): the agent sees only the start", style="bold yellow")
    if waste is not None:
        if (query_position, result.position, result.rowid) in waste.matches_outside:
            t.append("  ⚠ the snippet shows none of its matches", style="bold yellow")
        for r in waste.repeats:
            if r.rowid == result.rowid and r.deliveries[0] != (query_position, result.position):
                q, p = r.deliveries[0]
                t.append(f"  ↻ repeats Q{q} #{p}", style="bold yellow")
    if result.origin != "current-session":
        t.append(f"  ({result.origin})", style="italic")
    return t


def summary_text(trace: AgentTrace, request: AgentRequest, waste: Waste | None = None) -> Text:
    """The call in a few lines: arguments, throttle, scope, the limit gap,
    the 40 KiB cap, refresh, flags, and the ``waste`` in what was delivered
    (:func:`tui.present.agentwords.waste_words`)."""
    t = Text("ctx_search(", style="bold")
    t.append(safe.line(js_json(request.arguments)))
    t.append(")", style="bold")
    th = trace.throttle
    if th is not None:
        t.append(f" · call #{th.count} of its window", style="dim")
    t.append("\n")
    scope = trace.scope
    if request.context.plugin_mode:
        t.append("as the plugin sees it: ", style="bold")
        t.append(safe.line(scope.reason) + "\n")
    elif scope.mode == "hand-picked":
        t.append(f"session allow-set (F3): {len(scope.allow_set or ())} session(s)\n")
    else:
        t.append("plain mode: no session scope (p: as the plugin sees it)\n", style="dim")
    if trace.outcome != "answered":
        why = {
            "schema-error": "the arguments fail the tool's schema",
            "empty-index": "the store is empty",
            "no-queries": "no query",
            "blocked": "BLOCKED by the throttle",
        }[trace.outcome]
        t.append(f"isError: {why}; nothing was searched.\n", style="bold red")
        for issue in trace.issues:
            t.append(f"  {safe.line(issue.describe())}\n")
        t.rstrip()
        return t
    wanted = request.browser_limit
    got = trace.effective_limit
    if wanted is not None and got is not None and got < wanted:
        t.append(f"the agent gets {got} of your {wanted}", style="bold yellow")
        t.append(
            f" per query ({'soft-capped after call #3' if th is not None and th.soft_capped else 'ctx_search caps the limit at 2'})\n"
        )
    elif got is not None:
        t.append(f"{got} result{'s' if got != 1 else ''} per query\n")
    capped = [q for q in trace.queries if q.capped]
    if capped:
        t.append(
            f"{len(capped)} quer{'ies' if len(capped) != 1 else 'y'} skipped by the 40 KiB cap\n", style="bold yellow"
        )
    if trace.refresh_line:
        t.append(
            safe.line(trace.refresh_line.strip())
            + ("  (simulated: read-only store)" if trace.refresh_simulated else "")
            + "\n",
            style="italic",
        )
    flagged = [r for q in trace.queries for r in q.results if r.matched_outside_snippet or r.no_match_in_text]
    if flagged:
        t.append(
            f"⚠ {len(flagged)} returned chunk(s) whose matching passage the agent did not see in full\n",
            style="bold yellow",
        )
    if waste is not None:
        words = waste_words(waste)
        t.append("delivered: ", style="bold")
        t.append(words[0])
        for more in words[1:]:
            t.append(" · ")
            t.append("⚠ " + more, style="bold yellow")
        t.append("\n")
    for note in request.notes + trace.notes:
        t.append(f"note: {safe.line(note)}\n", style="dim")
    t.rstrip()  # no blank last line: a row of the screen is worth keeping
    return t


#: How the snippet's windows were placed, by ``SnippetTrace.source_of_positions``.
_POSITIONS = {
    "highlight": "windows around FTS5's highlight marks",
    "indexOf": "windows around the query's words (indexOf: no highlight mark)",
}


def snippet_how(s: SnippetTrace) -> str:
    """How ctx_search cut the chunk for the agent, in words, from the
    snippet's codes (``mode``, ``source_of_positions``): ``whole content``
    (it fits), ``windows around FTS5's highlight marks``, ``windows around
    the query's words (indexOf: …)``, or ``the first 1500 units (no match
    position found)`` (:data:`engine.agent.snippet.SNIPPET_MAX` units)."""
    if s.mode == "whole":
        return "whole content (it fits)"
    if s.mode == "prefix":
        return f"the first {SNIPPET_MAX} units (no match position found)"
    return _POSITIONS.get(s.source_of_positions, f"windows ({s.source_of_positions})")


def answer_renderable(trace: AgentTrace) -> Text:
    """The exact answer text, safe for the terminal (lone surrogates as U+FFFD)."""
    text = "".join("\ufffd" if "\ud800" <= ch <= "\udfff" else ch for ch in trace.text)
    return Text(safe.block(text))


class AgentHead(VerticalScroll):
    """The summary and the pinned chunk's line. Its height is capped
    (``app.tcss``) so that the chunk box keeps its rows; what does not fit
    scrolls. Focusable (Tab, then ↑ ↓ PgUp PgDn) only while it hides lines."""

    def allow_focus(self) -> bool:
        """Focusable while some of its lines are scrolled out of sight."""
        return self.max_scroll_y > 0


class AgentViewScreen(WorkScreen[None]):
    """What the agent receives for the browser's search (or a recorded call)."""

    WORK = {"agent": stages.title("agent"), "advice": "What the agent should have asked"}

    @dataclass
    class Answered(Message):
        """The call is answered: ``request`` as asked (its plugin project read
        from the session DB), its ``trace`` and the ``waste`` in it, or
        ``None`` with ``error`` (a call rankscope cannot reproduce); ``seq``:
        the request's number."""

        seq: int
        request: AgentRequest
        trace: AgentTrace | None
        error: str = ""
        waste: Waste | None = None

    @dataclass
    class Advised(Message):
        """What the agent should have asked for the pinned chunk ``rowid``
        (:func:`engine.agent.advice.should_have_asked`), or ``None`` with
        ``error`` (the chunk is gone); ``seq``: the answer it was asked for."""

        seq: int
        rowid: int
        advice: Advice | None
        error: str = ""

    BINDINGS = [
        *close_keys("agent", "the agent view"),
        # p, + -, a, l (tui.browser.actions); the app's agent-view key closes it again
        *bindings("agent"),
    ]

    def __init__(
        self,
        store: Store,
        params: SearchParams,
        request: AgentRequest | None = None,
        *,
        session_db: str | None = None,
        throttle: ThrottleConfig | None = None,
        pinned: int | None = None,
    ) -> None:
        """``store``: the browser's store; ``params``: the browser's search; ``request``: a recorded call's own
        request (the agent log), or ``None`` to follow the browser;
        ``session_db``: the store's paired session DB (plugin scope), or
        ``None``; ``throttle``: the throttle thresholds (default: the
        server's); ``pinned``: the browser's pinned chunk (its row id): what
        the agent should have asked to get it is shown, and follows the pin."""
        super().__init__()
        #: The pinned chunk's row id, and what the agent should have asked for it (for the answer shown).
        self.pinned = pinned
        self.advice: Advice | None = None
        self.waste: Waste | None = None
        self.store = store
        self.params = params
        self.session_db = session_db
        self.throttle = throttle
        #: A recorded call's own request (the agent log), else ``None``: follow the browser.
        self.fixed = request
        self.request: AgentRequest | None = None
        self.call_number = request.call_number if request is not None else 1
        self.plugin = bool(request and request.context.plugin_mode)
        self.trace: AgentTrace | None = None
        self.show_answer = False
        self._seq = 0
        self._shown_seq = 0
        self._results: list[tuple[int, str, ResultView]] = []

    def compose(self) -> ComposeResult:
        yield Static(
            Text(f"{stages.title('agent')} · what ctx_search gives the agent (context-mode 1.0.169)", style="bold"),
            id="agent-title",
            classes="lab-title",
        )
        with AgentHead(id="agent-head"):
            yield Static(Text("asking…", style="italic"), id="agent-summary")
            yield Static(Text(""), id="agent-pinned")
        yield OptionList(id="agent-results")
        with VerticalScroll(id="agent-box"):
            yield Static(Text(""), id="agent-text")
        yield KeyFooter(compact=True)

    def on_mount(self) -> None:
        self.query_one("#agent-results", OptionList).border_title = "Results the agent got"
        box = self.query_one("#agent-box", VerticalScroll)
        box.border_subtitle = "⟦ ⟧ shown to the agent · dim: cut away · ⚠ matched but not shown"
        self.query_one("#agent-results", OptionList).focus()
        self.query_one("#agent-pinned", Static).display = self.pinned is not None
        self.run()

    # ── asking ──────────────────────────────────────────────────────────

    def build_request(self) -> AgentRequest:
        """The request for the browser's current parameters (or the recorded call)."""
        if self.fixed is not None:
            return AgentRequest(
                self.fixed.arguments,
                self._agent_context(),
                self.call_number,
                self.fixed.browser_limit,
                self.fixed.notes,
            )
        args, notes = arguments_from_params(self.params)
        return AgentRequest(args, self._agent_context(), self.call_number, self.params.limit, notes)

    def _agent_context(self) -> AgentContext:
        """The server context; in plugin mode, a recorded call's project (the
        session DB's own is read by the worker: :func:`plugin_project_dir`)."""
        throttle = self.throttle if self.throttle is not None else ThrottleConfig()
        if self.plugin:
            project = None
            if self.fixed is not None and self.fixed.context.plugin_mode:
                project = self.fixed.context.plugin_project
            session_db = self.session_db
            if self.fixed is not None and self.fixed.context.session_db:
                session_db = self.fixed.context.session_db
            return AgentContext(plugin_project=project, session_db=session_db, throttle=throttle)
        if self.fixed is None and self.params.sessions is not None:
            return AgentContext(allow_sessions=tuple(self.params.sessions), throttle=throttle)
        return AgentContext(throttle=throttle)

    def run(self) -> None:
        """Ask again, in the worker, with the current settings."""
        self._seq += 1
        self.query_one("#agent-box", VerticalScroll).border_title = "asking…"
        self._ask(self.build_request(), self.plugin, self._seq)

    @work(thread=True, exclusive=True, exit_on_error=False, group="agent")
    def _ask(self, request: AgentRequest, plugin: bool, seq: int) -> None:
        """Answer ``request`` with :func:`engine.agent.ctx_search` on a thread
        connection (in ``plugin`` mode without a project, the session DB's
        one first) and find its waste (:func:`engine.agent.waste.waste`);
        post :class:`Answered`."""
        from engine.agent import AgentViewError, ctx_search
        from engine.agent.waste import waste

        worker = get_current_worker()
        if plugin and not request.context.plugin_project:
            project = plugin_project_dir(self.session_db)
            request = replace(request, context=replace(request.context, plugin_project=project))
        store = self.store
        with store.thread_connection() as conn:
            try:
                trace = ctx_search(
                    store, request.arguments, request.context, call_number=request.call_number, conn=conn
                )
            except AgentViewError as exc:
                self.post_message(self.Answered(seq, request, None, str(exc)))
                return
        if not worker.is_cancelled:
            found = waste(trace) if trace.outcome == "answered" else None
            self.post_message(self.Answered(seq, request, trace, waste=found))

    @on(BrowserScreen.ParamsChanged)
    def _params_changed(self, event: BrowserScreen.ParamsChanged) -> None:
        self.params = event.params
        if self.fixed is None:
            self.run()

    @on(Answered)
    def _finished(self, event: Answered) -> None:
        if event.seq < self._seq:
            return
        self._shown_seq = event.seq
        self.request = event.request
        self.waste = event.waste
        if event.trace is None:
            self.trace = None
            self.advice = None
            self._show_pinned()
            self.query_one("#agent-summary", Static).update(
                Text(f"rankscope cannot reproduce this call: {safe.line(event.error)}", style="bold")
            )
            self.query_one("#agent-results", OptionList).clear_options()
            self.query_one("#agent-text", Static).update(Text(""))
            return
        self.show(event.trace)

    def worker_failed(self, group: str, error: BaseException) -> None:
        """The agent view or the advice failed (notified already): say so in place."""
        if group == "advice":
            self.query_one("#agent-pinned", Static).update(
                Text(f"▸ {self.pinned}: failed: {safe.line(str(error))}", style="bold")
            )
            return
        self._shown_seq = self._seq
        self.query_one("#agent-summary", Static).update(Text(f"Failed: {safe.line(str(error))}", style="bold"))

    # ── the pinned chunk: what the agent should have asked ──────────────

    @on(BrowserScreen.PinChanged)
    def _pin_changed(self, event: BrowserScreen.PinChanged) -> None:
        self.pinned = event.rowid
        if self.trace is not None:
            self._relabel()
        self.advise()

    def advise(self) -> None:
        """Ask, in the worker, what the agent should have asked for the pinned
        chunk, for the answer shown (nothing pinned: the line is hidden)."""
        static = self.query_one("#agent-pinned", Static)
        static.display = self.pinned is not None
        self.advice = None
        if self.pinned is None or self.request is None:
            return
        self._show_pinned()
        self._advise(self.request, self.pinned, self._shown_seq)

    @work(thread=True, exclusive=True, exit_on_error=False, group="advice")
    def _advise(self, request: AgentRequest, rowid: int, seq: int) -> None:
        """:func:`engine.agent.advice.should_have_asked` for chunk ``rowid``
        on a thread connection (a newer request cancels it between re-runs);
        post :class:`Advised`."""
        from engine.agent import AgentViewError
        from engine.agent.advice import should_have_asked
        from engine.lab.why import ChunkNotFoundError

        worker = get_current_worker()
        store = self.store
        with store.thread_connection() as conn:
            try:
                advice = should_have_asked(
                    store,
                    request.arguments,
                    request.context,
                    rowid=rowid,
                    call_number=request.call_number,
                    stop=lambda: worker.is_cancelled,
                    conn=conn,
                )
            except (ChunkNotFoundError, AgentViewError) as exc:
                if not worker.is_cancelled:
                    self.post_message(self.Advised(seq, rowid, None, str(exc)))
                return
        if not worker.is_cancelled:
            self.post_message(self.Advised(seq, rowid, advice))

    @on(Advised)
    def _advised(self, event: Advised) -> None:
        if event.seq != self._shown_seq or event.rowid != self.pinned:
            return  # stale: another answer or pin is on its way
        self.advice = event.advice
        self._show_pinned(event.error)

    def _show_pinned(self, error: str = "") -> None:
        """The pinned chunk's line: its name, then what the agent should have
        asked (or that it is being found)."""
        static = self.query_one("#agent-pinned", Static)
        if self.pinned is None:
            static.display = False
            return
        static.display = True
        t = Text(f"▸ pinned {self.pinned}", style="bold")
        advice = self.advice
        if advice is not None:
            t.append(f" {safe.line(advice.chunk.source)} › {safe.line(advice.chunk.title)}", style="bold")
        t.append(": ")
        if error:
            t.append(safe.line(error), style="bold")
        elif self.trace is None:
            t.append("no answer to look in", style="dim")
        elif advice is None:
            t.append("finding the smallest change to the call that delivers it…", style="italic")
        else:
            style = "" if advice.outcome == "delivered" else "bold yellow" if advice.outcome == "change" else "bold"
            t.append(advice_short(advice), style=style)
        static.update(t)

    # ── showing ─────────────────────────────────────────────────────────

    def show(self, trace: AgentTrace) -> None:
        """Show ``trace``: summary with its waste, result list, the first
        result's chunk, and (in a worker) what the agent should have asked
        for the pinned chunk."""
        self.trace = trace
        assert self.request is not None
        self.query_one("#agent-summary", Static).update(summary_text(trace, self.request, self.waste))
        options = self.query_one("#agent-results", OptionList)
        self._results = [(q.position, q.query, r) for q in trace.queries for r in q.results]
        entries = [
            Option(result_label(p, q, r, self.waste, self.pinned), id=str(i))
            for i, (p, q, r) in enumerate(self._results)
        ]
        for q in trace.queries:
            if q.status != "results":
                entries.append(
                    Option(
                        Text(
                            f"Q{q.position} {safe.line(q.query)!r}: "
                            + ("no results" if q.status == "no-results" else "(output cap reached)"),
                            style="dim",
                        ),
                        disabled=True,
                    )
                )
        options.set_options(entries)
        options.display = bool(entries)
        if self._results:
            options.highlighted = 0
        self.show_answer = self.show_answer or not self._results
        self._show_detail(0 if self._results else None)
        self.advise()

    def _relabel(self) -> None:
        """Redraw the result lines (the pinned chunk's mark), keeping the highlight."""
        options = self.query_one("#agent-results", OptionList)
        for i, (p, q, r) in enumerate(self._results):
            options.replace_option_prompt_at_index(i, result_label(p, q, r, self.waste, self.pinned))

    def _show_detail(self, index: int | None) -> None:
        box = self.query_one("#agent-box", VerticalScroll)
        static = self.query_one("#agent-text", Static)
        if self.trace is None:
            return
        if self.show_answer or index is None:
            box.border_title = f"The answer text ({len(utf16_units(self.trace.text))} UTF-16 units; a: chunk view)"
            static.update(answer_renderable(self.trace))
            return
        _, _, result = self._results[index]
        s = result.snippet
        box.border_title = f"{safe.line(result.title)[:50]} · {snippet_how(s)} · a: answer text"
        static.update(chunk_with_windows(result))

    @on(OptionList.OptionHighlighted, "#agent-results")
    def _highlighted(self, event: OptionList.OptionHighlighted) -> None:
        if event.option_id is not None:
            self.show_answer = False
            self._show_detail(int(event.option_id))

    # ── actions ─────────────────────────────────────────────────────────

    def action_toggle_plugin(self) -> None:
        """Run as the Claude Code plugin does (the session DB's allow-set), or not."""
        if not self.plugin and not self.session_db and not (self.fixed is not None and self.fixed.context.session_db):
            self.notify(
                "No session DB is paired with this store (context-mode keeps it in ../sessions/ under "
                "the same name): the plugin scope is not available.",
                title="Plugin scope",
                severity="warning",
                markup=False,
            )
            return
        self.plugin = not self.plugin
        self.run()

    def action_call(self, delta: int) -> None:
        """Move the call within its throttle window."""
        n = max(1, min(MAX_CALL, self.call_number + delta))
        if n != self.call_number:
            self.call_number = n
            self.run()

    def action_toggle_answer(self) -> None:
        """Switch between the selected chunk and the answer text."""
        self.show_answer = not self.show_answer
        options = self.query_one("#agent-results", OptionList)
        self._show_detail(options.highlighted if self._results and options.highlighted is not None else None)

    def action_close(self) -> None:
        """Close the agent view."""
        self.dismiss(None)
