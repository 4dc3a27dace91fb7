"""JSON form of an :class:`~engine.agent.AgentTrace` (``rankscope ctx-search --json``).

Shape (offsets and lengths in UTF-16 code units, positions 1-based)::

    {"text", "is_error", "outcome", "effective_limit", "requested_limit",
     "per_query_limit" (the server's JavaScript number; null when infinite), "per_query_limit_text" (its String()),
     "params": {queries, limit, source, contentType, sort, project, stripped, coercions} | null,
     "schema_issues": [{field, path, code, message}],
     "throttle": {count, how, window_ms, soft_after, block_after, soft_capped, blocked, warning} | null,
     "scope": {mode, project_scope, session_db, allow_set, reason},
     "refresh": {count, simulated, line}, "footer", "notes",
     "queries": [{query, position, status, total_before, block_units, refresh_stale, refresh_count,
                  "trace": <engine trace_to_dict> | null, "timeline": [...] | null,
                  "results": [{position, rowid, event_id, origin, timestamp, time_shown, source, title, layer,
                               "snippet": {windows, source_of_positions, mode, planned_windows, positions,
                                           marker_spans, unseen_matches, fallback_ran, terms, content_units,
                                           text},
                               matched_outside_snippet, no_match_in_text}]}],
     "waste": {repeats: [{rowid, source, title, deliveries: [{query_position, position}], repeated_units,
                          repeated_bytes}], repeated_units, repeated_bytes,
               matches_outside_snippet: [{query_position, position, rowid}], cap_units_used, cap_units,
               cap_share, queries_capped} | null}

``snippet.windows`` are the content ranges the agent saw (the slices after
the 1500-unit budget; ``[[0, length]]`` for a whole chunk, ``[[0, 1500]]``
for a prefix); ``planned_windows`` are the merged windows before the budget.
Text values may hold lone surrogates; write them with :func:`js_json`-style
escaping (``tui.present.fmt.json_text`` does).
"""

from __future__ import annotations

from collections.abc import Iterable

from engine.pipeline.export import trace_to_dict
from engine.js.numbers import number_to_string

from .handler import AgentTrace, QueryTrace, ResultView
from .waste import waste


def _pairs(spans: Iterable[tuple[int, int]]) -> list[list[int]]:
    return [[int(a), int(b)] for a, b in spans]


def result_to_dict(r: ResultView) -> dict[str, object]:
    s = r.snippet
    return {
        "position": r.position,
        "rowid": r.rowid,
        "event_id": r.event_id,
        "origin": r.origin,
        "timestamp": r.timestamp,
        "time_shown": r.time_shown,
        "source": r.source,
        "title": r.title,
        "layer": r.layer,
        "snippet": {
            "windows": _pairs(s.shown),
            "source_of_positions": s.source_of_positions,
            "mode": s.mode,
            "planned_windows": _pairs(s.windows),
            "positions": list(s.positions),
            "marker_spans": _pairs(s.marker_spans),
            "unseen_matches": _pairs(s.unseen_matches),
            "fallback_ran": s.fallback_ran,
            "terms": list(s.terms),
            "content_units": s.content_units,
            "text": s.text,
        },
        "matched_outside_snippet": r.matched_outside_snippet,
        "no_match_in_text": r.no_match_in_text,
    }


def query_to_dict(q: QueryTrace) -> dict[str, object]:
    return {
        "query": q.query,
        "position": q.position,
        "status": q.status,
        "total_before": q.total_before,
        "block_units": q.block_units,
        "refresh_stale": list(q.refresh_stale),
        "refresh_count": q.refresh_count,
        "trace": trace_to_dict(q.search) if q.search is not None else None,
        "timeline": None
        if q.timeline is None
        else [
            {
                "origin": t.origin,
                "timestamp": t.timestamp,
                "source": t.source,
                "title": t.title,
                "rowid": t.rowid,
                "event_id": t.event_id,
                "kept": t.kept,
            }
            for t in q.timeline
        ],
        "results": [result_to_dict(r) for r in q.results],
    }


def agent_trace_to_dict(t: AgentTrace) -> dict[str, object]:
    """The whole call as JSON-ready data (see the module docstring)."""
    p = t.params
    th = t.throttle
    return {
        "text": t.text,
        "is_error": t.is_error,
        "outcome": t.outcome,
        "effective_limit": t.effective_limit,
        "requested_limit": t.requested_limit,
        "per_query_limit": t.per_query_limit,
        "per_query_limit_text": None if t.per_query_limit is None else number_to_string(t.per_query_limit),
        "params": None
        if p is None
        else {
            "queries": None if p.queries is None else list(p.queries),
            "limit": p.limit,
            "source": p.source,
            "contentType": p.content_type,
            "sort": p.sort,
            "project": p.project,
            "stripped": list(p.stripped),
            "coercions": list(p.coercions),
        },
        "schema_issues": [
            {"field": i.field, "path": list(i.path), "code": i.code, "message": i.message} for i in t.issues
        ],
        "throttle": None
        if th is None
        else {
            "count": th.count,
            "how": th.position.how,
            "window_ms": th.config.window_ms,
            "soft_after": th.config.soft_after,
            "block_after": th.config.block_after,
            "soft_capped": th.soft_capped,
            "blocked": th.blocked,
            "warning": th.warning,
            "config_notes": list(th.config.notes),
        },
        "scope": {
            "mode": t.scope.mode,
            "project_scope": t.scope.project_scope,
            "session_db": t.scope.session_db,
            "allow_set": None if t.scope.allow_set is None else list(t.scope.allow_set),
            "reason": t.scope.reason,
        },
        "refresh": {"count": t.refresh_count, "simulated": t.refresh_simulated, "line": t.refresh_line},
        "footer": t.footer,
        "notes": list(t.notes),
        "queries": [query_to_dict(q) for q in t.queries],
        "waste": waste(t).to_dict() if t.outcome == "answered" else None,
    }
