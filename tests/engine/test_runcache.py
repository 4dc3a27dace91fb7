"""The run cache (engine.pipeline.runcache): a run fetched deeper answers a shallower
row count with exactly the rows the real statement returns; searches through
the cache equal searches without it; a write drops the entries."""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import replace

import pytest

from engine import SearchParams, Store, Variant, search, trace_to_dict
from engine.pipeline.query import porter_words
from engine.pipeline.stages.retrieve import Request, retrieve
from engine.pipeline.runcache import RunCache
from engine.pipeline.variants import variant_spec

from ..helpers import case_params
from .test_parity import SETS, _store, parity_cases


def _hits(run):
    return [(h.rank, h.rowid, h.bm25, h.highlighted) for h in run.hits]


# Every golden case of every parity set present (an absent set is one skipped case): test_parity's list.
_queries = parity_cases


@pytest.mark.parametrize(("set_name", "case"), list(_queries()))
def test_a_deeper_run_sliced_equals_the_real_statement_on_every_golden_case(set_name, case):
    store = _store(set_name)
    p = case_params(case)
    store.runs.clear()
    cache = RunCache(store)
    began = store.begin_read(store.conn)  # the entries are kept for the data version noted here
    try:
        for name in ("porter", "trigram"):
            deep = cache.run(store.conn, store.schema, Request.of(name, p.query, 60, p))
            for n in (1, 2, 3, 5, 10, 17, 40, 60):
                real = retrieve(store.conn, store.schema, Request.of(name, p.query, n, p))
                got = cache.run(store.conn, store.schema, Request.of(name, p.query, n, p))
                assert _hits(got) == _hits(real), (name, n)
                assert got.fts_limit == n and got.query == real.query and got.skipped == real.skipped
            assert deep.fts_limit == 60
    finally:
        store.end_read(store.conn, began)
    assert cache.misses <= 2  # one statement per retriever; every other row count was a slice


@contextmanager
def _read(store):
    """One read transaction noting the data version (outside one nothing is cached)."""
    began = store.begin_read(store.conn)
    try:
        yield
    finally:
        store.end_read(store.conn, began)


def _strip_times(d):
    if isinstance(d, dict):
        # refresh.method / age_ms: how the stale-source answer was found (a scan, then the watch);
        # ranking: how the rows were ranked (a reused run tells how its deeper run was)
        return {
            k: _strip_times(v)
            for k, v in d.items()
            if k not in ("elapsed_ms", "timings_ms", "total_ms", "method", "age_ms", "ranking")
        }
    if isinstance(d, list):
        return [_strip_times(x) for x in d]
    return d


@pytest.mark.skipif("stages" not in SETS, reason="needs ../shared/parity/stages")
@pytest.mark.parametrize(
    "query,sessions", [("cache", None), ("cache hook", ("sess-A",)), ("cahce", None), ("deploy runner", ())]
)
@pytest.mark.parametrize(
    "variant", [Variant(), Variant(fusion_key="rowid"), Variant(rerank="before-trim")], ids=variant_spec
)
def test_a_search_through_the_cache_equals_one_without(query, sessions, variant):
    store = _store("stages")
    cache = RunCache(store)
    # warm the cache deeper than any of these searches need, then search at several limits
    search(store, SearchParams(query, limit=40, sessions=sessions, variant=variant), runs=cache)
    for limit in (1, 3, 7):
        params = SearchParams(query, limit=limit, sessions=sessions, variant=variant)
        assert _strip_times(trace_to_dict(search(store, params, runs=cache))) == _strip_times(
            trace_to_dict(search(store, params))
        )
    assert cache.hits > 0


def test_the_typo_corrections_are_computed_once(store):
    store.index_text("a.md", "# Zebra\nzebra crossing\n", "markdown")
    cache = RunCache(store)
    t1 = search(store, SearchParams("zebar"), runs=cache)
    assert t1.layer == "rrf-fuzzy"
    [c] = t1.fuzzy.corrections
    assert not c.cached and len(store.corrections) == 1  # the store's one correction cache
    t2 = search(store, SearchParams("zebar", limit=1), runs=cache)
    assert t2.fuzzy.corrections == (replace(c, cached=True),)


def test_a_write_drops_the_entries(store):
    store.index_text("a.md", "# Zebra\nzebra one\n", "markdown")
    cache = RunCache(store)
    assert [r.candidate.rowid for r in search(store, SearchParams("zebra"), runs=cache).final] == [1]
    store.index_text("b.md", "# Zebra two\nzebra zebra two\n", "markdown")
    assert {r.candidate.rowid for r in search(store, SearchParams("zebra"), runs=cache).final} == {1, 2}


def test_a_write_by_another_connection_drops_the_entries(tmp_path):
    path = tmp_path / "s.db"
    writer = Store.create(path)
    writer.index_text("a.md", "# Zebra\nzebra one\n", "markdown")
    reader = Store.open_readonly(path)
    cache = RunCache(reader)
    try:
        assert len(search(reader, SearchParams("zebra"), runs=cache).final) == 1
        version = reader.data_version()
        writer.index_text("b.md", "# Zebra two\nzebra zebra two\n", "markdown")
        assert reader.data_version() != version
        assert len(search(reader, SearchParams("zebra"), runs=cache).final) == 2
    finally:
        reader.close()
        writer.close()


def test_exact_mode_reuses_only_the_same_row_count(store):
    for i in range(12):
        store.index_text(f"d{i}.md", f"# Doc {i}\nzebra {i}\n", "markdown")
    cache = RunCache(store, exact=True)
    with _read(store):
        cache.run(store.conn, store.schema, Request("porter", "zebra", 10))
        cache.run(store.conn, store.schema, Request("porter", "zebra", 5))
        cache.run(store.conn, store.schema, Request("porter", "zebra", 5))
    assert (cache.misses, cache.hits) == (2, 1)
    assert porter_words("zebra") == ["zebra"]


def test_a_growing_row_count_doubles_the_fetch(store):
    for i in range(50):
        store.index_text(f"d{i}.md", f"# Doc {i}\nzebra {i}\n", "markdown")
    cache = RunCache(store)
    with _read(store):
        for n in range(10, 51, 2):
            run = cache.run(store.conn, store.schema, Request("porter", "zebra", n))
            assert len(run.hits) == n
    assert cache.misses <= 4  # 10, 20, 40, 80 (complete)
