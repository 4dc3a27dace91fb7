"""Reciprocal rank fusion (Cormack, Clarke & Buettcher 2009, "Reciprocal Rank
Fusion outperforms Condorcet and individual Rank Learning Methods").

Reference behaviour (context-mode ``#rrfSearch``): walk the Porter run, then
the trigram run; the hit at 1-based rank ``r`` adds ``1 / (rrf_k + r)`` to
its key. Keys are ``source::title``: two chunks sharing both merge, the first
one seen keeps its row and the other vanishes. Sort by score descending;
ties keep first-seen order (a stable sort).

As the ``fusion`` pass stage (:data:`HOOKS`), a retrieved row that is not in
the fused list leaves here with reason ``merged``.
"""

from __future__ import annotations

from engine.pipeline.trace import RRF_K, Candidate, Contribution, Exit, FusionStage, Hit, RetrieverRun, SearchParams
from engine.pipeline.hooks import PassContext, StageHooks
from engine.pipeline.words import plural


def fusion_key(hit: Hit, mode: str = "source-title") -> str:
    """``source::title`` (reference) or ``#rowid`` (variant ``rowid``).

    Raises:
        ValueError: unknown mode.
    """
    if mode == "source-title":
        return hit.key
    if mode == "rowid":
        return f"#{hit.rowid}"
    raise ValueError(f"fusion key must be 'source-title' or 'rowid'; got {mode!r}")


def rrf_contribution(rank: int, rrf_k: int = RRF_K) -> float:
    """``1 / (rrf_k + rank)`` for a 1-based ``rank``."""
    return 1.0 / (rrf_k + rank)


def fuse(runs: list[RetrieverRun], rrf_k: int = RRF_K, key_mode: str = "source-title") -> tuple[Candidate, ...]:
    """Fuse runs (in the given order) into candidates sorted by summed score.

    Returns:
        Every key, highest score first, ties in first-seen order. Scores are
        accumulated in run order, then rank order, exactly as the reference
        adds them, so floats match bit for bit.
    """
    order: list[str] = []
    first_hit: dict[str, Hit] = {}
    scores: dict[str, float] = {}
    contribs: dict[str, list[Contribution]] = {}
    firsts: dict[str, dict[str, int]] = {}
    merged: dict[str, list[int]] = {}
    for run in runs:
        for hit in run.hits:
            k = fusion_key(hit, key_mode)
            value = rrf_contribution(hit.rank, rrf_k)
            if k in scores:
                scores[k] += value
                if hit.rowid != first_hit[k].rowid and hit.rowid not in merged[k]:
                    merged[k].append(hit.rowid)
            else:
                order.append(k)
                first_hit[k] = hit
                scores[k] = value
                contribs[k] = []
                firsts[k] = {}
                merged[k] = []
            contribs[k].append(Contribution(run.name, hit.rank, hit.rowid, value))
            firsts[k].setdefault(run.name, hit.rank)
    candidates = [
        Candidate(
            key=k,
            rowid=first_hit[k].rowid,
            source=first_hit[k].source,
            title=first_hit[k].title,
            content=first_hit[k].content,
            content_type=first_hit[k].content_type,
            session_id=first_hit[k].session_id,
            marked=first_hit[k].marked,
            score=scores[k],
            porter_rank=firsts[k].get("porter"),
            trigram_rank=firsts[k].get("trigram"),
            contributions=tuple(contribs[k]),
            merged_rowids=tuple(merged[k]),
        )
        for k in order
    ]
    candidates.sort(key=lambda c: -c.score)  # stable: ties stay in first-seen order
    return tuple(candidates)


# ─── as a pass stage ─────────────────────────────────────────────────────


def step(ctx: PassContext, items: tuple) -> FusionStage:
    """Fuse the pass's retriever runs (Porter first) with the variant's k and key."""
    v = ctx.params.variant
    return FusionStage(v.rrf_k, fuse(list(ctx.retrievers), v.rrf_k, v.fusion_key))


def ranked(stage: FusionStage) -> tuple[Candidate, ...]:
    """Every fused candidate, best first."""
    return stage.candidates


def headline(stage: FusionStage, params: SearchParams) -> str:
    """``7 keys fused (k=60); 3 found by both retrievers; 1 chunk merged away ...``"""
    merged = [c for c in stage.candidates if c.merged_rowids]
    both = sum(1 for c in stage.candidates if c.porter_rank and c.trigram_rank)
    head = f"{plural(len(stage.candidates), 'key')} fused (k={stage.rrf_k}); {both} found by both retrievers"
    if merged:
        swallowed = sum(len(c.merged_rowids) for c in merged)
        head += f"; {plural(swallowed, 'chunk')} merged away by source::title collisions"
    return head


def exit_of(stage: FusionStage, item: Hit, position: int | None) -> tuple[str, tuple[tuple[str, object], ...]]:
    """A retrieved row missing from the fused list was merged into the
    candidate whose ``merged_rowids`` holds it: ``merged`` with
    ``into_rowid`` (the kept row), ``into_position`` (its 1-based fused
    position) and ``key`` (the shared fusion key).

    Raises:
        LookupError: no candidate holds the row (cannot happen for a row a
            retriever of this pass returned).
    """
    for i, c in enumerate(stage.candidates, 1):
        if item.rowid in c.merged_rowids:
            return "merged", (("into_rowid", c.rowid), ("into_position", i), ("key", c.key))
    raise LookupError(f"row {item.rowid} is neither fused nor merged")


def _merged(e: Exit) -> str:
    return f"merged into row {e.get('into_rowid')} (same source::title)"


HOOKS = StageHooks(
    step=step,
    ranked=ranked,
    headline=headline,
    exit=exit_of,
    sentences={"merged": _merged},
    data_names={"merged": ("into_rowid", "into_position", "key")},
)
