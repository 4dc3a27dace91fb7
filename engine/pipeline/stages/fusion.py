"""Reciprocal rank fusion (Cormack, Clarke & Buettcher 2009, "Reciprocal Rank
Fusion outperforms Condorcet and individual Rank Learning Methods").

Reference behaviour (context-mode ``#rrfSearch``): walk the Porter run, then
the trigram run; the hit at 1-based rank ``r`` adds ``1 / (rrf_k + r)`` to
its key. Keys are ``source::title``: two chunks sharing both merge, the first
one seen keeps its row and the other vanishes. Sort by score descending;
ties keep first-seen order (a stable sort).

As the ``fusion`` stage (:data:`STAGE`), a retrieved row that is not in
the fused list leaves here with reason ``merged``.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.pipeline.candidates import ChunkRef, Data, Exit, Candidate, Contribution, Hit
from engine.pipeline.hooks import Asking, Explanation, Item, Items, PassContext, PassView, Reason, Records, RecordStage
from engine.pipeline.params import SearchParams
from engine.pipeline.stages.retrieve import RetrieverRun
from engine.pipeline.variants import RRF_K
from engine.pipeline.words import number, plural


@dataclass(frozen=True)
class FusionStage:
    """The record: RRF constant ``rrf_k``, every fused key as ``candidates``
    (score descending, ties in first-seen order), ``elapsed_ms``."""

    rrf_k: int
    candidates: tuple[Candidate, ...]
    elapsed_ms: float = 0.0


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


def fuse(
    runs: list[RetrieverRun] | tuple[RetrieverRun, ...], rrf_k: int = RRF_K, key_mode: str = "source-title"
) -> tuple[Candidate, ...]:
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


# ─── as a stage ──────────────────────────────────────────────────────────


def _step(ctx: PassContext, items: Items) -> FusionStage:
    """Fuse the pass's retriever runs (in table order: Porter first) with the variant's k and key."""
    v = ctx.params.variant
    runs = [r for r in ctx.records.values() if isinstance(r, RetrieverRun)]
    return FusionStage(v.rrf_k, fuse(runs, v.rrf_k, v.fusion_key))


def _headline(stage: FusionStage, params: SearchParams) -> str:
    """``7 keys fused (k=60); 3 found by both retrievers; 1 chunk merged away ...``"""
    merged = [c for c in stage.candidates if c.merged_rowids]
    both = sum(1 for c in stage.candidates if c.porter_rank and c.trigram_rank)
    head = f"{plural(len(stage.candidates), 'key')} fused (k={stage.rrf_k}); {both} found by both retrievers"
    if merged:
        swallowed = sum(len(c.merged_rowids) for c in merged)
        head += f"; {plural(swallowed, 'chunk')} merged away by source::title collisions"
    return head


def _exit(stage: FusionStage, item: Item, position: int | None) -> tuple[str, Data]:
    """``merged`` with ``into_rowid`` (the kept row), ``into_position`` (its
    fused position) and ``key``.

    Raises:
        LookupError: no candidate holds the row (cannot happen for a row a retriever of this pass returned).
    """
    for i, c in enumerate(stage.candidates, 1):
        if item.rowid in c.merged_rowids:
            return "merged", (("into_rowid", c.rowid), ("into_position", i), ("key", c.key))
    raise LookupError(f"row {item.rowid} is neither fused nor merged")


def score_words(cand: Candidate, rrf_k: int) -> str:
    """``RRF score 0.032787 = 1/(60+1) + 1/(60+2)``."""
    return f"RRF score {number(cand.score)} = " + " + ".join(f"1/({rrf_k}+{c.rank})" for c in cand.contributions)


def _explain(ask: Asking, run: PassView, exit: Exit, chunk: ChunkRef) -> Explanation:
    """The merge: the kept row, the chunk's own contributions, and (followed
    once) what became of the kept row."""
    fusion = STAGE.get(run)
    kept_pos = exit.get("into_position")
    assert isinstance(kept_pos, int), exit
    kept = fusion.candidates[kept_pos - 1]
    own = [c for c in kept.contributions if c.rowid == chunk.rowid]
    own_words = "; ".join(
        f"{'Porter' if c.retriever == 'porter' else 'trigram'} rank {c.rank}: 1/({fusion.rrf_k}+{c.rank})" for c in own
    )
    details: dict[str, object] = {
        "kept_rowid": kept.rowid,
        "kept_key": kept.key,
        "kept_fused_position": kept_pos,
        "contributions": [{"retriever": c.retriever, "rank": c.rank, "value": c.value} for c in own],
    }
    fate = ""
    sub = ask.follow(ChunkRef.from_candidate(kept), run)
    if sub is not None and sub.returned:
        fate = f" Row {kept.rowid} was returned at #{sub.position}."
        details["kept_outcome"] = sub.reason
    elif sub is not None:
        fate = f" Row {kept.rowid} itself {sub.message[:1].lower()}{sub.message[1:]}"
        details["kept_outcome"] = sub.reason
    return Explanation(
        chunk,
        exit.stage,
        "merged",
        f"Fusion merged it into row {kept.rowid} ({kept.title!r}): both have the key {kept.key!r} and the first "
        f"row seen keeps it. Its contributions ({own_words}) went into row {kept.rowid}'s score "
        f"{number(kept.score)} (fused #{kept_pos}).{fate}",
        run.pass_name,
        None,
        details,
    )


def _to_json(run: Records) -> dict[str, object]:
    """``fused`` [{source, title, score, porter_rank, trigram_rank, key_collision,
    rowid, merged_rowids, contributions [{retriever, rank, rowid, value}]}]."""
    return {"fused": [_fused_json(c) for c in STAGE.get(run).candidates]}


def _fused_json(c: Candidate) -> dict[str, object]:
    return {
        "source": c.source,
        "title": c.title,
        "score": c.score,
        "porter_rank": c.porter_rank,
        "trigram_rank": c.trigram_rank,
        "key_collision": c.key_collision,
        "rowid": c.rowid,
        "merged_rowids": list(c.merged_rowids),
        "contributions": [
            {"retriever": x.retriever, "rank": x.rank, "rowid": x.rowid, "value": x.value} for x in c.contributions
        ],
    }


STAGE = RecordStage(
    id="fusion",
    title="Fusion (RRF)",
    short="Fused",
    compact="Fus",
    about=(
        "Reciprocal rank fusion: a row at position p in a list adds 1/(60 + p) to its key.",
        "Keys are source::title, so chunks sharing a heading merge (⚠ collision): the first row wins.",
    ),
    scope="pass",
    kind="list",
    record=FusionStage,
    step=_step,
    ranked=lambda s: s.candidates,
    headline=_headline,
    exit=_exit,
    note=lambda s, pos: f"score {s.candidates[pos - 1].score:.6f}",
    reasons={
        "merged": Reason(
            lambda e: f"merged into row {e.get('into_rowid')} (same source::title)",
            ("into_rowid", "into_position", "key"),
            lambda e: f"merged→{e.get('into_rowid')}",
            lambda e, cut: f"→{e.get('into_rowid')}",
        )
    },
    to_json=_to_json,
    explain=_explain,
)
