"""Metrics at every stage (engine/lab/evaluation.py), qrels files (engine/lab/qrels.py)
and ranking snapshots (engine/lab/snapshot.py)."""

from __future__ import annotations

import json
import math
import re

import pytest

from engine import SearchParams, Variant, search
from engine.store.chunkids import chunk_ids
from engine.lab.evaluation import (
    compare_evals,
    compare_measure,
    eval_to_dict,
    evaluate_lists,
    evaluate_trace,
    evaluate_traces,
    parse_measures,
    ranked_ids,
    run_entries,
    trec_run_lines,
)
from engine.lab.qrels import GradeConflict, Qrels, QrelsError, default_qrels_path, read_qrels, write_qrels
from engine.lab.snapshot import check_snapshot, diff_lists, parse_stage_list, take_snapshot, validate_snapshot
from engine.pipeline.run import pass_plan
from engine.pipeline.table import RANKED_IDS, ranked_lists, stage_lists

from ..conftest import DEMO_QRELS, DEMO_QUERIES, REPO
from ..helpers import index_collide, index_zebra

P = SearchParams("the reference")


def evaluate_set(store, entries, qrels, measures, variant=Variant()):
    """What ``rankscope eval`` does: search every entry, then evaluate the traces."""
    ms = measures if isinstance(measures, tuple) else parse_measures(measures)
    return evaluate_traces(run_entries(store, entries, variant), qrels, ms, chunk_ids(store), variant)


# ─── measures ────────────────────────────────────────────────────────────


def test_values_follow_trec_eval_definitions():
    ms = parse_measures("nDCG@10,RR,R@10,P@3")
    qrels = {"q": {"a": 3, "b": 1, "c": 0}}
    got = evaluate_lists({"q": ["b", "a", "z"]}, qrels, ms)["q"]
    dcg = 1 / math.log2(2) + 3 / math.log2(3)  # gain = grade, discount log2(rank + 1)
    idcg = 3 / math.log2(2) + 1 / math.log2(3)
    assert got["nDCG@10"] == pytest.approx(dcg / idcg)
    assert got["RR"] == 1.0  # grade 1 counts as relevant
    assert got["R@10"] == 1.0 and got["P@3"] == pytest.approx(2 / 3)
    strict = evaluate_lists({"q": ["b", "a"]}, qrels, parse_measures("RR(rel=2)"))["q"]
    assert strict == {"RR(rel=2)": 0.5}


def test_an_empty_stage_list_scores_zero_and_counts_in_the_mean():
    """trec_eval -c: a judged query with nothing at a stage scores 0, so the
    mean is over every judged query (here 1 / 2, not 1 / 1)."""
    ms = parse_measures("RR,R@10,nDCG@10,P@3")
    qrels = {"hit": {"a": 1}, "empty": {"b": 2}, "missing": {"c": 3}}
    per = evaluate_lists({"hit": ["a"], "empty": []}, qrels, ms)
    assert set(per) == {"hit", "empty", "missing"}
    assert per["empty"] == per["missing"] == {m: 0.0 for m in ("RR", "R@10", "nDCG@10", "P@3")}
    assert per["hit"]["RR"] == 1.0


def test_unjudged_queries_are_not_evaluated():
    per = evaluate_lists({"q": ["a"], "other": ["a"]}, {"q": {"a": 1}, "none": {}}, parse_measures("RR"))
    assert per == {"q": {"RR": 1.0}}


def test_the_order_is_the_stage_order_not_the_document_ids():
    # trec_eval breaks score ties by document id; scores n - rank + 1 keep our order.
    qrels = {"q": {"a": 1}}
    assert evaluate_lists({"q": ["z", "a"]}, qrels, parse_measures("RR"))["q"]["RR"] == 0.5
    assert evaluate_lists({"q": ["a", "z"]}, qrels, parse_measures("RR"))["q"]["RR"] == 1.0


@pytest.mark.parametrize(
    "spec, message",
    [
        ("nDCG@10,Bogus@3", "unknown measure 'Bogus@3'"),
        ("", "no measure given"),
        ("Judged@10", "not computed by trec_eval"),
    ],
)
def test_bad_measures(spec, message):
    with pytest.raises(ValueError, match=message):
        parse_measures(spec)


def _families(param: str) -> list[str]:
    """Every measure family the project accepts (ir-measures' pytrec_eval
    provider, which :func:`parse_measures` admits) that takes ``param``."""
    import ir_measures

    return sorted({m.NAME for m in ir_measures.pytrec_eval.SUPPORTED_MEASURES if param in m.params})


@pytest.mark.parametrize("family", _families("cutoff"))
@pytest.mark.parametrize("cutoff", ["0", "True", "2147483648", "9223372036854775808"])
def test_a_cutoff_below_1_is_refused_before_trec_eval_sees_it(family, cutoff):
    """``P@0`` reached trec_eval, which asserts ("Negative cutoff detected")
    and aborts the process, and a cutoff over a C ``int`` came back under
    another name (a KeyError); every family with a cutoff is checked alike
    (``RR`` takes none in trec_eval; ``IPrec``'s ``@`` is a recall level)."""
    spec = f"{family}@{cutoff}"
    if family == "IPrec":
        assert [str(m) for m in parse_measures("IPrec@0.5")] == ["IPrec@0.5"]
        with pytest.raises(ValueError, match=r"recall level \(IPrec@r\) must be between 0 and 1"):
            parse_measures("IPrec@1.5")
        return
    said = (
        r"the cutoff \(@k\) must be a whole number from 1 to 2,147,483,647"
        if family != "RR"
        else "not computed by trec_eval"
    )
    with pytest.raises(ValueError, match=rf"measure '{re.escape(spec)}'(:| is) {said}"):
        parse_measures(spec)
    assert parse_measures(f"{family}@1" if family != "RR" else "RR")


@pytest.mark.parametrize("family", _families("rel"))
@pytest.mark.parametrize("level", ["0", "2147483648"])
def test_a_relevance_level_below_1_is_refused(family, level):
    """``P(rel=0)@3`` reached pytrec_eval, whose TypeError ("Argument
    relevance_level should be positive") escaped as a traceback."""
    at = "@3" if "cutoff" in _cutoff_required(family) else ""
    if family == "NumRel":  # trec_eval's num_rel takes rel=1 only
        with pytest.raises(ValueError, match="not computed by trec_eval"):
            parse_measures(f"NumRel(rel={level})")
        return
    with pytest.raises(
        ValueError, match=rf"the relevance level \(rel=\) must be a whole number from 1 to 2,147,483,647; got {level}"
    ):
        parse_measures(f"{family}(rel={level}){at}")
    assert parse_measures(f"{family}(rel=2){at}")


def _cutoff_required(family: str) -> list[str]:
    import ir_measures

    return [k for k, info in ir_measures.parse_measure(family).SUPPORTED_PARAMS.items() if info.required]


@pytest.mark.parametrize(
    "spec, message",
    [
        ("P@1.5", "'P@1.5': invalid param cutoff=1.5"),
        ("SetF(beta=0)", r"'SetF\(beta=0\)': invalid param beta=0"),
        ("P", r"'P' needs the cutoff \(@k\); e.g. P@10"),
        ("IPrec", r"'IPrec' needs the recall level \(IPrec@r\); e.g. IPrec@0.5"),
    ],
)
def test_parameters_ir_measures_rejects_are_a_value_error(spec, message):
    """Each of these escaped as an AssertionError (a traceback) before."""
    with pytest.raises(ValueError, match=message):
        parse_measures(spec)


def test_default_measures_and_duplicates():
    assert [str(m) for m in parse_measures(None)] == ["nDCG@10", "RR", "R@10", "P@3"]
    assert [str(m) for m in parse_measures("RR, RR ,R@5")] == ["RR", "R@5"]


# ─── stage lists ─────────────────────────────────────────────────────────


def test_stage_lists_use_the_shared_stage_ids(store):
    index_zebra(store)
    trace = search(store, SearchParams("zebra crossing", limit=2))
    lists = ranked_lists(trace)
    assert list(lists) == ["porter", "trigram", "fusion", "pool", "filter", "trim", "rerank", "final"]
    assert lists == stage_lists(trace)  # the first pass answered: its lists, as the table gives them
    ids = chunk_ids(store)
    named = ranked_ids(trace, ids)
    # the rerank swaps rows 1 and 2; final is the rerank order
    assert named["trim"] == ["a.md::Zebra crossing guide", "b.md::Beta"]
    assert named["rerank"] == named["final"] == ["b.md::Beta", "a.md::Zebra crossing guide"]
    assert "rerank" not in ranked_lists(search(store, SearchParams("zebra", variant=Variant(rerank="off"))))
    # the rerank moved before the trim still comes first in the table's order
    moved = search(store, SearchParams("zebra crossing", limit=2, variant=Variant(rerank="before-trim")))
    assert list(stage_lists(moved))[5:7] == ["rerank", "trim"] and list(ranked_lists(moved))[5:7] == ["trim", "rerank"]


def test_a_merged_chunk_is_in_the_retriever_lists_but_not_after_fusion(store):
    index_collide(store)
    named = ranked_ids(search(store, SearchParams("alpha widget")), chunk_ids(store))
    assert "guide.md::Guide > Example#2" in named["porter"]
    assert named["fusion"] == ["guide.md::Guide > Example"]


def test_fuzzy_stages_appear_when_the_rerun_happens(sample_store):
    trace = search(sample_store, SearchParams("replicaton quorom"))
    lists = ranked_lists(trace)
    assert [s for s in lists if s.startswith("fuzzy:")] == [
        f"fuzzy:{s}" for s in ("porter", "trigram", "fusion", "pool", "filter", "trim", "rerank", "final")
    ]
    # the first pass stopped at the empty session filter: its trim and rerank did not run
    assert lists["porter"] == () and "trim" not in lists and "rerank" not in lists
    # final is the answer: the re-run's (the first pass's own final list is empty)
    assert len(lists["final"]) == 3 and lists["final"] == lists["fuzzy:final"]
    assert stage_lists(trace)["final"] == ()


def test_evaluate_trace_for_one_query(sample_store):
    trace = search(sample_store, SearchParams("write quorum"))
    ids = chunk_ids(sample_store)
    per = evaluate_trace(trace, {"docs/replication.md::Replication > Write quorum": 3}, ids, parse_measures("RR"))
    assert per["rerank"]["RR"] == 1.0 and per["trim"]["RR"] == 0.5 and per["final"]["RR"] == 1.0
    assert evaluate_trace(trace, {}, ids) == {}


# ─── a query set ─────────────────────────────────────────────────────────


def test_evaluate_the_demo_queries(sample_store):
    qrels = read_qrels(DEMO_QRELS)
    ev = evaluate_set(sample_store, DEMO_QUERIES, qrels, "R@10,RR")
    assert ev.unjudged == ("empty",) and ev.unknown_docs == ()
    assert [q.id for q in ev.queries] == [e["id"] for e in DEMO_QUERIES if e["id"] != "empty"]
    # every stage the reference runs, in table order; the fuzzy query re-ran, so its stages are evaluated
    assert ev.stages == tuple(
        s for s in RANKED_IDS if s.removeprefix("fuzzy:") in [p.id for p in pass_plan(P)] + ["final"]
    )
    for stage in ev.stages:
        for m in ev.measures:  # the mean counts every judged query, 0 where the stage is empty or absent
            assert ev.means[stage][m] == pytest.approx(sum(ev.values(stage, m)) / len(ev.queries))
    fuzzy = next(q for q in ev.queries if q.id == "fuzzy")
    assert fuzzy.stages["porter"]["R@10"] == 0.0 and fuzzy.stages["final"]["RR"] == 1.0
    assert all("fuzzy:porter" not in q.stages for q in ev.queries if q.id != "fuzzy")
    # the pool (= limit 3 without sessions) loses relevant chunks fusion had found
    assert ev.means["pool"]["R@10"] < ev.means["fusion"]["R@10"]
    # the session filter of 'session-filter' removes relevant sess-ops chunks
    sf = next(q for q in ev.queries if q.id == "session-filter")
    assert sf.stages["filter"]["R@10"] < sf.stages["pool"]["R@10"]


def test_stale_judgments_are_reported(sample_store):
    qrels = Qrels({"rerank": {"nowhere.md::Gone": 2, "docs/replication.md::Replication > Write quorum": 3}})
    ev = evaluate_set(sample_store, [{"id": "rerank", "query": "write quorum"}], qrels, "RR")
    assert ev.unknown_docs == ("nowhere.md::Gone",)


def test_ab_comparison_counts_and_tests(sample_store):
    qrels = read_qrels(DEMO_QRELS)
    ms = parse_measures("nDCG@10,RR")
    a = evaluate_set(sample_store, DEMO_QUERIES, qrels, ms)
    b = evaluate_set(sample_store, DEMO_QUERIES, qrels, ms, Variant(rerank="off"))
    cmp = compare_evals(a, b)
    nd = cmp.measures[0]
    assert nd.measure == "nDCG@10" and nd.improved + nd.worsened + nd.tied == len(a.queries)
    assert nd.worsened >= 1 and nd.delta == pytest.approx(nd.mean_b - nd.mean_a)
    from scipy import stats

    assert nd.p_ttest == pytest.approx(
        stats.ttest_rel(b.values("final", "nDCG@10"), a.values("final", "nDCG@10")).pvalue
    )
    rr = cmp.measures[1]
    assert (rr.improved, rr.worsened, rr.p_ttest, rr.p_wilcoxon) == (0, 0, None, None)
    doc = eval_to_dict(a, cmp)
    assert list(doc) == ["measures", "stages", "judged", "queries", "comparison"]
    assert doc["comparison"]["a"] == "reference" and doc["comparison"]["b"] == "rerank=off"
    assert set(doc["comparison"]["measures"]["RR"]) == {
        "mean_a",
        "mean_b",
        "delta",
        "improved",
        "worsened",
        "tied",
        "p_ttest",
        "p_wilcoxon",
    }
    assert eval_to_dict(a)["comparison"] is None


def test_compare_measure_edge_cases():
    same = compare_measure([0.5, 0.2], [0.5, 0.2], "RR")
    assert (same.tied, same.p_ttest, same.p_wilcoxon) == (2, None, None)
    shifted = compare_measure([0.1, 0.2, 0.3], [0.2, 0.3, 0.4], "RR")  # every difference equal: t undefined
    assert shifted.improved == 3 and shifted.p_ttest is None and shifted.p_wilcoxon is not None
    one = compare_measure([0.0], [1.0], "RR")
    assert one.improved == 1 and one.p_ttest is None


def test_trec_run_lines_have_strictly_decreasing_scores():
    lines = trec_run_lines("q 1", ["a.md::T", "b.md::Two words", "c.md::U"], "rankscope-final")
    assert lines[1] == "q%201 Q0 b.md::Two%20words 2 2 rankscope-final"
    scores = [float(line.split()[4]) for line in lines]
    assert scores == sorted(scores, reverse=True) and len(set(scores)) == 3
    assert all(len(line.split()) == 6 for line in lines)


# ─── qrels files ─────────────────────────────────────────────────────────


def test_the_shipped_qrels_agree_and_name_real_chunks(sample_store):
    as_json, as_trec = read_qrels(DEMO_QRELS), read_qrels(REPO / "docs" / "demo-qrels.txt")
    assert as_json.judgments == as_trec.judgments and as_json.count() > 50
    ids = chunk_ids(sample_store)
    assert [d for docs in as_json.judgments.values() for d in docs if d not in ids] == []
    assert set(as_json.queries.values()) <= {e["query"] for e in DEMO_QUERIES}


@pytest.mark.parametrize("name", ["q.txt", "q.json", "qrels"])
def test_qrels_round_trip(tmp_path, name):
    q = Qrels({"q 1": {"a.md::Two words": 3, "b.md::X#2": 0}, "q2": {"é::ü\t": 1}}, {"q2": "some query"})
    write_qrels(q, tmp_path / name)
    back = read_qrels(tmp_path / name)
    assert back.judgments == q.judgments
    if name.endswith(".json"):
        assert back == q  # the JSON form keeps the query texts too


def test_qrels_editing():
    q = Qrels()
    q.set_grade("rerank", "a::b", 2, query="write quorum")
    assert q.grade("rerank", "a::b") == 2 and q.qid_for_text("write quorum") == "rerank"
    q.set_grade("rerank", "a::b", None)
    assert not q.judged("rerank") and q.count() == 0
    q.set_grade("other", "a::b", None, query="kafka broker")  # nothing to remove: nothing recorded
    assert "other" not in q.queries and "other" not in q.judgments
    with pytest.raises(QrelsError, match="grade must be 0, 1, 2 or 3"):
        q.set_grade("rerank", "a::b", 4)


@pytest.mark.parametrize(
    "text, message",
    [
        ("q 0 doc\n", "line 1: expected 'qid 0 docid grade' (4 fields); got 3"),
        ("# comment\n\nq 0 doc 7\n", "line 3: grade must be 0, 1, 2 or 3; got 7"),
        ("q 0 doc x\n", "line 1: grade must be 0, 1, 2 or 3; got 'x'"),
        ('{"format": "rankscope-qrels", "version": 9, "queries": []}', "unsupported version 9"),
        (
            '{"format": "rankscope-qrels", "version": 1, "queries": [{"id": "q", "judgments": {"d": 5}}]}',
            "grade must be",
        ),
        ('{"a": 1}', "not a qrels file"),
        ("{nope", "not JSON (Expecting property name"),
    ],
)
def test_malformed_qrels(tmp_path, text, message):
    path = tmp_path / "bad.qrels"
    path.write_text(text, "utf-8")
    with pytest.raises(QrelsError, match=re.escape(message)):
        read_qrels(path)


@pytest.mark.parametrize(
    "line, message",
    [
        ("q 0 doc%zz 1", "line 2: docid 'doc%zz': '%zz' is not a percent escape"),
        ("q 0 100% 1", "line 2: docid '100%': '%' is not a percent escape"),
        ("q 0 a%2 1", "line 2: docid 'a%2': '%2' is not a percent escape"),
        ("q%g1 0 doc 1", "line 2: qid 'q%g1': '%g1' is not a percent escape"),
        ("q 0 y%FF 1", "line 2: docid 'y%FF': '%FF' is not the UTF-8 of a character"),
        ("q 0 y%C3 1", "line 2: docid 'y%C3': '%C3' is not the UTF-8 of a character"),
        ("q 0 s%ED%A0%80 1", "line 2: docid 's%ED%A0%80': '%ED%A0%80' is not the UTF-8 of a character"),
    ],
)
def test_an_id_that_is_not_percent_encoded_text_is_refused_naming_its_line(tmp_path, line, message):
    """``%zz`` was kept as it was and written back ``%25zz``, ``%FF`` read as
    U+FFFD and written back as that: a round trip changed the id. In the TREC
    form every ``%`` starts an escape of UTF-8 (how :func:`trec_token` writes
    ids), so anything else is refused, naming the line and the field."""
    path = tmp_path / "bad.qrels"
    path.write_text(f"q 0 fine 2\n{line}\n", "utf-8")
    with pytest.raises(QrelsError, match=re.escape(f"{path} {message}")):
        read_qrels(path)


def test_every_id_read_from_trec_is_written_back_as_read(tmp_path):
    """Either hex case, several escapes in a row: a TREC -> JSON -> TREC
    round trip names the same ids (the canonical form: upper-case hex,
    printable characters as they are)."""
    src = tmp_path / "in.txt"
    src.write_text("q%201 0 a%2fb%25c 1\nq2 0 %C3%A9%E2%82%AC 2\nq2 0 t%09%0A 3\n", "utf-8")
    q = read_qrels(src)
    assert q.judgments == {"q 1": {"a/b%c": 1}, "q2": {"é€": 2, "t\t\n": 3}}
    write_qrels(q, tmp_path / "mid.json")
    write_qrels(read_qrels(tmp_path / "mid.json"), tmp_path / "out.txt")
    assert (tmp_path / "out.txt").read_text("utf-8") == "q%201 0 a/b%25c 1\nq2 0 é€ 2\nq2 0 t%09%0A 3\n"
    assert read_qrels(tmp_path / "out.txt").judgments == q.judgments


def test_conflicting_trec_judgments_are_listed_and_the_last_kept():
    text = "q1 0 d1 2\nq1 0 d2 1\n# again\nq1 0 d1 0\nq2 0 x 1\nq2 0 x 1\nq1 0 d1 0\nq2 0 y%20z 3\nq2 0 y%20z 1\n"
    q = Qrels.from_trec(text, "t.txt")
    assert q.judgments == {"q1": {"d1": 0, "d2": 1}, "q2": {"x": 1, "y z": 1}}
    assert q.conflicts == [  # q2/x repeats its grade: no conflict
        GradeConflict("q1", "d1", (("line 1", 2), ("line 4", 0), ("line 7", 0))),
        GradeConflict("q2", "y z", (("line 8", 3), ("line 9", 1))),
    ]
    assert [c.kept for c in q.conflicts] == [0, 1]
    assert Qrels.from_trec("q 0 d 1\nq 0 d 1\n").conflicts == []


def test_conflicting_json_entries_are_listed_too(tmp_path):
    path = tmp_path / "q.json"
    entries = [{"id": "q", "judgments": {"d": 3, "e": 1}}, {"id": "q", "judgments": {"d": 0, "e": 1}}]
    path.write_text(json.dumps({"format": "rankscope-qrels", "version": 1, "queries": entries}), "utf-8")
    q = read_qrels(path)
    assert q.judgments == {"q": {"d": 0, "e": 1}}
    assert q.conflicts == [GradeConflict("q", "d", (("queries[0]", 3), ("queries[1]", 0)))]


def test_plain_dict_qrels(tmp_path):
    path = tmp_path / "q.json"
    path.write_text(json.dumps({"q": {"d": 2}}), "utf-8")
    assert read_qrels(path).judgments == {"q": {"d": 2}}


def test_default_qrels_path_is_per_store(tmp_path, monkeypatch):
    monkeypatch.setenv("RANKSCOPE_DATA_DIR", str(tmp_path / "data"))
    a, b = default_qrels_path(tmp_path / "a.db"), default_qrels_path(tmp_path / "b.db")
    assert a != b and a.parent.parent == tmp_path / "data" / "stores" and a.name == "qrels.json"
    assert default_qrels_path(tmp_path / "x" / ".." / "a.db") == a
    assert default_qrels_path(None) is None and default_qrels_path(":memory:") is None


# ─── snapshots ───────────────────────────────────────────────────────────


def test_diff_lists():
    d = diff_lists("final", ["a", "b", "c"], ["b", "a", "d"])
    assert d.moved == (("b", 2, 1), ("a", 1, 2)) and d.entered == (("d", 3),) and d.left == (("c", 3),)
    assert not diff_lists("final", ["a"], ["a"]).changed


def test_snapshot_round_trip_and_change(store):
    index_zebra(store)
    entries = [{"id": "z", "query": "zebra crossing", "limit": 2}, {"id": "o", "query": "relevant"}]
    snap = json.loads(json.dumps(take_snapshot(store, entries)))
    assert validate_snapshot(snap) is snap
    assert snap["queries"][0]["stages"]["final"] == ["b.md::Beta", "a.md::Zebra crossing guide"]
    assert check_snapshot(store, snap).ok
    store.index_text("c.md", "# Zebra crossing\nzebra crossing zebra crossing\n", "markdown")
    result = check_snapshot(store, snap)
    assert not result.ok and [q.id for q in result.changed] == ["z"]
    final = next(s for s in result.changed[0].stages if s.stage == "final")
    assert final.entered == (("c.md::Zebra crossing", 1),)
    only_trigram = check_snapshot(store, snap, ("trigram",))
    assert [s.stage for s in only_trigram.changed[0].stages] == ["trigram"]
    assert result.to_dict()["changed"][0]["stages"]["final"]["entered"] == [["c.md::Zebra crossing", 1]]


@pytest.mark.parametrize(
    "data, message",
    [
        ({}, "not a rankscope snapshot"),
        ({"format": "rankscope-snapshot", "version": 2, "queries": []}, "unsupported snapshot version 2"),
        ({"format": "rankscope-snapshot", "version": 1, "queries": [{"entry": {}}]}, r"queries\[0\].layer is missing"),
    ],
)
def test_bad_snapshots(data, message):
    with pytest.raises(ValueError, match=message):
        validate_snapshot(data)


def test_stage_list():
    assert parse_stage_list("final, rerank,final") == ("final", "rerank")
    assert parse_stage_list(None) is None
    for empty in ("", " ", ", ,"):
        with pytest.raises(ValueError, match="no stage given"):
            parse_stage_list(empty)
    with pytest.raises(ValueError, match="unknown stage 'answer'"):
        parse_stage_list("answer")
