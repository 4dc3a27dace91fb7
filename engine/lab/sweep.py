"""Sweeps and N-way comparisons: a query file under many variants at once.

* A **sweep axis** is one setting of the variant table and the values it
  takes (``rrf_k=10,30,60,100``): the keys and values are the table's
  (:data:`engine.pipeline.variants.SETTINGS`); several axes form a grid (their
  product), at most :data:`MAX_VARIANTS` variants in all. Each point is the
  base variant (``--a``, the reference by default) with the axis values set,
  named by them (``rrf_k=10`` or ``rrf_k=10,rerank=off``). Named variants
  (``NAME=SPEC``) join them.
* The **reference** is the base variant: the point equal to it when the grid
  has one, else it is added first, named ``reference`` (or by its spec).
* **Runs are shared.** Each query runs under every variant before the next
  query, through one run-cache handle (:class:`engine.pipeline.runcache.RunCache`,
  exact: same row count), variants that share every retriever run
  (:func:`engine.pipeline.variants.shares_runs`: the settings whose ``affects``
  is ``retrieve``) one after another: a variant that only changes later stages
  (the fusion, the pool, the rerank, the fuzzy fallback) runs no FTS5
  statement of its own. Only the first variant of a query checks the
  store's freshness: every variant of a query sees the same data. The traces
  carry no candidate paths (the evaluation reads the stages' lists only).
* **Significance** against the reference on each measure at one stage
  (``final`` by default): the paired two-sided t-test
  (``scipy.stats.ttest_rel``) or the Wilcoxon signed-rank test
  (``scipy.stats.wilcoxon``), with Holm's step-down correction for multiple
  comparisons (``statsmodels.stats.multitest.multipletests(method="holm")``)
  over the variants compared on that measure. A comparison with no difference
  to test has no p-value and is left out of the correction.
* **Divergence** of each variant's final list from the reference's, per query:
  :mod:`engine.lab.divergence` (RBO and Jaccard@k).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Mapping, Sequence

from engine.lab.compare import params_for_entry
from engine.lab.divergence import DEFAULT_K, DEFAULT_P, Divergence, divergence
from engine.lab.evaluation import (
    DEFAULT_DEPTH,
    TIE_EPSILON,
    SetEval,
    evaluate_traces,
    mean,
    paired_tests,
    ranked_ids,
)
from engine.lab.qrels import Qrels, entry_id
from engine.pipeline.run import search
from engine.pipeline.runcache import RunCache
from engine.pipeline.trace import Trace
from engine.pipeline.variants import BY_KEY, SPEC_KEYS, Setting, Variant, parse_variant, shares_runs, variant_spec
from engine.store.chunkids import ChunkIds
from engine.store.store import Store

#: Most variants one evaluation runs (a grid past it is refused).
MAX_VARIANTS = 64
#: The tests :func:`versus_reference` offers.
TESTS = ("t", "wilcoxon")
Test = Literal["t", "wilcoxon"]
#: Adjusted p-values below this mark a variant as significantly different.
ALPHA = 0.05


# ─── the variants ────────────────────────────────────────────────────────


@dataclass(frozen=True)
class Axis:
    """One ``--sweep``: a setting (its row of the variant table) and its values."""

    setting: Setting
    values: tuple[str | int | None, ...]


def parse_axis(text: str) -> Axis:
    """``"rrf_k=10,30,60"`` as an :class:`Axis` (key any case, ``-`` for ``_``;
    values as the row parses them, ``default`` for an optional size).

    Raises:
        ValueError: no ``=``, an unknown key, no value, a value the row refuses
            or a value given twice (the message names them and the choices).
    """
    key, eq, rest = text.partition("=")
    if not eq:
        raise ValueError(f"{text!r} is not KEY=V1,V2,...; keys: {', '.join(SPEC_KEYS)}")
    key = key.strip().lower().replace("-", "_")
    row = BY_KEY.get(key)
    if row is None:
        raise ValueError(f"unknown setting {key!r}; keys: {', '.join(SPEC_KEYS)}")
    parts = [p.strip() for p in rest.split(",") if p.strip()]
    if not parts:
        allowed = ", ".join(row.choices) if row.choices else "non-negative integers"
        raise ValueError(f"{key}: no value given (allowed: {allowed})")
    values: list[str | int | None] = []
    for part in parts:
        value = row.parse(part)
        if value in values:
            raise ValueError(f"{key}: value {part!r} given twice")
        values.append(value)
    return Axis(row, tuple(values))


def _words(value: object) -> str:
    return "default" if value is None else str(value)


def grid(base: Variant, axes: Sequence[Axis]) -> list[tuple[str, Variant]]:
    """Every point of the axes' product over ``base``, named by its values
    (``"rrf_k=10,rerank=off"``: a spec of the changes), in axis order.

    Raises:
        ValueError: two axes of one setting, or more than :data:`MAX_VARIANTS` points.
    """
    keys = [a.setting.key for a in axes]
    twice = {k for k in keys if keys.count(k) > 1}
    if twice:
        raise ValueError(f"--sweep {', '.join(sorted(twice))} given twice: give each setting's values once")
    size = math.prod(len(a.values) for a in axes)
    if size > MAX_VARIANTS:
        shape = " × ".join(str(len(a.values)) for a in axes)
        raise ValueError(
            f"the sweep has {shape} = {size} variants; at most {MAX_VARIANTS} run at once "
            "(fewer values per --sweep, or several sweeps)"
        )
    out: list[tuple[str, Variant]] = []
    for point in itertools.product(*(a.values for a in axes)):
        changes: dict[str, Any] = {a.setting.name: v for a, v in zip(axes, point)}  # each checked by its row
        name = ",".join(f"{a.setting.key}={_words(v)}" for a, v in zip(axes, point))
        out.append((name, replace(base, **changes)))
    return out


def parse_named(text: str) -> tuple[str, Variant]:
    """``"NAME=SPEC"`` (``big-pool=pool=10,rerank=before-trim``) as ``(name, variant)``.

    Raises:
        ValueError: no name, a name with ``,`` or spaces, or a bad spec.
    """
    name, eq, spec = text.partition("=")
    name = name.strip()
    if not eq or not name:
        raise ValueError(f"{text!r} is not NAME=SPEC (e.g. big-pool=pool=10,rerank=before-trim)")
    if any(c in name for c in ", \t"):
        raise ValueError(f"variant name {name!r} must not hold commas or spaces")
    try:
        return name, parse_variant(spec)
    except ValueError as exc:
        hint = (
            f" (a name comes first: e.g. {name}-{spec.strip() or 'x'}={text})"
            if name.lower().replace("-", "_") in BY_KEY
            else ""
        )
        raise ValueError(f"variant {name!r}: {exc}{hint}") from None


@dataclass(frozen=True)
class VariantSet:
    """The variants of one evaluation, the reference first.

    Attributes:
        variants: ``(name, variant)`` in run order; names are distinct.
        reference: the reference's name.
    """

    variants: tuple[tuple[str, Variant], ...]
    reference: str

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(n for n, _ in self.variants)


def variant_set(base: Variant, axes: Sequence[Axis] = (), named: Sequence[tuple[str, Variant]] = ()) -> VariantSet:
    """The grid of ``axes`` over ``base``, then ``named``; the point equal to
    ``base`` is the reference, else ``base`` is added first (named
    ``reference``, or by its spec when it is not the reference pipeline).

    Raises:
        ValueError: a name given twice, or more than :data:`MAX_VARIANTS` variants in all.
    """
    points = grid(base, axes) if axes else []
    items = points + list(named)
    names = [n for n, _ in items]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"variant name {twice[0]!r} given twice")
    ref = next((n for n, v in points if v == base), None)
    if ref is None:
        ref = "reference" if base.is_reference else variant_spec(base)
        if ref in names:
            raise ValueError(f"variant name {ref!r} is the reference's; choose another")
        items.insert(0, (ref, base))
    else:
        items.sort(key=lambda nv: nv[0] != ref)
    if len(items) > MAX_VARIANTS:
        raise ValueError(
            f"{len(items)} variants; at most {MAX_VARIANTS} run at once (fewer values per --sweep or fewer --variant)"
        )
    return VariantSet(tuple(items), ref)


# ─── running ─────────────────────────────────────────────────────────────


@dataclass(frozen=True)
class RunStats:
    """What running a variant set cost.

    Attributes:
        searches: searches run (queries × variants).
        retriever_runs: retriever runs fetched (FTS5 statements run: cache misses).
        reused: retriever runs answered from the run cache.
        groups: groups of variants that share every retriever run.
    """

    searches: int
    retriever_runs: int
    reused: int
    groups: int

    def to_dict(self) -> dict[str, int]:
        """``{searches, retriever_runs, reused, groups}``."""
        return {
            "searches": self.searches,
            "retriever_runs": self.retriever_runs,
            "reused": self.reused,
            "groups": self.groups,
        }


def run_groups(variants: Sequence[tuple[str, Variant]]) -> list[list[int]]:
    """Indices of ``variants`` grouped by :func:`shares_runs`, groups in
    order of their first member."""
    groups: list[list[int]] = []
    for i, (_, v) in enumerate(variants):
        for g in groups:
            if shares_runs(variants[g[0]][1], v):
                g.append(i)
                break
        else:
            groups.append([i])
    return groups


def run_variants(
    store: Store, entries: Sequence[Mapping[str, Any]], variants: Sequence[tuple[str, Variant]]
) -> tuple[dict[str, list[tuple[str, Trace]]], RunStats]:
    """Search every query-file entry under every variant (see the module
    docstring: one query at a time, runs shared).

    Returns:
        ``({name: [(query id, trace)] in file order}, cost)``.

    Raises:
        ValueError: a bad entry (all are validated before any search runs).
    """
    params = [[params_for_entry(e, v, i) for _, v in variants] for i, e in enumerate(entries)]
    groups = run_groups(variants)
    order = [i for g in groups for i in g]
    runs = RunCache(store, exact=True)
    out: dict[str, list[tuple[str, Trace]]] = {name: [] for name, _ in variants}
    for i, (entry, per_variant) in enumerate(zip(entries, params)):
        qid = entry_id(entry, i)
        traces: dict[int, Trace] = {}
        for n, j in enumerate(order):
            traces[j] = search(store, per_variant[j], runs=runs, refresh=n == 0, paths=False)
        for j, (name, _) in enumerate(variants):
            out[name].append((qid, traces[j]))
    return out, RunStats(len(entries) * len(variants), runs.misses, runs.hits, len(groups))


# ─── comparing ───────────────────────────────────────────────────────────


@dataclass(frozen=True)
class Versus:
    """One variant against the reference on one measure at the tested stage.

    Attributes:
        measure: the measure name.
        delta: mean of the variant minus mean of the reference.
        improved / worsened / tied: judged queries where the variant scores
            higher / lower / the same (within :data:`TIE_EPSILON`).
        p: the test's two-sided p-value (``None``: no difference to test).
        p_adjusted: ``p`` after Holm's correction (``None`` with ``p``).
    """

    measure: str
    delta: float
    improved: int
    worsened: int
    tied: int
    p: float | None
    p_adjusted: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """``{p, p_adjusted, delta, improved, worsened, tied}``."""
        return {
            "p": self.p,
            "p_adjusted": self.p_adjusted,
            "delta": self.delta,
            "improved": self.improved,
            "worsened": self.worsened,
            "tied": self.tied,
        }

    @property
    def significant(self) -> bool:
        """Holm-adjusted p below :data:`ALPHA`."""
        return self.p_adjusted is not None and self.p_adjusted < ALPHA


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm-adjusted p-values, in the given order
    (``statsmodels.stats.multitest.multipletests(method="holm")``)."""
    if not pvalues:
        return []
    from statsmodels.stats.multitest import multipletests

    return [float(p) for p in multipletests(list(pvalues), method="holm")[1]]


def versus(ref: Sequence[float], other: Sequence[float], measure: str, test: Test = "t") -> Versus:
    """:class:`Versus` of paired per-query values (no correction yet)."""
    improved = sum(1 for x, y in zip(ref, other) if y - x > TIE_EPSILON)
    worsened = sum(1 for x, y in zip(ref, other) if x - y > TIE_EPSILON)
    p_t, p_w = paired_tests(ref, other)
    return Versus(
        measure,
        mean(other) - mean(ref),
        improved,
        worsened,
        len(ref) - improved - worsened,
        p_t if test == "t" else p_w,
    )


@dataclass(frozen=True)
class VariantEval:
    """One variant of a :class:`SweepEval`.

    Attributes:
        name / variant: as given.
        eval: its :class:`~engine.lab.evaluation.SetEval`.
        versus: ``{measure: Versus}`` against the reference (empty for the reference).
        divergence: ``{query id: Divergence}`` of its final list from the
            reference's, for every query of the file.
    """

    name: str
    variant: Variant
    eval: SetEval
    versus: dict[str, Versus] = field(default_factory=dict)
    divergence: dict[str, Divergence] = field(default_factory=dict)


@dataclass(frozen=True)
class SweepEval:
    """A query file under several variants.

    Attributes:
        reference: the reference's name.
        variants: one :class:`VariantEval` each, the reference first.
        stage: the stage the tests ran on.
        test: ``"t"`` or ``"wilcoxon"``.
        measures: measure names.
        stats: what running cost (:class:`RunStats`).
        p / k: RBO persistence and Jaccard depth of ``divergence``.
    """

    reference: str
    variants: tuple[VariantEval, ...]
    stage: str
    test: Test
    measures: tuple[str, ...]
    stats: RunStats
    p: float = DEFAULT_P
    k: int = DEFAULT_K

    def by_name(self, name: str) -> VariantEval:
        """The variant named ``name``. Raises:
        KeyError: no such variant."""
        for v in self.variants:
            if v.name == name:
                return v
        raise KeyError(name)

    def best(self, stage: str, measure: str) -> tuple[str, ...]:
        """Names of the variants with the highest mean of ``measure`` at
        ``stage`` (ties within :data:`TIE_EPSILON` all count; none when no
        variant has the stage)."""
        means = [(v.name, v.eval.means[stage][measure]) for v in self.variants if stage in v.eval.means]
        if not means:
            return ()
        top = max(m for _, m in means)
        return tuple(n for n, m in means if top - m <= TIE_EPSILON)

    @property
    def stages(self) -> tuple[str, ...]:
        """Stage ids any variant has, in table order."""
        from engine.pipeline.table import RANKED_IDS

        have = {s for v in self.variants for s in v.eval.stages}
        return tuple(s for s in RANKED_IDS if s in have)


def evaluate_variants(
    traces: Mapping[str, Sequence[tuple[str, Trace]]],
    vset: VariantSet,
    qrels: Qrels,
    measures: Sequence[Any],
    ids: ChunkIds,
    stats: RunStats,
    *,
    stage: str = "final",
    test: Test = "t",
    depth: int = DEFAULT_DEPTH,
    p: float = DEFAULT_P,
    k: int = DEFAULT_K,
) -> SweepEval:
    """Evaluate every variant, test each against the reference at ``stage``
    (Holm-corrected per measure over the variants), and measure each final
    list's divergence from the reference's.

    Raises:
        ValueError: an unknown ``test``, or a bad ``p`` or ``k``.
    """
    if test not in TESTS:
        raise ValueError(f"test must be one of {', '.join(TESTS)}; got {test!r}")
    evals = {name: evaluate_traces(traces[name], qrels, measures, ids, v, depth) for name, v in vset.variants}
    ref = evals[vset.reference]
    names = tuple(str(m) for m in measures)
    raw: dict[str, dict[str, Versus]] = {}
    for name, _ in vset.variants:
        if name != vset.reference:
            raw[name] = {m: versus(ref.values(stage, m), evals[name].values(stage, m), m, test) for m in names}
    for m in names:
        tested = [n for n in raw if raw[n][m].p is not None]
        for n, adjusted in zip(tested, holm([raw[n][m].p for n in tested])):  # type: ignore[misc]
            raw[n][m] = replace(raw[n][m], p_adjusted=adjusted)
    ref_final = {qid: ranked_ids(t, ids).get("final", []) for qid, t in traces[vset.reference]}
    out = []
    for name, v in vset.variants:
        div = {qid: divergence(ref_final[qid], ranked_ids(t, ids).get("final", []), p, k) for qid, t in traces[name]}
        out.append(VariantEval(name, v, evals[name], raw.get(name, {}), div))
    return SweepEval(vset.reference, tuple(out), stage, test, names, stats, p, k)


def sweep_to_dict(sw: SweepEval) -> dict[str, Any]:
    """The ``rankscope eval --sweep/--variant --json`` document::

    {"measures": [name], "stage": stage id, "test": "t" | "wilcoxon",
     "correction": "holm", "reference": name, "rbo_p": p, "jaccard_k": k,
     "runs": {searches, retriever_runs, reused, groups},
     "variants": {name: {
         "spec": spec, "reference": bool,
         "stages": {stage id: {measure: mean}},
         "judged": {stage id: {Judged name: mean or null}},
         "vs_reference": {measure: {"p", "p_adjusted", "delta", "improved",
                                    "worsened", "tied"}},   # {} for the reference
         "queries": [{"id", "stages", "judged", "rbo", "jaccard"}]}}}
    """
    from engine.lab.evaluation import query_to_dict

    return {
        "measures": list(sw.measures),
        "stage": sw.stage,
        "test": sw.test,
        "correction": "holm",
        "reference": sw.reference,
        "rbo_p": sw.p,
        "jaccard_k": sw.k,
        "runs": sw.stats.to_dict(),
        "variants": {
            v.name: {
                "spec": variant_spec(v.variant),
                "reference": v.name == sw.reference,
                "stages": v.eval.means,
                "judged": v.eval.judged_means,
                "vs_reference": {m: x.to_dict() for m, x in v.versus.items()},
                "queries": [dict(query_to_dict(q), **v.divergence[q.id].to_dict()) for q in v.eval.queries],
            }
            for v in sw.variants
        },
    }
