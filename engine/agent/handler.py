"""The ``ctx_search`` tool as the agent sees it: context-mode 1.0.169's
handler over rankscope's ``searchWithFallback``, traced.

Source: the ``ctx_search`` handler of context-mode 1.0.169 (``src/server.ts``,
identical in ``cli.bundle.mjs`` / ``server.bundle.mjs``) and the 61 answers
recorded from it in ``shared/agent-view`` (whose README states each rule).
The order of the handler:

1. the input schema (:mod:`.schema`); a failure answers the SDK's
   validation text with ``isError`` and is not counted;
2. an empty store (relevance mode) answers ``Knowledge base is empty …``
   (``isError``, not counted);
3. no query (``queries`` missing or ``[]``; ``query`` is stripped by the
   schema): ``Error: provide query or queries.`` (``isError``, not counted);
4. plugin mode only: the project scope (``project`` param, ``"global"`` =
   none, default the project dir) and, when the session DB exists, the
   allow-set ``getSessionIdsForProject(scope)``;
5. the throttle (:mod:`.throttle`): BLOCKED past ``block_after``;
   ``effective_limit = 1`` past the soft cap, else ``min(limit, 2)``;
6. per query: skipped with ``(output cap reached)`` once the result blocks
   so far exceed 40 KiB (40960 UTF-16 units, checked *before* the query);
   else ``searchWithFallback(q, effective_limit, source, contentType,
   "like", allowSet)`` (or timeline's ``searchAllSources``), each result as
   ``--- [origin | YYYY-MM-DD HH:MM | label] ---`` / ``### title`` / blank /
   snippet (:mod:`.snippet`);
7. sections joined by ``\\n\\n---\\n\\n``; ``> Auto-refreshed N stale
   source(s) …`` prepended when the **last executed** query's refresh count
   is non-zero; the throttle footer appended.

Lengths are UTF-16 code units (JavaScript ``.length``). rankscope opens
foreign stores read-only, so a stale file-backed source is not re-indexed:
the trace then *simulates* the refresh count (the first query that finds a
stale source counts it, as the server's would) and says that the rows
served are the pre-refresh content.
"""

from __future__ import annotations

import time
from functools import partial
from dataclasses import dataclass, field
from typing import Callable, TypeVar

from engine.store import sql
from engine.js.strings import utf16_len, utf16_slice
from engine.js.numbers import math_max, math_min, number_to_string, to_integer_or_infinity
from engine.pipeline.params import MAX_LIMIT, SearchParams
from engine.pipeline.trace import Trace
from engine.pipeline.variants import Variant
from engine.pipeline.run import search
from engine.store.store import Store
from .schema import AgentViewError, SchemaError, SchemaIssue, ToolParams, parse_arguments, query_list
from .sessiondb import EventRow, SessionDb
from .snippet import SnippetTrace, extract_snippet
from .throttle import DEFAULT_KEY, FloodGuard, ThrottleConfig, ThrottleDecision, ThrottlePosition
from .timeline import TimelineRow, event_rows, merge_timeline, now_iso

_T = TypeVar("_T")

#: ``MAX_TOTAL``: result blocks beyond this many UTF-16 units skip later queries.
MAX_TOTAL = 40 * 1024
#: Results per query before the soft cap: ``Math.min(limit, 2)``.
PER_QUERY_CAP = 2

NO_QUERY_TEXT = "Error: provide query or queries."
EMPTY_INDEX_TEXT = (
    "Knowledge base is empty — no content has been indexed yet.\n\n"
    "ctx_search is a follow-up tool that queries previously indexed content. "
    "To gather and index content first, use:\n"
    "  • ctx_batch_execute(commands, queries) — run commands, auto-index output, and search in one call\n"
    "  • ctx_fetch_and_index(url) — fetch a URL, index it, then search with ctx_search\n"
    "  • ctx_index(content, source) — manually index text content\n\n"
    "After indexing, ctx_search becomes available for follow-up queries."
)

OUTCOMES = ("answered", "schema-error", "empty-index", "no-queries", "blocked")


@dataclass(frozen=True)
class AgentContext:
    """How the context-mode server was started and what it can see.

    Attributes:
        plugin_project: ``CONTEXT_MODE_PROJECT_DIR`` (plugin mode, as
            Claude Code's ``start.mjs`` sets it), or ``None``.
        session_db: the project's session DB file (plugin mode: the
            allow-set's source; timeline: the event rows). A path that does
            not exist means no session DB, as on the server.
        project_dir: ``getProjectDir()`` outside plugin mode (timeline's
            event filter); plugin mode uses ``plugin_project``.
        allow_sessions: a hand-picked allow-set (rankscope's option, not a
            server setting); ignored in plugin mode.
        throttle: the throttle thresholds.
        variant: pipeline variant of the search (reference by default).
    """

    plugin_project: str | None = None
    session_db: str | None = None
    project_dir: str | None = None
    allow_sessions: tuple[str, ...] | None = None
    throttle: ThrottleConfig = field(default_factory=ThrottleConfig)
    variant: Variant = field(default_factory=Variant)

    @property
    def plugin_mode(self) -> bool:
        return self.plugin_project is not None


@dataclass(frozen=True)
class ScopeTrace:
    """The session scope of the call.

    Attributes:
        mode: ``"none"`` (no allow-set), ``"plugin"`` or ``"hand-picked"``.
        project_scope: plugin mode's resolved scope: a directory, or
            ``None`` for ``project: "global"`` / outside plugin mode.
        session_db: the session DB consulted, or ``None``.
        allow_set: the allow-set passed to ``searchWithFallback`` (``None`` =
            none: pool ``limit``, no session filter).
        reason: how it was decided, in words.
    """

    mode: str
    project_scope: str | None
    session_db: str | None
    allow_set: tuple[str, ...] | None
    reason: str


@dataclass(frozen=True)
class ResultView:
    """One result as the agent receives it.

    Attributes:
        position: 1-based place in its section.
        origin: ``current-session`` (store) or ``prior-session`` (event).
        timestamp: the raw timestamp (``None`` when the row has none).
        time_shown: the header's ``YYYY-MM-DD HH:MM`` (``""`` = left out).
        source, title: label and title as printed.
        rowid: chunk rowid (store rows) or ``None``.
        event_id: session event id (event rows) or ``None``.
        layer: ``rrf`` / ``rrf-fuzzy`` for store rows, ``event`` else.
        content: the whole chunk (or event data).
        highlighted: the FTS5 highlight the snippet used, or ``None``.
        snippet: how the content was cut.
        text: the result block exactly (header, heading, blank, snippet).
    """

    position: int
    origin: str
    timestamp: str | None
    time_shown: str
    source: str
    title: str
    rowid: int | None
    event_id: int | None
    layer: str
    content: str
    highlighted: str | None
    snippet: SnippetTrace
    text: str

    @property
    def matched_outside_snippet(self) -> bool:
        """A highlighted match of the chunk lies outside what the agent saw."""
        return bool(self.snippet.unseen_matches)

    @property
    def no_match_in_text(self) -> bool:
        """The chunk was returned but no query term was found in its text
        (it matched through its title): the agent sees its first 1500 units."""
        return self.snippet.mode == "prefix"


@dataclass(frozen=True)
class QueryTrace:
    """One query of the call.

    Attributes:
        position: 1-based place in ``queries``.
        query: the query text.
        status: ``"results"``, ``"no-results"`` or ``"output-cap-reached"``.
        total_before: result units counted before the query (the 40 KiB
            check compares it with :data:`MAX_TOTAL`).
        block_units: units this query added (its joined result blocks).
        search: the ``searchWithFallback`` trace (``None`` when capped).
        timeline: timeline mode's merged rows (``None`` in relevance mode).
        events: the session-event rows timeline mode fetched.
        results: what the agent got.
        refresh_stale: labels the query's refresh found stale.
        refresh_count: ``store.lastRefreshCount`` after it (simulated on a
            read-only store).
        section: the section text exactly.
    """

    position: int
    query: str
    status: str
    total_before: int
    block_units: int
    search: Trace | None
    timeline: tuple[TimelineRow, ...] | None
    events: tuple[EventRow, ...]
    results: tuple[ResultView, ...]
    refresh_stale: tuple[str, ...]
    refresh_count: int
    section: str

    @property
    def capped(self) -> bool:
        return self.status == "output-cap-reached"


@dataclass(frozen=True)
class AgentTrace:
    """Everything one ``ctx_search`` call did, and the exact answer.

    Attributes:
        arguments: the raw arguments object.
        params: the schema's result (``None`` on a schema error).
        issues: schema issues (empty unless ``outcome == "schema-error"``).
        outcome: one of :data:`OUTCOMES`.
        counted: whether the throttle counted the call.
        throttle: the guard's decision (``None`` when not counted).
        requested_limit: ``limit`` after the schema (a JavaScript number).
        effective_limit: the per-query limit as the integer the pipeline
            cuts with (``None`` when nothing ran): :func:`pipeline_limit` of
            ``per_query_limit``; for the usual limits 0, 1 and 2 the same.
        scope: the session scope.
        queries: per-query traces (empty unless answered).
        refresh_count: the count the refresh line reports (last executed
            query); ``refresh_simulated`` when the store is read-only.
        refresh_line, footer: the two added texts (``""`` when absent).
        text: the answer exactly (may hold lone surrogates).
        is_error: the result's ``isError``.
        notes: caveats, in words.
        per_query_limit: ``effectiveLimit`` exactly as the server computes
            it (``1`` past the soft cap, else ``Math.min(limit, 2)``): any
            JavaScript number (``1.5``, ``-1``, ``-Infinity``); ``None`` when
            nothing ran.
    """

    arguments: object
    params: ToolParams | None
    issues: tuple[SchemaIssue, ...]
    outcome: str
    counted: bool
    throttle: ThrottleDecision | None
    requested_limit: float | None
    effective_limit: int | None
    scope: ScopeTrace
    queries: tuple[QueryTrace, ...]
    refresh_count: int
    refresh_simulated: bool
    refresh_line: str
    footer: str
    text: str
    is_error: bool
    notes: tuple[str, ...] = ()
    per_query_limit: float | None = None


# ─── pieces ──────────────────────────────────────────────────────────────


def footer_text(decision: ThrottleDecision, effective_limit: float) -> str:
    """The throttle footer (with its leading blank line); numbers printed
    with ``String()`` (``effective_limit`` 1.5 → ``1.5``, -0 → ``0``)."""
    cfg = decision.config
    n = decision.count
    block = number_to_string(cfg.block_after)
    if decision.warning:
        remaining = number_to_string(math_max(0.0, cfg.block_after - n))
        return (
            f"\n\n⚠ search call #{n}/{block} in this window. "
            f"Results limited to {number_to_string(effective_limit)}/query. "
            f"{remaining} call(s) remaining before block. "
            'Batch queries: ctx_search(queries: ["q1","q2","q3"]) or use ctx_batch_execute.'
        )
    before_soft = number_to_string(math_max(0.0, cfg.soft_after - n))
    return (
        f"\n\n> Throttle: call #{n}/{block} in this window. {before_soft} call(s) before soft cap. "
        "Prefer ctx_search(queries: [...]) array form for multi-query workloads — it counts as a single call."
    )


def blocked_text(position: ThrottlePosition) -> str:
    return (
        f"BLOCKED: {position.count} search calls in {number_to_string(position.elapsed_s)}s. "
        "You're flooding context. STOP making individual search calls. "
        "Use ctx_batch_execute(commands, queries) for your next research step."
    )


def refresh_line_text(count: int) -> str:
    """``> Auto-refreshed N stale source(s) …`` with its blank line ("" for 0)."""
    if count <= 0:
        return ""
    return f"> Auto-refreshed {count} stale source{'s' if count > 1 else ''} (file changed since indexing).\n\n"


def header_time(timestamp: str | None) -> str:
    """``timestamp.slice(0, 16).replace("T", " ")`` ("" when falsy)."""
    if not timestamp:
        return ""
    return utf16_slice(timestamp, 0, 16).replace("T", " ", 1)


def format_result(
    position: int,
    origin: str,
    timestamp: str | None,
    source: str,
    title: str,
    content: str,
    highlighted: str | None,
    query: str,
    rowid: int | None,
    event_id: int | None,
    layer: str,
) -> ResultView:
    ts = header_time(timestamp)
    header = f"--- [{origin}{' | ' + ts if ts else ''} | {source}] ---"
    snip = extract_snippet(content, query, highlighted)
    text = f"{header}\n### {title}\n\n{snip.text}"
    return ResultView(
        position, origin, timestamp, ts, source, title, rowid, event_id, layer, content, highlighted, snip, text
    )


def chunk_timestamps(store: Store, conn: sql.Connection, rowids: list[int]) -> dict[int, str | None]:
    """``timestamp`` of chunks by rowid (``{}`` on a store without the column)."""
    if not rowids or store.schema.fts_columns < 8:
        return {}
    marks = ",".join("?" * len(rowids))
    rows = conn.execute(f"SELECT rowid, timestamp FROM chunks WHERE rowid IN ({marks})", rowids).fetchall()
    return {int(r): (t if isinstance(t, str) else None) for r, t in rows}


class RefreshMemory:
    """Stale labels a read-only replay has already counted as refreshed
    (the server would have re-indexed them), so later queries and calls of
    the same session count 0 for them, as the server's would."""

    def __init__(self) -> None:
        self.done: set[str] = set()

    def count(self, trace: Trace) -> tuple[int, bool]:
        """``(lastRefreshCount, simulated)`` for one search."""
        if trace.refresh.refreshed:
            return len(trace.refresh.stale), False
        fresh = [s for s in trace.refresh.stale if s not in self.done]
        self.done.update(fresh)
        return len(fresh), bool(trace.refresh.stale)


def _read(store: Store, conn: sql.Connection | None, read: Callable[[sql.Connection], _T]) -> _T:
    """``read(c)`` through :meth:`~engine.store.store.Store.reading`, as searches
    read: retried while a writer breaks it, and a damaged store raises
    :class:`~engine.store.errors.CorruptStoreError` naming it.

    Raises:
        StoreError: the store cannot be read (the message names its path).
    """

    def work(c: sql.Connection | None) -> _T:
        with store.using(c) as cc:
            return read(cc)

    return store.reading(work, conn)


def _empty_store(c: sql.Connection) -> bool:
    count: int = c.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
    return count == 0


class ServerSearchParams(SearchParams):
    """:class:`SearchParams` of one ``searchWithFallback`` call of the
    handler: ``limit`` may be negative, down to ``-MAX_LIMIT``. The stages
    cut with Python slices, which for a negative integer keep what the
    server's ``slice(0, limit)`` keeps: all but the last ``-limit`` items
    (:func:`pipeline_limit`)."""

    MIN_LIMIT = -MAX_LIMIT


def pipeline_limit(per_query: float) -> int:
    """The integer the pipeline cuts with for the server's per-query limit
    (a JavaScript number at most 2): ``ToIntegerOrInfinity``, as
    ``slice(0, limit)`` truncates it (1.5 → 1, -0.5 → 0, -1.5 → -1),
    -Infinity as ``-MAX_LIMIT`` (every list of a ``ctx_search`` search is
    shorter: at most 2 × 80 fused rows). The row counts the server derives
    from the limit agree: ``max(2 × limit, 10)`` is 10 and ``max(8 × limit,
    40)`` is 40 for every limit up to 2, truncated or not."""
    n = to_integer_or_infinity(per_query)
    return int(max(-MAX_LIMIT, min(MAX_LIMIT, n)))


def _search_params(
    query: str, limit: int, params: ToolParams, allow: tuple[str, ...] | None, variant: Variant
) -> SearchParams:
    try:
        return ServerSearchParams(
            query=query,
            limit=limit,
            source=params.source or None,
            source_match="like",
            content_type=params.content_type,
            sessions=allow,
            variant=variant,
        )
    except ValueError as exc:
        raise AgentViewError(f"query {query[:60]!r}: {exc}") from exc


# ─── the handler ─────────────────────────────────────────────────────────


def ctx_search(
    store: Store,
    arguments: object,
    context: AgentContext | None = None,
    *,
    call_number: int = 1,
    position: ThrottlePosition | None = None,
    guard: FloodGuard | None = None,
    now_ms: float | None = None,
    guard_key: str | None = None,
    refresh_memory: RefreshMemory | None = None,
    events_before_id: int | None = None,
    conn: sql.Connection | None = None,
) -> AgentTrace:
    """Answer one ``ctx_search`` call as context-mode 1.0.169 would.

    Args:
        store: the content store (read-only stores are never written).
        arguments: the tool's raw arguments object (JSON values).
        context: server start-up settings (plain mode by default).
        call_number: the call's count in its throttle window when neither
            ``position`` nor ``guard`` is given (1 = a fresh window).
        position: an explicit throttle position.
        guard: count the call with this guard at ``now_ms`` (epoch ms,
            default now) under ``guard_key`` (plugin mode: the session DB's
            latest session; else ``"__default__"``).
        refresh_memory: shared by the calls of one replayed session.
        events_before_id: timeline only: read session events older than
            this id (a recorded call's DB state).
        conn: a connection from ``store.connect()`` for another thread.

    Returns:
        An :class:`AgentTrace` whose ``text`` / ``is_error`` are the answer.

    Raises:
        AgentViewError: a per-query limit rankscope cannot run (fractional
            or negative) or a query the engine refuses.
        StoreError / SessionDbError: a store or session DB cannot be read.
    """
    ctx = context or AgentContext()
    memory = refresh_memory or RefreshMemory()
    no_scope = ScopeTrace("none", None, None, None, "")
    try:
        params = parse_arguments(arguments, ctx.plugin_mode)
    except SchemaError as exc:
        return AgentTrace(
            arguments,
            None,
            exc.issues,
            "schema-error",
            False,
            None,
            None,
            None,
            no_scope,
            (),
            0,
            False,
            "",
            "",
            exc.text,
            True,
            ("rejected by the input schema before the throttle: not counted",),
        )
    notes = list(params.coercions)

    def not_counted(outcome: str, text: str, why: str) -> AgentTrace:
        # answered before the throttle (the call is not counted)
        return AgentTrace(
            arguments,
            params,
            (),
            outcome,
            False,
            None,
            params.limit,
            None,
            no_scope,
            (),
            0,
            False,
            "",
            "",
            text,
            True,
            tuple(notes + [why + ": not counted"]),
        )

    if params.sort != "timeline" and _read(store, conn, _empty_store):
        return not_counted("empty-index", EMPTY_INDEX_TEXT, "the store holds no chunk")
    queries = query_list(params)
    if not queries:
        why = "queries is an empty array" if params.queries == () else "no queries parameter"
        if "query" in params.stripped:
            why += " ('query' is not in the tool's schema: stripped before the handler)"
        return not_counted("no-queries", NO_QUERY_TEXT, why)

    session_db: SessionDb | None = None
    try:
        scope, session_db = _resolve_scope(ctx, params)
        if position is None:
            if guard is not None:
                key = guard_key or _guard_key(ctx, session_db)
                position = guard.record(key, now_ms if now_ms is not None else time.time() * 1000)
            else:
                if isinstance(call_number, bool) or not isinstance(call_number, int) or call_number < 1:
                    raise AgentViewError(f"call number must be a whole number of at least 1; got {call_number!r}")
                position = ThrottlePosition(call_number)
        decision = ThrottleDecision(position, ctx.throttle)
        if decision.blocked:
            return AgentTrace(
                arguments,
                params,
                (),
                "blocked",
                True,
                decision,
                params.limit,
                None,
                scope,
                (),
                0,
                False,
                "",
                "",
                blocked_text(position),
                True,
                tuple(notes),
            )
        per_query = 1.0 if decision.soft_capped else math_min(params.limit, PER_QUERY_CAP)
        effective = pipeline_limit(per_query)
        traces, refresh_count, simulated, event_notes = _run_queries(
            store, ctx, params, queries, per_query, scope, session_db, memory, events_before_id, conn
        )
        notes.extend(event_notes)
    finally:
        if session_db is not None:
            session_db.close()
    output = "\n\n---\n\n".join(q.section for q in traces)
    line = refresh_line_text(refresh_count)
    footer = footer_text(decision, per_query)
    if simulated:
        notes.append(
            "read-only store: stale sources were not re-indexed; the agent would have been served their "
            "new content (rankscope shows the old rows)"
        )
    if not ctx.plugin_mode and params.sort == "timeline":
        notes.append("auto-memory files (CLAUDE.md, memory/*.md) are not searched by rankscope")
    return AgentTrace(
        arguments,
        params,
        (),
        "answered",
        True,
        decision,
        params.limit,
        effective,
        scope,
        tuple(traces),
        refresh_count,
        simulated,
        line,
        footer,
        line + output + footer,
        False,
        tuple(notes),
        per_query,
    )


def _guard_key(ctx: AgentContext, session_db: SessionDb | None) -> str:
    """``currentAttribution()?.sessionId ?? "__default__"``: in plugin mode with
    a session DB, its latest session (whatever this call's scope is)."""
    if not ctx.plugin_mode:
        return DEFAULT_KEY
    if session_db is not None:
        return session_db.latest_session_id() or DEFAULT_KEY
    db = _open_session_db(ctx.session_db)
    if db is None:
        return DEFAULT_KEY
    with db:
        return db.latest_session_id() or DEFAULT_KEY


def _open_session_db(path: str | None) -> SessionDb | None:
    import os

    if not path or not os.path.isfile(path):
        return None
    return SessionDb(path)


def _resolve_scope(ctx: AgentContext, params: ToolParams) -> tuple[ScopeTrace, SessionDb | None]:
    """Plugin mode: ``resolveProjectScope`` and the allow-set; the session DB
    is opened when timeline mode or a project scope needs it."""
    if not ctx.plugin_mode:
        db = _open_session_db(ctx.session_db) if params.sort == "timeline" else None
        if ctx.allow_sessions is not None:
            allow = tuple(dict.fromkeys(ctx.allow_sessions))
            return ScopeTrace("hand-picked", None, None, allow, f"hand-picked allow-set of {len(allow)} session(s)"), db
        return ScopeTrace(
            "none", None, ctx.session_db if db else None, None, "not plugin mode: no session allow-set"
        ), db
    if params.project is None:
        scope: str | None = ctx.plugin_project
        how = f"project scope = the project dir {scope}"
    elif params.project == "global":
        scope = None
        how = 'project: "global": no allow-set (cross-project recall)'
    else:
        scope = params.project
        how = f"project scope = {scope} (the project param)"
    needs_db = params.sort == "timeline" or scope is not None
    db = _open_session_db(ctx.session_db) if needs_db else None
    if scope is None:
        return ScopeTrace("none", None, ctx.session_db if db else None, None, how), db
    if db is None:
        return ScopeTrace("none", scope, None, None, how + f"; no session DB at {ctx.session_db}: no allow-set"), db
    allow = db.session_ids_for_project(scope)
    return ScopeTrace(
        "plugin", scope, db.path, allow, how + f"; allow-set = {len(allow)} session(s) with events of that project"
    ), db


def _run_queries(
    store: Store,
    ctx: AgentContext,
    params: ToolParams,
    queries: list[str],
    per_query: float,
    scope: ScopeTrace,
    session_db: SessionDb | None,
    memory: RefreshMemory,
    events_before_id: int | None,
    conn: sql.Connection | None,
) -> tuple[list[QueryTrace], int, bool, list[str]]:
    """Each query in turn: ``(traces, refresh count, simulated, notes)``."""
    traces: list[QueryTrace] = []
    total = 0
    refresh_count = 0
    simulated = False
    notes: list[str] = []
    limit = pipeline_limit(per_query)
    for i, q in enumerate(queries, 1):
        if total > MAX_TOTAL:
            traces.append(
                QueryTrace(
                    i, q, "output-cap-reached", total, 0, None, None, (), (), (), 0, f"## {q}\n(output cap reached)\n"
                )
            )
            continue
        sp = _search_params(q, limit, params, scope.allow_set, ctx.variant)
        trace = search(store, sp, conn)
        refresh_count, sim = memory.count(trace)
        simulated = simulated or sim
        rowids = [f.candidate.rowid for f in trace.final]
        stamps = _read(store, conn, partial(chunk_timestamps, store, rowids=rowids))
        timeline = None
        events: tuple[EventRow, ...] = ()
        if params.sort == "timeline":
            start = now_iso()
            store_rows = [
                TimelineRow(
                    "current-session",
                    stamps.get(f.candidate.rowid) or start,
                    f.candidate.source,
                    f.candidate.title,
                    f.candidate.content,
                    f.candidate.highlighted,
                    f.candidate.rowid,
                )
                for f in trace.final
            ]
            found, failure = event_rows(
                session_db,
                q,
                per_query,
                _events_filter(ctx, scope),
                params.source,
                params.content_type,
                events_before_id,
            )
            events = tuple(found)
            if failure and failure not in notes:
                notes.append(failure)
            timeline = tuple(merge_timeline(store_rows, list(events), per_query))
            layers = {f.candidate.rowid: f.layer for f in trace.final}
            shown = [r for r in timeline if r.kept]
            results = tuple(
                format_result(
                    j,
                    r.origin,
                    r.timestamp,
                    r.source,
                    r.title,
                    r.content,
                    r.highlighted,
                    q,
                    r.rowid,
                    r.event_id,
                    layers.get(r.rowid, "event") if r.rowid is not None else "event",
                )
                for j, r in enumerate(shown, 1)
            )
        else:
            results = tuple(
                format_result(
                    j,
                    "current-session",
                    stamps.get(f.candidate.rowid),
                    f.candidate.source,
                    f.candidate.title,
                    f.candidate.content,
                    f.candidate.highlighted,
                    q,
                    f.candidate.rowid,
                    None,
                    f.layer,
                )
                for j, f in enumerate(trace.final, 1)
            )
        if not results:
            traces.append(
                QueryTrace(
                    i,
                    q,
                    "no-results",
                    total,
                    0,
                    trace,
                    timeline,
                    events,
                    (),
                    trace.refresh.stale,
                    refresh_count,
                    f"## {q}\nNo results found.",
                )
            )
            continue
        formatted = "\n\n".join(r.text for r in results)
        units = utf16_len(formatted)
        traces.append(
            QueryTrace(
                i,
                q,
                "results",
                total,
                units,
                trace,
                timeline,
                events,
                results,
                trace.refresh.stale,
                refresh_count,
                f"## {q}\n\n{formatted}",
            )
        )
        total += units
    return traces, refresh_count, simulated, notes


def _events_filter(ctx: AgentContext, scope: ScopeTrace) -> str | None:
    """``searchEvents``' project argument: the scope in plugin mode (``None``
    for ``"global"``), else ``getProjectDir() || ""``."""
    if ctx.plugin_mode:
        return scope.project_scope
    return ctx.project_dir or ""
