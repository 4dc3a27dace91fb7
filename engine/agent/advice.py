"""What the agent should have asked: the smallest change to its own
``ctx_search`` call that delivers a chunk it did not receive, found by
re-running the call (never predicted), like the pinned chunk's
counterfactual (:mod:`engine.lab.counterfactual`, which changes pipeline
parameters; these are the agent's).

The changes tried (:data:`KINDS`, least distance first, then this order):

================  ==========================================  ========
kind              the changed call                            distance
================  ==========================================  ========
``array-form``    the same call as call #1 of its throttle    1
                  window (its queries in the array of an
                  earlier call: only when the throttle cut
                  it to 1 result per query or blocked it)
``limit``         ``limit: 2`` (only when ``limit`` < 2 cut   1
                  the results)
``project``       ``project: "global"``, the project of the   1
                  chunk's session, or no ``project`` (plugin
                  mode with an allow-set only)
``no-scope``      no hand-picked session allow-set            1
``source``        no ``source``; the chunk's own label        1 or 2
``contentType``   no ``contentType``; the chunk's own type    1 or 2
``drop-word``     one query with one word dropped             2
``add-word``      one query with one word of the chunk's      2
                  title added (at most :data:`ADDED_WORDS`)
================  ==========================================  ========

A filter the call did not have is a narrowing (distance 2, as in the
counterfactual). When no change delivers the chunk, the answer names the
pipeline stage that drops it for the query where it got furthest
(:func:`engine.lab.why.why_not`), and the counterfactual's smallest
*pipeline* change for that query. Pure Python; no Textual.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterator

from engine.js.strings import js_split_ws, js_to_lower, utf16_len
from engine.lab.counterfactual import Counterfactual, would_return_with
from engine.lab.why import ChunkRef, Explanation, find_chunks, why_not
from engine.pipeline.params import SearchParams
from engine.pipeline.table import depth
from engine.store import sql
from engine.store.stopwords import STOPWORDS
from engine.store.store import Store
from .handler import AgentContext, AgentTrace, ctx_search
from .schema import ToolParams
from .sessiondb import SessionDb
from .throttle import ThrottlePosition

#: The change kinds, in tie-break order.
KINDS = ("array-form", "limit", "project", "no-scope", "source", "contentType", "drop-word", "add-word")
#: Title words tried as an added query word, at most.
ADDED_WORDS = 6
#: Outcome codes (:attr:`Advice.outcome`).
OUTCOMES = ("delivered", "change", "no-change", "not-answered")
#: Changes of these kinds rewrite the arguments object; the others the context or the call number.
SCHEMA_FIELDS = ("queries", "limit", "source", "contentType", "project")
_WORD = re.compile(r"[^\W_]{3,}", re.UNICODE)


@dataclass(frozen=True)
class CallChange:
    """One change to the agent's call.

    Attributes:
        kind: a name from :data:`KINDS`.
        field: the parameter changed (``queries``, ``project``, …) or
            ``call_number`` for the array form.
        value: its new value (``None`` = left out).
        distance: see the module docstring.
        words: the change in words (``project: "global"``).
        arguments: the changed arguments object.
        context: the changed server settings.
        call_number: the call's count in its window with the change.
    """

    kind: str
    field: str
    value: object
    distance: int
    words: str
    arguments: dict[str, Any]
    context: AgentContext
    call_number: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "field": self.field,
            "value": self.value,
            "distance": self.distance,
            "words": self.words,
            "arguments": self.arguments,
            "call_number": self.call_number,
        }


@dataclass(frozen=True)
class Delivery:
    """Where a chunk is in an answer.

    Attributes:
        query_position: 1-based place of the query in ``queries``.
        query: the query text.
        position: 1-based place among that query's results.
        line: 1-based line of the result's ``--- [...] ---`` header in the answer.
        offset: UTF-16 offset of that header in the answer.
    """

    query_position: int
    query: str
    position: int
    line: int
    offset: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "query_position": self.query_position,
            "query": self.query,
            "position": self.position,
            "line": self.line,
            "offset_utf16": self.offset,
        }


@dataclass(frozen=True)
class Advice:
    """The outcome of :func:`should_have_asked`.

    Attributes:
        chunk: the chunk.
        outcome: ``delivered`` (the call delivers it already), ``change``
            (``change`` delivers it), ``no-change`` (nothing tried does),
            ``not-answered`` (the call answers no query: a schema error, no
            queries; the changed call is not looked for).
        delivery: where the chunk is (with ``change`` when there is one).
        change: the smallest change that delivers it, or ``None``.
        tried: every change re-run, in order, with whether it delivered.
        dropped_by: ``no-change`` only: the why-not explanation for the query
            where the chunk got furthest.
        pipeline_change: ``no-change`` only: the counterfactual's smallest
            pipeline change for that query (not something the agent can ask).
        reruns: calls re-run.
    """

    chunk: ChunkRef
    outcome: str
    delivery: Delivery | None = None
    change: CallChange | None = None
    tried: tuple[tuple[CallChange, bool], ...] = ()
    dropped_by: Explanation | None = None
    pipeline_change: Counterfactual | None = None
    reruns: int = 0

    def sentence(self) -> str:
        """The outcome in words."""
        c = self.chunk
        name = f"chunk {c.rowid} ({c.source} :: {c.title})"
        where = ""
        if self.delivery is not None:
            d = self.delivery
            where = f'query {d.query_position} "{d.query}" at #{d.position} (answer line {d.line})'
        if self.outcome == "delivered":
            return f"{name} is delivered already: {where}"
        if self.outcome == "change":
            assert self.change is not None
            return f"{name}: {self.change.words} would deliver it: {where} (proven by re-running the call)"
        if self.outcome == "not-answered":
            return f"{name}: the call answers no query (an error answer); fix the call first"
        drop = self.dropped_by
        stage = f"the pipeline's {drop.stage} stage drops it ({drop.message})" if drop is not None else ""
        return f"{name}: no change to the call returns it; {stage}".rstrip("; ")

    def to_dict(self) -> dict[str, Any]:
        c = self.chunk
        return {
            "rowid": c.rowid,
            "source": c.source,
            "title": c.title,
            "outcome": self.outcome,
            "delivered_at": None if self.delivery is None else self.delivery.to_dict(),
            "change": None if self.change is None else self.change.to_dict(),
            "tried": [dict(ch.to_dict(), delivered=ok) for ch, ok in self.tried],
            "dropped_by": None
            if self.dropped_by is None
            else {
                "stage": self.dropped_by.stage,
                "reason": self.dropped_by.reason,
                "message": self.dropped_by.message,
            },
            "pipeline_change": None if self.pipeline_change is None else self.pipeline_change.to_dict(),
            "reruns": self.reruns,
            "sentence": self.sentence(),
        }


def delivery_of(trace: AgentTrace, rowid: int) -> Delivery | None:
    """Where chunk ``rowid`` is in the answer of ``trace`` (its first
    delivery), or ``None``. Offsets follow the handler's layout: the refresh
    line, sections joined by ``\\n\\n---\\n\\n``, ``## q\\n\\n`` and results
    joined by ``\\n\\n``."""
    before = trace.refresh_line
    for i, q in enumerate(trace.queries):
        head = before + ("\n\n---\n\n" if i else "")
        for r in q.results:
            if r.rowid == rowid:
                prefix = head + f"## {q.query}\n\n" + "".join(x.text + "\n\n" for x in q.results[: r.position - 1])
                return Delivery(q.position, q.query, r.position, prefix.count("\n") + 1, utf16_len(prefix))
        before = head + q.section
    return None


def _words(text: str) -> list[str]:
    return [w for w in js_split_ws(text) if w]


def _changes(
    trace: AgentTrace, arguments: dict[str, Any], ctx: AgentContext, chunk: ChunkRef, chunk_projects: list[str]
) -> Iterator[CallChange]:
    """Every change worth a re-run, least distance first (ties in :data:`KINDS` order)."""
    p: ToolParams = trace.params  # type: ignore[assignment]  # answered calls have params
    count = trace.throttle.count if trace.throttle is not None else 1
    out: list[CallChange] = []

    def add(kind: str, field: str, value: object, distance: int, words: str, **over: object) -> None:
        args = dict(arguments)
        if field in SCHEMA_FIELDS:
            if value is None:
                args.pop(field, None)
            else:
                args[field] = value
        out.append(
            CallChange(
                kind,
                field,
                value,
                distance,
                words,
                args,
                over.get("context", ctx),  # type: ignore[arg-type]
                over.get("call_number", count),  # type: ignore[arg-type]
            )
        )

    if trace.throttle is not None and (trace.throttle.soft_capped or trace.throttle.blocked):
        add(
            "array-form",
            "call_number",
            1,
            1,
            f"its queries in the array of an earlier call (call #1 of the window, not #{count})",
            call_number=1,
        )
    if not (trace.throttle is not None and trace.throttle.soft_capped) and p.limit < 2:
        add("limit", "limit", 2, 1, "limit: 2")
    if ctx.plugin_mode and trace.scope.allow_set is not None:
        if p.project != "global":
            add("project", "project", "global", 1, 'project: "global"')
        for d in chunk_projects:
            if d != trace.scope.project_scope:
                add("project", "project", d, 1, f'project: "{d}" (the project of the chunk\'s session)')
        if p.project is not None:
            add("project", "project", None, 1, "no project (the server's own project)")
    if not ctx.plugin_mode and ctx.allow_sessions is not None:
        add("no-scope", "allow_sessions", None, 1, "no session scope", context=replace(ctx, allow_sessions=None))
    if p.source:
        add("source", "source", None, 1, "no source")
    if p.source != chunk.source:
        add("source", "source", chunk.source, 1 if p.source else 2, f'source: "{chunk.source}"')
    if p.content_type:
        add("contentType", "contentType", None, 1, "no contentType")
    if p.content_type != chunk.content_type:
        add(
            "contentType",
            "contentType",
            chunk.content_type,
            1 if p.content_type else 2,
            f'contentType: "{chunk.content_type}"',
        )
    queries = list(p.queries or ())
    for qi, q in enumerate(queries):
        words = _words(q)
        if len(words) > 1:
            for w in words:
                rest = list(words)
                rest.remove(w)
                new = list(queries)
                new[qi] = " ".join(rest)
                add("drop-word", "queries", new, 2, f'query {qi + 1} without "{w}": "{new[qi]}"')
        have = {js_to_lower(w) for w in words}
        added = 0
        for w in dict.fromkeys(_WORD.findall(chunk.title)):
            low = js_to_lower(w)
            if low in have or low in STOPWORDS or added >= ADDED_WORDS:
                continue
            added += 1
            new = list(queries)
            new[qi] = f"{q} {w}"
            add("add-word", "queries", new, 2, f'query {qi + 1} with "{w}" added: "{new[qi]}"')
    order = {k: i for i, k in enumerate(KINDS)}
    yield from sorted(out, key=lambda c: (c.distance, order[c.kind]))


def _furthest(
    store: Store, trace: AgentTrace, rowid: int, conn: sql.Connection | None = None
) -> tuple[Explanation | None, SearchParams | None]:
    """The why-not explanation of the query where the chunk got furthest, and its search params."""
    best: tuple[int, Explanation, SearchParams] | None = None
    for q in trace.queries:
        if q.search is None:
            continue
        [e] = why_not(store, q.search.params, rowid=rowid, trace=q.search, conn=conn)
        d = depth(e.stage.removeprefix("fuzzy:"))
        if best is None or d > best[0]:
            best = (d, e, q.search.params)
    return (best[1], best[2]) if best else (None, None)


def should_have_asked(
    store: Store,
    arguments: object,
    context: AgentContext | None = None,
    *,
    rowid: int,
    call_number: int = 1,
    position: ThrottlePosition | None = None,
    stop: Callable[[], bool] | None = None,
    conn: sql.Connection | None = None,
) -> Advice:
    """The smallest change to a ``ctx_search`` call that delivers chunk ``rowid``.

    Args:
        store: the content store (read only).
        arguments, context, call_number, position: the call as for
            :func:`~engine.agent.handler.ctx_search`.
        stop: called before each re-run; ``True`` stops (outcome
            ``no-change`` with what was tried so far).
        conn: a connection from ``store.connect()`` for another thread.

    Raises:
        ChunkNotFoundError: no chunk has that row id.
        AgentViewError, StoreError, SessionDbError: as ``ctx_search``.
    """
    ctx = context or AgentContext()
    [chunk] = find_chunks(store, rowid=rowid, conn=conn)
    trace = ctx_search(store, arguments, ctx, call_number=call_number, position=position, conn=conn)
    reruns = 1
    found = delivery_of(trace, rowid)
    if found is not None:
        return Advice(chunk, "delivered", found, reruns=reruns)
    if trace.params is None or trace.outcome in ("schema-error", "empty-index", "no-queries"):
        return Advice(chunk, "not-answered", reruns=reruns)
    base = trace.params.to_arguments()
    projects: list[str] = []
    if ctx.plugin_mode and ctx.session_db and chunk.session_id:
        try:
            with SessionDb(ctx.session_db) as db:
                projects = db.projects_of_session(chunk.session_id)
        except Exception:  # noqa: BLE001 - a missing or damaged session DB only means no such candidate
            projects = []
    tried: list[tuple[CallChange, bool]] = []
    for change in _changes(trace, base, ctx, chunk, projects):
        if stop is not None and stop():
            break
        rerun = ctx_search(store, change.arguments, change.context, call_number=change.call_number, conn=conn)
        reruns += 1
        got = delivery_of(rerun, rowid)
        tried.append((change, got is not None))
        if got is not None:
            return Advice(chunk, "change", got, change, tuple(tried), reruns=reruns)
    dropped, params = _furthest(store, trace, rowid, conn)
    cf = would_return_with(store, params, rowid=rowid, conn=conn, stop=stop) if params is not None else None
    return Advice(chunk, "no-change", None, None, tuple(tried), dropped, cf, reruns)
