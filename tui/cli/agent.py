"""``rankscope ctx-search`` and ``rankscope agent-log``: what the agent
received from context-mode's ``ctx_search`` tool, and the searches it really
made. Plain functions; :mod:`tui.cli.main` registers them.

Stores and session DBs are opened read-only; nothing is written.
"""

from __future__ import annotations

import re
import sys
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Annotated, List, Optional

import typer
from rich import box
from rich.text import Text

from engine.agent import (
    AgentContext,
    AgentViewError,
    SessionDb,
    SessionDbError,
    ThrottleConfig,
    ctx_search,
    session_db_for_store,
)
from engine.agent.export import agent_trace_to_dict
from engine.agent.jsvalue import js_json, js_json_parse
from engine.lab.counterfactual import parse_pin
from engine.lab.why import ChunkNotFoundError, find_chunks
from engine.js.json import JSONParseError, json_stringify
from engine.agent.advice import should_have_asked
from engine.agent.follow import POLL_SECONDS, LiveLog
from engine.agent.log import Replay, answer_count, load_calls_checked, recorded_queries, replay_calls
from engine.agent.sessiondb import RecordedCall, SkippedRow
from engine.files.reading import InputFileError, require_regular_file

from tui.present import safe
from tui.present.agentwords import advice_lines
from tui.present.cut import clip
from tui.present.render import plain
from tui.present.tablefit import Cell, Column, Fitted, Table
from .base import (
    OPENS_SESSION_DB,
    OPENS_STORE,
    TEXT_ARGUMENTS,
    StorePath,
    console,
    err_console,
    fail,
    open_store,
    search_db_option,
    warn_unknown_sessions,
)

_LONE = re.compile("[\ud800-\udfff]")
#: Characters of a call's raw params shown when they cannot be parsed (the queries column).
RAW_PARAMS_SHOWN = 80


def write_text(text: str) -> None:
    """The answer as Node would write it: a lone surrogate becomes U+FFFD in
    UTF-8 (``--json`` keeps it as a ``\\udXXX`` escape). Piped or
    redirected, the bytes are exact; to a terminal, control characters from
    the store (ESC, BEL, bidirectional controls) are shown as visible
    symbols (:func:`tui.present.safe.block`), as every command shows them."""
    text = _LONE.sub("\ufffd", text)
    if sys.stdout.isatty():
        text = safe.block(text)
    sys.stdout.write(text)
    if not text.endswith("\n"):
        sys.stdout.write("\n")


def write_js_json(data: object) -> None:
    """JSON like ``JSON.stringify(data, null, 2)``: non-ASCII kept, lone
    surrogates escaped (so the output is valid UTF-8)."""
    sys.stdout.write(js_json(data, indent=2) + "\n")


def session_db_option(path: Path) -> None:
    """Fail unless ``--sessions-db`` names a regular file (a FIFO, device or
    folder is named as what it is; nothing is opened)."""
    try:
        require_regular_file(path, "--sessions-db")
    except InputFileError as exc:
        fail(str(exc))


def _session_db_project(path: Path) -> str:
    """The one project directory a session DB's events belong to."""
    try:
        with SessionDb(path) as db:
            dirs = db.project_dirs()
    except SessionDbError as exc:
        fail(str(exc))
    if len(dirs) == 1:
        return dirs[0]
    if not dirs:
        fail(f"{path} has no event attributed to a project; give --project DIR")
    fail(f"{path} holds events of {len(dirs)} projects ({', '.join(dirs[:4])}); give --project DIR")
    raise AssertionError("unreachable")


def build_context(
    db: Path, sessions_db: Optional[Path], project: Optional[str], allow_session: Optional[List[str]]
) -> AgentContext:
    """Server settings from the options: plugin mode with ``--project`` or
    ``--sessions-db`` (the session DB defaults to the store's pair in
    ``../sessions/``), a hand-picked allow-set with ``--allow-session``;
    throttle thresholds from the environment, as the server reads them."""
    throttle = ThrottleConfig.from_env()
    if allow_session and (sessions_db or project):
        fail(
            "--allow-session picks an allow-set by hand; it cannot be combined with --sessions-db / --project "
            "(plugin mode builds the allow-set from the session DB)"
        )
    if allow_session:
        return AgentContext(allow_sessions=tuple(allow_session), throttle=throttle)
    if sessions_db is None and project is None:
        return AgentContext(throttle=throttle)
    if sessions_db is not None:
        session_db_option(sessions_db)
    if sessions_db is None:
        paired = session_db_for_store(db)
        sessions_db = paired[0] if paired else None
    if project is None:
        assert sessions_db is not None  # both None returned above; given or paired here
        project = _session_db_project(sessions_db)
    return AgentContext(plugin_project=project, session_db=str(sessions_db) if sessions_db else None, throttle=throttle)


def _arguments(
    queries: List[str],
    params_json: Optional[str],
    limit: Optional[int],
    source: Optional[str],
    content_type: Optional[str],
    sort: Optional[str],
) -> object:
    if params_json is not None:
        if queries or limit is not None or source is not None or content_type is not None or sort is not None:
            fail("--params-json is the whole arguments object; give the queries and options inside it, not as well")
        try:
            return js_json_parse(params_json)
        except JSONParseError as exc:
            if exc.too_deep is not None:
                fail(f"--params-json is {exc}; an arguments object needs 3 levels")
            fail(f"--params-json is not valid JSON: {exc}")
    if not queries:
        fail("give at least one QUERY (or the raw arguments with --params-json)")
    args: dict = {"queries": list(queries)}
    if limit is not None:
        args["limit"] = limit
    if source is not None:
        args["source"] = source
    if content_type is not None:
        args["contentType"] = content_type
    if sort is not None:
        args["sort"] = sort
    return args


def ctx_search_cmd(
    queries: List[str] = typer.Argument(None, help="Queries (one ctx_search call with all of them)."),
    db: StorePath = search_db_option(),
    limit: Optional[int] = typer.Option(
        None, "--limit", "-n", help="The tool's limit (default 3; the agent gets at most 2)."
    ),
    source: Optional[str] = typer.Option(None, "--source", help="The tool's source filter (partial label match)."),
    content_type: Optional[str] = typer.Option(None, "--content-type", help="code or prose."),
    sort: Optional[str] = typer.Option(None, "--sort", help="relevance (default) or timeline."),
    params_json: Annotated[Optional[str], TEXT_ARGUMENTS] = typer.Option(
        None, "--params-json", help='The tool\'s raw arguments object, e.g. \'{"queries": ["a"], "limit": "5"}\'.'
    ),
    call_number: int = typer.Option(
        1, "--call-number", help="The call's count in its 60 s throttle window (1 = first)."
    ),
    sessions_db: Annotated[Optional[Path], OPENS_SESSION_DB] = typer.Option(
        None, "--sessions-db", help="Run as the Claude Code plugin does: the allow-set comes from this session DB."
    ),
    project: Optional[str] = typer.Option(
        None,
        "--project",
        help="Plugin mode's project directory (CONTEXT_MODE_PROJECT_DIR); default: the session DB's project.",
    ),
    allow_session: Optional[List[str]] = typer.Option(
        None, "--allow-session", help="A hand-picked allow-set session id (repeatable); not with --sessions-db."
    ),
    as_json: bool = typer.Option(
        False, "--json", help="Print the traced call as JSON (schema: engine/agent/export.py)."
    ),
    why: Optional[str] = typer.Option(
        None,
        "--why",
        help="A chunk the agent did not receive (row id or SOURCE::TITLE): the smallest change to the call that "
        "delivers it, found by re-running the call.",
    ),
) -> None:
    """Print what the agent receives from ctx_search: context-mode 1.0.169's tool layer (throttle, per-query limit,
    snippet windows, 40 KB cap, refresh line, footer) over the traced pipeline.

    The throttle thresholds are read from CONTEXT_MODE_SEARCH_WINDOW_MS, CONTEXT_MODE_SEARCH_MAX_RESULTS_AFTER and
    CONTEXT_MODE_SEARCH_BLOCK_AFTER like the server does. An error answer (isError) exits with status 1."""
    if sort is not None and sort not in ("relevance", "timeline"):
        fail(f"--sort must be relevance or timeline; got {sort!r}")
    if content_type is not None and content_type not in ("code", "prose"):
        fail(
            f"--content-type must be code or prose; got {content_type!r} "
            "(--params-json passes any value to the tool's schema, as an agent would)"
        )
    if call_number < 1:
        fail(f"--call-number must be 1 or more; got {call_number}")
    arguments = _arguments(queries or [], params_json, limit, source, content_type, sort)
    context = build_context(db, sessions_db, project, allow_session)
    with open_store(db) as store:
        warn_unknown_sessions(store, allow_session, "--allow-session")
        if why is not None:
            rowids = chunk_rowids(store, why, "--why")
            try:
                advices = [
                    should_have_asked(store, arguments, context, rowid=r, call_number=call_number) for r in rowids
                ]
            except AgentViewError as exc:
                fail(str(exc))
            write_advice(advices, as_json)
            return
        try:
            trace = ctx_search(store, arguments, context, call_number=call_number)
        except AgentViewError as exc:
            fail(str(exc))
    if as_json:
        write_js_json(agent_trace_to_dict(trace))
    else:
        write_text(trace.text)
    if trace.is_error:
        if trace.issues:
            err_console.print(
                safe.line(
                    "rankscope: the arguments fail the tool's schema: " + "; ".join(i.describe() for i in trace.issues)
                ),
                markup=False,
                highlight=False,
                soft_wrap=True,
            )
        raise typer.Exit(1)


def chunk_rowids(store, text: str, option: str) -> list[int]:
    """The row ids a chunk name gives: ``57`` or ``SOURCE::TITLE`` (every
    chunk sharing the key); a one-line error when it names none."""
    try:
        return [c.rowid for c in find_chunks(store, **parse_pin(text))]
    except (ValueError, ChunkNotFoundError) as exc:
        fail(f"{option}: {exc}")
    raise AssertionError("unreachable")


def write_advice(advices: list, as_json: bool) -> None:
    """What the agent should have asked, per chunk: JSON (``{"advice": [...]}``,
    :meth:`engine.agent.advice.Advice.to_dict`) or one paragraph each
    (:func:`tui.present.agentwords.advice_lines`)."""
    if as_json:
        write_js_json({"advice": [a.to_dict() for a in advices]})
        return
    for i, a in enumerate(advices):
        if i:
            console.print()
        for line in advice_lines(a):
            console.print(line, markup=False, highlight=False, soft_wrap=True)


# ─── agent-log ───────────────────────────────────────────────────────────


def _call_dict(call, replay: Optional[Replay] = None) -> dict:
    out = {
        "event_id": call.event_id,
        "created_at": call.created_at,
        "session_id": call.session_id,
        "project_dir": call.project_dir,
        "tool_name": call.tool_name,
        "params": call.params,
        "params_raw": call.params_raw,
        "truncated": call.truncated,
        "queries": recorded_queries(call.params),
        "answer_recorded": call.answer is not None,
        "answer_note": call.answer_note,
        "throttle_count": answer_count(call.answer) if call.answer is not None else call.footer_count,
    }
    if replay is not None:
        d = replay.difference
        out["replay"] = {
            "outcome": replay.outcome,
            "same": replay.outcome == "same",
            "reason": replay.reason,
            "call_number": replay.position.count if replay.position else None,
            "call_number_from": replay.position_from,
            "plugin_mode": bool(replay.context and replay.context.plugin_mode),
            "allow_set": None
            if replay.trace is None or replay.trace.scope.allow_set is None
            else list(replay.trace.scope.allow_set),
            "effective_limit": replay.trace.effective_limit if replay.trace else None,
            "text": replay.trace.text if replay.trace else None,
            "difference": None
            if d is None
            else {
                "kind": d.kind,
                "offset": d.offset,
                "line": d.line,
                "recorded": d.recorded,
                "replayed": d.replayed,
                "description": d.describe(),
            },
        }
    return out


def warn_skipped(skipped: List[SkippedRow]) -> None:
    """One ``rankscope: warning:`` line on stderr per malformed session-DB
    row left out (``session_events row 12 skipped: data is a BLOB, not text; …``)."""
    for row in skipped:
        err_console.print(
            f"rankscope: warning: {safe.line(row.describe())}", markup=False, highlight=False, soft_wrap=True
        )


def _other_params(params: Optional[dict]) -> str:
    if params is None:
        return "(cut)"
    rest = {k: v for k, v in params.items() if k != "queries"}
    return json_stringify(rest, spaced=True) if rest else ""


def agent_log_cmd(
    sessions_db: Annotated[Path, OPENS_SESSION_DB] = typer.Option(
        ..., "--sessions-db", help="context-mode session DB (opened read-only)."
    ),
    project: Optional[str] = typer.Option(
        None, "--project", help="Only calls of this project directory; also the plugin's project when replaying."
    ),
    replay: bool = typer.Option(
        False, "--replay", help="Re-run each call with the same params and scope and compare the text."
    ),
    db: Annotated[Optional[Path], OPENS_STORE] = typer.Option(
        None, "--db", help="With --replay or --follow: the content store the calls searched (read-only)."
    ),
    as_json: bool = typer.Option(
        False, "--json", help="Print a JSON list of the calls (with the replay); with --follow, one object a line."
    ),
    follow: bool = typer.Option(
        False,
        "--follow",
        "-f",
        help="Print each new call as the hooks write it, until Ctrl-C (with --db: whether its replay matches).",
    ),
) -> None:
    """List every ctx_search call recorded in a session DB (time, session, queries, params, whether the answer was
    recorded); with --replay --db STORE, re-run each and report whether the text equals the recorded answer; with
    --follow, print each new call within a second of the hooks writing it."""
    session_db_option(sessions_db)
    if follow:
        if replay:
            fail("--follow replays each new call when --db is given; --replay is for the calls already recorded")
        follow_calls(sessions_db, project, db, as_json)
        return
    if replay and db is None:
        fail("--replay needs --db STORE (the content store the calls searched)")
    if db is not None and not replay:
        fail("--db is only used with --replay or --follow")
    try:
        calls, skipped = load_calls_checked(str(sessions_db), project)
    except SessionDbError as exc:
        fail(str(exc))
    warn_skipped(skipped)
    replays: list[Replay] = []
    if replay:
        assert db is not None  # checked above
        with open_store(db) as store:
            try:
                replays = replay_calls(store, str(sessions_db), calls, project, ThrottleConfig.from_env())
            except SessionDbError as exc:
                fail(str(exc))
    if as_json:
        write_js_json([_call_dict(c, replays[i] if replays else None) for i, c in enumerate(calls)])
        return
    if not calls:
        where = f" for project {project}" if project else ""
        console.print(safe.line(f"no ctx_search call recorded in {sessions_db}{where}"), markup=False, highlight=False)
        return
    # The call number, time, session and answer (the recorded call #N, – when not recorded) and the replay's
    # outcome code are never cut or wrapped; the queries and params (free text) share the rest, wrapped at
    # spaces, a word too long for its column ending in … (tui.present.tablefit).
    cols = [
        Column("#", "key", justify="right"),
        Column("UTC"),
        Column("session"),
        Column("queries", "free", min_width=12, share=3),
        Column("params", "free", min_width=10, share=2),
        Column("answer"),
    ]
    if replays:
        cols.append(Column("replay"))  # an outcome code: same, differs, not recorded
    rows: list[list[Cell]] = []
    for i, c in enumerate(calls):
        qs = recorded_queries(c.params)
        count = answer_count(c.answer)
        answer = "–" if c.answer is None else f"#{count}" if count else "yes"
        row: list[Cell] = [
            str(i + 1),
            plain(c.created_at[5:]),
            plain(c.session_id[:8]),
            plain(" | ".join(qs) if qs is not None else clip(c.params_raw or "", RAW_PARAMS_SHOWN)),
            plain(_other_params(c.params)),
            Text(answer, style="" if c.answer is not None else "dim"),
        ]
        if replays:
            r = replays[i]
            style = {"same": "green", "differs": "yellow"}.get(r.outcome, "dim")
            row.append(Text(r.outcome.replace("-", " "), style=style))
        rows.append(row)
    console.print(
        safe.line(f"{len(calls)} ctx_search call(s) in {sessions_db}"), markup=False, highlight=False, soft_wrap=True
    )
    console.print(Fitted(Table(None, cols, rows), box=box.SIMPLE_HEAD, pad_edge=False))
    if replays:
        for i, r in enumerate(replays):
            if r.outcome == "differs":
                assert r.difference is not None  # set for every "differs"
                line = f"#{i + 1}: {r.difference.describe()}"
            elif r.outcome != "same":
                line = f"#{i + 1}: {r.outcome}: {r.reason}"
            else:
                continue
            console.print(safe.line(line), markup=False, highlight=False, soft_wrap=True)
        compared = [r for r in replays if r.outcome in ("same", "differs")]
        same = sum(1 for r in compared if r.outcome == "same")
        console.print(
            safe.line(f"replayed on {db}: {same} of {len(compared)} recorded answer(s) reproduced exactly"),
            markup=False,
            highlight=False,
            soft_wrap=True,
        )


# ─── agent-log --follow ──────────────────────────────────────────────────


def _received_words(summary: dict) -> str:
    """``1 result (sextant 1), 643 B, 0 snippets cut``"""
    per = ", ".join(f"{safe.line(clip(q['query'], 30))} {q['results']}" for q in summary["queries"])
    n = summary["results"]
    return (
        f"{n} result{'s' if n != 1 else ''}{f' ({per})' if per else ''}, {summary['bytes']} B, "
        f"{summary['snippets_cut']} snippet{'s' if summary['snippets_cut'] != 1 else ''} cut"
    )


def _throttle_words(summary: dict) -> str:
    """``#5/8 ⚠ 1/query``, ``#2/8``, ``BLOCKED #9``, or ``–``"""
    th = summary["throttle"]
    if th is None:
        return "–"
    if th["blocked"]:
        return f"BLOCKED #{th['count']}"
    return f"#{th['count']}/{th['block_after']}" + (f" ⚠ {th['per_query']}/query" if th["warning"] else "")


def follow_line(call: RecordedCall, summary: Optional[dict], replay: Optional[Replay]) -> str:
    """One new call in one line: time, session, throttle state, queries, other
    params, what it received in numbers, and the replay's outcome."""
    qs = recorded_queries(call.params)
    queries = " | ".join(qs) if qs is not None else clip(call.params_raw or "", RAW_PARAMS_SHOWN)
    parts = [call.created_at, call.session_id[:8], _throttle_words(summary) if summary else "–", queries]
    other = _other_params(call.params)
    if other:
        parts.append(other)
    parts.append("→ " + (_received_words(summary) if summary else f"answer not recorded ({call.answer_note})"))
    if replay is not None:
        parts.append(
            "replay: "
            + replay.outcome.replace("-", " ")
            + (f" ({replay.difference.kind})" if replay.difference else "")
        )
    return safe.line("  ".join(parts))


def follow_calls(sessions_db: Path, project: Optional[str], db: Optional[Path], as_json: bool) -> None:
    """Poll the session DB (:class:`engine.agent.follow.LiveLog`) until
    Ctrl-C; print each new call (one JSON object a line with ``as_json``),
    replayed on ``db`` when given. Notices (the file replaced, unreadable for
    a moment) and malformed rows go to stderr."""
    seen = 0
    with ExitStack() as stack:
        store = stack.enter_context(open_store(db)) if db is not None else None
        live = LiveLog(str(sessions_db), project, store, ThrottleConfig.from_env())
        try:
            first = live.poll()
            for _code, message in first.notices:
                _note(message)
            _note(f"following {sessions_db} from event {live.last_id} (Ctrl-C stops)")
            while True:
                time.sleep(POLL_SECONDS)
                update = live.poll()
                for _code, message in update.notices:
                    _note(message)
                warn_skipped(list(update.skipped))
                for followed in update.calls:
                    call = followed.call
                    if followed.replay_error is not None:  # the session DB moved under the replay: say so, go on
                        _note(f"call {call.event_id}: cannot replay now ({followed.replay_error})")
                    if as_json:
                        data = _call_dict(call, followed.replay)
                        data["received"] = followed.received
                        sys.stdout.write(js_json(data) + "\n")
                    else:
                        sys.stdout.write(follow_line(call, followed.received, followed.replay) + "\n")
                    sys.stdout.flush()
                    seen += 1
        except KeyboardInterrupt:
            _note(f"stopped following {sessions_db}: {seen} new call(s)")


def _note(message: str) -> None:
    err_console.print(f"rankscope: {safe.line(message)}", markup=False, highlight=False, soft_wrap=True)
