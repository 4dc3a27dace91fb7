"""Sweeps and N-way comparisons (engine/lab/sweep.py): the grid from the
variant table, runs shared across variants (counted as FTS5 statements),
Holm's correction checked by hand, and the JSON shape."""

from __future__ import annotations

import json

import pytest

from engine import Store, Variant
from engine.lab.evaluation import evaluate_traces, parse_measures, run_entries
from engine.lab.qrels import read_qrels
from engine.lab.sweep import (
    MAX_VARIANTS,
    evaluate_variants,
    grid,
    holm,
    parse_axis,
    parse_named,
    run_groups,
    run_variants,
    sweep_to_dict,
    variant_set,
)
from engine.pipeline.table import STAGES
from engine.pipeline.variants import REFERENCE, SETTINGS, SPEC_KEYS, shares_runs
from engine.store.chunkids import chunk_ids

from ..conftest import DEMO_QRELS, DEMO_QUERIES, SAMPLE_CORPUS


# ─── the grid comes from the variant table ───────────────────────────────


def test_every_setting_of_the_table_can_be_swept():
    for s in SETTINGS:
        value = s.choices[-1] if s.choices else "7"
        axis = parse_axis(f"{s.key}={value}")
        assert axis.setting.name == s.name
        assert getattr(grid(REFERENCE, [axis])[0][1], s.name) == (value if s.choices else 7)
    assert {s.key for s in SETTINGS} == set(SPEC_KEYS)


@pytest.mark.parametrize(
    "text, words",
    [
        ("rrf_k", "not KEY=V1,V2"),
        ("nope=1,2", "unknown setting 'nope'"),
        ("rrf_k=", "no value given"),
        ("rrf_k=10,x", "bad value 'x' for rrf_k"),
        ("rerank=on,sideways", "allowed values are on, off, before-trim"),
        ("rrf_k=10,10", "given twice"),
    ],
)
def test_bad_axes_say_what_is_wrong(text, words):
    with pytest.raises(ValueError, match=words):
        parse_axis(text)


def test_a_grid_is_the_product_named_by_its_values():
    points = grid(REFERENCE, [parse_axis("rrf-k=10,60"), parse_axis("RERANK=off,on"), parse_axis("pool=default,5")])
    assert [n for n, _ in points][:3] == [
        "rrf_k=10,rerank=off,pool=default",
        "rrf_k=10,rerank=off,pool=5",
        "rrf_k=10,rerank=on,pool=default",
    ]
    assert len(points) == 8 and points[1][1] == Variant(rrf_k=10, rerank="off", pool_size=5)


def test_a_grid_past_the_cap_is_refused_with_its_size():
    big = [parse_axis("rrf_k=" + ",".join(str(i) for i in range(1, 9))), parse_axis("pool=" + ",".join("123456789"))]
    with pytest.raises(ValueError, match=rf"8 × 9 = 72 variants; at most {MAX_VARIANTS}"):
        grid(REFERENCE, big)
    with pytest.raises(ValueError, match="rrf_k given twice"):
        grid(REFERENCE, [parse_axis("rrf_k=1"), parse_axis("rrf_k=2")])


def test_the_reference_is_the_base_point_or_is_added_first():
    vs = variant_set(REFERENCE, [parse_axis("rrf_k=10,60,100")])
    assert vs.reference == "rrf_k=60" and vs.names == ("rrf_k=60", "rrf_k=10", "rrf_k=100")
    vs = variant_set(REFERENCE, [parse_axis("rrf_k=10,100")], [parse_named("big=pool=10")])
    assert vs.reference == "reference" and vs.names == ("reference", "rrf_k=10", "rrf_k=100", "big")
    vs = variant_set(Variant(rerank="off"), [parse_axis("rrf_k=10")])
    assert vs.reference == "rerank=off" and vs.variants[1][1] == Variant(rerank="off", rrf_k=10)
    with pytest.raises(ValueError, match="'x' given twice"):
        variant_set(REFERENCE, (), [parse_named("x=rrf_k=1"), parse_named("x=rrf_k=2")])
    with pytest.raises(ValueError, match="reference's"):
        variant_set(REFERENCE, (), [parse_named("reference=rrf_k=1")])


def test_named_variants():
    assert parse_named("big-pool=pool=10,rerank=before-trim") == (
        "big-pool",
        Variant(pool_size=10, rerank="before-trim"),
    )
    with pytest.raises(ValueError, match="not NAME=SPEC"):
        parse_named("=rrf_k=1")
    with pytest.raises(ValueError, match="a name comes first"):
        parse_named("pool=10")


def test_what_each_setting_affects_is_a_stage_and_decides_run_sharing():
    ids = {s.id for s in STAGES}
    assert all(s.affects in ids for s in SETTINGS)
    assert shares_runs(REFERENCE, Variant(rrf_k=1, rerank="off", fusion_key="rowid", fuzzy="never"))
    assert not shares_runs(REFERENCE, Variant(pool_size=10))
    assert not shares_runs(REFERENCE, Variant(retrievers="porter"))
    variants = [("a", REFERENCE), ("b", Variant(pool_size=10)), ("c", Variant(rerank="off"))]
    assert run_groups(variants) == [[0, 2], [1]]


# ─── runs are shared ─────────────────────────────────────────────────────


def _count_fts(store: Store) -> list[str]:
    """Every statement run on the store's connection that reads an FTS5 table."""
    seen: list[str] = []

    def trace(_cursor: object, sql: str, _bindings: object) -> bool:
        if "MATCH" in sql.upper():
            seen.append(sql)
        return True

    store.parallel = False
    store.conn.exec_trace = trace
    return seen


def test_a_sweep_over_later_stages_reruns_no_fts5_statement(sample_db):
    with Store.open_readonly(sample_db) as store:
        seen = _count_fts(store)
        run_entries(store, DEMO_QUERIES, REFERENCE)
        one = len(seen)
        assert one > 0
    with Store.open_readonly(sample_db) as store:  # a cold cache again
        seen = _count_fts(store)
        vs = variant_set(REFERENCE, [parse_axis("rerank=on,off,before-trim"), parse_axis("rrf_k=10,60")])
        traces, stats = run_variants(store, DEMO_QUERIES, vs.variants)
        assert len(seen) == one  # six variants, the statements of one
        assert stats.groups == 1 and stats.searches == 6 * len(DEMO_QUERIES) and stats.reused > 0
    with Store.open_readonly(sample_db) as store:
        seen = _count_fts(store)
        run_variants(store, DEMO_QUERIES, variant_set(REFERENCE, [parse_axis("pool=3,20")]).variants)
        assert len(seen) > one  # a larger pool fetches more rows: its own statements


def test_runs_are_shared_one_query_at_a_time_past_the_store_cache(sample_db):
    """More queries than the store's run cache holds: one variant after the
    other would fetch every run again; one query at a time fetches each once."""
    from engine.store.store import RUN_CACHE_SIZE

    text = " ".join(p.read_text("utf-8") for p in sorted(SAMPLE_CORPUS.rglob("*.md")))
    words = sorted({w.strip(".,:;()`'\"#*-").lower() for w in text.split()})
    words = [w for w in words if len(w) > 3 and w.isalpha()]
    entries = [{"id": str(i), "query": f"{a} {b}"} for i, (a, b) in enumerate(zip(words, reversed(words)))]
    entries = entries[: RUN_CACHE_SIZE // 2 + 20]
    assert len(entries) * 2 > RUN_CACHE_SIZE
    variants = [REFERENCE, Variant(rerank="off"), Variant(rrf_k=10)]
    with Store.open_readonly(sample_db) as store:
        seen = _count_fts(store)
        run_entries(store, entries, REFERENCE)
        one = len(seen)
    with Store.open_readonly(sample_db) as store:
        seen = _count_fts(store)
        for v in variants:
            run_entries(store, entries, v)
        assert len(seen) > one
    with Store.open_readonly(sample_db) as store:
        seen = _count_fts(store)
        run_variants(store, entries, [(str(i), v) for i, v in enumerate(variants)])
        assert len(seen) == one


def test_shared_runs_give_the_traces_of_separate_runs(sample_db):
    with Store.open_readonly(sample_db) as store:
        vs = variant_set(REFERENCE, [parse_axis("rerank=off,on")], [parse_named("big=pool=10,rerank=before-trim")])
        traces, _ = run_variants(store, DEMO_QUERIES, vs.variants)
        ids = chunk_ids(store)
        for name, v in vs.variants:
            alone = run_entries(store, DEMO_QUERIES, v)
            assert [(q, [r.candidate.rowid for r in t.final]) for q, t in traces[name]] == [
                (q, [r.candidate.rowid for r in t.final]) for q, t in alone
            ]
        assert ids


# ─── significance ────────────────────────────────────────────────────────


def test_holm_matches_a_hand_computation():
    # sorted: 0.01·4 = 0.04; 0.03·3 = 0.09; 0.04·2 = 0.08 → 0.09 (monotone); 0.2·1 = 0.2
    assert holm([0.01, 0.04, 0.03, 0.2]) == pytest.approx([0.04, 0.09, 0.09, 0.2])
    # capped at 1
    assert holm([0.5, 0.6]) == pytest.approx([1.0, 1.0])
    assert holm([]) == []


def test_a_four_value_sweep_is_tested_against_the_reference_with_holm(sample_db):
    ms = parse_measures("nDCG@10,R@10,P@3")
    qrels = read_qrels(DEMO_QRELS)
    with Store.open_readonly(sample_db) as store:
        vs = variant_set(REFERENCE, [parse_axis("pool=3,10,20,40")])
        traces, stats = run_variants(store, DEMO_QUERIES, vs.variants)
        ids = chunk_ids(store)
    sw = evaluate_variants(traces, vs, qrels, ms, ids, stats)
    assert sw.reference == "reference" and len(sw.variants) == 5
    ref = sw.by_name("reference")
    assert ref.versus == {}
    from scipy import stats as sps

    for m in sw.measures:
        tested = [v for v in sw.variants[1:] if v.versus[m].p is not None]
        assert tested  # pool=20 and pool=40 change the answer
        for v in tested:
            p = sps.ttest_rel(v.eval.values("final", m), ref.eval.values("final", m)).pvalue
            assert v.versus[m].p == pytest.approx(p)
        assert [v.versus[m].p_adjusted for v in tested] == pytest.approx(holm([v.versus[m].p for v in tested]))
        for v in sw.variants[1:]:
            assert v.versus[m].delta == pytest.approx(v.eval.means["final"][m] - ref.eval.means["final"][m])
    # each variant's evaluation is what a separate run gives
    with Store.open_readonly(sample_db) as store:
        alone = evaluate_traces(run_entries(store, DEMO_QUERIES, Variant(pool_size=20)), qrels, ms, chunk_ids(store))
    assert sw.by_name("pool=20").eval.means == alone.means
    doc = json.loads(json.dumps(sweep_to_dict(sw)))
    assert list(doc["variants"]) == ["reference", "pool=3", "pool=10", "pool=20", "pool=40"]
    for name, v in doc["variants"].items():
        assert {"spec", "stages", "vs_reference"} <= set(v)
        assert v["spec"] == ("reference" if name == "reference" else name)
        assert set(v["stages"]) >= {"porter", "fusion", "pool", "final"}
        assert all(set(means) == set(sw.measures) for means in v["stages"].values())
        if name == "reference":
            assert v["vs_reference"] == {}
        else:
            assert set(v["vs_reference"]) == set(sw.measures)
            assert all({"p", "p_adjusted", "delta"} <= set(x) for x in v["vs_reference"].values())
        assert all({"rbo", "jaccard"} <= set(q) for q in v["queries"])
    assert doc["correction"] == "holm" and doc["reference"] == "reference"


def test_the_best_variant_of_a_stage():
    from engine.lab.sweep import RunStats

    ms = parse_measures("RR")
    from engine.lab.qrels import Qrels

    s = Store.create(":memory:")
    from ..helpers import index_zebra

    index_zebra(s)
    entries = [{"id": "z", "query": "zebra"}]
    vs = variant_set(REFERENCE, [parse_axis("rerank=on,off")])
    traces, stats = run_variants(s, entries, vs.variants)
    final = [r.candidate for r in traces["rerank=on"][0][1].final]
    ids = chunk_ids(s)
    qrels = Qrels({"z": {ids.by_rowid[final[-1].rowid]: 3}})
    sw = evaluate_variants(traces, vs, qrels, ms, ids, RunStats(0, 0, 0, 1))
    means = {v.name: v.eval.means["final"]["RR"] for v in sw.variants}
    top = max(means.values())
    assert set(sw.best("final", "RR")) == {n for n, m in means.items() if m == top}
    s.close()
