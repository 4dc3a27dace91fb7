"""Proximity / title rerank components."""

import pytest

from engine.pipeline.candidates import Candidate
from engine.pipeline.stages.rerank import count_adjacent_pairs, find_all_positions, min_span, rerank


def cand(title, content, ctype="prose", score=0.01, rowid=1):
    return Candidate(f"s::{title}", rowid, "s", title, content, ctype, "", content, score, 1, None, ())


def test_positions_overlap():
    assert find_all_positions("aaaa", "aa") == [0, 1, 2]


def test_min_span_and_pairs():
    assert min_span([[0, 50], [10, 60]]) == 10
    assert min_span([[5]]) == 0
    # "foo foo bar": one right occurrence, counted once
    assert count_adjacent_pairs([[0, 4], [8]], ["foo", "bar"]) == 1


def test_title_boost_weights():
    (code,) = rerank([cand("Cache dir", "x", "code")], ["cache"])
    (prose,) = rerank([cand("Cache dir", "x", "prose")], ["cache"])
    assert code.title_boost == 0.6 * (1 / 1)
    assert prose.title_boost == 0.3 * (1 / 1)
    assert code.min_span is None and code.adjacent_pairs is None


def test_proximity_and_phrase():
    content = "alpha beta gamma"
    (e,) = rerank([cand("t", content)], ["alpha", "beta"])
    assert e.min_span == 6
    assert e.proximity_boost == 1 / (1 + 6 / len(content))
    assert e.adjacent_pairs == 1
    assert e.phrase_boost == 0.5 * min(1, 1 / 4)
    assert e.boost == (e.title_boost + e.proximity_boost) + e.phrase_boost


def test_utf16_offsets():
    # the emoji counts 2 code units, as in JavaScript
    content = "a🚀 alpha beta"
    (e,) = rerank([cand("t", content)], ["alpha", "beta"])
    assert e.min_span == 6
    assert e.proximity_boost == 1 / (1 + 6 / 14)


def test_sort_boost_then_fused_score_then_input_order():
    a = cand("none", "x", score=0.02, rowid=1)
    b = cand("cache", "x", score=0.01, rowid=2)
    c = cand("other", "x", score=0.03, rowid=3)
    got = rerank([a, b, c], ["cache"])
    assert [e.candidate.rowid for e in got] == [2, 3, 1]
    assert [(e.old_position, e.new_position) for e in got] == [(2, 1), (3, 2), (1, 3)]


# A chunk titled "ꟋTAG registry" (U+A7CB, Unicode 16.0) and the query
# "ɤtag registry". The content puts a second, lower-case "ɤtag" 71 code units
# after "registry", so lowering with Unicode 14.0 tables (Python 3.11's
# str.lower, which leaves U+A7CB alone) finds one title hit and the far
# occurrence only: title_hits 1, boost 0.15 + 1/(1 + 71/105) = 0.747. The
# reference (Node, Unicode 17.0) lowers U+A7CB to U+0264: title_hits 2,
# boost 0.3 + 1/(1 + 5/105) + 0.125 = 1.380.
RAMS_HORN_DOC = (
    "# \ua7cbTAG registry\n\n"
    "Every reserved build name is listed once and owners sign the \u0264tag column, then the date.\n"
)


def test_unicode_17_title_rerank_like_the_reference(store):
    from engine import SearchParams, search

    store.index_text("codenames.md", RAMS_HORN_DOC, "markdown")
    rerank_stage = search(store, SearchParams("\u0264tag registry")).first.rerank
    assert rerank_stage.terms == ("\u0264tag", "registry")
    (e,) = rerank_stage.entries
    assert e.candidate.title == "\ua7cbTAG registry"
    assert (e.title_hits, e.title_boost, e.min_span, e.adjacent_pairs) == (2, 0.3, 5, 1)
    assert e.proximity_boost == 1 / (1 + 5 / 105)
    assert e.boost == (0.3 + 1 / (1 + 5 / 105)) + 0.125
    assert round(e.boost, 3) == 1.380
    # Typed with the capital, the query lowers to the same terms.
    typed = search(store, SearchParams("\ua7cbTAG registry")).first.rerank
    assert typed.terms == rerank_stage.terms and typed.entries[0].boost == e.boost


def test_unicode_17_rerank_case_fails_with_python_lower(store, monkeypatch):
    """The case above exercises the bug: Python's own (older) tables give the
    figures the reference disagreed with."""
    import unicodedata

    import engine.pipeline.stages.rerank as rerank_module
    from engine import SearchParams, search

    if unicodedata.unidata_version >= "16":
        pytest.skip(f"this Python's str.lower knows U+A7CB (Unicode {unicodedata.unidata_version})")
    store.index_text("codenames.md", RAMS_HORN_DOC, "markdown")
    monkeypatch.setattr(rerank_module, "js_to_lower", str.lower)
    (e,) = search(store, SearchParams("\u0264tag registry")).first.rerank.entries
    assert (e.title_hits, e.min_span, e.adjacent_pairs, round(e.boost, 3)) == (1, 71, 0, 0.747)


def test_unicode_17_vocabulary_stores_lowered_rams_horn(store):
    store.index_text("codenames.md", RAMS_HORN_DOC, "markdown")
    words = [w for (w,) in store.conn.execute("SELECT word FROM vocabulary ORDER BY rowid")]
    assert words[:2] == ["\u0264tag", "registry"]
    assert not any("\ua7cb" in w for w in words)


def _positions_one_by_one(text: str, term: str) -> list[int]:
    out, idx = [], text.find(term)
    while idx != -1:
        out.append(idx)
        idx = text.find(term, idx + 1)
    return out


def _sweep(lists: list[list[int]]) -> float:
    ptrs, best = [0] * len(lists), float("inf")
    while True:
        vals = [lst[p] for lst, p in zip(lists, ptrs)]
        best = min(best, max(vals) - min(vals))
        i = vals.index(min(vals))
        ptrs[i] += 1
        if ptrs[i] >= len(lists[i]):
            return best


def _pairs_one_by_one(lists: list[list[int]], terms: list[str], gap: int = 30) -> int:
    total = 0
    for i in range(min(len(lists), len(terms)) - 1):
        left, right, j = lists[i], lists[i + 1], 0
        for p in left:
            lo = p + len(terms[i])
            while j < len(right) and right[j] < lo:
                j += 1
            if j < len(right) and right[j] <= lo + gap:
                total += 1
                j += 1
    return total


def test_the_fast_position_span_and_pair_counts_equal_the_plain_ones():
    """The split-based positions, the bisection span for two terms and the
    bisecting pair count (fast on a chunk of megabytes) give what the plain
    occurrence-by-occurrence forms give, self-overlapping terms included."""
    import random

    rng = random.Random(4)
    alphabet = "ab c"
    terms_pool = ["a", "ab", "aa", "aba", "b c", "abab", "c", "ba", "aaa"]
    for _ in range(1500):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 160)))
        terms = rng.sample(terms_pool, rng.randint(1, 7))
        positions = [find_all_positions(text, t) for t in terms]
        assert positions == [_positions_one_by_one(text, t) for t in terms], (text, terms)
        if all(positions):
            assert min_span(positions) == _sweep(positions), (text, terms)
            for gap in (0, 3, 30):
                got = count_adjacent_pairs(positions, terms, gap)
                assert got == _pairs_one_by_one(positions, terms, gap), (text, terms, gap)
