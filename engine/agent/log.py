"""``agent-log``: the ``ctx_search`` calls an agent really made (read from
context-mode's session DB), and their replay through the traced pipeline.

A replay answers each recorded call again with the same arguments, scope and
throttle position, and compares the text with the recorded answer:

* scope: plugin mode when the host's tool name is the plugin's
  (``mcp__plugin_context-mode_…``), with the project dir given or the call's
  own ``project_dir``; the session DB is the one the calls came from;
* throttle position: the ``call #N`` printed in the recorded answer, else the
  ``external_ref`` row ``#N``, else counted per session from ``created_at``
  (1 s resolution) with the configured window;
* timeline mode reads only the session events older than the call (the DB
  as it was then);
* the store is the one given, as it is *now*: a store indexed or refreshed
  since the call answers differently, and the first difference says where.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from engine.store.store import Store
from .handler import AgentContext, AgentTrace, AgentViewError, RefreshMemory, ctx_search
from .sessiondb import RecordedCall, SessionDb, SkippedRow, parse_created_at
from .throttle import FloodGuard, ThrottleConfig, ThrottlePosition

_FOOTER = re.compile(r"(?:^|\n)(?:> Throttle: call|⚠ search call) #(\d+)/")
_BLOCKED = re.compile(r"^BLOCKED: (\d+) search calls in ")
_HEADER = re.compile(r"^--- \[([^|\]]+?)(?: \| (\d{4}-\d\d-\d\d \d\d:\d\d))? \| (.*)\] ---$")

#: Replay outcomes.
REPLAY_OUTCOMES = ("same", "differs", "not-recorded", "not-replayable")


def answer_count(text: str | None) -> int | None:
    """The throttle count an answer prints (footer ``#N`` or BLOCKED count)."""
    if not text:
        return None
    m = _BLOCKED.match(text)
    if m:
        return int(m.group(1))
    found = _FOOTER.findall(text)
    return int(found[-1]) if found else None


def answer_rows(text: str) -> list[tuple[str, list[tuple[str, str, str]]]]:
    """``[(query, [(origin, label, title), ...])]`` read from an answer's
    section and result headers (a line-based reading: chunk text that itself
    holds such lines would confuse it)."""
    out: list[tuple[str, list[tuple[str, str, str]]]] = []
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if line.startswith("## ") and (i == 0 or lines[i - 1] == "" or lines[i - 1].startswith(">")):
            if i + 1 < len(lines) and (
                lines[i + 1] == "" or lines[i + 1] in ("No results found.", "(output cap reached)")
            ):
                out.append((line[3:], []))
                continue
        m = _HEADER.match(line)
        if m and out and i + 1 < len(lines) and lines[i + 1].startswith("### "):
            out[-1][1].append((m.group(1), m.group(3), lines[i + 1][4:]))
    return out


@dataclass(frozen=True)
class FirstDifference:
    """Where a replayed answer first departs from the recorded one.

    Attributes:
        kind: ``"rows"`` (the result lists differ), ``"throttle"`` (the
            count or limit in the footer), ``"refresh"`` (the auto-refresh
            line), ``"snippet"`` (same rows, different text) or ``"length"``
            (one text is a prefix of the other).
        offset: 0-based character offset of the first differing character.
        line: 1-based line number there.
        recorded, replayed: that line in each text.
    """

    kind: str
    offset: int
    line: int
    recorded: str
    replayed: str

    def describe(self) -> str:
        what = {
            "rows": "the results differ (the store changed since the call?)",
            "throttle": "the throttle footer differs",
            "refresh": "the auto-refresh line differs (a file changed since?)",
            "snippet": "same results, different text",
            "length": "one answer is longer",
        }[self.kind]
        return f"{what}; line {self.line}: recorded {self.recorded[:80]!r}, replayed {self.replayed[:80]!r}"


def first_difference(recorded: str, replayed: str) -> FirstDifference | None:
    """The first difference of two answers, classified (``None`` if equal)."""
    if recorded == replayed:
        return None
    n = next((i for i, (a, b) in enumerate(zip(recorded, replayed)) if a != b), min(len(recorded), len(replayed)))
    line_no = recorded.count("\n", 0, n) + 1
    rec_line = recorded.split("\n")[line_no - 1] if line_no - 1 < len(recorded.split("\n")) else ""
    rep_lines = replayed.split("\n")
    rep_line = rep_lines[line_no - 1] if line_no - 1 < len(rep_lines) else ""
    if answer_rows(recorded) != answer_rows(replayed):
        kind = "rows"
    elif rec_line.startswith("> Auto-refreshed") or rep_line.startswith("> Auto-refreshed"):
        kind = "refresh"
    elif (
        answer_count(recorded) != answer_count(replayed)
        or rec_line.startswith(("> Throttle", "⚠"))
        or rep_line.startswith(("> Throttle", "⚠"))
    ):
        kind = "throttle"
    elif n >= min(len(recorded), len(replayed)):
        kind = "length"
    else:
        kind = "snippet"
    return FirstDifference(kind, n, line_no, rec_line, rep_line)


@dataclass(frozen=True)
class Replay:
    """One recorded call replayed.

    Attributes:
        call: the recorded call.
        outcome: one of :data:`REPLAY_OUTCOMES`.
        trace: rankscope's answer (``None`` when it could not run).
        position: the throttle position used, and ``position_from``
            (``"answer"``, ``"external_ref"`` or ``"counted"``).
        context: the server settings used.
        difference: the first difference (``differs`` only).
        reason: why it could not be compared or run, else ``None``.
    """

    call: RecordedCall
    outcome: str
    trace: AgentTrace | None
    position: ThrottlePosition | None
    position_from: str
    context: AgentContext | None
    difference: FirstDifference | None = None
    reason: str | None = None


def is_plugin_call(call: RecordedCall) -> bool:
    """The host called the Claude Code plugin's server (tool name
    ``mcp__plugin_context-mode_…``), which ``start.mjs`` runs in plugin mode."""
    return call.tool_name.startswith("mcp__plugin_")


def context_for(
    call: RecordedCall, session_db: str, project_dir: str | None = None, throttle: ThrottleConfig | None = None
) -> AgentContext:
    """The server settings a recorded call ran under."""
    project = project_dir or call.project_dir or None
    cfg = throttle or ThrottleConfig()
    if is_plugin_call(call) and project:
        return AgentContext(plugin_project=project, session_db=session_db, throttle=cfg)
    return AgentContext(session_db=session_db, project_dir=project, throttle=cfg)


def _epoch_ms(created_at: str) -> float:
    stamp = parse_created_at(created_at)
    assert stamp is not None  # SessionDb.ctx_search_calls keeps only rows whose time parses
    return stamp.timestamp() * 1000


def replay_calls(
    store: Store,
    session_db_path: str,
    calls: list[RecordedCall],
    project_dir: str | None = None,
    throttle: ThrottleConfig | None = None,
    conn=None,
) -> list[Replay]:
    """Replay ``calls`` (from :meth:`SessionDb.ctx_search_calls`) in order
    (``conn``: a connection from ``store.connect()`` for another thread).

    Raises:
        StoreError / SessionDbError: the store or session DB cannot be read.
    """
    cfg = throttle or ThrottleConfig()
    guard = FloodGuard(cfg)
    memory = RefreshMemory()
    out: list[Replay] = []
    for call in calls:
        ctx = context_for(call, session_db_path, project_dir, cfg)
        counted = guard.record(call.session_id, _epoch_ms(call.created_at)) if call.params is not None else None
        if call.params is None:
            out.append(
                Replay(
                    call,
                    "not-replayable",
                    None,
                    None,
                    "",
                    ctx,
                    reason="the params were cut by the hook (over 2048 bytes): the call cannot be replayed",
                )
            )
            continue
        assert counted is not None  # the params are there, so the call was counted
        given = answer_count(call.answer)
        if given is not None:
            position, how = ThrottlePosition(given, counted.window_start_ms, counted.now_ms, call.session_id), "answer"
        elif call.footer_count is not None:
            position, how = (
                ThrottlePosition(call.footer_count, counted.window_start_ms, counted.now_ms, call.session_id),
                "external_ref",
            )
        else:
            position, how = counted, "counted"
        try:
            trace = ctx_search(
                store,
                call.params,
                ctx,
                position=position,
                refresh_memory=memory,
                events_before_id=call.answer_event_id or call.event_id,
                conn=conn,
            )
        except AgentViewError as exc:
            out.append(Replay(call, "not-replayable", None, position, how, ctx, reason=str(exc)))
            continue
        if call.answer is None:
            out.append(Replay(call, "not-recorded", trace, position, how, ctx, reason=call.answer_note))
            continue
        diff = first_difference(call.answer, trace.text)
        out.append(Replay(call, "same" if diff is None else "differs", trace, position, how, ctx, diff))
    return out


def load_calls(session_db_path: str, project_dir: str | None = None) -> list[RecordedCall]:
    """The recorded calls of a session DB (optionally of one project)."""
    return load_calls_checked(session_db_path, project_dir)[0]


def load_calls_checked(
    session_db_path: str, project_dir: str | None = None
) -> tuple[list[RecordedCall], list[SkippedRow]]:
    """The recorded calls of a session DB, and the malformed rows left out
    (each a :class:`SkippedRow` naming the row and what is wrong)."""
    with SessionDb(session_db_path) as db:
        calls = db.ctx_search_calls(project_dir)
        return calls, list(db.skipped)
