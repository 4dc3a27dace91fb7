""" "Why is chunk X missing?": one test per reason code, each on a corpus built to show it."""

from __future__ import annotations

import json

import pytest

from engine import SearchParams, Variant, search
from engine.lab.why import REASONS, ChunkNotFoundError, find_chunks, why_not
from engine.pipeline.stages.retrieve import distinctive_words

from ..helpers import index_collide, index_herd, index_zebra


def P(query, limit=3, **kw):
    variant = kw.pop("variant", Variant())
    return SearchParams(query, limit=limit, variant=variant, **kw)


def one(store, params, **which):
    [e] = why_not(store, params, **which)
    return e


@pytest.fixture
def zebra(store):
    """Row 1 ``Zebra crossing guide`` fused #1; row 2 ``Beta`` fused #2 but
    wins the rerank; rows 3-6 unrelated (``Other n``); row 7 mentions only
    "crossing" (``Pedestrian rules``)."""
    index_zebra(store)
    store.index_text("p.md", "# Pedestrian rules\nyield at every crossing, always\n", "markdown")
    return store


@pytest.fixture
def herd(store):
    """Row 1 ``Zebra`` (session ``other``) ranks first for "zebra"; rows
    2-7 ``Doc n`` (unattributed) mention it once each."""
    return index_herd(store)


@pytest.fixture
def collide(store):
    """Rows 2 and 3 share ``guide.md::Guide > Example``."""
    return index_collide(store)


def test_reason_codes_are_documented():
    assert set(REASONS) == {
        "source-filter",
        "content-type-filter",
        "no-term",
        "fuzzy-not-attempted",
        "retriever-skipped",
        "beyond-fts-limit",
        "merged",
        "beyond-pool",
        "session-filter",
        "trimmed",
        "outranked",
        "returned",
    }


# ─── in the answer ───────────────────────────────────────────────────────


def test_returned(zebra):
    e = one(zebra, P("zebra crossing", limit=2), rowid=2)
    assert (e.reason, e.stage, e.position, e.run) == ("returned", "final", 1, "first")
    assert e.returned and e.chunk.key == "b.md::Beta"
    assert "#1 of 2" in e.message and "layer rrf" in e.message


def test_outranked_reports_rerank_position_and_the_boosts_that_beat_it(zebra):
    params = P("zebra crossing", limit=2)
    e = one(zebra, params, rowid=1)
    assert (e.reason, e.stage, e.position) == ("outranked", "rerank", 2)
    assert e.returned
    assert (e.details["fused_position"], e.details["rerank_position"]) == (1, 2)
    [winner] = e.details["beaten_by"]
    trace = search(zebra, params)
    boosts = {x.candidate.rowid: x for x in trace.first.rerank.entries}
    assert winner["rowid"] == 2 and winner["boost"] == boosts[2].boost > boosts[1].boost
    assert winner["boost"] == winner["title_boost"] + winner["proximity_boost"] + winner["phrase_boost"]
    assert "'Beta'" in e.message and f"{boosts[2].boost:.6f}"[:6] in e.message
    assert "from fused #1" in e.message


def test_returned_through_the_fuzzy_rerun(zebra):
    e = one(zebra, P("zebar crosing", limit=2), rowid=2)
    assert (e.reason, e.stage, e.run) == ("returned", "fuzzy:final", "fuzzy")
    assert "'zebra crossing'" in e.message


# ─── SQL filters ─────────────────────────────────────────────────────────


def test_source_filter(zebra):
    e = one(zebra, P("zebra", source="b.md"), rowid=1)
    assert (e.reason, e.stage) == ("source-filter", "retrieve")
    assert "'b.md'" in e.message and "'a.md'" in e.message
    # LIKE folds ASCII case, like the reference: B.MD keeps b.md.
    assert one(zebra, P("zebra", source="B.MD"), rowid=2).reason == "returned"
    # Exact mode needs the whole label.
    assert one(zebra, P("zebra", source="b.m", source_match="exact"), rowid=2).reason == "source-filter"


def test_content_type_filter(store):
    store.index_text("c.md", "# Code\n```\nzebra()\n```\n", "markdown")
    store.index_text("d.md", "# Prose\nzebra prose\n", "markdown")
    e = one(store, P("zebra", content_type="code"), key="d.md::Prose")
    assert (e.reason, e.stage) == ("content-type-filter", "retrieve")
    assert "only code" in e.message and "prose" in e.message
    assert one(store, P("zebra", content_type="code"), key="c.md::Code").reason == "returned"


# ─── retrievers ──────────────────────────────────────────────────────────


def test_no_term_shows_the_terms_and_what_the_chunk_is_about(zebra):
    e = one(zebra, P("zebra crossing"), key="o2.md::Other 2")
    assert (e.reason, e.stage) == ("no-term", "retrieve")
    assert e.details["porter_terms"] == ["zebra", "crossing"]
    assert e.details["trigram_terms"] == ["zebra", "crossing"]
    assert "nothing" in e.details["chunk_words"] and "relevant" in e.details["chunk_words"]
    assert "here" not in e.details["chunk_words"]  # a stopword
    assert "zebra, crossing" in e.message and "relevant" in e.message


def test_distinctive_words_prefer_rare_words(zebra):
    [chunk] = find_chunks(zebra, rowid=7)
    words = distinctive_words(zebra, chunk)
    # "crossing" is in three chunks; the others only here.
    assert words[-1] == "crossing" and set(words[:-1]) == {"pedestrian", "rules", "yield", "every", "always"}


def test_fuzzy_not_attempted(zebra):
    # "zebra" matches, so fuzzy never runs; "crosing" -> "crossing" would
    # have matched row 7, which has no "zebra".
    params = P("zebra crosing")
    assert search(zebra, params).layer == "rrf"
    e = one(zebra, params, rowid=7)
    assert (e.reason, e.stage) == ("fuzzy-not-attempted", "fuzzy")
    assert e.details["corrected_query"] == "zebra crossing"
    assert e.details["corrected_ranks"]["porter"]["rank"] >= 1
    assert "crosing → crossing" in e.message and "already found 2 results" in e.message


def test_fuzzy_not_attempted_names_the_variant(zebra):
    shadow = one(zebra, P("zebra crosing", variant=Variant(fuzzy="always")), rowid=7)
    assert shadow.reason == "fuzzy-not-attempted" and "shadow" in shadow.message
    never = one(zebra, P("crosing", variant=Variant(fuzzy="never")), rowid=7)
    assert never.reason == "fuzzy-not-attempted" and "fuzzy=never" in never.message
    # With the reference the fallback runs and returns it.
    assert one(zebra, P("crosing"), rowid=7).reason == "returned"


def test_retriever_skipped(zebra):
    # "ebra" is only a substring: the trigram index finds it, Porter does not.
    e = one(zebra, P("ebra", variant=Variant(retrievers="porter", fuzzy="never")), rowid=1)
    assert (e.reason, e.stage) == ("retriever-skipped", "retrieve")
    assert e.details["full_ranks"]["trigram"]["rank"] >= 1 and e.details["full_ranks"]["porter"] is None
    assert "only the porter retriever" in e.message and "Trigram: bm25 rank" in e.message


def test_beyond_fts_limit(store):
    for i in range(12):
        store.index_text(f"d{i:02}.md", f"# Doc {i}\nzebra number {i}\n", "markdown")
    store.index_text("long.md", "# Long\nzebra " + " ".join(f"w{i}" for i in range(300)) + "\n", "markdown")
    params = P("zebra")  # limit 3: pool 3, fts_limit max(2 * 3, 10) = 10
    trace = search(store, params)
    assert trace.fts_limit == 10 and len(trace.first.porter.hits) == 10
    e = one(store, params, key="long.md::Long")
    assert (e.reason, e.stage) == ("beyond-fts-limit", "retrieve")
    assert e.details["full_ranks"]["porter"] == {
        "rank": 13,
        "matches": 13,
        "bm25": e.details["full_ranks"]["porter"]["bm25"],
    }
    assert e.position == min(e.details["full_ranks"]["porter"]["rank"], e.details["full_ranks"]["trigram"]["rank"])
    assert "fts_limit 10 = max(2 × pool size 3, 10)" in e.message and "bm25 rank 13 of 13" in e.message
    # A larger candidate count brings it into fusion.
    bigger = one(store, P("zebra", variant=Variant(fts_limit=20)), key="long.md::Long")
    assert bigger.reason == "beyond-pool"


# ─── fusion and after ────────────────────────────────────────────────────


def test_merged_names_the_kept_row(collide):
    e = one(collide, P("widget"), rowid=3)
    assert (e.reason, e.stage) == ("merged", "fusion")
    assert e.details["kept_rowid"] == 2 and e.details["kept_key"] == "guide.md::Guide > Example"
    assert e.details["kept_outcome"] == "returned"
    assert [(c["retriever"], c["rank"]) for c in e.details["contributions"]] == [("porter", 2), ("trigram", 2)]
    assert "row 2" in e.message and "Porter rank 2: 1/(60+2)" in e.message and "returned at #1" in e.message


def test_a_shared_key_explains_every_chunk(collide):
    es = why_not(collide, P("widget"), key="guide.md::Guide > Example")
    assert [(e.chunk.rowid, e.reason) for e in es] == [(2, "returned"), (3, "merged")]
    # With the rowid fusion key both are returned.
    es = why_not(collide, P("widget", variant=Variant(fusion_key="rowid")), key="guide.md::Guide > Example")
    assert [(e.chunk.rowid, e.reason, e.position) for e in es] == [(2, "returned", 1), (3, "returned", 2)]


def test_beyond_pool(herd):
    params = P("zebra")  # no allow-set: pool = limit = 3
    trace = search(herd, params)
    fourth = trace.first.fusion.candidates[3]
    e = one(herd, params, rowid=fourth.rowid)
    assert (e.reason, e.stage, e.position) == ("beyond-pool", "pool", 4)
    assert e.details["pool_size"] == 3
    assert "#4 of 7" in e.message and "pool size 3 = limit" in e.message
    assert e.details["score"] == fourth.score == 1 / (60 + 4) + 1 / (60 + 4)
    assert "1/(60+4) + 1/(60+4)" in e.message


def test_beyond_pool_set_by_a_variant(herd):
    e = one(herd, P("zebra", sessions=("mine",), variant=Variant(pool_size_sessions=1)), rowid=2)
    assert e.reason == "beyond-pool" and "pool size 1, set by the variant" in e.message


def test_session_filter(herd):
    e = one(herd, P("zebra", sessions=("mine",)), rowid=1)
    assert (e.reason, e.stage, e.position) == ("session-filter", "filter", 1)
    assert e.details["session_id"] == "other" and e.details["allow_set"] == ["mine"]
    assert "'other'" in e.message and "'mine'" in e.message


def test_trimmed(herd):
    params = P("zebra", sessions=("mine",))  # pool 40; row 1 filtered out; 6 left
    trace = search(herd, params)
    fifth = trace.first.filter.kept[4]
    e = one(herd, params, rowid=fifth.rowid)
    assert (e.reason, e.stage, e.position) == ("trimmed", "trim", 5)
    assert e.details["limit"] == 3 and e.details["filtered"] == 6
    assert "#5 of 6" in e.message and "first 3 (limit)" in e.message


def test_trimmed_after_a_before_trim_rerank(zebra):
    e = one(zebra, P("zebra crossing", limit=1, sessions=(), variant=Variant(rerank="before-trim")), rowid=1)
    assert (e.reason, e.position) == ("trimmed", 2)
    assert "rerank=before-trim" in e.message and "boost" in e.message


def test_fuzzy_layer_prefers_the_pass_where_the_chunk_got_furthest(herd):
    # "zebar" matches nothing; the corrected "zebra" re-run pools row 1 and
    # the session filter removes it.
    e = one(herd, P("zebar", sessions=("mine",)), rowid=1)
    assert (e.reason, e.stage, e.run) == ("session-filter", "fuzzy:filter", "fuzzy")
    assert e.message.startswith("In the fuzzy re-run (corrected query 'zebra'): pooled at #1")


# ─── API ─────────────────────────────────────────────────────────────────


def test_reuses_a_given_trace_and_checks_it(zebra):
    params = P("zebra crossing", limit=2)
    trace = search(zebra, params)
    assert why_not(zebra, params, rowid=2, trace=trace) == why_not(zebra, params, rowid=2)
    with pytest.raises(ValueError, match="other search parameters"):
        why_not(zebra, P("zebra"), rowid=2, trace=trace)


def test_to_dict_is_json(zebra):
    [e] = why_not(zebra, P("zebra crossing", limit=2), rowid=1)
    d = json.loads(json.dumps(e.to_dict()))
    assert d["reason"] == "outranked" and d["rowid"] == 1 and d["details"]["beaten_by"][0]["rowid"] == 2


@pytest.mark.parametrize(
    "which, message",
    [
        ({"rowid": 999}, "no chunk has rowid 999"),
        ({"key": "a.md::Nope"}, "source 'a.md' has titles: 'Zebra crossing guide'"),
        ({"key": "zzz.md::Nope"}, "no source is labelled 'zzz.md'"),
        ({"key": "no separator"}, "not a source::title key"),
    ],
)
def test_unknown_chunks(zebra, which, message):
    with pytest.raises(ChunkNotFoundError, match=message):
        why_not(zebra, P("zebra"), **which)


def test_name_exactly_one_chunk(zebra):
    with pytest.raises(ValueError, match="exactly one"):
        why_not(zebra, P("zebra"))
    with pytest.raises(ValueError, match="exactly one"):
        why_not(zebra, P("zebra"), rowid=1, key="a.md::Zebra crossing guide")


def test_key_with_double_colon_in_the_title(store):
    store.index_text("cpp.md", "# std::vector\nzebra vector\n", "markdown")
    [e] = why_not(store, P("zebra"), key="cpp.md::std::vector")
    assert e.chunk.title == "std::vector" and e.reason == "returned"


def test_skipped_retriever_beats_the_rerun_no_term(store):
    """A chunk only the skipped retriever matches is blamed on the variant,
    not on the fuzzy re-run's corrected terms."""
    from engine import SearchParams, Variant
    from engine.lab.why import why_not

    store.index_text("a.md", "# Keys\nmaxInflightBatches = 4\n# Flight\nin-flight messages", "markdown")
    params = SearchParams("inflight", variant=Variant(retrievers="porter"))
    rows = {r.title: r.rowid for r in store.iter_chunks()}
    [exp] = why_not(store, params, rowid=rows["Keys"])
    assert exp.reason == "retriever-skipped"
