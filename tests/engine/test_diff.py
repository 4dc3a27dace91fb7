"""Stage summaries and candidate journeys."""

from engine import SearchParams, search
from engine.lab.journey import journey, stage_summaries


def _collide(store):
    store.index_text("a.md", "# Intro\nalpha one\n# Intro\nalpha two\n# Other\nbeta", "markdown", session_id="s1")


def test_journey_of_a_merged_row_ends_at_fusion(store):
    _collide(store)
    t = search(store, SearchParams("alpha"))
    kept = t.final[0].candidate
    assert kept.merged_rowids
    swallowed = kept.merged_rowids[0]
    steps = journey(t, kept.key, rowid=swallowed)
    fusion = next(s for s in steps if s.stage == "fusion")
    assert fusion.note.startswith(f"merged into row {kept.rowid}")
    assert steps[-1].stage == "final" and steps[-1].position is None
    assert f"row {kept.rowid}" in steps[-1].note
    kept_steps = journey(t, kept.key, rowid=kept.rowid)
    assert kept_steps[-1].position == 1


def test_journey_of_a_filtered_candidate(store):
    _collide(store)
    store.index_text("b.md", "# Alpha\nalpha", "markdown", session_id="s2")
    t = search(store, SearchParams("alpha", sessions=("s1",)))
    removed = t.first.filter.removed[0]
    steps = journey(t, removed.key)
    assert any(s.stage == "filter" and s.position is None and "session 's2'" in s.note for s in steps)


def test_summaries_follow_pipeline_order(store):
    _collide(store)
    stages = [s.stage for s in stage_summaries(search(store, SearchParams("alpah")))]
    assert stages[:7] == ["porter", "trigram", "fusion", "pool", "filter", "trim", "rerank"]
    assert "fuzzy" in stages and stages[-1] == "final"
    assert any(s.startswith("fuzzy:") for s in stages)


def _headline(trace, stage: str) -> str:
    return next(s.headline for s in stage_summaries(trace) if s.stage == stage)


def test_retriever_summaries_name_the_filters(store):
    _collide(store)
    t = search(store, SearchParams("alpha", source="nope"))
    assert _headline(t, "porter") == "0 hits for \"alpha\" (limit 10) with source LIKE '%nope%'"
    assert _headline(t, "trigram").endswith("with source LIKE '%nope%'")
    t = search(store, SearchParams("alpha", source="a.md", source_match="exact", content_type="code"))
    assert _headline(t, "porter").endswith("with source = 'a.md' and content_type = 'code'")
    assert "with" not in _headline(search(store, SearchParams("alpha")), "porter")


def test_empty_reason_names_the_filters(store):
    _collide(store)
    t = search(store, SearchParams("alpha", source="nope"))
    assert t.empty_reason.startswith("no match in either index with source LIKE '%nope%'")
    t = search(store, SearchParams("alpha", content_type="code"))
    assert t.empty_reason.startswith("no match in either index with content_type = 'code'")
    assert search(store, SearchParams("zzzqqq")).empty_reason.startswith("no match in either index;")


def test_empty_reason_names_an_allowed_session_nobody_has(store):
    _collide(store)  # every chunk in s1
    store.index_text("b.md", "# Beta\nunrelated words", "markdown", session_id="s2")
    store.index_text("c.md", "# Gamma\nmore words", "markdown", session_id="s3")
    t = search(store, SearchParams("alpha", sessions=("s-1",)))
    assert t.layer == "none"
    assert t.empty_reason.startswith(
        "the only pooled candidate was removed by the session filter; "
        "no chunk in this store has session 's-1' (sessions: s1, s2, s3)"
    )
    # s2 exists, just not among the candidates; s9 exists nowhere
    t = search(store, SearchParams("alpha", sessions=("s2", "s9")))
    assert (
        "no chunk in this store has session 's9' (sessions: s1, s2, s3); no pooled candidate has session 's2'"
    ) in t.empty_reason


def test_fts_limit_zero_is_named(store):
    from engine import Variant

    _collide(store)
    t = search(store, SearchParams("alpha", variant=Variant(fts_limit=0)))
    assert t.layer == "none"
    assert "fts_limit 0" in t.empty_reason and "no match" not in t.empty_reason


def test_single_retriever_variant_names_the_index(store):
    from engine import Variant

    store.index_text("a.md", "# Keys\nmaxInflightBatches = 4", "markdown")
    t = search(store, SearchParams("inflight", variant=Variant(retrievers="porter", fuzzy="never")))
    assert "no match in the porter index (porter only)" in t.empty_reason


def test_filter_note_on_a_store_without_session_column():
    from engine import Store

    from ..conftest import FIXTURES

    with Store.open_readonly(FIXTURES / "context-mode-1.0.22.db") as old:
        t = search(old, SearchParams("weekly", sessions=("s-alpha",)))
    assert t.first.filter.note and "no session column" in t.first.filter.note
    assert any("no session column" in s.headline for s in stage_summaries(t))
