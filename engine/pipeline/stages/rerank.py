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

As the ``rerank`` stage (:data:`STAGE`) it reorders and drops nothing;
why-not says ``outranked`` of a returned chunk it moved down.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable
from dataclasses import dataclass
from functools import partial
from itertools import accumulate, compress
from operator import add, le, lt, sub

from engine.js.strings import js_to_lower, utf16_units
from engine.pipeline.candidates import Candidate, ChunkRef
from engine.pipeline.hooks import Asking, Explanation, Items, PassContext, PassView, Records, RecordStage, answer_facts
from engine.pipeline.hooks import candidates as _candidates
from engine.pipeline.params import SearchParams
from engine.pipeline.query import rerank_terms
from engine.pipeline.words import abbreviate, number, plural


@dataclass(frozen=True)
class RerankEntry:
    """Rerank components of one candidate.

    Attributes:
        candidate: the fused candidate.
        title_hits: terms found as substrings of the lower-cased title.
        title_boost: ``w * title_hits / len(terms)``, w = 0.6 code / 0.3 prose.
        proximity_boost: ``1 / (1 + min_span / len(content))`` (UTF-16 units).
        phrase_boost: ``0.5 * min(1, adjacent_pairs / 4)``.
        boost: ``(title_boost + proximity_boost) + phrase_boost``.
        min_span: smallest window (start of first to start of last term),
            ``None`` with fewer than two terms or a term missing.
        adjacent_pairs: ordered term pairs within 30 code units, or ``None``.
        old_position / new_position: 1-based positions before / after the rerank.
    """

    candidate: Candidate
    title_hits: int
    title_boost: float
    proximity_boost: float
    phrase_boost: float
    boost: float
    min_span: int | None
    adjacent_pairs: int | None
    old_position: int
    new_position: int

    @property
    def moved(self) -> int:
        """Positions gained (positive = moved up)."""
        return self.old_position - self.new_position


@dataclass(frozen=True)
class RerankStage:
    """The record: the ``query`` the ``terms`` came from (the corrected text
    in a fuzzy re-run), one entry per received candidate in the **new**
    order, and ``elapsed_ms``."""

    query: str
    terms: tuple[str, ...]
    entries: tuple[RerankEntry, ...]
    elapsed_ms: float = 0.0


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
        # start of occurrence i: the parts before it and i terms; summed in C
        found = list(accumulate(map(n.__add__, map(len, parts[:-1])), initial=-n))
        del found[0]
        return found
    out: list[int] = []
    idx = text.find(term)
    while idx != -1:
        out.append(idx)
        idx = text.find(term, idx + 1)
    return out


#: Up to this many terms besides the rarest, :func:`min_span` tries every
#: left/right choice at once for all anchors (2 ** n passes in C); more
#: terms go anchor by anchor.
SPAN_COMBINATIONS_MAX = 5


def min_span(position_lists: list[list[int]]) -> float:
    """Smallest window (first start to last start) holding one position of
    every list (each ascending); ``inf`` for no lists or an empty one, 0
    for one list.

    A window holding one position ``a`` of the shortest list holds, for
    every other list, its nearest position at or before ``a`` or its
    nearest at or after ``a`` (whichever side it holds a position on, the
    nearest one there is in the window too). So the smallest window is the
    smallest, over every ``a`` and every choice of side per list, of the
    farthest left neighbour taken plus the farthest right one: work in the
    shortest list's length times the choices, done in C (``map``,
    ``bisect``) rather than a step per position (a 10 MB chunk holds
    hundreds of thousands). The value equals the reference's sweep."""
    if not position_lists:
        return float("inf")
    if len(position_lists) == 1:
        return 0
    order = sorted(range(len(position_lists)), key=lambda i: len(position_lists[i]))
    anchor = position_lists[order[0]]
    others = [position_lists[i] for i in order[1:]]
    if not anchor or not all(others):
        return float("inf")
    lefts: list[list[int]] = []
    rights: list[list[int]] = []
    for other in others:
        padded = [-_FAR, *other, _FAR]  # int sentinels: comparisons stay int to int
        at = list(map(partial(bisect_left, padded), anchor))  # first position >= a (index in padded, >= 1)
        rights.append(list(map(sub, map(padded.__getitem__, at), anchor)))
        lefts.append(list(map(sub, anchor, map(padded.__getitem__, map((-1).__add__, at)))))
    n = len(others)
    if n > SPAN_COMBINATIONS_MAX:
        best = _span_anchor_by_anchor(lefts, rights)
    else:
        best = _FAR
        for mask in range(1 << n):  # bit j: list j takes its left neighbour
            taken_left = [lefts[j] for j in range(n) if mask >> j & 1]
            taken_right = [rights[j] for j in range(n) if not mask >> j & 1]
            sides = [_farthest(taken) for taken in (taken_left, taken_right) if taken]
            found = min(sides[0] if len(sides) == 1 else map(add, *sides))
            if found < best:
                best = found
    return best if best < _FAR else float("inf")


#: Beyond any position (a missing neighbour is this far away).
_FAR = 1 << 62


def _farthest(columns: list[list[int]]) -> Iterable[int]:
    """Per anchor, the largest of the ``columns``' values."""
    return columns[0] if len(columns) == 1 else map(max, *columns)


def _span_anchor_by_anchor(lefts: list[list[int]], rights: list[list[int]]) -> int:
    """:func:`min_span` for many lists: per anchor, the left neighbour for
    the lists whose left one is nearest and the right one for the rest (the
    best choice is such a split)."""
    best = _FAR
    for sides in zip(*(zip(ls, rs) for ls, rs in zip(lefts, rights))):
        ordered = sorted(sides)
        rights_after = [0] * (len(ordered) + 1)
        for t in range(len(ordered) - 1, -1, -1):
            rights_after[t] = max(rights_after[t + 1], ordered[t][1])
        span = rights_after[0]
        for t, (left, _) in enumerate(ordered):
            span = min(span, left + rights_after[t + 1])
        best = min(best, span)
    return best


def count_adjacent_pairs(position_lists: list[list[int]], terms: list[str], gap: int = PHRASE_GAP) -> int:
    """For each consecutive term pair, left occurrences followed by an unused
    right occurrence starting within ``gap`` units after the left one ends
    (each left occurrence takes the first right one at or after its end).

    Each left occurrence's first right candidate is found by bisection, all
    at once in C; when no right occurrence is wanted by two left ones, that
    is the answer, else the occurrences are walked one by one."""
    if len(position_lists) < 2 or len(terms) < 2:
        return 0
    total = 0
    for i in range(min(len(position_lists), len(terms)) - 1):
        left, right = position_lists[i], position_lists[i + 1]
        if not left or not right:
            continue
        ends = list(map(len(terms[i]).__add__, left))
        first = list(map(partial(bisect_left, right), ends))
        padded = [*right, _FAR]
        near = list(map(le, map(padded.__getitem__, first), map(gap.__add__, ends)))
        taken = list(compress(first, near))
        if all(map(lt, taken, taken[1:])):
            total += len(taken)
            continue
        n_right = len(right)
        j = 0
        for lo in ends:
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


# ─── as a stage ──────────────────────────────────────────────────────────


def _step(ctx: PassContext, items: Items) -> RerankStage:
    """Rerank the received list with the terms of ``ctx.query``."""
    terms = rerank_terms(ctx.query)
    return RerankStage(ctx.query, tuple(terms), rerank(_candidates(items), terms))


def _headline(stage: RerankStage, params: SearchParams) -> str:
    """``terms [cache miss]: 2 results moved``"""
    moved = sum(1 for e in stage.entries if e.moved)
    terms = abbreviate(" ".join(stage.terms)) or "(none)"
    return f"terms [{terms}]: {plural(moved, 'result')} moved"


def _note(stage: RerankStage, pos: int) -> str:
    e = stage.entries[pos - 1]
    arrow = "↑" if e.moved > 0 else "↓" if e.moved < 0 else "="
    return f"{e.old_position} → {e.new_position} {arrow} (boost {e.boost:.4f})"


def _parts(e: RerankEntry) -> str:
    return f"title {number(e.title_boost)} + proximity {number(e.proximity_boost)} + phrase {number(e.phrase_boost)}"


def _kept(ask: Asking, run: PassView, chunk: ChunkRef, position: int) -> Explanation | None:
    """``outranked``: a returned chunk the rerank moved down, and the rows that passed it."""
    stage, result = STAGE.of(run), ask.result(chunk.rowid)
    entry = next((e for e in stage.entries if e.candidate.rowid == chunk.rowid), None) if stage else None
    if stage is None or entry is None or result is None or entry.new_position <= entry.old_position:
        return None
    beaten = [e for e in stage.entries if e.new_position < entry.new_position and e.old_position > entry.old_position]
    details = answer_facts(result)
    details.update(
        {
            "fused_position": entry.old_position,
            "rerank_position": entry.new_position,
            "boost_parts": {
                "title": entry.title_boost,
                "proximity": entry.proximity_boost,
                "phrase": entry.phrase_boost,
            },
            "beaten_by": [
                {
                    "rowid": e.candidate.rowid,
                    "title": e.candidate.title,
                    "boost": e.boost,
                    "title_boost": e.title_boost,
                    "proximity_boost": e.proximity_boost,
                    "phrase_boost": e.phrase_boost,
                    "fused_position": e.old_position,
                    "rerank_position": e.new_position,
                }
                for e in beaten
            ],
        }
    )
    by = "; ".join(
        f"#{e.new_position} {e.candidate.title!r} (fused #{e.old_position}) boost {number(e.boost)} = {_parts(e)}"
        for e in beaten
    )
    return Explanation(
        chunk,
        run.prefix + "rerank",
        "outranked",
        f"{ask.returned_words(position)}, but the rerank moved it down from fused #{entry.old_position}: its boost "
        f"{number(entry.boost)} ({_parts(entry)}) lost to {by}.",
        run.pass_name,
        position,
        details,
        returned=True,
    )


def _to_json(run: Records) -> dict[str, object]:
    """``rerank``: {terms, results [{source, title, content_type, title_hits,
    title_boost, proximity_boost, phrase_boost, boost, min_span,
    adjacent_pairs, old_position, new_position}]}, or null when it did not run."""
    r = STAGE.of(run)
    if r is None:
        return {"rerank": None}
    results = [
        {
            "source": e.candidate.source,
            "title": e.candidate.title,
            "content_type": e.candidate.content_type,
            "title_hits": e.title_hits,
            "title_boost": e.title_boost,
            "proximity_boost": e.proximity_boost,
            "phrase_boost": e.phrase_boost,
            "boost": e.boost,
            "min_span": e.min_span,
            "adjacent_pairs": e.adjacent_pairs,
            "old_position": e.old_position,
            "new_position": e.new_position,
        }
        for e in r.entries
    ]
    return {"rerank": {"terms": list(r.terms), "results": results}}


STAGE = RecordStage(
    id="rerank",
    title="Rerank",
    short="Rerank",
    compact="Rrk",
    about=(
        "Title hits (0.6 for code, 0.3 for prose), term proximity and adjacent phrases add a boost;",
        "results are re-sorted by it (↑ moved up, ↓ down, = stayed).",
    ),
    scope="pass",
    kind="list",
    record=RerankStage,
    step=_step,
    ranked=lambda s: tuple(e.candidate for e in s.entries),
    headline=_headline,
    note=_note,
    answers=("outranked",),
    to_json=_to_json,
    kept=_kept,
)
