"""Hypothesis properties: any query is safe, stages only narrow, scores add up."""

from __future__ import annotations

from functools import lru_cache

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import SearchParams, Store, Variant, index_corpus, search
from engine.pipeline.query import sanitize_porter, sanitize_trigram

from ..conftest import PARITY

FTS_CHARS = st.sampled_from(
    list("\"'(){}[]*:^~-+.,;!?/\\%_ \t\n\u00a0\u3000ANDORNEARnot")
    + ["AND", "OR", "NOT", "NEAR", "cache", "café", "🚀", "\x00", "日本"]
)
QUERIES = st.one_of(
    st.text(max_size=60),
    st.lists(FTS_CHARS, max_size=20).map("".join),
    st.lists(
        st.sampled_from(["cache", "plugin", "deploy", "heartbeat", "the", "runner", "tidewrite", "hooks"]), max_size=5
    ).map(" ".join),
)


@lru_cache(maxsize=None)
def corpus_store() -> Store:
    store = Store.create(":memory:")
    index_corpus(store, PARITY / "stages" / "corpus")
    return store


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(QUERIES)
def test_sanitised_queries_never_raise_fts5_errors(query):
    conn = corpus_store().conn
    for q in (sanitize_porter(query, "OR"), sanitize_porter(query, "AND")):
        conn.execute("SELECT count(*) FROM chunks WHERE chunks MATCH ?", (q,)).fetchone()
    t = sanitize_trigram(query, "OR")
    if t:
        conn.execute("SELECT count(*) FROM chunks_trigram WHERE chunks_trigram MATCH ?", (t,)).fetchone()


SESSIONS = st.one_of(
    st.none(), st.lists(st.sampled_from(["sess-A", "sess-B", "sess-C", "nope"]), max_size=3).map(tuple)
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    QUERIES,
    st.integers(min_value=0, max_value=12),
    SESSIONS,
    st.sampled_from([None, "code", "prose"]),
    st.sampled_from([Variant(), Variant(fusion_key="rowid"), Variant(rerank="before-trim"), Variant(fuzzy="always")]),
)
def test_search_never_raises_and_stages_only_narrow(query, limit, sessions, content_type, variant):
    store = corpus_store()
    trace = search(
        store, SearchParams(query, limit=limit, sessions=sessions, content_type=content_type, variant=variant)
    )
    runs = [trace.first] + ([trace.fuzzy.rerun] if trace.fuzzy.rerun else [])
    for run in runs:
        for r in (run.porter, run.trigram):
            assert r.error is None, r.error
            assert len(r.hits) <= r.fts_limit
            assert [h.rank for h in r.hits] == list(range(1, len(r.hits) + 1))
            if content_type:
                assert all(h.content_type == content_type for h in r.hits)
        hit_rows = {h.rowid for r in (run.porter, run.trigram) for h in r.hits}
        cands = run.fusion.candidates
        assert {c.rowid for c in cands} <= hit_rows
        assert len({c.key for c in cands}) == len(cands)
        for c in cands:
            # a fused score is exactly the sum of its contributions, in order
            total = 0.0
            for x in c.contributions:
                assert x.value == 1 / (run.fusion.rrf_k + x.rank)
                total += x.value
            assert c.score == total
        assert [c.score for c in cands] == sorted((c.score for c in cands), reverse=True)
        assert run.pool.kept == cands[: run.pool.pool_size] and run.pool.beyond == cands[run.pool.pool_size :]
        kept, removed = run.filter.kept, run.filter.removed
        assert sorted(c.key for c in kept + removed) == sorted(c.key for c in run.pool.kept)
        if sessions is not None:
            assert all(c.session_id == "" or c.session_id in sessions for c in kept)
        if run.trim is not None:
            assert set(c.key for c in run.trim.kept + run.trim.cut) == set(c.key for c in kept)
            assert len(run.trim.kept) <= limit
        if run.rerank is not None:
            assert sorted(e.candidate.key for e in run.rerank.entries) == sorted(
                c.key for c in (kept if variant.rerank == "before-trim" else run.trim.kept)
            )
    final_keys = [r.candidate.key for r in trace.final]
    assert len(final_keys) <= limit
    if trace.layer == "none":
        assert not final_keys and trace.empty_reason
    else:
        assert set(final_keys) <= {c.key for c in trace.answering_run.fusion.candidates}


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=200))
def test_index_any_text_never_raises(text):
    store = Store.create(":memory:")
    for kind in ("markdown", "plain", "json"):
        store.index_text(f"x.{kind}", text, kind)
    rows = store.iter_chunks()
    # both FTS tables hold identical rows
    trig = store.conn.execute("SELECT rowid, title, content FROM chunks_trigram ORDER BY rowid").fetchall()
    assert [(r.rowid, r.title, r.content) for r in rows] == [tuple(t) for t in trig]
    store.close()


WORDS = st.lists(
    st.sampled_from(
        [
            "cache",
            "plugin",
            "deploy",
            "heartbeat",
            "the",
            "runner",
            "tidewrite",
            "hooks",
            "cahce",
            "deplyo",
            "größe",
            "café",
        ]
    ),
    min_size=1,
    max_size=3,
).map(" ".join)


#: Limits and variants the searches of the properties run with.
LIMITS = st.integers(min_value=1, max_value=6)
VARIANTS = [
    Variant(),
    Variant(fusion_key="rowid"),
    Variant(rerank="before-trim", pool_size=6),
    Variant(fuzzy="always"),
    Variant(pool_size=2),
]
#: Each example searches the parity corpus: no deadline, fewer examples.
SEARCHES = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SEARCHES
@given(WORDS, LIMITS, SESSIONS, st.sampled_from(VARIANTS))
def test_path_exit_is_where_why_not_says_the_chunk_left(query, limit, sessions, variant):
    """For every candidate that entered a pass, why-not names the stage and
    reason of its path's exit (of the deeper pass, when it entered both), or
    says it was returned when its path reaches the answer."""
    from engine.pipeline.table import depth
    from engine.lab.why import why_not

    store = corpus_store()
    params = SearchParams(query, limit=limit, sessions=sessions, variant=variant)
    trace = search(store, params)
    runs = [trace.first]
    if trace.fuzzy.rerun is not None and not trace.fuzzy.shadow:
        runs = [trace.fuzzy.rerun, trace.first] if trace.layer == "rrf-fuzzy" else [trace.first, trace.fuzzy.rerun]
    rowids = list(dict.fromkeys(p.rowid for run in runs for p in run.paths))[:12]
    final = {r.candidate.rowid for r in trace.final}
    for rowid in rowids:
        [e] = why_not(store, params, rowid=rowid, trace=trace)
        if rowid in final:
            assert e.reason in ("returned", "outranked")
            assert trace.answering_run.path(rowid).exit is None
            continue
        exits = [run.path(rowid).exit for run in runs if run.path(rowid) is not None]
        assert all(x is not None for x in exits)
        best = exits[0]
        for x in exits[1:]:
            if depth(x.stage) > depth(best.stage):
                best = x
        assert (e.stage, e.reason) == (best.stage, best.reason), (rowid, e.message)
