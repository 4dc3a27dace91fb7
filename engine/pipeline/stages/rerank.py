"""Proximity / title rerank (reference ``#applyProximityReranking``).

For each candidate, with ``terms`` from :func:`engine.pipeline.query.rerank_terms`:

* title boost ``w * hits / len(terms)``; ``hits`` counts terms that are
  substrings of the lower-cased title; ``w`` is 0.6 for code, 0.3 for prose;
* with 2+ terms all present in the lower-cased content: proximity boost
  ``1 / (1 + min_span / max(len(content), 1))`` and phrase boost
  ``0.5 * min(1, adjacent_pairs / 4)``.

Offsets and lengths are UTF-16 code units (JavaScript ``indexOf`` and
``length``): content and terms are converted with
:func:`engine.js.strings.utf16_units` before searching. Sort: boost descending,
then fused score descending, then input order. This is a rerank score, not BM25.

As the ``rerank`` pass stage (:data:`HOOKS`) it reorders and drops nothing.
"""

from __future__ import annotations

from bisect import bisect_left
from itertools import accumulate

from engine.js.strings import js_to_lower, utf16_units
from engine.pipeline.trace import Candidate, RerankEntry, RerankStage, SearchParams
from engine.pipeline.query import rerank_terms
from engine.pipeline.hooks import PassContext, StageHooks
from engine.pipeline.words import abbreviate, plural

#: Title weight for code and prose chunks.
TITLE_WEIGHT = {"code": 0.6, "prose": 0.3}
#: Right term must start within this many code units after the left term ends.
PHRASE_GAP = 30


def find_all_positions(text: str, term: str) -> list[int]:
    """Every start offset of ``term`` in ``text`` (overlaps allowed), ascending.

    A term none of whose proper prefixes is also its suffix cannot overlap
    itself, so its occurrences are those ``str.split`` cuts at, and their
    offsets are summed in C (a 10 MB chunk holds hundreds of thousands of
    occurrences); any other term is found occurrence by occurrence."""
    n = len(term)
    if n and not any(term[:i] == term[n - i :] for i in range(1, n)):
        parts = text.split(term)
        return [end - n for end in accumulate(map(n.__add__, map(len, parts[:-1])))]
    out: list[int] = []
    idx = text.find(term)
    while idx != -1:
        out.append(idx)
        idx = text.find(term, idx + 1)
    return out


def min_span(position_lists: list[list[int]]) -> float:
    """Smallest window (first start to last start) holding one position of
    every list (each ascending); ``inf`` for no lists, 0 for one. Two lists:
    the smallest distance between a position of one and the nearest of the
    other (found by bisection); more: a sweep advancing the list at the
    current minimum."""
    if not position_lists:
        return float("inf")
    if len(position_lists) == 1:
        return 0
    if len(position_lists) == 2:
        short, long_ = sorted(position_lists, key=len)
        best2: float = float("inf")
        last = len(long_) - 1
        for p in short:
            i = bisect_left(long_, p)
            if i <= last and long_[i] - p < best2:
                best2 = long_[i] - p
            if i and p - long_[i - 1] < best2:
                best2 = p - long_[i - 1]
        return best2
    ptrs = [0] * len(position_lists)
    best = float("inf")
    while True:
        cur_min, cur_max, min_idx = float("inf"), float("-inf"), 0
        for i, lst in enumerate(position_lists):
            val = lst[ptrs[i]]
            if val < cur_min:
                cur_min, min_idx = val, i
            if val > cur_max:
                cur_max = val
        best = min(best, cur_max - cur_min)
        ptrs[min_idx] += 1
        if ptrs[min_idx] >= len(position_lists[min_idx]):
            return best


def count_adjacent_pairs(position_lists: list[list[int]], terms: list[str], gap: int = PHRASE_GAP) -> int:
    """For each consecutive term pair, left occurrences followed by an unused
    right occurrence starting within ``gap`` units after the left one ends."""
    if len(position_lists) < 2 or len(terms) < 2:
        return 0
    total = 0
    for i in range(min(len(position_lists), len(terms)) - 1):
        left, right = position_lists[i], position_lists[i + 1]
        left_len = len(terms[i])
        n_right = len(right)
        j = 0
        for p in left:
            lo = p + left_len
            j = bisect_left(right, lo, j)
            if j < n_right and right[j] <= lo + gap:
                total += 1
                j += 1
    return total


def score_candidate(
    candidate: Candidate, terms: list[str]
) -> tuple[int, float, float, float, float, int | None, int | None]:
    """``(title_hits, title_boost, proximity_boost, phrase_boost, boost, min_span, adjacent_pairs)``."""
    title = js_to_lower(candidate.title)
    hits = sum(1 for t in terms if t in title)
    weight = TITLE_WEIGHT["code"] if candidate.content_type == "code" else TITLE_WEIGHT["prose"]
    title_boost: float = weight * (hits / len(terms)) if hits > 0 else 0
    proximity: float = 0
    phrase: float = 0
    span: int | None = None
    pairs: int | None = None
    if len(terms) >= 2:
        content = utf16_units(js_to_lower(candidate.content))
        unit_terms = [utf16_units(t) for t in terms]
        positions = [find_all_positions(content, t) for t in unit_terms]
        if all(positions):
            span = int(min_span(positions))  # every list is non-empty: a whole number of units
            proximity = 1 / (1 + span / max(len(content), 1))
            pairs = count_adjacent_pairs(positions, unit_terms)
            phrase = 0.5 * min(1, pairs / 4)
    boost = title_boost + proximity + phrase
    return hits, title_boost, proximity, phrase, boost, span, pairs


def rerank(candidates: tuple[Candidate, ...] | list[Candidate], terms: list[str]) -> tuple[RerankEntry, ...]:
    """Rerank ``candidates`` (already in fused order) by boost.

    Returns:
        One :class:`RerankEntry` per candidate, in the new order, with old
        and new 1-based positions. With no terms every boost is 0 and the
        order is unchanged.
    """
    scored = []
    for index, cand in enumerate(candidates):
        if terms:
            parts = score_candidate(cand, terms)
        else:
            parts = (0, 0, 0, 0, 0, None, None)
        scored.append((index, cand, parts))
    scored.sort(key=lambda item: (-item[2][4], -item[1].score))
    return tuple(
        RerankEntry(
            candidate=cand,
            title_hits=parts[0],
            title_boost=parts[1],
            proximity_boost=parts[2],
            phrase_boost=parts[3],
            boost=parts[4],
            min_span=parts[5],
            adjacent_pairs=parts[6],
            old_position=index + 1,
            new_position=new + 1,
        )
        for new, (index, cand, parts) in enumerate(scored)
    )


# ─── as a pass stage ─────────────────────────────────────────────────────


def step(ctx: PassContext, items: tuple) -> RerankStage:
    """Rerank the received list with the terms of ``ctx.query``."""
    terms = rerank_terms(ctx.query)
    return RerankStage(ctx.query, tuple(terms), rerank(tuple(items), terms))


def ranked(stage: RerankStage) -> tuple[Candidate, ...]:
    """The candidates in their new order."""
    return tuple(e.candidate for e in stage.entries)


def headline(stage: RerankStage, params: SearchParams) -> str:
    """``terms [cache miss]: 2 results moved``"""
    moved = sum(1 for e in stage.entries if e.moved)
    terms = abbreviate(" ".join(stage.terms)) or "(none)"
    return f"terms [{terms}]: {plural(moved, 'result')} moved"


HOOKS = StageHooks(step=step, ranked=ranked, headline=headline)
