"""The candidate pool: the first ``pool_size`` fused candidates.

Reference (context-mode ``searchWithFallback``): fusion is asked for
``limit`` keys, or ``max(8 * limit, 40)`` when a session allow-set is given,
so that the session filter has enough to choose from. rankscope keeps the
whole fused list in the fusion stage and makes the cut a stage of its own.

As the ``pool`` pass stage (:data:`HOOKS`), a fused candidate beyond the
pool size leaves with reason ``beyond-pool``.
"""

from __future__ import annotations

from engine.pipeline.trace import Candidate, Exit, PoolStage, SearchParams
from engine.pipeline.hooks import PassContext, StageHooks


def pool_size_for(params: SearchParams) -> int:
    """Fusion limit: ``max(8 * limit, 40)`` with an allow-set, else ``limit``
    (or the variant's override)."""
    v = params.variant
    if params.sessions is not None:
        return v.pool_size_sessions if v.pool_size_sessions is not None else max(params.limit * 8, 40)
    return v.pool_size if v.pool_size is not None else params.limit


def cut_pool(candidates: tuple[Candidate, ...], pool_size: int) -> PoolStage:
    """``candidates[:pool_size]`` and what lies beyond."""
    return PoolStage(pool_size, candidates[:pool_size], candidates[pool_size:])


# ─── as a pass stage ─────────────────────────────────────────────────────


def step(ctx: PassContext, items: tuple) -> PoolStage:
    """Cut the fused list at the search's pool size."""
    return cut_pool(tuple(items), ctx.pool_size)


def ranked(stage: PoolStage) -> tuple[Candidate, ...]:
    """The pooled candidates, in fused order."""
    return stage.kept


def headline(stage: PoolStage, params: SearchParams) -> str:
    """``first 3 of 7 kept (pool size 3); 4 beyond the pool``"""
    total = len(stage.kept) + len(stage.beyond)
    head = f"first {len(stage.kept)} of {total} kept (pool size {stage.pool_size})"
    return head + (f"; {len(stage.beyond)} beyond the pool" if stage.beyond else "")


def exit_of(stage: PoolStage, item: Candidate, position: int | None) -> tuple[str, tuple[tuple[str, object], ...]]:
    """``beyond-pool`` with ``position`` (1-based, in the fused list) and ``pool_size``."""
    return "beyond-pool", (("position", position), ("pool_size", stage.pool_size))


def _beyond_pool(e: Exit) -> str:
    return f"beyond the pool (fused #{e.get('position')}, pool {e.get('pool_size')})"


HOOKS = StageHooks(
    step=step,
    ranked=ranked,
    headline=headline,
    exit=exit_of,
    sentences={"beyond-pool": _beyond_pool},
    data_names={"beyond-pool": ("position", "pool_size")},
)
