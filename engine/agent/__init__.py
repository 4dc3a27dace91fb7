"""What the agent received: context-mode's ``ctx_search`` layer over the
traced pipeline, and the agent's own recorded searches.

Pure Python. One module per step: :mod:`.schema` (the tool's input schema),
:mod:`.throttle` (the flood guard), :mod:`.snippet` (``extractSnippet``),
:mod:`.timeline` (``searchAllSources``), :mod:`.sessiondb` (the session DB,
read-only), :mod:`.handler` (the handler itself), :mod:`.session` (a run of
calls), :mod:`.log` (``agent-log``), :mod:`.export` (JSON).

    from engine.agent import ctx_search
    trace = ctx_search(store, {"queries": ["backpressure stall"]})
    trace.text, trace.effective_limit
"""

from .handler import (
    MAX_TOTAL,
    AgentContext,
    AgentTrace,
    QueryTrace,
    RefreshMemory,
    ResultView,
    ScopeTrace,
    ctx_search,
)
from .schema import AgentViewError, SchemaError, SchemaIssue, ToolParams, parse_arguments
from .session import AgentSession
from .sessiondb import RecordedCall, SessionDb, SessionDbError, session_db_for_store
from .snippet import SnippetTrace, extract_snippet
from .throttle import FloodGuard, ThrottleConfig, ThrottleDecision, ThrottlePosition

__all__ = [
    "MAX_TOTAL",
    "AgentContext",
    "AgentSession",
    "AgentTrace",
    "AgentViewError",
    "FloodGuard",
    "QueryTrace",
    "RecordedCall",
    "RefreshMemory",
    "ResultView",
    "SchemaError",
    "SchemaIssue",
    "ScopeTrace",
    "SessionDb",
    "SessionDbError",
    "SnippetTrace",
    "ThrottleConfig",
    "ThrottleDecision",
    "ThrottlePosition",
    "ToolParams",
    "ctx_search",
    "extract_snippet",
    "parse_arguments",
    "session_db_for_store",
]
