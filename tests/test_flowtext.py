"""The flow's texts (tui.present.flowtext): cells, markers, movement, middle-cut titles, fate lines."""

from __future__ import annotations

import pytest
from rich.cells import cell_len

from engine import SearchParams, Store, search
from engine.lab.counterfactual import would_return_with
from engine.lab.flow import FlowCell, trace_flows
from engine.lab.why import fate
from engine.pipeline.candidates import Exit
from tui.present.flowtext import (
    cell_text,
    counterfactual_text,
    fate_text,
    flow_title,
    header,
    marker,
    move_text,
    movement,
    row_texts,
)

from .helpers import index_collide, index_herd, index_zebra


@pytest.mark.parametrize(
    "exit,text",
    [
        (Exit("fusion", "merged", (("into_rowid", 57), ("into_position", 1), ("key", "k"))), "merged→57"),
        (Exit("filter", "session-filter", (("position", 1), ("session_id", "s2"), ("allow_set", ()))), "session s2"),
        (Exit("filter", "session-filter", (("position", 1), ("session_id", ""), ("allow_set", ()))), "session ''"),
        (Exit("trim", "trimmed", (("position", 5), ("limit", 3))), "cut @3"),
        (Exit("fuzzy:pool", "beyond-pool", (("position", 5), ("pool_size", 3))), "beyond pool"),
        (Exit("retrieve", "no-term", ()), "not retrieved"),
        (Exit("fuzzy:retrieve", "beyond-fts-limit", ()), "not retrieved"),
        (Exit("fuzzy", "fuzzy-not-attempted", ()), "not retrieved"),
    ],
)
def test_markers(exit, text):
    assert marker(exit) == text


def test_cells_and_moves():
    assert [move_text(m) for m in (3, -1, 0, None)] == ["↑3", "↓1", "=", ""]
    assert cell_text(FlowCell("pool", "at", 4, 3, "fusion")) == "#4 ↑3"
    assert cell_text(FlowCell("porter", "at", 7)) == "#7"
    assert cell_text(FlowCell("porter", "absent")) == "·"
    assert cell_text(FlowCell("trim", "not-run")) == "–"
    assert cell_text(FlowCell("rerank", "gone")) == ""
    assert [header(s) for s in ("fusion", "fuzzy:filter", "final")] == ["Fused", "~Filter", "Final"]


def test_a_flow_table_reads_without_colour(store):
    index_collide(store)
    [flow] = trace_flows(search(store, SearchParams("widget", limit=3)))
    merged = flow.row(3)
    assert row_texts(merged) == ["#2", "#2", "merged→2", "", "", "", "", ""]
    assert flow_title(flow) == "first pass 'widget' (the answer)"


def test_titles_when_no_pass_answered(store):
    index_collide(store)
    [nothing] = trace_flows(search(store, SearchParams("qqqxyzzy", limit=3)))
    assert nothing.layer == "none" and not nothing.rows
    assert flow_title(nothing) == "first pass 'qqqxyzzy' (no answer: nothing was returned)"


def test_movement_of_results(store):
    index_zebra(store)
    [flow] = trace_flows(search(store, SearchParams("zebra crossing", limit=2)))
    assert [movement(r) for r in flow.rows[:2]] == ["2→1 ↑1", "1→2 ↓1"]
    [one] = trace_flows(search(store, SearchParams("zebra crossing", limit=1)))
    assert movement(one.rows[0]) == "1→1 =" and movement(one.rows[-1]) == "" and movement(None) == ""


def test_fate_and_counterfactual_lines(store):
    index_herd(store)
    params = SearchParams("zebra", limit=3, sessions=("mine",))
    trace = search(store, params)
    assert fate_text(fate(store, trace, 1)) == "left at Session filter: removed by the session filter (session 'other')"
    top = trace.final[0].candidate.rowid
    assert fate_text(fate(store, trace, top)) == "#1 in the answer"
    cf = would_return_with(store, params, rowid=1, trace=trace)
    assert counterfactual_text(cf) == "allowing session 'other' would return it at #1"


def test_fate_of_a_fuzzy_answer():
    s = Store.create(":memory:")
    index_zebra(s)
    trace = search(s, SearchParams("zebar", limit=1))
    top = trace.final[0].candidate.rowid
    assert fate_text(fate(s, trace, top)) == "#1 in the answer (after typo correction)"
    other = next(r.rowid for r in trace_flows(trace)[0].rows if r.final is None)
    assert (
        fate_text(fate(s, trace, other))
        == "left at Candidate pool in the fuzzy re-run: beyond the pool (fused #2, pool 1)"
    )


def test_compact_cells():
    assert cell_text(FlowCell("pool", "at", 4, 3, "fusion"), compact=True) == "4↑3"
    assert cell_text(FlowCell("pool", "at", 1, 0, "fusion"), compact=True) == "1="
    assert header("filter", compact=True) == "Filt" and header("fuzzy:rerank", compact=True) == "~Rrk"
    sess = Exit("filter", "session-filter", (("position", 1), ("session_id", "a-very-long-session"), ("allow_set", ())))
    assert marker(sess, compact=True) == "✗a-v…sion"
    short = Exit("filter", "session-filter", (("position", 1), ("session_id", "sess-ops"), ("allow_set", ())))
    assert marker(short, compact=True) == "✗sess-ops"
    assert [
        marker(Exit("fusion", "merged", (("into_rowid", 57),)), True),
        marker(Exit("trim", "trimmed", (("limit", 3),)), True),
        marker(Exit("pool", "beyond-pool", ()), True),
        marker(Exit("retrieve", "no-term", ()), True),
    ] == ["→57", "cut@3", "beyond", "none"]


def test_the_rich_table_fits_80_columns_compact_and_120_in_full(store):
    from rich.console import Console

    from tui.present.flowtext import LEGEND, fits, flow_table

    index_herd(store)
    index_collide(store)
    [flow] = trace_flows(search(store, SearchParams("zebra widget", limit=3, sessions=("mine",))))
    assert fits(flow, 120) and not fits(flow, 80) and fits(flow, 80, compact=True)
    for width, expect in (
        (80, ["→9", "✗other", "cut@3", "Filt"]),
        (120, ["merged→9", "session other", "cut @3", "Filter", "Final"]),
    ):
        console = Console(width=width, no_color=True, record=True)
        console.print(flow_table(flow, width))
        text = console.export_text()
        assert max(cell_len(line) for line in text.splitlines()) <= width
        for word in expect:
            assert word in text, (width, word)
    assert "→57 merged into row 57" in LEGEND
    assert "beyond: past the pool size" in LEGEND  # the cell's word, then what it means, as for the others
