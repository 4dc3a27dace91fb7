"""Judged@k beside the metrics, and the ungraded queue (engine/lab/evaluation.py)."""

from __future__ import annotations


import ir_measures
import pytest

from engine import Variant
from engine.lab.evaluation import (
    LOW_JUDGED,
    evaluate_traces,
    judged_name_of,
    parse_measures,
    ranked_ids,
    run_entries,
    trec_run_text,
    ungraded_in,
    ungraded_queue,
)
from engine.lab.qrels import Qrels, read_qrels
from engine.store.chunkids import chunk_ids, from_trec_token

from ..conftest import DEMO_QRELS, DEMO_QUERIES


def _thin(qrels: Qrels, keep: int) -> Qrels:
    """Every query's first ``keep`` judgments only: most results unjudged."""
    return Qrels({q: dict(list(d.items())[:keep]) for q, d in qrels.judgments.items()})


@pytest.mark.parametrize("stage", ["porter", "fusion", "final"])
def test_judged_at_k_equals_ir_measures_own(sample_store, stage):
    qrels = _thin(read_qrels(DEMO_QRELS), 2)
    traces = run_entries(sample_store, DEMO_QUERIES, Variant())
    ids = chunk_ids(sample_store)
    ev = evaluate_traces(traces, qrels, parse_measures("nDCG@10,P@3,RR"), ids, depth=5)
    assert ev.judged_names == ("Judged@5", "Judged@10", "Judged@3", "Judged")
    # independently: the stage's TREC run, read back, through ir-measures' default providers
    text, _ = trec_run_text(traces, ids, stage)
    run: dict[str, dict[str, float]] = {}
    for line in text.splitlines():
        qid, _, doc, _, score, _ = line.split()
        run.setdefault(from_trec_token(qid), {})[from_trec_token(doc)] = float(score)
    gold = {q: d for q, d in qrels.judgments.items() if q in run}
    want = {
        (m.query_id, str(m.measure)): m.value
        for m in ir_measures.iter_calc([ir_measures.parse_measure(n) for n in ev.judged_names], gold, run)
    }
    checked = 0
    for q in ev.queries:
        for name in ev.judged_names:
            got = q.judged.get(stage, {}).get(name)
            if (q.id, name) in want:
                assert got == pytest.approx(want[(q.id, name)])
                checked += 1
            else:
                assert got is None  # no list at that stage
    assert checked >= 4 * 7  # all but the fuzzy query (no first-pass list) and unjudged ones
    assert any(v is not None and v < LOW_JUDGED for q in ev.queries for v in q.judged.get(stage, {}).values())


def test_low_judged_is_flagged_per_measure_cutoff(sample_store):
    qrels = _thin(read_qrels(DEMO_QRELS), 1)
    ev = evaluate_traces(
        run_entries(sample_store, DEMO_QUERIES, Variant()),
        qrels,
        parse_measures("nDCG@10,P@3"),
        chunk_ids(sample_store),
    )
    assert judged_name_of("nDCG@10") == "Judged@10" and judged_name_of("RR") == "Judged"
    for q in ev.queries:
        for m in ev.measures:
            share = q.judged["final"][judged_name_of(m)]
            assert q.low_judged("final", m) == (share is not None and share < 0.5)
    assert ev.low_judged("final", "nDCG@10")  # one judgment a query: most final lists rest on little


def test_ungraded_in_orders_by_lists_then_rank():
    lists = [
        ("ref", {"porter": ["a", "b", "c"], "final": ["b", "a"]}),
        ("v", {"porter": ["c", "d"], "final": ["b"]}),
    ]
    queue = ungraded_in(lists, {"a": 2}, depth=10, query_id="q", query="text")
    assert [(u.chunk_id, u.lists, u.best_rank) for u in queue] == [("b", 3, 1), ("c", 2, 1), ("d", 1, 2)]
    assert queue[0].stages == ("porter", "final") and queue[0].variants == ("ref", "v")
    # only the top k counts
    assert [u.chunk_id for u in ungraded_in(lists, {}, depth=1)] == ["b", "a", "c"]


def test_the_ungraded_queue_of_a_query_file(sample_store):
    qrels = _thin(read_qrels(DEMO_QRELS), 2)
    ids = chunk_ids(sample_store)
    runs = [
        (n, run_entries(sample_store, DEMO_QUERIES, v)) for n, v in [("ref", Variant()), ("off", Variant(rerank="off"))]
    ]
    queue = ungraded_queue(runs, qrels, ids, depth=3)
    assert queue
    keys = [(u.query_id, u.chunk_id) for u in queue]
    assert len(keys) == len(set(keys))
    assert all(qrels.grade(q, c) is None for q, c in keys)
    # every ungraded chunk of every top 3 is there, counted in every list that holds it
    expected: dict[tuple[str, str], int] = {}
    for _, traces in runs:
        for qid, t in traces:
            for ranked in ranked_ids(t, ids).values():
                for cid in ranked[:3]:
                    if qrels.grade(qid, cid) is None:
                        expected[(qid, cid)] = expected.get((qid, cid), 0) + 1
    assert {(u.query_id, u.chunk_id): u.lists for u in queue} == expected
    assert [u.lists for u in queue] == sorted((u.lists for u in queue), reverse=True)
    # the unjudged query ('empty' has no list) and the judged ones alike
    assert {u.query_id for u in queue} <= {e["id"] for e in DEMO_QUERIES}
