"""The agent log: the ``ctx_search`` calls the agent really made, read from
the store's session DB (:mod:`engine.agent.log`), each replayed on the open
store, followed live while context-mode's hooks write it. Enter opens that
search in the browser with its params and scope, and the agent view with the
call's own arguments and throttle position; ``f`` (follow) does that for each
new call as it arrives.

The screen follows the session DB in its own thread worker
(:class:`engine.agent.follow.LiveLog`, polled every
:data:`~engine.agent.follow.POLL_SECONDS`: the file is opened read-only only
when it changed, and followed from its start again when it is replaced or
truncated); each poll that finds something posts :class:`AgentLogScreen.Polled`.
New calls are appended to the list without moving its cursor. Enter posts
:class:`AgentLogScreen.CallOpened`, a followed call
:class:`AgentLogScreen.CallFollowed` (the app opens the call)."""

from __future__ import annotations

import threading
from dataclasses import dataclass

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option
from textual.worker import get_current_worker

from engine import Store
from engine.agent.follow import POLL_SECONDS, FollowedCall, LiveUpdate
from engine.agent.log import Replay, answer_count, recorded_queries
from engine.js.json import json_stringify

from tui.present import safe
from tui.browser.actions import bindings, close_keys
from tui.browser.screens.work import WorkScreen
from tui.browser.widgets.footer import KeyFooter


def call_label(n: int, replay: Replay) -> Text:
    """One line per call: number, time, session, queries, other params,
    recorded count and the replay's outcome."""
    call = replay.call
    t = Text(f"{n:>2}. ", style="bold")
    t.append(f"{call.created_at[5:]} {call.session_id[:8]}  ", style="dim")
    qs = recorded_queries(call.params)
    t.append(
        safe.line(" | ".join(qs)) if qs is not None else safe.line((call.params_raw or "(cut)")[:60]), style="bold"
    )
    if call.params:
        rest = {k: v for k, v in call.params.items() if k != "queries"}
        if rest:
            t.append("  " + safe.line(json_stringify(rest, spaced=True)))
    count = answer_count(call.answer)
    t.append(
        f"\n    recorded: {'#' + str(count) if count else 'yes'}" if call.answer is not None else "\n    not recorded",
        style="dim",
    )
    mark = {"same": ("✓ same text", "green"), "differs": ("≠ differs", "yellow")}.get(
        replay.outcome, (replay.outcome.replace("-", " "), "dim")
    )
    t.append(f" · replay: {mark[0]}", style=mark[1])
    if replay.difference is not None:
        t.append(f" ({replay.difference.kind})", style="yellow")
    return t


def call_detail(replay: Replay) -> Text:
    """The selected call: scope, throttle position, and where the replay
    departs from the recorded answer."""
    call = replay.call
    t = Text(f"event {call.event_id} · {call.created_at} UTC · session {call.session_id}\n", style="bold")
    t.append(f"tool {safe.line(call.tool_name)}\n", style="dim")
    t.append(
        "params: "
        + safe.line(
            json_stringify(call.params, spaced=True) if call.params is not None else f"(cut) {call.params_raw or ''}"
        )
        + "\n"
    )
    ctx = replay.context
    if ctx is not None:
        t.append(
            "plugin mode, project " + safe.line(ctx.plugin_project or "") + "\n"
            if ctx.plugin_mode
            else "not plugin mode\n"
        )
    if replay.position is not None:
        t.append(f"throttle: call #{replay.position.count} (from the {replay.position_from})\n")
    if replay.trace is not None and replay.trace.scope.allow_set is not None:
        t.append(f"allow-set: {len(replay.trace.scope.allow_set)} session(s)\n")
    if replay.outcome == "same":
        t.append("\nrankscope's answer equals the recorded one, byte for byte.\n", style="bold green")
    elif replay.difference is not None:
        t.append("\n" + safe.line(replay.difference.describe()) + "\n", style="bold yellow")
    elif replay.reason:
        t.append("\n" + safe.line(replay.reason) + "\n", style="dim")
    t.append("\nEnter: open this search in the browser and the agent view (Esc comes back here).", style="italic")
    return t


def followed_replay(followed: FollowedCall) -> Replay:
    """A followed call's replay, or a ``not-replayable`` one saying why it
    could not be replayed when it arrived (the store or the session DB could
    not be read then)."""
    if followed.replay is not None:
        return followed.replay
    why = followed.replay_error or "not replayed"
    return Replay(followed.call, "not-replayable", None, None, "", None, reason=f"cannot replay now: {why}")


def title_text(live: bool | None, follow: bool) -> Text:
    """The title with the live marker: ``● live`` (the last poll read the
    session DB), ``○ unreadable`` (it did not; still polling), nothing
    before the first poll; then whether following opens each new call."""
    t = Text("Agent log · the agent's ctx_search calls", style="bold")
    if live is not None:
        t.append("  ")
        t.append("● live" if live else "○ unreadable", style="bold green" if live else "bold yellow")
    t.append(" · follow: ")
    t.append("on" if follow else "off (f)", style="bold reverse" if follow else "dim")
    return t


class AgentLogScreen(WorkScreen[None]):
    """The agent's recorded ``ctx_search`` calls, followed live."""

    BROWSER_KEYS = False
    WORK = {"agent-log": "Agent log"}

    @dataclass
    class Polled(Message):
        """One poll of the session DB that found something (new calls, each
        replayed; notices; the file restarted), or the first poll."""

        update: LiveUpdate

    @dataclass
    class CallOpened(Message):
        """Open the recorded call ``replay`` (its call has params): the browser
        searches its first query with the call's limit, filters and
        allow-set, and the agent view answers the call's own arguments at its
        throttle position (the app does both)."""

        replay: Replay

    @dataclass
    class CallFollowed(Message):
        """A new call arrived while following is on: the app opens it as
        :class:`CallOpened` does, on top of ``log`` (which keeps following),
        when the log or the previous followed call is what is shown."""

        log: AgentLogScreen
        replay: Replay

    BINDINGS = [
        *close_keys("agent-log", "the agent log"),
        # f (tui.browser.actions)
        *bindings("agentlog"),
    ]

    def __init__(self, store: Store, session_db: str | None, *, follow: bool = False) -> None:
        """``store``: the browser's store (the calls are replayed on it);
        ``session_db``: the session DB to follow, or ``None``; ``follow``:
        open each new call as it arrives."""
        super().__init__()
        self.store = store
        self.session_db = session_db
        self.follow = follow
        #: The calls shown, replayed, in id order.
        self.replays: list[Replay] = []
        #: Whether the last poll read the session DB (``None``: no poll yet).
        self.live: bool | None = None
        #: The first readable poll has been shown (later calls are new ones).
        self.loaded = False
        self.skipped = 0
        self.notice = ""
        self._stop = threading.Event()

    def compose(self) -> ComposeResult:
        yield Static(title_text(None, self.follow), id="agent-log-title", classes="lab-title")
        yield Static(Text("reading…", style="italic"), id="agent-log-status")
        yield OptionList(id="agent-log-list")
        with VerticalScroll(id="agent-log-box"):
            yield Static(Text(""), id="agent-log-detail")
        yield KeyFooter(compact=True)

    def on_mount(self) -> None:
        self.query_one("#agent-log-list", OptionList).border_title = "Calls (Enter opens one)"
        self.query_one("#agent-log-list", OptionList).focus()
        if not self.session_db:
            self.query_one("#agent-log-status", Static).update(
                Text(
                    "No session DB is paired with this store: context-mode keeps it in ../sessions/ under the store's "
                    "name. 'rankscope agent-log --sessions-db FILE' reads any.",
                    style="bold",
                )
            )
            self.query_one("#agent-log-list", OptionList).display = False
            return
        self._watch(self.session_db)

    def on_unmount(self) -> None:
        self._stop.set()  # the watching thread ends at its next wait

    @work(thread=True, exclusive=True, exit_on_error=False, group="agent-log")
    def _watch(self, session_db: str) -> None:
        """Follow ``session_db`` (:class:`engine.agent.follow.LiveLog`, from
        its first call) until the screen closes, replaying each call on a
        thread connection of the store; post :class:`Polled` for the first
        poll and for each one that finds something."""
        from engine.agent.follow import LiveLog

        worker = get_current_worker()
        live = LiveLog(session_db, store=self.store, from_start=True, connect=self.store.thread_connection)
        first = True
        while not worker.is_cancelled and not self._stop.is_set():
            update = live.poll()
            if first or update.calls or update.notices or update.skipped:
                self.post_message(self.Polled(update))
                first = False
            self._stop.wait(POLL_SECONDS)

    @on(Polled)
    def _polled(self, event: Polled) -> None:
        update = event.update
        options = self.query_one("#agent-log-list", OptionList)
        for code, message in update.notices:
            if code == "unreadable":
                self.notice = message  # shown until it is readable again
            else:
                self.notice = ""
                if code != "readable":  # replaced or rewritten: the list starts again
                    self.notify(safe.line(message), title="Agent log", markup=False)
        self.live = not (update.notices and update.notices[-1][0] == "unreadable")
        self.query_one("#agent-log-title", Static).update(title_text(self.live, self.follow))
        if not self.live:
            self._show_status()
            return
        initial = not self.loaded or update.restarted
        self.loaded = True
        if update.restarted:
            self.replays = []
            options.clear_options()
        new = [followed_replay(f) for f in update.calls]
        start = len(self.replays)
        self.replays += new
        self.skipped += len(update.skipped)
        options.add_options([Option(call_label(start + i + 1, r), id=str(start + i)) for i, r in enumerate(new)])
        if options.highlighted is None and self.replays:
            options.highlighted = 0  # the first poll; later ones leave the cursor where it is
        self._show_status()
        if self.follow and new and not initial:
            self.post_message(self.CallFollowed(self, new[-1]))

    def _show_status(self) -> None:
        same = sum(1 for r in self.replays if r.outcome == "same")
        compared = sum(1 for r in self.replays if r.outcome in ("same", "differs"))
        text = (
            f"{len(self.replays)} call(s) in {self.session_db} · replayed on this store: "
            f"{same} of {compared} give the recorded answer"
        )
        if self.skipped:
            text += f" · {self.skipped} malformed row(s) left out"
        status = Text(safe.line(text))
        if self.notice:
            status.append("\n" + safe.line(self.notice), style="bold yellow")
        self.query_one("#agent-log-status", Static).update(status)

    @on(OptionList.OptionHighlighted, "#agent-log-list")
    def _highlighted(self, event: OptionList.OptionHighlighted) -> None:
        if event.option_id is not None:
            self.query_one("#agent-log-detail", Static).update(call_detail(self.replays[int(event.option_id)]))

    @on(OptionList.OptionSelected, "#agent-log-list")
    def _open(self, event: OptionList.OptionSelected) -> None:
        replay = self.replays[int(event.option_id or 0)]
        if replay.call.params is None:
            self.notify("This call's params were cut by the hook: it cannot be opened.", severity="warning")
            return
        self.post_message(self.CallOpened(replay))

    def worker_failed(self, group: str, error: BaseException) -> None:
        """Following the log failed (notified already): say so in place."""
        self.live = False
        self.query_one("#agent-log-title", Static).update(title_text(self.live, self.follow))
        self.query_one("#agent-log-status", Static).update(Text(f"Failed: {safe.line(str(error))}", style="bold"))

    def action_toggle_follow(self) -> None:
        """Follow on or off: each new call opens in the agent view as it arrives."""
        self.follow = not self.follow
        self.query_one("#agent-log-title", Static).update(title_text(self.live, self.follow))

    def action_close(self) -> None:
        self.dismiss(None)
