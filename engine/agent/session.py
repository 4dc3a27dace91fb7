"""A run of ``ctx_search`` calls in one server process (throttle counted,
refreshes remembered), e.g. to replay an agent's searches in order."""

from __future__ import annotations

import time

from engine.store.store import Store
from .handler import AgentContext, AgentTrace, RefreshMemory, ctx_search
from .throttle import FloodGuard


class AgentSession:
    """One context-mode server process over one store.

    Each :meth:`call` goes through the same :class:`FloodGuard` (so the
    throttle position is counted, not given) and the same refresh memory.
    """

    def __init__(self, store: Store, context: AgentContext | None = None):
        self.store = store
        self.context = context or AgentContext()
        self.guard = FloodGuard(self.context.throttle)
        self.refresh = RefreshMemory()
        self.calls: list[AgentTrace] = []

    def call(
        self,
        arguments: object,
        now_ms: float | None = None,
        *,
        guard_key: str | None = None,
        events_before_id: int | None = None,
    ) -> AgentTrace:
        """Answer one call at ``now_ms`` (epoch ms; default now)."""
        trace = ctx_search(
            self.store,
            arguments,
            self.context,
            guard=self.guard,
            now_ms=time.time() * 1000 if now_ms is None else now_ms,
            guard_key=guard_key,
            refresh_memory=self.refresh,
            events_before_id=events_before_id,
        )
        self.calls.append(trace)
        return trace
