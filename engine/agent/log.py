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
from typing import Any
from dataclasses import dataclass

from engine.js.strings import utf8_len, utf16_len
from engine.store import sql
from engine.store.store import Store
from .handler import AgentContext, AgentTrace, RefreshMemory, ctx_search
from .schema import AgentViewError, SchemaError, parse_arguments
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


def recorded_queries(params: dict[str, object] | None) -> list[str] | None:
    """The queries of a recorded call's params as the server reads them (the
    plugin's schema), or ``None`` when the hook cut the params or they fail
    the schema."""
    if params is None:
        return None
    try:
        parsed = parse_arguments(params, plugin_mode=True)
    except (SchemaError, AgentViewError):
        return None
    return list(parsed.queries or ())


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


_THROTTLE = re.compile(
    r"(?:^|\n)(?:> Throttle: call|(⚠) search call) #(\d+)/(\S+) in this window\."
    r"(?: Results limited to (\S+)/query\.)?"
)
_BLOCKED_FULL = re.compile(r"^BLOCKED: (\d+) search calls in (\S+)s\.")
_REFRESHED = re.compile(r"^> Auto-refreshed (\d+) stale source")


def answer_summary(text: str, queries: list[str] | None = None) -> dict[str, Any]:
    """What an answer gave the agent, in numbers, read from its text:

    ``{"bytes": UTF-8 bytes (what the server counts), "units": UTF-16 units,
    "throttle": {"count", "block_after", "warning", "per_query", "blocked",
    "blocked_seconds"} | null, "refresh_count", "results": total,
    "queries": [{"query", "status", "results"}], "snippets_cut": n}``.

    ``queries`` (the call's, in order) locate each section exactly (its
    ``## query`` line after the previous section's ``---``); without them
    the sections are read line by line (:func:`answer_rows`). ``per_query``
    is the ⚠ footer's "Results limited to N/query" as printed, else ``None``;
    ``snippets_cut`` counts results whose snippet starts or ends with ``…``
    (the server marks every cut so).
    """
    throttle = None
    blocked = _BLOCKED_FULL.match(text)
    if blocked:
        throttle = {
            "count": int(blocked.group(1)),
            "block_after": None,
            "warning": True,
            "per_query": None,
            "blocked": True,
            "blocked_seconds": blocked.group(2),
        }
    else:
        found = list(_THROTTLE.finditer(text))
        if found:
            m = found[-1]
            throttle = {
                "count": int(m.group(2)),
                "block_after": m.group(3),
                "warning": bool(m.group(1)),
                "per_query": m.group(4),
                "blocked": False,
                "blocked_seconds": None,
            }
    refreshed = _REFRESHED.match(text)
    sections = _sections(text, queries) if queries else [(q, _section_text(text, q)) for q, _ in answer_rows(text)]
    statuses = []
    cut = 0
    for query, body in sections:
        status = (
            "no-results"
            if body.startswith("No results found.")
            else "output-cap-reached"
            if body.startswith("(output cap reached)")
            else "results"
        )
        snippets = _snippets(body)
        cut += sum(1 for sn in snippets if sn.startswith("…") or sn.endswith("…"))
        statuses.append({"query": query, "status": status, "results": len(snippets)})
    return {
        "bytes": utf8_len(text),
        "units": utf16_len(text),
        "throttle": throttle,
        "refresh_count": int(refreshed.group(1)) if refreshed else 0,
        "results": sum(q["results"] for q in statuses),
        "queries": statuses,
        "snippets_cut": cut,
    }


def _section_text(text: str, query: str) -> str:
    head = f"## {query}\n"
    at = text.find(head)
    return text[at + len(head) :] if at >= 0 else ""


def _sections(text: str, queries: list[str]) -> list[tuple[str, str]]:
    """``(query, section body)`` in order: a section starts at ``## q`` (the
    first at the answer's start, after an auto-refresh line; the others after
    ``\n\n---\n\n``) and runs to the next one or the footer."""
    starts: list[int] = []
    at = 0
    for i, q in enumerate(queries):
        head = f"## {q}\n"
        where = text.find(head, at) if i == 0 else text.find("\n\n---\n\n" + head, at)
        if where < 0:
            break
        start = where + (0 if i == 0 else len("\n\n---\n\n")) + len(head)
        starts.append(start)
        at = start
    out = []
    footer = max(text.rfind("\n\n> Throttle: call #"), text.rfind("\n\n⚠ search call #"))
    for i, start in enumerate(starts):
        end = text.find("\n\n---\n\n## " + queries[i + 1] + "\n", start) if i + 1 < len(starts) else -1
        if end < 0:
            end = footer if footer >= start else len(text)
        out.append((queries[i], text[start:end]))
    return out


def _snippets(body: str) -> list[str]:
    """The snippets of a section body: the text after each result's
    ``--- [...] ---`` / ``### title`` / blank lines, up to the next result."""
    lines = body.split("\n")
    heads = [
        i
        for i in range(len(lines) - 2)
        if _HEADER.match(lines[i]) and lines[i + 1].startswith("### ") and lines[i + 2] == ""
    ]
    out = []
    for k, i in enumerate(heads):
        end = heads[k + 1] if k + 1 < len(heads) else len(lines)
        out.append("\n".join(lines[i + 3 : end]).strip("\n"))
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


class Replayer:
    """Replays recorded calls one by one, in order, as one server would have
    answered them: one throttle guard and one refresh memory for all (a
    replay of a whole log, or of each call ``agent-log --follow`` sees).

    Args:
        conn: a connection from ``store.connect()`` for another thread.
    """

    def __init__(
        self,
        store: Store,
        session_db_path: str,
        project_dir: str | None = None,
        throttle: ThrottleConfig | None = None,
        conn: sql.Connection | None = None,
    ) -> None:
        self.store, self.session_db_path, self.project_dir, self.conn = store, session_db_path, project_dir, conn
        self.config = throttle or ThrottleConfig()
        self.guard = FloodGuard(self.config)
        self.memory = RefreshMemory()

    def replay(self, call: RecordedCall, conn: sql.Connection | None = None) -> Replay:
        """Answer ``call`` again and compare (``conn``: a connection for this
        one replay, instead of the one given when it was built).

        Raises:
            StoreError / SessionDbError: the store or session DB cannot be read.
        """
        ctx = context_for(call, self.session_db_path, self.project_dir, self.config)
        if call.params is None:
            return Replay(
                call,
                "not-replayable",
                None,
                None,
                "",
                ctx,
                reason="the params were cut by the hook (over 2048 bytes): the call cannot be replayed",
            )
        counted = self.guard.record(call.session_id, _epoch_ms(call.created_at))
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
                self.store,
                call.params,
                ctx,
                position=position,
                refresh_memory=self.memory,
                events_before_id=call.answer_event_id or call.event_id,
                conn=conn if conn is not None else self.conn,
            )
        except AgentViewError as exc:
            return Replay(call, "not-replayable", None, position, how, ctx, reason=str(exc))
        if call.answer is None:
            return Replay(call, "not-recorded", trace, position, how, ctx, reason=call.answer_note)
        diff = first_difference(call.answer, trace.text)
        return Replay(call, "same" if diff is None else "differs", trace, position, how, ctx, diff)


def replay_calls(
    store: Store,
    session_db_path: str,
    calls: list[RecordedCall],
    project_dir: str | None = None,
    throttle: ThrottleConfig | None = None,
    conn: sql.Connection | None = None,
) -> list[Replay]:
    """Replay ``calls`` (from :meth:`SessionDb.ctx_search_calls`) in order
    (``conn``: a connection from ``store.connect()`` for another thread).

    Raises:
        StoreError / SessionDbError: the store or session DB cannot be read.
    """
    replayer = Replayer(store, session_db_path, project_dir, throttle, conn)
    return [replayer.replay(call) for call in calls]


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
