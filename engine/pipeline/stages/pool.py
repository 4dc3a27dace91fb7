"""The candidate pool: the first ``pool_size`` fused candidates.

Reference (context-mode ``searchWithFallback``): fusion is asked for
``limit`` keys, or ``max(8 * limit, 40)`` when a session allow-set is given,
so that the session filter has enough to choose from. rankscope keeps the
whole fused list in the fusion stage and makes the cut a stage of its own;
a fused candidate beyond the pool size leaves here with reason ``beyond-pool``.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.pipeline.candidates import Candidate, ChunkRef, Data, Exit
from engine.pipeline.hooks import Asking, Explanation, Item, Items, PassContext, PassView, Reason, Records, RecordStage
from engine.pipeline.hooks import candidates as _candidates
from engine.pipeline.params import SearchParams
from engine.pipeline.stages.fusion import score_words


@dataclass(frozen=True)
class PoolStage:
    """The record: the cut ``pool_size`` (``limit``, ``max(8 * limit, 40)``
    with an allow-set, or the variant's), the ``kept`` candidates
    (``received[:pool_size]``), those ``beyond`` it, and ``elapsed_ms``."""

    pool_size: int
    kept: tuple[Candidate, ...]
    beyond: tuple[Candidate, ...]
    elapsed_ms: float = 0.0


def pool_size_for(params: SearchParams) -> int:
    """Fusion limit: ``max(8 * limit, 40)`` with an allow-set, else ``limit`` (or the variant's override)."""
    v = params.variant
    if params.sessions is not None:
        return v.pool_size_sessions if v.pool_size_sessions is not None else max(params.limit * 8, 40)
    return v.pool_size if v.pool_size is not None else params.limit


def cut_pool(candidates: tuple[Candidate, ...], pool_size: int) -> PoolStage:
    """``candidates[:pool_size]`` and what lies beyond."""
    return PoolStage(pool_size, candidates[:pool_size], candidates[pool_size:])


def _headline(stage: PoolStage, params: SearchParams) -> str:
    """``first 3 of 7 kept (pool size 3); 4 beyond the pool``"""
    total = len(stage.kept) + len(stage.beyond)
    head = f"first {len(stage.kept)} of {total} kept (pool size {stage.pool_size})"
    return head + (f"; {len(stage.beyond)} beyond the pool" if stage.beyond else "")


def _exit(stage: PoolStage, item: Item, position: int | None) -> tuple[str, Data]:
    return "beyond-pool", (("position", position), ("pool_size", stage.pool_size))


def _pool_words(ask: Asking, pool_size: int) -> str:
    p, v = ask.params, ask.params.variant
    if p.sessions is not None:
        if v.pool_size_sessions is not None:
            return f"pool size {pool_size}, set by the variant"
        return f"pool size {pool_size} = max(8 × limit {p.limit}, 40) with a session allow-set"
    if v.pool_size is not None:
        return f"pool size {pool_size}, set by the variant"
    return f"pool size {pool_size} = limit without a session allow-set"


def _explain(ask: Asking, run: PassView, exit: Exit, chunk: ChunkRef) -> Explanation:
    pool = STAGE.get(run)
    cand = next(c for c in pool.beyond if c.rowid == chunk.rowid)
    at, received = exit.get("position"), len(pool.kept) + len(pool.beyond)
    assert isinstance(at, int), exit
    return Explanation(
        chunk,
        exit.stage,
        "beyond-pool",
        f"Fused at #{at} of {received} with {score_words(cand, ask.params.variant.rrf_k)}, but the candidate "
        f"pool keeps the first {pool.pool_size} ({_pool_words(ask, pool.pool_size)}).",
        run.pass_name,
        at,
        {"fused_position": at, "pool_size": pool.pool_size, "score": cand.score, "candidates": received},
    )


def _to_json(run: Records) -> dict[str, object]:
    """``pool`` [{source, title, score}]."""
    return {"pool": [{"source": c.source, "title": c.title, "score": c.score} for c in STAGE.get(run).kept]}


def _step(ctx: PassContext, items: Items) -> PoolStage:
    return cut_pool(_candidates(items), ctx.pool_size)


STAGE = RecordStage(
    id="pool",
    title="Candidate pool",
    short="Pool",
    compact="Pool",
    about=(
        "Fusion keeps the best pool-size keys: the limit, or max(8 × limit, 40)",
        "when a session filter is on, so the filter has enough to choose from.",
    ),
    scope="pass",
    kind="list",
    record=PoolStage,
    step=_step,
    ranked=lambda s: s.kept,
    headline=_headline,
    exit=_exit,
    note=lambda s, pos: "in the pool",
    emptied="the candidate pool was empty",
    reasons={
        "beyond-pool": Reason(
            lambda e: f"beyond the pool (fused #{e.get('position')}, pool {e.get('pool_size')})",
            ("position", "pool_size"),
            lambda e: "beyond pool",
            lambda e, cut: "beyond",
        )
    },
    to_json=_to_json,
    explain=_explain,
)
