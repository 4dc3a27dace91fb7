"""The agent log: the ``ctx_search`` calls the agent really made, read from
the store's session DB (:mod:`engine.agent.log`), each replayed on the open
store. Enter opens that search in the browser with its params and scope, and
the agent view with the call's own arguments and throttle position.

The screen reads and replays the calls in its own thread worker; Enter posts
:class:`AgentLogScreen.CallOpened` (the app opens the call)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widgets import Footer, OptionList, Static
from textual.widgets.option_list import Option

from engine import Store
from engine.agent.log import Replay, answer_count
from engine.agent.schema import SchemaError, parse_arguments

from tui.present import safe
from tui.browser.screens.work import WorkScreen

_CLOSE = Binding.Group("Close ", compact=True)


def call_queries(params: dict[str, Any] | None) -> list[str] | None:
    """The queries of recorded params as the server reads them (``None`` when
    they are cut or fail the schema)."""
    if params is None:
        return None
    try:
        parsed = parse_arguments(params, plugin_mode=True)
    except SchemaError:
        return None
    return list(parsed.queries or ())


def call_label(n: int, replay: Replay) -> Text:
    """One line per call: number, time, session, queries, other params,
    recorded count and the replay's outcome."""
    call = replay.call
    t = Text(f"{n:>2}. ", style="bold")
    t.append(f"{call.created_at[5:]} {call.session_id[:8]}  ", style="dim")
    qs = call_queries(call.params)
    t.append(
        safe.line(" | ".join(qs)) if qs is not None else safe.line((call.params_raw or "(cut)")[:60]), style="bold"
    )
    if call.params:
        rest = {k: v for k, v in call.params.items() if k != "queries"}
        if rest:
            t.append("  " + safe.line(json.dumps(rest, ensure_ascii=False)))
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
            json.dumps(call.params, ensure_ascii=False) if call.params is not None else f"(cut) {call.params_raw or ''}"
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
    t.append("\nEnter: open this search in the browser and the agent view.", style="italic")
    return t


class AgentLogScreen(WorkScreen[None]):
    """The agent's recorded ``ctx_search`` calls."""

    WORK = {"agent-log": "Agent log"}

    @dataclass
    class Loaded(Message):
        """The calls, replayed in call order, or none with ``error`` (the session DB cannot be read)."""

        replays: list[Replay]
        error: str = ""

    @dataclass
    class CallOpened(Message):
        """Open the recorded call ``replay`` (its call has params): the browser
        searches its first query with the call's limit, filters and
        allow-set, and the agent view answers the call's own arguments at its
        throttle position (the app does both)."""

        replay: Replay

    BINDINGS = [
        Binding(
            "escape",
            "close",
            "Close",
            group=_CLOSE,
            id="agent-log.close",
            tooltip="Close the agent log; focus returns where it was",
        ),
    ]

    def __init__(self, store: Store, session_db: str | None) -> None:
        super().__init__()
        self.store = store
        self.session_db = session_db
        self.replays: list[Replay] = []

    def compose(self) -> ComposeResult:
        yield Static(
            Text("Agent log · the ctx_search calls recorded in the session DB", style="bold"),
            id="agent-log-title",
            classes="lab-title",
        )
        yield Static(Text("reading…", style="italic"), id="agent-log-status")
        yield OptionList(id="agent-log-list")
        with VerticalScroll(id="agent-log-box"):
            yield Static(Text(""), id="agent-log-detail")
        yield Footer(compact=True)

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
        self._load(self.session_db)

    @work(thread=True, exclusive=True, exit_on_error=False, group="agent-log")
    def _load(self, session_db: str) -> None:
        """Read the recorded calls of ``session_db``, replay them on the store; post :class:`Loaded`."""
        from engine.agent import SessionDbError
        from engine.agent.log import load_calls, replay_calls

        try:
            calls = load_calls(session_db)
            with self.store.thread_connection() as conn:
                replays = replay_calls(self.store, session_db, calls, conn=conn)
        except SessionDbError as exc:
            self.post_message(self.Loaded([], str(exc)))
            return
        self.post_message(self.Loaded(replays))

    @on(Loaded)
    def _loaded(self, event: Loaded) -> None:
        status = self.query_one("#agent-log-status", Static)
        if event.error:
            status.update(
                Text(f"Cannot read {safe.line(self.session_db or '')}: {safe.line(event.error)}", style="bold")
            )
            return
        self.replays = event.replays
        same = sum(1 for r in self.replays if r.outcome == "same")
        compared = sum(1 for r in self.replays if r.outcome in ("same", "differs"))
        status.update(
            Text(
                safe.line(
                    f"{len(self.replays)} call(s) in {self.session_db} · replayed on this store: "
                    f"{same} of {compared} give the recorded answer"
                )
            )
        )
        options = self.query_one("#agent-log-list", OptionList)
        options.set_options([Option(call_label(i + 1, r), id=str(i)) for i, r in enumerate(self.replays)])
        if self.replays:
            options.highlighted = 0

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
        """Reading the log failed (notified already): say so in place."""
        self.query_one("#agent-log-status", Static).update(Text(f"Failed: {safe.line(str(error))}", style="bold"))

    def action_close(self) -> None:
        self.dismiss(None)
