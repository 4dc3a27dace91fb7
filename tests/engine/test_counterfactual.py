"""The counterfactual (engine.lab.counterfactual): the smallest single change that
returns a chunk, proven by re-running; one test per kind of change, the
outcomes without a change, and a property: the answer is confirmed by a plain
search and every closer change, re-run without any cache, does not return it."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import SearchParams, Variant, search
from engine.lab.counterfactual import (
    NO_CHANGE_REASONS,
    PARAMS,
    _candidates,
    change_words,
    parse_pin,
    sentence,
    would_return_with,
)
from engine.lab.flow import trace_flows
from engine.pipeline.runcache import RunCache
from engine.lab.why import ChunkNotFoundError, find_chunks

from ..helpers import index_collide, index_herd, index_zebra
from .test_properties import SESSIONS, WORDS, corpus_store


def final_position(store, params, rowid):
    return next((r.position for r in search(store, params).final if r.candidate.rowid == rowid), None)


def check(store, params, rowid, param, value, position):
    cf = would_return_with(store, params, rowid=rowid)
    assert cf.would_return_with() == {"param": param, "value": value, "position": position}, sentence(cf)
    # proven: a plain search with the change returns it there
    assert final_position(store, cf.change.params, rowid) == position
    return cf


@pytest.fixture
def herd(store):
    return index_herd(store)


@pytest.fixture
def zebra(store):
    index_zebra(store)
    return store


def test_a_trimmed_chunk_needs_the_limit_it_stands_at(herd):
    params = SearchParams("zebra", limit=3, sessions=("mine",))
    [flow] = trace_flows(search(herd, params))
    cut = [r for r in flow.rows if r.exit is not None and r.exit.reason == "trimmed"]
    for i, row in enumerate(cut, 4):  # filtered #4, #5, #6
        cf = check(herd, params, row.rowid, "limit", i, i)
        assert sentence(cf) == f"limit {i} would return it at #{i}"


def test_a_session_removal_needs_its_session(herd):
    cf = check(herd, SearchParams("zebra", limit=3, sessions=("mine",)), 1, "allow_session", "other", 1)
    assert sentence(cf) == "allowing session 'other' would return it at #1"
    assert cf.change.params.sessions == ("mine", "other")


def test_a_merged_chunk_needs_the_rowid_key(store):
    index_collide(store)
    cf = check(store, SearchParams("widget", limit=3), 3, "fusion_key", "rowid", 2)
    assert sentence(cf) == "fusion key rowid would return it at #2"


def test_beyond_the_pool_needs_a_larger_limit(herd):
    params = SearchParams("zebra", limit=3)
    t = search(herd, params)
    fourth = t.first.pool.beyond[0]
    check(herd, params, fourth.rowid, "limit", 4, 4)


def test_a_source_filter_is_lifted(zebra):
    check(zebra, SearchParams("zebra crossing", limit=3, source="b.md"), 1, "source", None, 2)


def test_a_content_type_filter_is_lifted(store):
    store.index_text("a.md", "# Prose\nzebra zebra in words\n", "markdown")
    store.index_text("b.md", "# Code\n```python\nzebra = 1\n```\n", "markdown")
    params = SearchParams("zebra", limit=3, content_type="code")
    [r] = search(store, params).final
    assert r.candidate.content_type == "code"
    prose = find_chunks(store, key="a.md::Prose")[0]
    assert prose.content_type == "prose"
    check(store, params, prose.rowid, "content_type", None, final_position(store, SearchParams("zebra"), prose.rowid))


def test_numbers_are_closer_than_switches_until_they_double(herd):
    """filtered #5 with limit 3: limit 5 (2/3 away) beats narrowing the
    source to the chunk's own file (2) and every switch (1)."""
    params = SearchParams("zebra", limit=3, sessions=("mine",))
    t = search(herd, params)
    fifth = t.first.filter.kept[4].rowid
    cf = would_return_with(herd, params, rowid=fifth, trace=t)
    assert (cf.change.param, cf.change.value, cf.change.distance) == ("limit", 5, pytest.approx(2 / 3))
    # at limit 1 the same chunk would need limit 5 (4 away): searching its own file is closer
    p1 = SearchParams("zebra", limit=1, sessions=("mine",))
    cf1 = would_return_with(herd, p1, rowid=fifth)
    assert cf1.change.distance <= 2 and cf1.change.param != "limit", sentence(cf1)


def test_a_rerun_through_the_fuzzy_fallback(zebra):
    params = SearchParams("zebar", limit=1)
    t = search(zebra, params)
    assert t.layer == "rrf-fuzzy"
    [flow, _] = trace_flows(t)
    second = next(r.rowid for r in flow.rows if r.final is None)
    cf = would_return_with(zebra, params, rowid=second, trace=t)
    assert cf.change.param == "limit" and cf.layer == "rrf-fuzzy"
    assert sentence(cf).endswith("(after typo correction)")


# ─── no change ───────────────────────────────────────────────────────────


def test_no_query_term_indexed_in_it(zebra):
    cf = would_return_with(zebra, SearchParams("zebra crossing"), rowid=3)
    assert (cf.change, cf.reason, cf.would_return_with()) == (None, "no-term", None)
    assert sentence(cf) == "no single change returns it: no query term is indexed in it"


def test_a_returned_chunk_needs_no_change(zebra):
    cf = would_return_with(zebra, SearchParams("zebra crossing", limit=2), rowid=2)
    assert (cf.reason, cf.get("position"), cf.reruns) == ("returned", 1, 1)
    assert sentence(cf) == "returned at #1"


def test_no_single_change_within_the_bounds(store):
    index_collide(store)
    # two changes needed: lift the source filter and split the key
    cf = would_return_with(store, SearchParams("widget", limit=1, source="nothing"), rowid=3)
    assert cf.reason == "no-single-change" and cf.change is None
    assert (cf.get("limit_max"), cf.get("pool_size_max")) == (100, 4)  # 4 × the pool (the limit, 1)
    assert cf.ruled_out > 0
    assert sentence(cf).startswith("no single change returns it (tried limits up to 100")


def test_stop_cancels(herd):
    cf = would_return_with(herd, SearchParams("zebra", limit=3, sessions=("mine",)), rowid=1, stop=lambda: True)
    assert cf.reason == "cancelled" and cf.change is None


def test_reasons_are_a_closed_set():
    assert NO_CHANGE_REASONS == ("returned", "no-term", "no-single-change", "cancelled", "already-above")
    assert PARAMS == (
        "limit",
        "pool_size",
        "allow_session",
        "source",
        "content_type",
        "fusion_key",
        "rerank",
        "retrievers",
    )


def test_bad_input(zebra):
    with pytest.raises(ChunkNotFoundError):
        would_return_with(zebra, SearchParams("zebra"), rowid=999)
    with pytest.raises(ValueError, match="other search parameters"):
        would_return_with(zebra, SearchParams("zebra"), rowid=1, trace=search(zebra, SearchParams("x")))


@pytest.mark.parametrize(
    "text,expected",
    [("57", {"rowid": 57}), (" 7 ", {"rowid": 7}), ("a.md::Guide > Example", {"key": "a.md::Guide > Example"})],
)
def test_parse_pin(text, expected):
    assert parse_pin(text) == expected


@pytest.mark.parametrize("text", ["guide", "", "-3", "١٢"])
def test_parse_pin_rejects(text):
    with pytest.raises(ValueError, match="SOURCE::TITLE or a row id"):
        parse_pin(text)


def test_to_dict_is_json(herd):
    cf = would_return_with(herd, SearchParams("zebra", limit=3, sessions=("mine",)), rowid=1)
    d = json.loads(json.dumps(cf.to_dict()))
    assert d["would_return_with"] == {"param": "allow_session", "value": "other", "position": 1}
    assert d["layer"] == "rrf" and d["reason"] is None and d["reruns"] >= 2


def test_change_words_cover_every_param(herd):
    params = SearchParams("zebra", sessions=("mine",), source="x", content_type="code")
    chunk = find_chunks(herd, rowid=1)[0]
    words = {change_words(c) for c in _candidates(params, search(herd, params), chunk, True, 2, 2)}
    assert {
        "limit 1",
        "limit 2",
        "pool size 1",
        "pool size 2",
        "allowing session 'other'",
        "no source filter",
        "source filter 'top.md'",
        "no content-type filter",
        "only prose chunks",
        "fusion key rowid",
        "rerank off",
        "rerank before-trim",
        "the porter retriever only",
        "the trigram retriever only",
    } == words


def test_a_shared_cache_gives_the_same_answer_with_fewer_statements(herd):
    params = SearchParams("zebra", limit=3, sessions=("mine",))
    cache = RunCache(herd)
    t = search(herd, params, runs=cache)
    misses = cache.misses
    answers = [would_return_with(herd, params, rowid=r, trace=t, runs=cache).would_return_with() for r in range(1, 8)]
    assert answers == [would_return_with(herd, params, rowid=r).would_return_with() for r in range(1, 8)]
    assert cache.misses - misses <= 2 and cache.hits > 0


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    WORDS,
    st.integers(min_value=1, max_value=4),
    SESSIONS,
    st.sampled_from([Variant(), Variant(fusion_key="rowid"), Variant(rerank="before-trim")]),
    st.data(),
)
def test_the_change_is_proven_and_no_closer_change_returns_it(query, limit, sessions, variant, data):
    store = corpus_store()
    params = SearchParams(query, limit=limit, sessions=sessions, variant=variant)
    trace = search(store, params)
    [flow, *_] = trace_flows(trace)
    left = [r.rowid for r in flow.rows if r.final is None]
    if not left:
        return
    rowid = data.draw(st.sampled_from(left))
    cf = would_return_with(store, params, rowid=rowid, trace=trace, limit_max=8, pool_max=12)
    assert cf.reason in (None, "no-single-change"), cf.reason
    chunk = find_chunks(store, rowid=rowid)[0]
    for change in _candidates(params, trace, chunk, store.schema.has_session, 8, 12):
        pos = final_position(store, change.params, rowid)
        if cf.change is not None and change == cf.change:
            assert pos == cf.position
            break
        assert pos is None, (change.param, change.value)
    else:
        assert cf.change is None
