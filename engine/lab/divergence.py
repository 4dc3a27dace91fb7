"""How far apart two ranked lists are: rank-biased overlap and Jaccard@k.

* **RBO** (rank-biased overlap): W. Webber, A. Moffat and J. Zobel, "A
  similarity measure for indefinite rankings", ACM TOIS 28(4), article 20,
  2010 (doi:10.1145/1852102.1852106). :func:`rbo` is the extrapolated point
  estimate ``RBO_ext`` of Eq. (32), which handles lists of different lengths
  (Eq. (30) when they are equally long). 1.0 means the same list, 0.0 no shared
  item; ``p`` is the persistence (0 < p < 1; with 0.9 the first 10 ranks carry
  about 86% of the weight, Eq. (21)).
* **Jaccard@k**: ``|A_k ∩ B_k| / |A_k ∪ B_k|`` over the top ``k`` of each list.

Both lists are sequences of distinct hashable items, best first (a repeated
item counts at its first rank). Two empty lists are identical (1.0); an empty
and a non-empty list share nothing (0.0). The PyPI package ``rbo`` was judged
and not used: its last release (0.1.3, 2023) pins ``numpy<2`` and prints to
standard output.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Hashable, Sequence

#: RBO persistence used when none is given.
DEFAULT_P = 0.9
#: Jaccard depth used when none is given.
DEFAULT_K = 10


def _distinct(items: Sequence[Hashable]) -> list[Hashable]:
    return list(dict.fromkeys(items))


def check_p(p: float) -> float:
    """``p`` when 0 < p < 1. Raises:
    ValueError: otherwise (names the value)."""
    if not (isinstance(p, (int, float)) and not isinstance(p, bool) and 0.0 < p < 1.0):
        raise ValueError(f"RBO persistence p must be between 0 and 1 (exclusive); got {p!r}")
    return float(p)


def rbo(a: Sequence[Hashable], b: Sequence[Hashable], p: float = DEFAULT_P) -> float:
    """``RBO_ext`` of Webber et al. 2010, Eq. (32), in [0, 1].

    With ``S`` the shorter list (length ``s``), ``L`` the longer (``l``) and
    ``X_d`` the overlap of their first ``d`` items (``S`` whole once ``d > s``)::

        RBO_ext = (1 - p) / p * ( sum_{d=1..l} X_d / d * p^d
                                  + sum_{d=s+1..l} X_s * (d - s) / (s * d) * p^d )
                  + ( (X_l - X_s) / l + X_s / s ) * p^l

    Raises:
        ValueError: ``p`` outside (0, 1).
    """
    check_p(p)
    x, y = _distinct(a), _distinct(b)
    if not x and not y:
        return 1.0
    if not x or not y:
        return 0.0
    short, long_ = (x, y) if len(x) <= len(y) else (y, x)
    s, n_l = len(short), len(long_)
    seen_s: set[Hashable] = set()
    seen_l: set[Hashable] = set()
    overlap = 0  # X_d
    total = 0.0
    x_s = 0
    weight = 1.0  # p^d
    for d in range(1, n_l + 1):
        weight *= p
        item_l = long_[d - 1]
        if d <= s:
            item_s = short[d - 1]
            if item_s == item_l:
                overlap += 1
            else:
                overlap += (item_s in seen_l) + (item_l in seen_s)
            seen_s.add(item_s)
            if d == s:
                x_s = overlap
        else:
            overlap += item_l in seen_s
        seen_l.add(item_l)
        total += overlap / d * weight
        if d > s:
            total += x_s * (d - s) / (s * d) * weight
    value = (1 - p) / p * total + ((overlap - x_s) / n_l + x_s / s) * weight
    return min(1.0, max(0.0, value))


def check_k(k: int) -> int:
    """``k`` when it is an integer >= 1. Raises:
    ValueError: otherwise (names the value)."""
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"Jaccard depth k must be a positive integer; got {k!r}")
    return k


def jaccard(a: Sequence[Hashable], b: Sequence[Hashable], k: int = DEFAULT_K) -> float:
    """Jaccard@k: shared items over all items of the two top-``k`` lists.

    Raises:
        ValueError: ``k`` below 1.
    """
    check_k(k)
    x, y = set(_distinct(a)[:k]), set(_distinct(b)[:k])
    union = x | y
    return len(x & y) / len(union) if union else 1.0


@dataclass(frozen=True)
class Divergence:
    """Two final lists compared: ``rbo`` (:func:`rbo`, persistence ``p``) and
    ``jaccard`` (:func:`jaccard` at depth ``k``)."""

    rbo: float
    jaccard: float
    p: float
    k: int

    def to_dict(self) -> dict[str, float]:
        """``{"rbo", "jaccard"}``."""
        return {"rbo": self.rbo, "jaccard": self.jaccard}


def divergence(a: Sequence[Hashable], b: Sequence[Hashable], p: float = DEFAULT_P, k: int = DEFAULT_K) -> Divergence:
    """:class:`Divergence` of ``a`` and ``b``. Raises:
    ValueError: a bad ``p`` or ``k``."""
    return Divergence(rbo(a, b, p), jaccard(a, b, k), p, k)


def most_changed_first(keys: Sequence[Divergence | None]) -> list[int]:
    """Indices of ``keys`` ordered most changed first: lowest RBO, then
    lowest Jaccard, then the given order (``None`` last)."""

    def order(i: int) -> tuple[bool, float, float, int]:
        d = keys[i]
        return (True, 0.0, 0.0, i) if d is None else (False, d.rbo, d.jaccard, i)

    return sorted(range(len(keys)), key=order)
