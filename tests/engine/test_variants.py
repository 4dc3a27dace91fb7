"""Each :class:`~engine.pipeline.trace.Variant` field, on a tiny corpus built to show it.

Scores are written as the RRF formula ``1/(k + rank)``, summed in the
reference order (Porter run first, then trigram, each by rank), so floats
compare exactly.
"""

from __future__ import annotations

import pytest

from engine import SearchParams, Variant, search, trace_to_dict
from engine.pipeline.variants import parse_variant, variant_spec

from ..helpers import index_collide, index_herd, index_zebra


def run(store, query, limit=3, sessions=None, **variant):
    return search(store, SearchParams(query, limit=limit, sessions=sessions, variant=Variant(**variant)))


def rowids(trace):
    return [r.candidate.rowid for r in trace.final]


def _strip_timings(d):
    d = dict(d)
    d.pop("timings_ms")
    return d


# ─── corpora ─────────────────────────────────────────────────────────────


@pytest.fixture
def collide(store):
    """Two chunks sharing the key ``guide.md::Guide > Example`` (rows 2 and
    3, identical bm25) plus the heading chunk (row 1)."""
    return index_collide(store)


@pytest.fixture
def zebra(store):
    """Row 1 ``Zebra crossing guide`` (terms in the title, far apart in the
    content): fused #1. Row 2 ``Beta`` (the phrase four times): fused #2 but
    the higher rerank boost. Rows 3-6: unrelated."""
    return index_zebra(store)


@pytest.fixture
def herd(store):
    """Row 1 ``Zebra`` (session ``other``) ranks first for "zebra"; rows
    2-7 ``Doc n`` (unattributed) each mention it once."""
    return index_herd(store)


# ─── default = reference ─────────────────────────────────────────────────


def test_default_variant_is_the_reference(zebra):
    assert Variant().is_reference and variant_spec(Variant()) == "reference"
    implicit = search(zebra, SearchParams("zebra crossing", limit=2))
    explicit = search(zebra, SearchParams("zebra crossing", limit=2, variant=parse_variant("reference")))
    assert _strip_timings(trace_to_dict(implicit)) == _strip_timings(trace_to_dict(explicit))
    assert trace_to_dict(implicit)["variant"] == "reference"


def test_trace_records_its_variant(zebra):
    v = parse_variant("key=rowid,rerank=off")
    t = search(zebra, SearchParams("zebra", variant=v))
    assert t.params.variant == v
    assert trace_to_dict(t)["variant"] == "key=rowid,rerank=off"  # the spec: one spelling


# ─── fusion key ──────────────────────────────────────────────────────────


def test_reference_merges_colliding_chunks(collide):
    t = run(collide, "widget")
    [cand] = t.first.fusion.candidates
    assert (cand.key, cand.rowid, cand.merged_rowids) == ("guide.md::Guide > Example", 2, (3,))
    # Porter ranks 1, 2 then trigram ranks 1, 2, all on the one key.
    assert cand.score == 1 / (60 + 1) + 1 / (60 + 2) + 1 / (60 + 1) + 1 / (60 + 2)
    assert rowids(t) == [2]


def test_rowid_key_keeps_colliding_chunks_separate(collide):
    t = run(collide, "widget", fusion_key="rowid")
    cands = t.first.fusion.candidates
    assert [(c.key, c.rowid, c.merged_rowids) for c in cands] == [("#2", 2, ()), ("#3", 3, ())]
    assert cands[0].score == 1 / (60 + 1) + 1 / (60 + 1)
    assert cands[1].score == 1 / (60 + 2) + 1 / (60 + 2)
    assert rowids(t) == [2, 3]


# ─── rrf_k ───────────────────────────────────────────────────────────────


def test_rrf_k_changes_scores_per_formula(zebra):
    ref = run(zebra, "zebra crossing", limit=2)
    k10 = run(zebra, "zebra crossing", limit=2, rrf_k=10)
    # Row 1 is rank 1 in both runs, row 2 rank 2 in both.
    assert [(c.rowid, c.score) for c in ref.first.fusion.candidates] == [
        (1, 1 / (60 + 1) + 1 / (60 + 1)),
        (2, 1 / (60 + 2) + 1 / (60 + 2)),
    ]
    assert [(c.rowid, c.score) for c in k10.first.fusion.candidates] == [
        (1, 1 / (10 + 1) + 1 / (10 + 1)),
        (2, 1 / (10 + 2) + 1 / (10 + 2)),
    ]
    assert k10.first.fusion.rrf_k == 10
    assert all(x.value == 1 / (10 + x.rank) for c in k10.first.fusion.candidates for x in c.contributions)
    # The final rank is minus the fused score.
    assert {r.candidate.rowid: r.rank for r in k10.final} == {1: -(1 / 11 + 1 / 11), 2: -(1 / 12 + 1 / 12)}


def test_rrf_k_zero_is_plain_reciprocal_rank(zebra):
    t = run(zebra, "zebra crossing", limit=2, rrf_k=0)
    assert [c.score for c in t.first.fusion.candidates] == [1 / 1 + 1 / 1, 1 / 2 + 1 / 2]


# ─── fts_limit / pool sizes ──────────────────────────────────────────────


def test_fts_limit_caps_each_retriever(herd):
    ref = run(herd, "zebra")
    assert ref.fts_limit == 10 and len(ref.first.porter.hits) == 7 and len(ref.first.trigram.hits) == 7
    t = run(herd, "zebra", fts_limit=2)
    assert t.fts_limit == 2
    assert (t.first.porter.fts_limit, t.first.trigram.fts_limit) == (2, 2)
    assert len(t.first.porter.hits) == 2 and len(t.first.trigram.hits) == 2
    assert len(t.first.fusion.candidates) <= 4 < len(ref.first.fusion.candidates)


def test_pool_size_changes_what_is_pooled(herd):
    ref = run(herd, "zebra", limit=3)
    t = run(herd, "zebra", limit=3, pool_size=5)
    assert (ref.pool_size, len(ref.first.pool.kept)) == (3, 3)
    assert (t.pool_size, len(t.first.pool.kept)) == (5, 5)
    assert t.fts_limit == max(2 * 5, 10)
    assert len(t.final) == 3  # the trim still cuts to the limit


def test_pool_size_sessions_changes_what_survives_the_filter(herd):
    # Reference: pool max(8 * 3, 40) = 40; the session filter drops row 1
    # (session "other") and three unattributed chunks are returned.
    ref = run(herd, "zebra", sessions=("mine",))
    assert ref.pool_size == 40 and len(ref.final) == 3 and 1 not in rowids(ref)
    # A pool of 1 holds only row 1, which the filter removes: nothing left,
    # and fuzzy has nothing to correct ("zebra" is in the vocabulary).
    t = run(herd, "zebra", sessions=("mine",), pool_size_sessions=1)
    assert t.pool_size == 1
    assert [c.rowid for c in t.first.filter.removed] == [1]
    assert t.layer == "none" and t.final == ()
    # pool_size (without sessions) does not apply when an allow-set is given.
    assert run(herd, "zebra", sessions=("mine",), pool_size=1).pool_size == 40


# ─── rerank ──────────────────────────────────────────────────────────────


def test_reference_rerank_reorders(zebra):
    t = run(zebra, "zebra crossing", limit=2)
    assert [c.rowid for c in t.first.trim.kept] == [1, 2]
    assert rowids(t) == [2, 1]


def test_rerank_off_keeps_fused_order(zebra):
    t = run(zebra, "zebra crossing", limit=2, rerank="off")
    assert t.first.rerank is None
    assert rowids(t) == [c.rowid for c in t.first.fusion.candidates] == [1, 2]
    assert all(r.boost is None for r in t.final)


def test_before_trim_brings_a_chunk_from_beyond_the_limit(zebra):
    # With an allow-set the pool is 40: the reference trims to 1 first (row 1),
    # before-trim reranks the whole filtered pool and row 2 wins.
    ref = run(zebra, "zebra crossing", limit=1, sessions=())
    assert rowids(ref) == [1] and [c.rowid for c in ref.first.trim.cut] == [2]
    t = run(zebra, "zebra crossing", limit=1, sessions=(), rerank="before-trim")
    assert rowids(t) == [2]
    assert [e.candidate.rowid for e in t.first.rerank.entries] == [2, 1]
    assert [c.rowid for c in t.first.trim.cut] == [1]
    # Without an allow-set the pool equals the limit, so before-trim needs a
    # larger pool to see beyond it.
    assert rowids(run(zebra, "zebra crossing", limit=1, rerank="before-trim")) == [1]
    assert rowids(run(zebra, "zebra crossing", limit=1, rerank="before-trim", pool_size=5)) == [2]


# ─── fuzzy ───────────────────────────────────────────────────────────────


def test_fuzzy_always_records_a_shadow_correction(zebra):
    ref = run(zebra, "zebra crosing", limit=2)
    assert ref.layer == "rrf" and not ref.fuzzy.ran
    t = run(zebra, "zebra crosing", limit=2, fuzzy="always")
    assert t.layer == "rrf"
    assert t.fuzzy.ran and t.fuzzy.shadow
    assert t.fuzzy.corrected_query == "zebra crossing"
    assert [(c.word, c.corrected) for c in t.fuzzy.corrections] == [("zebra", None), ("crosing", "crossing")]
    assert t.fuzzy.rerun is not None and t.fuzzy.rerun.results
    assert rowids(t) == rowids(ref)  # the shadow is not the answer
    assert trace_to_dict(t)["fuzzy"]["shadow"] is True


def test_fuzzy_always_without_a_first_match_is_the_real_fallback(zebra):
    t = run(zebra, "zebar", fuzzy="always")
    assert t.layer == "rrf-fuzzy" and not t.fuzzy.shadow


def test_fuzzy_never_disables_the_fallback(zebra):
    ref = run(zebra, "zebar crosing")
    assert ref.layer == "rrf-fuzzy" and ref.fuzzy.corrected_query == "zebra crossing"
    t = run(zebra, "zebar crosing", fuzzy="never")
    assert t.layer == "none" and t.final == ()
    assert not t.fuzzy.ran and "never" in t.fuzzy.reason
    assert "never" in t.empty_reason


# ─── retrievers ──────────────────────────────────────────────────────────


def test_porter_only_skips_the_trigram_retriever(zebra):
    t = run(zebra, "zebra crossing", limit=2, retrievers="porter")
    assert t.first.trigram.skipped == "variant: porter retriever only" and t.first.trigram.hits == ()
    assert all(x.retriever == "porter" for c in t.first.fusion.candidates for x in c.contributions)
    assert [c.score for c in t.first.fusion.candidates] == [1 / (60 + 1), 1 / (60 + 2)]
    assert trace_to_dict(t)["trigram_query"] == ""
    # A substring only the trigram index finds: nothing for the Porter-only run.
    assert run(zebra, "ebra").first.fusion.candidates
    assert run(zebra, "ebra", retrievers="porter").first.fusion.candidates == ()


def test_trigram_only_skips_the_porter_retriever(zebra):
    t = run(zebra, "zebra crossing", limit=2, retrievers="trigram")
    assert t.first.porter.skipped == "variant: trigram retriever only" and t.first.porter.hits == ()
    assert [c.score for c in t.first.fusion.candidates] == [1 / (60 + 1), 1 / (60 + 2)]
    # Porter stems "zebras" to "zebra"; the trigram index has no "zebras".
    assert run(zebra, "zebras").first.fusion.candidates
    assert run(zebra, "zebras", retrievers="trigram").first.fusion.candidates == ()


def test_variant_applies_to_the_fuzzy_rerun(zebra):
    t = run(zebra, "zebar", retrievers="porter")
    assert t.layer == "rrf-fuzzy"
    assert t.fuzzy.rerun.trigram.skipped == "variant: porter retriever only"


def test_empty_pool_is_named_not_blamed_on_the_session_filter(zebra):
    t = run(zebra, "zebra", pool_size=0)
    assert t.layer == "none"
    assert "candidate pool is empty (pool size 0)" in t.fuzzy.reason
    assert "session filter" not in t.fuzzy.reason
    assert "candidate pool is empty" in t.empty_reason
