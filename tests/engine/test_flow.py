"""The rank flow (engine.lab.flow): one row per candidate, a cell per stage with
its position and movement, the exit marker where it left; the flow's fate of
every candidate is where why-not says it left."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine import SearchParams, Variant, search
from engine.lab.flow import STATES, Absent, Flow, run_flow, trace_flows
from engine.pipeline.candidates import Exit
from engine.lab.why import exit_of_explanation, fate, why_not
from engine.pipeline.paths import fate as path_fate
from engine.pipeline.table import depth

from ..helpers import case_params, index_collide, index_herd, index_zebra
from .test_parity import _store, parity_cases
from .test_properties import LIMITS, SEARCHES, SESSIONS, VARIANTS, WORDS, corpus_store

FIRST = ("porter", "trigram", "fusion", "pool", "filter", "trim", "rerank", "final")


def states(row):
    return [c.state for c in row.cells]


def check_flow(flow: Flow, run) -> None:
    """Each row's cells agree with its path; the sort order is the documented one."""
    assert flow.stages[-1].endswith("final")
    for row in flow.rows:
        assert len(row.cells) == len(flow.stages)
        assert [c.stage for c in row.cells] == list(flow.stages)
        assert all(c.state in STATES for c in row.cells)
        path = run.path(row.rowid)
        if not row.entered:
            assert path is None
            continue
        for c in row.cells:
            if c.state == "at":
                assert path.position(c.stage) == c.position
            else:
                assert c.position is None
        left = [c for c in row.cells if c.state == "left"]
        assert (row.exit is None) == (not left) == (path.exit is None)
        if left:
            assert left[0].exit == path.exit and left[0].stage == path.exit.stage
        assert row.final == path.position(run.prefix + "final")
        assert row.fused == path.position(run.prefix + "fusion")
        # a move compares with the previous chain position, or with the best retriever rank
        for c in row.cells:
            if c.state == "at" and c.move is not None:
                ref = row.cell(c.against)
                assert ref is not None and ref.position - c.position == c.move
    keys = [(r.final is None, r.final or 0, -r.reached, r.fused is None, r.fused or 0) for r in flow.rows]
    assert keys == sorted(keys)


# Every golden case of every parity set present (a set that is absent, context7
# without ../shared, is one skipped case saying why): test_parity's own list.
_cases = parity_cases


@pytest.mark.parametrize(("set_name", "case"), list(_cases()))
def test_the_flow_agrees_with_the_paths_on_every_parity_case(set_name, case):
    trace = search(_store(set_name), case_params(case))
    flows = trace_flows(trace)
    runs = {"first": trace.first, "fuzzy": trace.fuzzy.rerun}
    for flow in flows:
        check_flow(flow, runs[flow.pass_name])
        assert {r.rowid for r in flow.rows} == {p.rowid for p in runs[flow.pass_name].paths}
    assert flows[0].answering == (trace.layer != "none")
    assert json.loads(json.dumps([f.to_dict() for f in flows]))


@pytest.fixture
def zebra(store):
    return index_zebra(store)


def test_a_collision_shows_merged_into_the_kept_row(store):
    index_collide(store)
    [flow] = trace_flows(search(store, SearchParams("widget", limit=3)))
    assert flow.stages == FIRST and flow.answering and not flow.shadow
    kept, merged = flow.row(2), flow.row(3)
    assert flow.rows[0] is kept and flow.rows[-1] is merged  # returned first, merged last
    assert states(merged) == ["at", "at", "left", "gone", "gone", "gone", "gone", "gone"]
    cell = merged.cell("fusion")
    assert cell.exit.reason == "merged" and cell.exit.get("into_rowid") == 2
    assert merged.fused is None and merged.final is None and merged.reached == 0
    assert kept.final == 1 and kept.exit is None


def test_a_session_removal_shows_the_session(store):
    index_herd(store)
    [flow] = trace_flows(search(store, SearchParams("zebra", limit=3, sessions=("mine",))))
    row = flow.row(1)
    assert states(row) == ["at", "at", "at", "at", "left", "gone", "gone", "gone"]
    assert row.cell("filter").exit.reason == "session-filter"
    assert row.cell("filter").exit.get("session_id") == "other"
    # it got to the pool only: below every returned row and the rows cut later
    assert [r.reached for r in flow.rows] == sorted((r.reached for r in flow.rows), reverse=True)


def test_a_trim_cut_shows_the_limit(store):
    index_herd(store)
    trace = search(store, SearchParams("zebra", limit=3, sessions=("mine",)))
    [flow] = trace_flows(trace)
    cut = [r for r in flow.rows if r.exit is not None and r.exit.reason == "trimmed"]
    assert len(cut) == 3
    for r in cut:
        assert r.cell("trim").state == "left" and r.cell("trim").exit.get("limit") == 3
        assert r.cell("filter").state == "at"
    # cut rows sort by how far they got, then by fused position
    assert [r.fused for r in cut] == sorted(r.fused for r in cut)
    assert [r.final for r in flow.rows[:3]] == [1, 2, 3]


def test_beyond_the_pool(store):
    index_herd(store)
    [flow] = trace_flows(search(store, SearchParams("zebra", limit=3)))
    beyond = [r for r in flow.rows if r.exit is not None and r.exit.reason == "beyond-pool"]
    assert beyond and all(r.cell("pool").state == "left" and r.cell("pool").exit.get("pool_size") == 3 for r in beyond)


def test_a_rerank_move_is_up_and_down(zebra):
    [flow] = trace_flows(search(zebra, SearchParams("zebra crossing", limit=2)))
    beta, guide = flow.row(2), flow.row(1)
    assert flow.rows[:2] == (beta, guide)
    up, down = beta.cell("rerank"), guide.cell("rerank")
    assert (up.position, up.move, up.direction, up.against) == (1, 1, "up", "trim")
    assert (down.position, down.move, down.direction) == (2, -1, "down")
    assert beta.cell("pool").direction == "same"
    assert beta.moved == 1 and guide.moved == -1
    # fusion compares with the best retriever rank
    f = guide.cell("fusion")
    assert f.against in ("porter", "trigram") and f.move == guide.cell(f.against).position - f.position


def test_a_fuzzy_rerun_shows_both_passes(zebra):
    trace = search(zebra, SearchParams("zebar", limit=3))
    assert trace.layer == "rrf-fuzzy"
    answer, first = trace_flows(trace)
    assert answer.pass_name == "fuzzy" and answer.answering and answer.query == "zebra"
    assert answer.stages == tuple("fuzzy:" + s for s in FIRST)
    assert first.pass_name == "first" and not first.answering
    assert answer.rows[0].final == 1 and answer.rows[0].cell("fuzzy:final").state == "at"
    assert first.rows == ()  # "zebar" matched nothing: nothing entered the first pass


def test_an_emptied_filter_leaves_the_later_stages_not_run(store):
    index_herd(store)
    trace = search(store, SearchParams("zebra", limit=3, sessions=("nobody",), variant=Variant(pool_size_sessions=1)))
    [flow] = trace_flows(trace)
    [row] = [r for r in flow.rows if r.exit is not None and r.exit.reason == "session-filter"]
    assert states(row)[-3:] == ["not-run", "not-run", "gone"]  # trim and rerank never ran; final is empty
    assert trace.layer == "none" and not flow.answering


@pytest.mark.parametrize(
    "variant,stages",
    [
        (Variant(rerank="before-trim"), ("porter", "trigram", "fusion", "pool", "filter", "rerank", "trim", "final")),
        (Variant(rerank="off"), ("porter", "trigram", "fusion", "pool", "filter", "trim", "final")),
    ],
)
def test_the_columns_follow_the_execution_order(zebra, variant, stages):
    [flow] = trace_flows(search(zebra, SearchParams("zebra crossing", limit=1, variant=variant)))
    assert flow.stages == stages


def test_a_chunk_no_retriever_returned_is_an_absent_row(zebra):
    params = SearchParams("zebra crossing", limit=3)
    trace = search(zebra, params)
    [e] = why_not(zebra, params, rowid=3, trace=trace)
    exit = exit_of_explanation(e)
    assert exit is not None
    a = Absent(e.chunk.rowid, e.chunk.source, e.chunk.title, exit)
    assert a == Absent(
        3,
        "o0.md",
        "Other 0",
        Exit(
            "retrieve", "no-term", (("porter_terms", ("zebra", "crossing")), ("trigram_terms", ("zebra", "crossing")))
        ),
    )
    [flow] = trace_flows(trace, [a])
    row = flow.rows[-1]
    assert row.rowid == 3 and not row.entered and row.reached == 0
    assert states(row) == ["left"] + ["gone"] * 7 and row.cells[0].exit.reason == "no-term"
    with pytest.raises(ValueError, match="entered"):
        run_flow(trace.first, params, answering=True, absent=[Absent(1, "a.md", "x", a.exit)])
    assert fate(zebra, trace, 3).exit == a.exit and path_fate(trace, 3) is None


def test_the_fate_of_returned_and_dropped_rows(store):
    index_herd(store)
    trace = search(store, SearchParams("zebra", limit=3, sessions=("mine",)))
    top = trace.final[0].candidate.rowid
    assert path_fate(trace, top).to_dict() == {
        "rowid": top,
        "position": 1,
        "stage": "final",
        "pass": "first",
        "exit": None,
    }
    f = path_fate(trace, 1)
    assert (f.position, f.stage, f.exit.reason) == (None, "filter", "session-filter")
    assert path_fate(trace, 999) is None


@SEARCHES
@given(WORDS, LIMITS, SESSIONS, st.sampled_from([*VARIANTS, Variant(rerank="off")]))
def test_every_flow_row_leaves_where_why_not_says(query, limit, sessions, variant):
    """For every candidate in the flows, why-not agrees with the flows' rows:
    a returned row is where why-not says, else why-not names the deepest
    exit of the rows outside a shadow re-run (the answering flow first)."""
    store = corpus_store()
    params = SearchParams(query, limit=limit, sessions=sessions, variant=variant)
    trace = search(store, params)
    flows = trace_flows(trace)
    rowids = list(dict.fromkeys(r.rowid for f in flows if not f.shadow for r in f.rows))
    for rowid in rowids[:15]:
        [e] = why_not(store, params, rowid=rowid, trace=trace)
        rows = [(f, f.row(rowid)) for f in flows if not f.shadow and f.row(rowid) is not None]
        final = next((r.final for f, r in rows if f.answering and r.final is not None), None)
        if e.returned:
            assert final == e.position
            continue
        exits = [r.exit for _, r in rows if r.exit is not None]
        deepest = max(exits, key=lambda x: depth(x.stage))  # max keeps the first of equal depth
        assert final is None and (deepest.stage, deepest.reason) == (e.stage, e.reason), (rowid, e.message)


def test_fate_reads_the_paths_or_asks_why_not(zebra):
    params = SearchParams("zebra crossing", limit=1)
    trace = search(zebra, params)
    assert fate(zebra, trace, trace.final[0].candidate.rowid).position == 1
    cut = next(r for r in trace_flows(trace)[0].rows if r.final is None)
    assert fate(zebra, trace, cut.rowid).exit == cut.exit
    f = fate(zebra, trace, 3)  # "Other 0": no query term
    assert (f.position, f.stage, f.exit.reason, f.pass_name) == (None, "retrieve", "no-term", "first")
