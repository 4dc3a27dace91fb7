"""Rank-biased overlap and Jaccard@k (engine/lab/divergence.py) against
independent computations: the definition summed over long extensions of the
lists, a direct transcription of Webber et al. 2010 Eq. (32) with set
operations, and values worked by hand."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.lab.divergence import divergence, jaccard, most_changed_first, rbo


def rbo_by_definition(s: list, t: list, p: float, depth: int = 3000) -> float:
    """Eq. (7): (1 - p) Σ_d p^(d-1) · |S:d ∩ T:d| / d, summed to ``depth`` over
    lists already extended that far."""
    total, weight = 0.0, 1.0
    for d in range(1, depth + 1):
        total += weight * len(set(s[:d]) & set(t[:d])) / d
        weight *= p
    return (1 - p) * total


def rbo_ext_eq32(s: list, t: list, p: float) -> float:
    """Eq. (32) written out term by term with set intersections."""
    if len(s) > len(t):
        s, t = t, s
    sl, ll = len(s), len(t)

    def x(d: int) -> int:
        return len(set(s[: min(d, sl)]) & set(t[:d]))

    first = sum(x(d) / d * p**d for d in range(1, ll + 1))
    second = sum(x(sl) * (d - sl) / (sl * d) * p**d for d in range(sl + 1, ll + 1))
    return (1 - p) / p * (first + second) + ((x(ll) - x(sl)) / ll + x(sl) / sl) * p**ll


def test_identical_disjoint_and_empty_lists():
    assert rbo(list("abcd"), list("abcd")) == pytest.approx(1.0)
    assert rbo(list("abc"), list("xyz")) == 0.0
    assert rbo([], []) == 1.0 and rbo([], ["a"]) == 0.0
    assert jaccard([], []) == 1.0 and jaccard(["a"], []) == 0.0


def test_swapped_top_two_by_hand():
    # X_1 = 0, X_2 = 2, X_3 = 3: (1-p)/p (p^2 + p^3) + p^3 = p
    assert rbo(list("abc"), list("bac"), 0.9) == pytest.approx(0.9)
    assert rbo(list("abc"), list("bac"), 0.5) == pytest.approx(0.5)


def test_uneven_lengths_by_hand():
    # S = [a, b], L = [a, c, b], p = 0.5: X_1 = 1, X_2 = 1 (S:2 ∩ L:2), X_3 = 2 (S ∩ L:3)
    # first sum: 1·0.5 + 1/2·0.25 + 2/3·0.125 = 0.708333...; second: X_2·(3-2)/(2·3)·0.125 = 0.0208333...
    # (1-p)/p = 1; last term ((2 - 1)/3 + 1/2)·0.125 = 0.1041666...: 0.8333...
    assert rbo(["a", "b"], ["a", "c", "b"], 0.5) == pytest.approx(5 / 6)


def test_extrapolation_matches_the_definition_on_lists_that_go_on_agreeing():
    # Eq. (30) assumes the agreement seen at the last rank holds beyond it: two
    # lists of equal length that go on with identical new items satisfy that
    # only when they are conjoint at the end; their infinite RBO is the sum of Eq. (7).
    for s, t in [("abcde", "baedc"), ("abc", "bca"), ("abcdef", "fedcba")]:
        tail = [f"n{i}" for i in range(3000)]
        assert rbo(list(s), list(t), 0.9) == pytest.approx(rbo_by_definition(list(s) + tail, list(t) + tail, 0.9))


items = st.lists(st.sampled_from("abcdefghijklmnop"), max_size=12, unique=True)


@settings(max_examples=300, deadline=None)
@given(items, items, st.sampled_from([0.5, 0.8, 0.9, 0.95]))
def test_agrees_with_eq32_written_out(s, t, p):
    if not s or not t:
        return
    assert rbo(s, t, p) == pytest.approx(min(1.0, max(0.0, rbo_ext_eq32(s, t, p))), abs=1e-12)
    assert rbo(s, t, p) == pytest.approx(rbo(t, s, p))
    assert 0.0 <= rbo(s, t, p) <= 1.0


@settings(max_examples=200, deadline=None)
@given(items, items, st.integers(min_value=1, max_value=12))
def test_jaccard_is_the_set_ratio_of_the_tops(s, t, k):
    a, b = set(s[:k]), set(t[:k])
    expected = len(a & b) / len(a | b) if a | b else 1.0
    assert jaccard(s, t, k) == pytest.approx(expected)


def test_bad_parameters():
    with pytest.raises(ValueError, match="between 0 and 1"):
        rbo(["a"], ["a"], 1.0)
    with pytest.raises(ValueError, match="positive integer"):
        jaccard(["a"], ["a"], 0)


def test_most_changed_first():
    ds = [divergence("abc", "abc"), divergence("abc", "xyz"), None, divergence("abc", "acb"), divergence("abc", "xbc")]
    assert most_changed_first(ds) == [1, 4, 3, 0, 2]
