"""The stage table (engine.pipeline.table): the shared ids, the pass plan, the ranked
lists, and consumers that take names and order from it alone."""

from __future__ import annotations

import pytest

from engine import SearchParams, Variant, search, trace_to_dict
from engine.lab.journey import stage_summaries
from engine.pipeline.run import pass_plan
from engine.pipeline.table import (
    BY_ID,
    PASS_STAGES,
    RANKED_IDS,
    RETRIEVERS,
    STAGES,
    ranked,
    run_stage_ids,
    stage,
    depth,
    stage_lists,
    title,
)

from ..helpers import index_herd, index_zebra


def test_the_shared_stage_ids_in_pipeline_order():
    assert [s.id for s in STAGES] == [
        "refresh",
        "porter",
        "trigram",
        "retrieve",
        "fusion",
        "pool",
        "filter",
        "trim",
        "rerank",
        "fuzzy",
        "final",
        "agent",
    ]
    assert [s.id for s in PASS_STAGES] == ["porter", "trigram", "fusion", "pool", "filter", "trim", "rerank"]
    assert RETRIEVERS == ("porter", "trigram")
    for s in STAGES:
        assert s.title and len(s.about) == 2 and all(line.strip() for line in s.about)
        assert s.scope in ("pass", "trace")
    assert {s.id for s in STAGES if s.scope == "trace"} == {"refresh", "fuzzy", "agent"}
    # the agent view is the stage after Final: a view of the answer, no list of its own
    assert (BY_ID["agent"].kind, depth("agent") > depth("final")) == ("view", True)
    assert RANKED_IDS[:8] == ("porter", "trigram", "fusion", "pool", "filter", "trim", "rerank", "final")
    assert RANKED_IDS[8:] == tuple("fuzzy:" + s for s in RANKED_IDS[:8])
    assert stage("fuzzy:trim") is BY_ID["trim"] and title("fuzzy:pool") == "Candidate pool"
    with pytest.raises(KeyError, match="unknown stage 'no-such-stage'"):
        stage("no-such-stage")


def test_the_pass_plan_follows_the_variant():
    ids = lambda v: [s.id for s in pass_plan(SearchParams("x", variant=v))]  # noqa: E731
    assert ids(Variant()) == ["porter", "trigram", "fusion", "pool", "filter", "trim", "rerank"]
    assert ids(Variant(rerank="before-trim")) == ["porter", "trigram", "fusion", "pool", "filter", "rerank", "trim"]
    assert ids(Variant(rerank="off")) == ["porter", "trigram", "fusion", "pool", "filter", "trim"]


def test_ranked_lists_per_stage_and_per_trace(store):
    index_zebra(store)
    trace = search(store, SearchParams("zebra crossing", limit=2))
    run = trace.first
    assert ranked(run, "porter") == run.porter.hits
    assert ranked(run, "fusion") == run.fusion.candidates
    assert ranked(run, "pool") == run.pool.kept
    assert ranked(run, "filter") == run.filter.kept
    assert ranked(run, "trim") == run.trim.kept
    assert ranked(run, "rerank") == tuple(e.candidate for e in run.rerank.entries)
    assert ranked(run, "final") == run.results == tuple(r.candidate for r in trace.final)
    for bad in ("refresh", "fuzzy", "retrieve", "agent"):
        with pytest.raises(ValueError):
            ranked(run, bad)
    lists = stage_lists(trace)
    assert (
        list(lists)
        == list(run_stage_ids(run))
        == ["porter", "trigram", "fusion", "pool", "filter", "trim", "rerank", "final"]
    )
    # a fuzzy re-run adds its own, prefixed
    t = search(store, SearchParams("zebar", limit=2))
    assert [k for k in stage_lists(t) if k.startswith("fuzzy:")] == [
        "fuzzy:porter",
        "fuzzy:trigram",
        "fuzzy:fusion",
        "fuzzy:pool",
        "fuzzy:filter",
        "fuzzy:trim",
        "fuzzy:rerank",
        "fuzzy:final",
    ]
    # a pass that stopped at the filter lists only what ran
    store.index_text("s.md", "# Mine\nzebra stripes\n", "markdown", session_id="theirs")
    t = search(store, SearchParams("stripes", sessions=("nobody-has-it",), variant=Variant(fuzzy="never")))
    assert t.first.filter.removed and not t.first.filter.kept
    assert "trim" not in stage_lists(t) and stage_lists(t)["final"] == ()
    assert [s.headline for s in stage_summaries(t) if s.stage in ("trim", "rerank")] == [
        "did not run: nothing survived the session filter"
    ] * 2


def test_a_pass_that_ended_says_which_stage_emptied_it(store):
    """The stages a pass did not run name the earliest empty stage (its
    ``emptied``): with no match and no session filter the Stages pane said
    "nothing survived the session filter"."""
    index_zebra(store)

    def skipped(params: SearchParams) -> list[str]:
        t = search(store, params)
        return [s.headline for s in stage_summaries(t) if s.stage in ("trim", "rerank")]

    nothing = SearchParams("kafka", variant=Variant(fuzzy="never"))
    assert skipped(nothing) == ["did not run: nothing was retrieved"] * 2
    assert (
        skipped(SearchParams("zebra", limit=0, variant=Variant(fuzzy="never")))
        == ["did not run: the candidate pool was empty"] * 2
    )
    from engine.pipeline.table import pass_ended_by

    assert pass_ended_by(search(store, nothing).first) is BY_ID["retrieve"]
    assert pass_ended_by(search(store, SearchParams("zebra")).first) is None


def test_summaries_and_timings_follow_the_table(store):
    index_zebra(store)
    trace = search(store, SearchParams("zebra crossing", limit=2, variant=Variant(rerank="before-trim")))
    summaries = stage_summaries(trace)
    ran = ["porter", "trigram", "fusion", "pool", "filter", "rerank", "trim"]  # in the order of the pass
    assert [s.stage for s in summaries] == [*ran, "fuzzy", "final"]
    assert all(s.title == title(s.stage) for s in summaries)
    assert [name for name, _ in trace.timings_ms] == ["refresh", *ran]
    assert list(trace_to_dict(trace)["timings_ms"]) == [name for name, _ in trace.timings_ms]
    off = stage_summaries(search(store, SearchParams("zebra crossing", variant=Variant(rerank="off"))))
    assert [s.headline for s in off if s.stage == "rerank"] == ["did not run: variant rerank=off"]


def test_the_fuzzy_reason_is_a_code_with_numbers(store):
    index_herd(store)
    found = search(store, SearchParams("zebra", limit=3))
    assert (found.fuzzy.ran, found.fuzzy.code, found.fuzzy.first_pass_results) == (False, "first-pass-found", 3)
    assert found.fuzzy.reason == "fusion returned 3 results after the session filter: typo correction not attempted"
    removed = search(store, SearchParams("zebar", sessions=("nobody",)))
    assert (removed.fuzzy.code, removed.fuzzy.trigger) == ("corrected", "fusion-empty")
    assert removed.fuzzy.reason == "fusion found nothing; corrected zebar → zebra"
    d = trace_to_dict(removed)["fuzzy"]
    assert (d["reason_code"], d["trigger"], d["reason"]) == ("corrected", "fusion-empty", removed.fuzzy.reason)
    shadow = search(store, SearchParams("zebra", variant=Variant(fuzzy="always")))
    assert (shadow.fuzzy.trigger, shadow.fuzzy.shadow) == ("shadow", True)
    assert shadow.fuzzy.reason.startswith("shadow run (fuzzy policy 'always'): ")
