"""Metrics at every stage: nDCG, RR, recall and precision of each stage's
ranked list, for one query or a query file, and A/B comparisons.

* Measures are computed by `ir-measures <https://ir-measur.es/>`_ with its
  ``pytrec_eval`` provider (trec_eval's definitions), and named in its syntax:
  ``nDCG@10``, ``RR``, ``R@10``, ``P@3``, ``R(rel=2)@10``. Binary measures count
  grade >= 1 as relevant unless the measure sets ``rel``.
* Documents are chunk ids (:mod:`engine.store.chunkids`). A stage's ranked list is
  given to the evaluator with score ``n - rank + 1`` (``n`` = list length,
  ``rank`` 1-based), so the evaluator sees exactly the stage's order (trec_eval
  sorts by score and breaks ties by document id; native scores tie, and bm25 is
  lower-is-better).
* **Means** are over every *judged* query of the query file (at least one
  judgment, of any grade): a query whose list at a stage is empty, or whose
  fuzzy re-run did not happen, scores 0 there (trec_eval ``-c``), so a stage
  that loses everything cannot look better by dropping queries.
* Stage ids and lists come from the stage table
  (:func:`engine.pipeline.table.ranked_lists`, in :data:`engine.pipeline.table.RANKED_IDS`
  order): ``porter``, ``trigram``, ``fusion``, ``pool``, ``filter``,
  ``trim``, ``rerank``, ``final`` and the fuzzy re-run's ``fuzzy:porter`` ...
  ``fuzzy:final`` (present when some query re-ran). ``final`` is the answer
  (the re-run's when it answered); a stage that did not run (the trim and
  rerank after an empty session filter, the rerank under ``rerank=off``) has
  no list.
* **Judged@k** (ir-measures' ``Judged`` measure, its ``judged`` provider):
  the share of a list's top ``k`` (of the list, when shorter) that carries a
  judgment of any grade. Each measure rests on the Judged of its own cutoff
  (``Judged@10`` for ``nDCG@10``; whole-list ``Judged`` for ``RR``, ``AP``);
  a value resting on fewer than half judged results (below
  :data:`LOW_JUDGED`) is flagged. An empty list has no Judged value.
* **The ungraded queue** (:func:`ungraded_queue`): per query, the chunks in
  the top ``k`` of any stage's list (of any variant) that carry no grade, the
  ones in the most lists first.
* A/B: the paired two-sided **t-test** (``scipy.stats.ttest_rel``) and the
  **Wilcoxon signed-rank test** (``scipy.stats.wilcoxon``, zero differences
  dropped) over the per-query values of one stage (default ``final``).

Pure Python (no Textual); ir-measures and scipy are imported when first needed.
"""

from __future__ import annotations

import functools
import math
import warnings
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from engine.store.chunkids import ChunkIds
from engine.lab.compare import params_for_entry
from engine.lab.divergence import DEFAULT_K, DEFAULT_P, Divergence, divergence
from engine.pipeline.trace import Trace
from engine.pipeline.variants import Variant
from engine.pipeline.run import search
from engine.lab.qrels import Qrels, entry_id
from engine.pipeline.table import RANKED_IDS, ranked_lists
from engine.store.store import Store

#: Measures used when none are given.
DEFAULT_MEASURES = ("nDCG@10", "RR", "R@10", "P@3")
#: Differences at most this large count as ties.
TIE_EPSILON = 1e-12
#: A value resting on a Judged share below this is flagged (fewer than half judged).
LOW_JUDGED = 0.5
#: Depth of the Judged@k column and of the ungraded queue when none is given.
DEFAULT_DEPTH = 10


# ─── stage lists ─────────────────────────────────────────────────────────


def doc_id(ids: ChunkIds, rowid: int) -> str:
    """The chunk id of ``rowid``; ``?row:N`` when the store no longer has that
    row (it changed after the search)."""
    return ids.by_rowid.get(rowid, f"?row:{rowid}")


def ranked_ids(trace: Trace, ids: ChunkIds) -> dict[str, list[str]]:
    """:func:`engine.pipeline.table.ranked_lists` as chunk ids (duplicates after the
    first dropped), in the stage table's order."""
    out: dict[str, list[str]] = {}
    for stage, items in ranked_lists(trace).items():
        seen: dict[str, None] = {}
        for item in items:
            seen.setdefault(doc_id(ids, item.rowid), None)
        out[stage] = list(seen)
    return out


# ─── measures ────────────────────────────────────────────────────────────


def parse_measures(spec: str | Sequence[str] | None) -> tuple[Any, ...]:
    """ir-measures measure objects for ``"nDCG@10,RR,R@10"`` (or a list of
    names; ``None`` = :data:`DEFAULT_MEASURES`). Duplicates are dropped.

    Raises:
        ValueError: an empty list, a name ir-measures cannot parse, a
            measure its ``pytrec_eval`` provider (trec_eval) does not compute,
            or a parameter it cannot take (:func:`parameter_problem`).
    """
    import ir_measures

    names = (
        DEFAULT_MEASURES if spec is None else [s.strip() for s in (spec.split(",") if isinstance(spec, str) else spec)]
    )
    names = [n for n in names if n]
    if not names:
        raise ValueError("no measure given; e.g. nDCG@10,RR,R@10,P@3")
    out: list[Any] = []
    for name in names:
        try:
            m: Any = ir_measures.parse_measure(name)
        except (ValueError, NameError, SyntaxError, TypeError, AttributeError, AssertionError) as exc:
            raise ValueError(
                f"unknown measure {name!r} ({exc}); use ir-measures syntax such as nDCG@10, RR, R@10, P@3"
            ) from None
        missing = [k for k, info in m.SUPPORTED_PARAMS.items() if info.required and k not in m.params]
        if missing:
            what = " and ".join(PARAMETER_NAMES.get(k, k) for k in missing)
            raise ValueError(f"measure {name!r} needs {what}; e.g. {m.NAME}@{0.5 if 'recall' in missing else 10}")
        try:
            m.validate_params()  # ir-measures' own checks (types, choices), by assert
        except AssertionError as exc:
            raise ValueError(f"measure {name!r}: {exc}") from None
        if not ir_measures.pytrec_eval.supports(m):
            raise ValueError(
                f"measure {name!r} is not computed by trec_eval (pytrec_eval); try nDCG@k, RR, R@k, P@k, AP"
            )
        problem = parameter_problem(m.params)
        if problem is not None:
            raise ValueError(f"measure {name!r}: {problem}")
        if str(m) not in {str(x) for x in out}:
            out.append(m)
    return tuple(out)


#: A measure parameter as an error names it.
PARAMETER_NAMES = {
    "cutoff": "the cutoff (@k)",
    "rel": "the relevance level (rel=)",
    "recall": "the recall level (IPrec@r)",
}
#: The parameters whose value must be a whole number of at least 1: a
#: cutoff (``@k``: trec_eval asserts on 0, ``P@0`` aborted the process)
#: and a relevance level (``rel=``: pytrec_eval raises TypeError below 1).
WHOLE_PARAMETERS = ("cutoff", "rel")
#: The largest such value trec_eval reads: a C ``int`` (a larger cutoff came
#: back under another measure name, a larger level was a TypeError).
MAX_WHOLE_PARAMETER = 2**31 - 1


def parameter_problem(params: Mapping[str, Any]) -> str | None:
    """Why a parsed measure's parameters cannot be evaluated, or ``None``:
    a :data:`WHOLE_PARAMETERS` value that is not a whole number from 1 to
    :data:`MAX_WHOLE_PARAMETER`,
    or an ``IPrec`` recall level outside 0..1. Checked before trec_eval
    sees the measure (it aborts the process on some)."""
    for key in WHOLE_PARAMETERS:
        value = params.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_WHOLE_PARAMETER:
            return f"{PARAMETER_NAMES[key]} must be a whole number from 1 to {MAX_WHOLE_PARAMETER:,}; got {value!r}"
    recall = params.get("recall")
    if recall is not None and (isinstance(recall, bool) or not 0 <= recall <= 1):
        return f"{PARAMETER_NAMES['recall']} must be between 0 and 1; got {recall!r}"
    return None


def score_run(ranked: Sequence[str]) -> dict[str, float]:
    """``{docid: score}`` with score ``n - rank + 1``: strictly decreasing
    with the 1-based rank (see the module docstring)."""
    n = len(ranked)
    return {doc: float(n - i) for i, doc in enumerate(ranked)}


def evaluate_lists(
    lists: Mapping[str, Sequence[str]],
    qrels: Mapping[str, Mapping[str, int]],
    measures: Sequence[Any],
) -> dict[str, dict[str, float]]:
    """Per-query values of ``measures`` for one stage.

    Args:
        lists: ``{query id: ranked chunk ids}`` (best first).
        qrels: ``{query id: {chunk id: grade}}``; the queries evaluated are
            exactly its keys that have at least one judgment.
        measures: ir-measures measure objects (:func:`parse_measures`).

    Returns:
        ``{query id: {measure name: value}}`` for every judged query; a query
        with no (or an empty) list scores 0 for every measure (trec_eval ``-c``).
    """
    import ir_measures
    import pytrec_eval  # noqa: F401  # first: ir-measures would report a failed import (MemoryError) as "not available"

    judged = {q: dict(d) for q, d in qrels.items() if d}
    names = [str(m) for m in measures]
    out = {q: {n: 0.0 for n in names} for q in judged}
    run = {q: score_run(lists[q]) for q in judged if lists.get(q)}
    if run:
        for metric in ir_measures.pytrec_eval.iter_calc(list(measures), {q: judged[q] for q in run}, run):
            if metric.query_id in out:
                out[metric.query_id][str(metric.measure)] = float(metric.value)
    return out


def judged_name(measure: Any) -> str:
    """The Judged measure a measure rests on: ``Judged@k`` for a measure
    with cutoff ``k``, else ``Judged`` (the whole list)."""
    cutoff = measure.params.get("cutoff") if hasattr(measure, "params") else None
    return f"Judged@{cutoff}" if cutoff is not None else "Judged"


@functools.lru_cache(maxsize=256)
def judged_name_of(measure: str) -> str:
    """:func:`judged_name` of a measure given by name (``"nDCG@10"`` → ``"Judged@10"``)."""
    import ir_measures

    return judged_name(ir_measures.parse_measure(measure))


def judged_names(measures: Sequence[Any], depth: int = DEFAULT_DEPTH) -> tuple[str, ...]:
    """``Judged@depth`` (the column shown) then each measure's
    :func:`judged_name`, duplicates dropped."""
    return tuple(dict.fromkeys([f"Judged@{depth}", *(judged_name(m) for m in measures)]))


def judged_lists(
    lists: Mapping[str, Sequence[str]], qrels: Mapping[str, Mapping[str, int]], names: Sequence[str]
) -> dict[str, dict[str, float | None]]:
    """Per-query ``Judged`` values (ir-measures' ``judged`` provider) of one
    stage: ``{query id: {name: share or None}}`` for every query of
    ``qrels``; ``None`` where the query's list is empty (nothing rests on it)."""
    import ir_measures

    judged = {q: dict(d) for q, d in qrels.items()}
    out: dict[str, dict[str, float | None]] = {q: {n: None for n in names} for q in judged}
    run = {q: score_run(lists[q]) for q in judged if lists.get(q)}
    if run:
        ms = [ir_measures.parse_measure(n) for n in names]
        # an unjudged query still has a Judged value (0.0): the provider needs a qrels entry
        gold = {q: judged[q] or {"\x00none": 0} for q in run}
        for metric in ir_measures.judged.iter_calc(ms, gold, run):
            if metric.query_id in out:
                out[metric.query_id][str(metric.measure)] = float(metric.value)
    return out


def mean_of_known(values: Iterable[float | None]) -> float | None:
    """Mean of the values that are not ``None`` (``None`` when none are)."""
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


def mean(values: Iterable[float]) -> float:
    """Arithmetic mean (0.0 of nothing)."""
    vals = list(values)
    return sum(vals) / len(vals) if vals else 0.0


# ─── a query set ─────────────────────────────────────────────────────────


@dataclass(frozen=True)
class QueryEval:
    """One judged query.

    Attributes:
        id: the query id (``queries.json`` ``id``, else its 1-based number).
        query: the query text.
        layer: the trace's layer (``rrf``, ``rrf-fuzzy``, ``none``).
        stages: ``{stage id: {measure: value}}`` for the stages this query has
            (``fuzzy:*`` only when its fuzzy re-run happened).
        judged: ``{stage id: {Judged name: share or None}}`` for the same
            stages (:func:`judged_lists`; ``None``: empty list).
    """

    id: str
    query: str
    layer: str
    stages: dict[str, dict[str, float]]
    judged: dict[str, dict[str, float | None]] = field(default_factory=dict)

    def judged_of(self, stage: str, measure: str) -> float | None:
        """The Judged share ``measure``'s value at ``stage`` rests on (``None``: no list)."""
        return self.judged.get(stage, {}).get(judged_name_of(measure))

    def low_judged(self, stage: str, measure: str) -> bool:
        """True when that value rests on fewer than half judged results."""
        share = self.judged_of(stage, measure)
        return share is not None and share < LOW_JUDGED

    def value(self, stage: str, measure: str) -> float:
        """The value at ``stage`` (0.0 when the query lacks that stage)."""
        return self.stages.get(stage, {}).get(measure, 0.0)


@dataclass(frozen=True)
class SetEval:
    """Metrics of a query file under one variant.

    Attributes:
        variant: the pipeline variant.
        measures: measure names, in the order asked.
        stages: stage ids evaluated, in :data:`engine.pipeline.table.RANKED_IDS` order.
        means: ``{stage id: {measure: mean over every judged query}}``.
        queries: the judged queries, in query-file order.
        unjudged: ids of query-file entries without judgments (not counted).
        unknown_docs: judged chunk ids (of judged queries) no chunk of the
            store has: stale judgments, or a different store.
        judged_names: the Judged measures computed (:func:`judged_names`;
            the first is the ``Judged@k`` column).
        judged_means: ``{stage id: {Judged name: mean over the judged
            queries with a non-empty list, or None}}``.
    """

    variant: Variant
    measures: tuple[str, ...]
    stages: tuple[str, ...]
    means: dict[str, dict[str, float]]
    queries: tuple[QueryEval, ...]
    unjudged: tuple[str, ...]
    unknown_docs: tuple[str, ...]
    judged_names: tuple[str, ...] = ()
    judged_means: dict[str, dict[str, float | None]] = field(default_factory=dict)

    def judged_mean(self, stage: str, measure: str) -> float | None:
        """Mean Judged share ``measure``'s mean at ``stage`` rests on."""
        return self.judged_means.get(stage, {}).get(judged_name_of(measure))

    def low_judged(self, stage: str, measure: str) -> tuple[str, ...]:
        """Ids of the queries whose value at ``stage`` rests on fewer than half judged results."""
        return tuple(q.id for q in self.queries if q.low_judged(stage, measure))

    def values(self, stage: str, measure: str) -> list[float]:
        """Per-query values at ``stage``, in query order (0.0 where absent)."""
        return [q.value(stage, measure) for q in self.queries]


def evaluate_traces(
    traces: Sequence[tuple[str, Trace]],
    qrels: Qrels,
    measures: Sequence[Any],
    ids: ChunkIds,
    variant: Variant | None = None,
    depth: int = DEFAULT_DEPTH,
) -> SetEval:
    """Metrics of already-run searches.

    Args:
        traces: ``(query id, trace)`` per query-file entry, in order.
        qrels: the judgments.
        measures: from :func:`parse_measures`.
        ids: the store's chunk ids (taken after the searches).
        variant: recorded on the result (default: the first trace's).
        depth: ``k`` of the ``Judged@k`` column.
    """
    names = tuple(str(m) for m in measures)
    judged = [(qid, t) for qid, t in traces if qrels.judged(qid)]
    unjudged = tuple(qid for qid, _ in traces if not qrels.judged(qid))
    lists = {qid: ranked_ids(t, ids) for qid, t in judged}
    stages = tuple(s for s in RANKED_IDS if any(s in per for per in lists.values()))
    gold = {qid: qrels.for_query(qid) for qid, _ in judged}
    per_stage = {s: evaluate_lists({q: lists[q].get(s, []) for q, _ in judged}, gold, measures) for s in stages}
    jnames = judged_names(measures, depth)
    shares = {s: judged_lists({q: lists[q].get(s, []) for q, _ in judged}, gold, jnames) for s in stages}
    queries = tuple(
        QueryEval(
            qid,
            t.params.query,
            t.layer,
            {s: per_stage[s][qid] for s in stages if s in lists[qid]},
            {s: shares[s][qid] for s in stages if s in lists[qid]},
        )
        for qid, t in judged
    )
    means = {s: {n: mean(per_stage[s][q][n] for q, _ in judged) for n in names} for s in stages}
    jmeans = {s: {n: mean_of_known(shares[s][q][n] for q, _ in judged) for n in jnames} for s in stages}
    unknown = tuple(dict.fromkeys(d for qid, _ in judged for d in gold[qid] if d not in ids))
    if variant is None:
        variant = traces[0][1].params.variant if traces else Variant()
    return SetEval(variant, names, stages, means, queries, unjudged, unknown, jnames, jmeans)


def run_entries(store: Store, entries: Sequence[Mapping[str, Any]], variant: Variant) -> list[tuple[str, Trace]]:
    """Search every query-file entry under ``variant``: ``[(query id, trace)]``.

    Raises:
        ValueError: a bad entry (all are validated before any search runs).
    """
    params = [params_for_entry(e, variant, i) for i, e in enumerate(entries)]
    return [(entry_id(e, i), search(store, p)) for i, (e, p) in enumerate(zip(entries, params))]


def evaluate_trace(
    trace: Trace, judgments: Mapping[str, int], ids: ChunkIds, measures: Sequence[Any] | None = None
) -> dict[str, dict[str, float]]:
    """``{stage id: {measure: value}}`` of one trace against one query's
    ``{chunk id: grade}`` (empty when there are no judgments): the browser's
    per-query table."""
    if not judgments:
        return {}
    ms = measures if measures is not None else parse_measures(None)
    lists = ranked_ids(trace, ids)
    return {s: evaluate_lists({"q": lst}, {"q": judgments}, ms)["q"] for s, lst in lists.items()}


# ─── what to grade next ──────────────────────────────────────────────────


@dataclass(frozen=True)
class UngradedChunk:
    """A chunk in the top ``k`` of some list of a query that has no grade for it.

    Attributes:
        query_id / query: the query (id as in the query file).
        chunk_id: the chunk (:mod:`engine.store.chunkids`).
        lists: how many lists (stage × variant) hold it in their top ``k``.
        best_rank: its best 1-based rank in any of them.
        stages: the stage ids of those lists (table order, each once).
        variants: the variant names of those lists (given order, each once).
    """

    query_id: str
    query: str
    chunk_id: str
    lists: int
    best_rank: int
    stages: tuple[str, ...]
    variants: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        """``{query_id, query, chunk_id, lists, best_rank, stages, variants}``."""
        return {
            "query_id": self.query_id,
            "query": self.query,
            "chunk_id": self.chunk_id,
            "lists": self.lists,
            "best_rank": self.best_rank,
            "stages": list(self.stages),
            "variants": list(self.variants),
        }


def ungraded_in(
    lists: Sequence[tuple[str, Mapping[str, Sequence[str]]]],
    grades: Mapping[str, int],
    depth: int = DEFAULT_DEPTH,
    query_id: str = "",
    query: str = "",
) -> list[UngradedChunk]:
    """The ungraded queue of one query.

    Args:
        lists: ``(variant name, {stage id: ranked chunk ids})`` per variant.
        grades: the query's ``{chunk id: grade}``.
        depth: ``k``: only the top ``k`` of each list counts.

    Returns:
        The chunks with no grade, most lists first, then best rank, then first seen.
    """
    found: dict[str, tuple[int, int, dict[str, None], dict[str, None]]] = {}
    for name, per_stage in lists:
        for stage, ranked in per_stage.items():
            for rank, cid in enumerate(ranked[:depth], 1):
                if cid in grades:
                    continue
                n, best, stages, names = found.get(cid, (0, rank, {}, {}))
                stages[stage] = None
                names[name] = None
                found[cid] = (n + 1, min(best, rank), stages, names)
    order = {s: i for i, s in enumerate(RANKED_IDS)}
    out = [
        UngradedChunk(
            query_id, query, cid, n, best, tuple(sorted(st, key=lambda x: order.get(x, len(order)))), tuple(names)
        )
        for cid, (n, best, st, names) in found.items()
    ]
    first = {cid: i for i, cid in enumerate(found)}
    return sorted(out, key=lambda u: (-u.lists, u.best_rank, first[u.chunk_id]))


def ungraded_queue(
    runs: Sequence[tuple[str, Sequence[tuple[str, Trace]]]],
    qrels: Qrels,
    ids: ChunkIds,
    depth: int = DEFAULT_DEPTH,
) -> list[UngradedChunk]:
    """The ungraded queue of a query file: :func:`ungraded_in` for every
    query (judged or not), most lists first, then best rank, then query-file order.

    Args:
        runs: ``(variant name, [(query id, trace)])``; every variant ran the
            same queries in the same order.
    """
    if not runs:
        return []
    per_variant = [(name, {qid: ranked_ids(t, ids) for qid, t in traces}) for name, traces in runs]
    out: list[tuple[int, UngradedChunk]] = []
    for index, (qid, trace) in enumerate(runs[0][1]):
        lists = [(name, lists_by_q[qid]) for name, lists_by_q in per_variant]
        for u in ungraded_in(lists, qrels.for_query(qid), depth, qid, trace.params.query):
            out.append((index, u))
    out.sort(key=lambda x: (-x[1].lists, x[1].best_rank, x[0]))
    return [u for _, u in out]


# ─── A/B ─────────────────────────────────────────────────────────────────


@dataclass(frozen=True)
class MeasureComparison:
    """A and B on one measure at one stage, over the judged queries.

    Attributes:
        measure: the measure name.
        mean_a, mean_b: the means; ``delta`` = ``mean_b - mean_a``.
        improved / worsened / tied: queries where B's value is higher / lower
            / equal (within :data:`TIE_EPSILON`).
        p_ttest: two-sided paired t-test p-value (``scipy.stats.ttest_rel``),
            ``None`` when undefined (fewer than 2 queries, or every difference
            equal).
        p_wilcoxon: two-sided Wilcoxon signed-rank p-value
            (``scipy.stats.wilcoxon``, zero differences dropped), ``None`` when
            no difference is non-zero.
    """

    measure: str
    mean_a: float
    mean_b: float
    delta: float
    improved: int
    worsened: int
    tied: int
    p_ttest: float | None
    p_wilcoxon: float | None


def _finite(x: Any) -> float | None:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def paired_tests(a: Sequence[float], b: Sequence[float]) -> tuple[float | None, float | None]:
    """``(t-test p, Wilcoxon p)`` for paired samples (see :class:`MeasureComparison`)."""
    from scipy import stats

    diffs = [y - x for x, y in zip(a, b)]
    nonzero = [d for d in diffs if abs(d) > TIE_EPSILON]
    if len(diffs) < 2 or not nonzero:
        return None, None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p_t = _finite(stats.ttest_rel(b, a).pvalue) if max(diffs) - min(diffs) > TIE_EPSILON else None
        try:
            p_w = _finite(stats.wilcoxon(nonzero).pvalue)
        except ValueError:
            p_w = None
    return p_t, p_w


def compare_measure(a: Sequence[float], b: Sequence[float], measure: str) -> MeasureComparison:
    """:class:`MeasureComparison` of paired per-query values ``a`` and ``b``."""
    improved = sum(1 for x, y in zip(a, b) if y - x > TIE_EPSILON)
    worsened = sum(1 for x, y in zip(a, b) if x - y > TIE_EPSILON)
    p_t, p_w = paired_tests(a, b)
    ma, mb = mean(a), mean(b)
    return MeasureComparison(measure, ma, mb, mb - ma, improved, worsened, len(a) - improved - worsened, p_t, p_w)


@dataclass(frozen=True)
class EvalComparison:
    """A and B over the same query file and judgments.

    Attributes:
        a, b: the two :class:`SetEval`.
        stage: the stage the tests are run on (``final`` by default).
        measures: one :class:`MeasureComparison` per measure, at ``stage``.
        divergence: ``{query id: Divergence}`` of B's final list from A's
            (:func:`final_divergences`), for every query of the file; empty when not computed.
    """

    a: SetEval
    b: SetEval
    stage: str
    measures: tuple[MeasureComparison, ...]
    divergence: Mapping[str, Divergence] = field(default_factory=dict)


def compare_evals(
    a: SetEval, b: SetEval, stage: str = "final", divergence: Mapping[str, Divergence] | None = None
) -> EvalComparison:
    """Compare two evaluations of the same queries at ``stage``.

    Raises:
        ValueError: the two do not cover the same judged queries.
    """
    if [q.id for q in a.queries] != [q.id for q in b.queries]:
        raise ValueError("A and B must evaluate the same judged queries")
    rows = tuple(compare_measure(a.values(stage, m), b.values(stage, m), m) for m in a.measures)
    return EvalComparison(a, b, stage, rows, dict(divergence or {}))


def final_divergences(
    a: Sequence[tuple[str, Trace]],
    b: Sequence[tuple[str, Trace]],
    ids: ChunkIds,
    p: float = DEFAULT_P,
    k: int = DEFAULT_K,
) -> dict[str, Divergence]:
    """``{query id: Divergence}`` of each query's final list under B from
    its final list under A (as chunk ids; :mod:`engine.lab.divergence`).

    Raises:
        ValueError: a bad ``p`` or ``k``.
    """
    finals_a = {qid: ranked_ids(t, ids).get("final", []) for qid, t in a}
    return {qid: divergence(finals_a[qid], ranked_ids(t, ids).get("final", []), p, k) for qid, t in b}


# ─── JSON ────────────────────────────────────────────────────────────────


def query_to_dict(q: QueryEval) -> dict[str, Any]:
    """``{"id", "stages": {stage id: {measure: value}}, "judged": {stage id: {Judged name: share or null}}}``."""
    return {"id": q.id, "stages": q.stages, "judged": q.judged}


def _queries_json(ev: SetEval, divergences: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    out = [query_to_dict(q) for q in ev.queries]
    if divergences is not None:
        for d in out:
            d.update(divergences[d["id"]].to_dict())
    return out


def eval_to_dict(ev: SetEval, comparison: EvalComparison | None = None) -> dict[str, Any]:
    """The ``rankscope eval --json`` document::

        {"measures": [name, ...],
         "stages": {stage id: {measure: mean}},
         "judged": {stage id: {Judged name: mean share or null}},
         "queries": [{"id": query id, "stages": {stage id: {measure: value}},
                      "judged": {stage id: {Judged name: share or null}}}],
         "comparison": null | {
             "a": spec, "b": spec, "stage": stage id,
             "stages": {stage id: {measure: mean of B}},
             "judged": B's Judged means,
             "queries": [B's per-query values, same shape, with "rbo" and
                         "jaccard" of B's final list against A's],
             "measures": {measure: {"mean_a", "mean_b", "delta", "improved",
                                    "worsened", "tied", "p_ttest", "p_wilcoxon"}}}}

    ``stages`` and ``queries`` are A's (the only run without ``--b``).
    """
    from engine.pipeline.variants import variant_spec

    out: dict[str, Any] = {
        "measures": list(ev.measures),
        "stages": ev.means,
        "judged": ev.judged_means,
        "queries": _queries_json(ev),
        "comparison": None,
    }
    if comparison is not None:
        b = comparison.b
        out["comparison"] = {
            "a": variant_spec(comparison.a.variant),
            "b": variant_spec(b.variant),
            "stage": comparison.stage,
            "stages": b.means,
            "judged": b.judged_means,
            "queries": _queries_json(b, comparison.divergence or None),
            "measures": {
                m.measure: {
                    "mean_a": m.mean_a,
                    "mean_b": m.mean_b,
                    "delta": m.delta,
                    "improved": m.improved,
                    "worsened": m.worsened,
                    "tied": m.tied,
                    "p_ttest": m.p_ttest,
                    "p_wilcoxon": m.p_wilcoxon,
                }
                for m in comparison.measures
            },
        }
    return out


# ─── TREC runs ───────────────────────────────────────────────────────────


def trec_run_lines(qid: str, ranked: Sequence[str], tag: str) -> list[str]:
    """TREC run lines ``qid Q0 docid rank score tag`` for one query's ranked
    chunk ids: rank 1-based, score ``n - rank + 1`` (strictly decreasing, as
    in :func:`score_run`); ``qid`` and ``docid`` through
    :func:`engine.store.chunkids.trec_token`."""
    from engine.store.chunkids import trec_token

    q, n = trec_token(qid), len(ranked)
    return [f"{q} Q0 {trec_token(doc)} {i} {n - i + 1} {tag}" for i, doc in enumerate(ranked, 1)]


def trec_run_text(
    results: Sequence[tuple[str, Trace]], ids: ChunkIds, stage: str = "final", tag: str | None = None
) -> tuple[str, int]:
    """A TREC run of ``stage`` for ``[(query id, trace)]``: the text and the
    number of lines. Queries whose list is empty at that stage (or that lack
    the stage, e.g. no fuzzy re-run) have no line, as in any TREC run.
    ``tag`` defaults to ``rankscope-<stage>`` (``:`` kept: no whitespace).

    Raises:
        ValueError: ``stage`` is not a ranked stage id (:data:`engine.pipeline.table.RANKED_IDS`).
    """
    if stage not in RANKED_IDS:
        raise ValueError(f"unknown stage {stage!r}; stages are {', '.join(RANKED_IDS)}")
    tag = tag or f"rankscope-{stage}"
    lines: list[str] = []
    for qid, trace in results:
        lines += trec_run_lines(str(qid), ranked_ids(trace, ids).get(stage, []), tag)
    return "".join(line + "\n" for line in lines), len(lines)
