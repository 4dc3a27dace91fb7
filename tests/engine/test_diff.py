"""Stage summaries and candidate journeys."""

from engine import SearchParams, search
from engine.diff import journey, stage_summaries


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
