"""The trim: the filtered candidates cut to ``limit`` (reference: the
``slice(0, limit)`` after the session filter).

With the reference order the rerank then reorders the trimmed list; with the
variant ``rerank=before-trim`` the trim cuts the reranked list instead.

As the ``trim`` pass stage (:data:`HOOKS`), a candidate below the cut
leaves with reason ``trimmed``.
"""

from __future__ import annotations

from engine.pipeline.trace import Candidate, Exit, SearchParams, TrimStage
from engine.pipeline.hooks import PassContext, StageHooks


def trim(candidates: tuple[Candidate, ...], limit: int) -> TrimStage:
    """``candidates[:limit]`` and what was cut."""
    return TrimStage(limit, candidates[:limit], candidates[limit:])


# ─── as a pass stage ─────────────────────────────────────────────────────


def step(ctx: PassContext, items: tuple) -> TrimStage:
    """Cut the received list at ``ctx.params.limit``."""
    return trim(tuple(items), ctx.params.limit)


def ranked(stage: TrimStage) -> tuple[Candidate, ...]:
    """The kept candidates, in the received order."""
    return stage.kept


def headline(stage: TrimStage, params: SearchParams) -> str:
    """``kept 3 (limit 3), cut 5``"""
    return f"kept {len(stage.kept)} (limit {stage.limit}), cut {len(stage.cut)}"


def exit_of(stage: TrimStage, item: Candidate, position: int | None) -> tuple[str, tuple[tuple[str, object], ...]]:
    """``trimmed`` with ``position`` (1-based, in the received list) and ``limit``."""
    return "trimmed", (("position", position), ("limit", stage.limit))


def _trimmed(e: Exit) -> str:
    return f"cut by the trim (#{e.get('position')} > limit {e.get('limit')})"


HOOKS = StageHooks(
    step=step,
    ranked=ranked,
    headline=headline,
    exit=exit_of,
    sentences={"trimmed": _trimmed},
    data_names={"trimmed": ("position", "limit")},
)
