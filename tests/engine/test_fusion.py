"""Reciprocal rank fusion: scores written as formulas, ties, collisions."""

from engine.pipeline.stages.fusion import fuse
from engine.pipeline.candidates import Hit
from engine.pipeline.stages.retrieve import RetrieverRun


def hit(rank, rowid, source, title):
    return Hit(rank, rowid, source, title, "", "prose", "", -1.0, "")


def run(name, *hits):
    return RetrieverRun(name, "q", 10, tuple(hits))


def test_scores_are_sums_of_reciprocal_ranks():
    p = run("porter", hit(1, 1, "a", "A"), hit(2, 2, "b", "B"), hit(3, 3, "c", "C"))
    t = run("trigram", hit(1, 3, "c", "C"), hit(2, 4, "d", "D"))
    got = {c.key: c.score for c in fuse([p, t])}
    assert got == {
        "a::A": 1 / (60 + 1),
        "b::B": 1 / (60 + 2),
        "c::C": 1 / (60 + 3) + 1 / (60 + 1),
        "d::D": 1 / (60 + 2),
    }
    order = [c.key for c in fuse([p, t])]
    assert order == ["c::C", "a::A", "b::B", "d::D"]


def test_ties_keep_first_seen_order():
    p = run("porter", hit(1, 1, "a", "A"))
    t = run("trigram", hit(1, 2, "b", "B"))
    assert [c.key for c in fuse([p, t])] == ["a::A", "b::B"]
    assert [c.key for c in fuse([t, p])] == ["b::B", "a::A"]


def test_key_collision_merges_rows_and_keeps_first():
    p = run("porter", hit(1, 10, "s", "Same"), hit(2, 11, "s", "Same"))
    t = run("trigram", hit(1, 11, "s", "Same"))
    (c,) = fuse([p, t])
    assert c.rowid == 10
    assert c.merged_rowids == (11,)
    assert c.key_collision
    assert c.score == 1 / 61 + 1 / 62 + 1 / 61
    assert [(x.retriever, x.rank, x.rowid) for x in c.contributions] == [
        ("porter", 1, 10),
        ("porter", 2, 11),
        ("trigram", 1, 11),
    ]
    assert (c.porter_rank, c.trigram_rank) == (1, 1)


def test_rowid_variant_keeps_colliding_chunks_apart():
    p = run("porter", hit(1, 10, "s", "Same"), hit(2, 11, "s", "Same"))
    got = fuse([p], key_mode="rowid")
    assert [c.rowid for c in got] == [10, 11]
    assert not any(c.merged_rowids for c in got)


def test_rrf_k_changes_scores():
    p = run("porter", hit(1, 1, "a", "A"))
    (c,) = fuse([p], rrf_k=10)
    assert c.score == 1 / (10 + 1)
