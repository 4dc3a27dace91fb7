"""Reciprocal rank fusion (Cormack, Clarke & Buettcher 2009, "Reciprocal Rank
Fusion outperforms Condorcet and individual Rank Learning Methods").

Reference behaviour (context-mode ``#rrfSearch``): walk the Porter run, then
the trigram run; the hit at 1-based rank ``r`` adds ``1 / (rrf_k + r)`` to
its key. Keys are ``source::title``: two chunks sharing both merge, the first
one seen keeps its row and the other vanishes. Sort by score descending;
ties keep first-seen order (a stable sort).
"""

from __future__ import annotations

from .model import RRF_K, Candidate, Contribution, Hit, RetrieverRun


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
            highlighted=first_hit[k].highlighted,
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
