"""Every candidate's path (engine.pipeline.paths): consistent with the stage lists on
every golden case, and the right reason code and numbers for each way out."""

from __future__ import annotations

import json

import pytest

from engine import SearchParams, Variant, search, trace_to_dict
from engine.lab.journey import journey
from engine.pipeline.export import TRACE_SCHEMA_VERSION
from engine.pipeline.candidates import Exit
from engine.pipeline.passes import Run
from engine.pipeline.trace import Trace
from engine.pipeline.paths import REASONS, data_names, run_paths, sentence
from engine.pipeline.table import STAGES, ranked, stage, stage_lists
from engine.lab.why import why_not
from engine.pipeline.variants import variant_spec

from ..helpers import case_params, index_collide, index_herd, index_zebra
from .test_parity import SETS, _store, parity_cases


def runs_of(trace: Trace) -> list[Run]:
    return [trace.first] + ([trace.fuzzy.rerun] if trace.fuzzy.rerun is not None else [])


def check_paths(trace: Trace) -> None:
    """The rules of engine.pipeline.paths, against the stage lists themselves."""
    lists = stage_lists(trace)
    for run in runs_of(trace):
        retrieved = {h.rowid for sid in run.order if stage(sid).kind == "retriever" for h in ranked(run, sid)}
        assert {p.rowid for p in run.paths} == retrieved
        assert len(run.paths) == len(retrieved)
        for p in run.paths:
            assert [sid for sid, _ in p.steps] == [run.prefix + sid for sid in run.order] + [run.prefix + "final"]
            # positions equal index + 1 in each stage's list
            for sid, pos in p.steps:
                rows = [x.rowid for x in lists[sid]]
                if pos is None:
                    assert p.rowid not in rows, (sid, p)
                else:
                    assert rows[pos - 1] == p.rowid, (sid, pos, p)
            chain = [(sid, pos) for sid, pos in p.steps if stage(sid).kind != "retriever"]
            gone = [sid for sid, pos in chain if pos is None]
            if not gone:
                assert p.exit is None
            else:
                # exit = the first chain stage without a position; none after it
                first_gone = chain.index((gone[0], None))
                assert all(pos is None for _, pos in chain[first_gone:])
                assert p.exit is not None and p.exit.stage == gone[0], p
                assert p.exit.reason in REASONS and REASONS[p.exit.reason] == stage(p.exit.stage).id
                assert [k for k, _ in p.exit.data] == list(data_names(p.exit.reason))
                assert sentence(p.exit)
            # final rows have exit null
            assert (p.position(run.prefix + "final") is not None) == (p.exit is None)
        # every row of a chain stage's list has a path with that position
        for sid in [run.prefix + s for s in run.order if stage(s).kind == "list"] + [run.prefix + "final"]:
            for i, item in enumerate(lists[sid], 1):
                assert run.path(item.rowid).position(sid) == i
        assert run_paths(run) == run.paths  # computed once, deterministic


# Every golden case of every parity set present (a set that is absent, context7
# without ../shared, is one skipped case saying why): test_parity's own list.
_cases = parity_cases


@pytest.mark.parametrize(("set_name", "case"), list(_cases()))
def test_paths_agree_with_the_stage_lists_on_every_parity_case(set_name, case):
    trace = search(_store(set_name), case_params(case))
    check_paths(trace)
    d = json.loads(json.dumps(trace_to_dict(trace)))
    # 3: "empty" (the empty-result parts as data); 4: "ranking"; 5: "anatomy"
    assert d["schema_version"] == TRACE_SCHEMA_VERSION == 6
    assert (d["empty"] == []) == bool(trace.final) == (d["empty_reason"] is None)
    assert [part["code"] for part in d["empty"]] == [part.code for part in trace.empty]
    assert d["candidates"] == [
        {
            "rowid": p.rowid,
            "source": p.source,
            "title": p.title,
            "positions": p.positions,
            "exit": None if p.exit is None else p.exit.to_dict(),
        }
        for p in trace.first.paths
    ]
    if trace.fuzzy.rerun is not None:
        assert len(d["fuzzy"]["candidates"]) == len(trace.fuzzy.rerun.paths)
        assert all(k.startswith("fuzzy:") for c in d["fuzzy"]["candidates"] for k in c["positions"])
    else:
        assert "candidates" not in d["fuzzy"]


VARIANTS = [
    Variant(rerank="before-trim", pool_size=8),
    Variant(rerank="off"),
    Variant(fusion_key="rowid"),
    Variant(fuzzy="always"),
    Variant(retrievers="trigram"),
    Variant(fts_limit=3, pool_size=2),
]


@pytest.mark.skipif("stages" not in SETS, reason="needs ../shared/parity/stages")
@pytest.mark.parametrize("variant", VARIANTS, ids=variant_spec)
@pytest.mark.parametrize(
    "query,sessions",
    [("cache", None), ("cache hook", ("sess-A",)), ("cahce", None), ("deploy runner", ()), ("the", None)],
)
def test_paths_agree_with_the_stage_lists_under_variants(variant, query, sessions):
    trace = search(_store("stages"), SearchParams(query, limit=3, sessions=sessions, variant=variant))
    check_paths(trace)


def test_before_trim_positions_follow_the_execution_order(zebra_store):
    trace = search(
        zebra_store, SearchParams("zebra crossing", limit=1, variant=Variant(rerank="before-trim", pool_size=5))
    )
    run = trace.first
    assert run.order == ("porter", "trigram", "fusion", "pool", "filter", "rerank", "trim")
    [cut] = [p for p in run.paths if p.exit is not None and p.exit.stage == "trim"]
    # the trim received the reranked list: the cut row is at its rerank position
    assert cut.exit.get("position") == cut.position("rerank") == 2 and cut.exit.get("limit") == 1


# ─── one test per way out ────────────────────────────────────────────────


@pytest.fixture
def zebra_store(store):
    return index_zebra(store)


def only(run: Run, rowid: int):
    p = run.path(rowid)
    assert p is not None
    return p


def test_a_collision_is_merged_into_the_kept_row(store):
    index_collide(store)
    trace = search(store, SearchParams("widget", limit=3))
    p = only(trace.first, 3)
    assert p.exit == Exit(
        "fusion", "merged", (("into_rowid", 2), ("into_position", 1), ("key", "guide.md::Guide > Example"))
    )
    assert p.positions == {
        "porter": 2,
        "trigram": 2,
        "fusion": None,
        "pool": None,
        "filter": None,
        "trim": None,
        "rerank": None,
        "final": None,
    }
    assert p.key == "guide.md::Guide > Example"
    assert sentence(p.exit) == "merged into row 2 (same source::title)"
    kept = only(trace.first, 2)
    assert kept.exit is None and kept.position("final") == 1
    # the journey and the browser read the same exit
    steps = journey(trace, p.key, rowid=3)
    assert [s.exit for s in steps if s.exit is not None] == [p.exit]
    assert steps[2].note == "merged into row 2 (same source::title)"


def test_a_session_removal(store):
    index_herd(store)
    trace = search(store, SearchParams("zebra", limit=3, sessions=("mine",)))
    p = only(trace.first, 1)
    assert p.exit == Exit(
        "filter", "session-filter", (("position", 1), ("session_id", "other"), ("allow_set", ("mine",)))
    )
    assert p.positions["fusion"] == p.positions["pool"] == 1 and p.positions["filter"] is None
    assert p.exit.to_dict() == {
        "stage": "filter",
        "reason": "session-filter",
        "position": 1,
        "session_id": "other",
        "allow_set": ["mine"],
    }
    assert sentence(p.exit) == "removed by the session filter (session 'other')"


@pytest.mark.parametrize(
    "sessions, before, position, exit, words",
    [
        (
            ("mine",),
            "filter",
            5,
            Exit("trim", "trimmed", (("position", 5), ("limit", 3))),
            "cut by the trim (#5 > limit 3)",
        ),
        (
            None,
            "fusion",
            4,
            Exit("pool", "beyond-pool", (("position", 4), ("pool_size", 3))),
            "beyond the pool (fused #4, pool 3)",
        ),
    ],
    ids=["a trim cut", "beyond pool"],
)
def test_a_cut_at_a_rank(store, sessions, before, position, exit, words):
    """The chunk at rank ``position`` of stage ``before``'s list exits at the
    next stage (``exit``), and its sentence says so."""
    index_herd(store)
    trace = search(store, SearchParams("zebra", limit=3, sessions=sessions))
    listed = {"filter": trace.first.filter.kept, "fusion": trace.first.fusion.candidates}[before]
    p = only(trace.first, listed[position - 1].rowid)
    assert p.exit == exit
    assert p.positions[before] == position and p.positions[exit.stage] is None
    assert sentence(p.exit) == words


def test_a_chunk_no_retriever_returned_has_no_path_and_why_names_it(store):
    index_zebra(store)
    store.index_text("long.md", "# Long\nzebra " + " ".join(f"w{i}" for i in range(300)) + "\n", "markdown")
    params = SearchParams("zebra crossing", limit=3)
    trace = search(store, params)
    # "Other 0" (row 3) holds no query term: never retrieved, so no path
    assert trace.first.path(3) is None
    [e] = why_not(store, params, rowid=3, trace=trace)
    assert (e.stage, e.reason) == ("retrieve", "no-term")
    # the journey says so with the retrieve stage's not-retrieved code
    steps = journey(trace, "o0.md::Other 0", rowid=3)
    assert steps[2].exit == Exit("retrieve", "not-retrieved")
    assert steps[2].note == "not retrieved: neither retriever returned it"
    # beyond the rows a retriever fetches: also no path, and why-not says beyond-fts-limit
    small = SearchParams("zebra", limit=1, variant=Variant(fts_limit=1))
    t = search(store, small)
    [long_row] = why_not(store, small, key="long.md::Long", trace=t)
    assert t.first.path(long_row.chunk.rowid) is None
    assert (long_row.stage, long_row.reason) == ("retrieve", "beyond-fts-limit")


def test_the_fuzzy_rerun_has_prefixed_paths(zebra_store):
    trace = search(zebra_store, SearchParams("zebar", limit=3))
    assert trace.layer == "rrf-fuzzy"
    rerun = trace.fuzzy.rerun
    assert rerun.pass_name == "fuzzy" and rerun.paths
    top = rerun.paths[0]
    assert top.exit is None and top.position("fuzzy:final") == 1
    assert all(sid.startswith("fuzzy:") for sid, _ in top.steps)
    assert ranked(rerun, "fuzzy:final") == ranked(rerun, "final") == rerun.results
    with pytest.raises(ValueError):
        ranked(trace.first, "fuzzy:pool")


def test_reason_codes_form_the_documented_closed_set():
    assert list(REASONS) == [
        "source-filter",
        "content-type-filter",
        "no-term",
        "retriever-skipped",
        "beyond-fts-limit",
        "not-retrieved",
        "merged",
        "beyond-pool",
        "session-filter",
        "trimmed",
        "fuzzy-not-attempted",
    ]
    for code, sid in REASONS.items():
        assert sid in {s.id for s in STAGES}
        data = tuple((n, 1) for n in data_names(code))
        assert isinstance(sentence(Exit(sid, code, data)), str)
