"""Proximity / title rerank components."""

from engine.model import Candidate
from engine.rerank import count_adjacent_pairs, find_all_positions, min_span, rerank


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
