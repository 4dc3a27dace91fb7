"""Retriever-run and fuzzy-correction caches (engine/store/cache.py): re-runs that
share a run are served from the cache, and no cache ever serves an answer
from before a write, whoever made it."""

from __future__ import annotations

import shutil
from dataclasses import replace

import apsw
import pytest

from engine import SearchParams, Store, Variant, search, trace_to_dict
from engine.store.cache import VersionedLRU

from ..conftest import MODERN


def _same_answer(a, b) -> None:
    da, db = trace_to_dict(a), trace_to_dict(b)
    for d in (da, db):
        d.pop("timings_ms", None)
        d["refresh"].pop("method")  # the first search of a store scans, later ones read the watch
    assert da == db


def _runs(trace):
    return trace.first.porter, trace.first.trigram


@pytest.fixture
def disk(tmp_path):
    s = Store.create(tmp_path / "s.db")
    s.index_text("a.md", "# Alpha guide\nalpha beta gamma\n", "markdown")
    s.index_text("b.md", "# Beta notes\nbeta delta\n", "markdown")
    yield s
    s.close()


@pytest.mark.parametrize("where", ["memory", "disk"])
def test_a_repeated_search_is_served_from_the_cache(where, disk):
    s = disk if where == "disk" else Store.create(":memory:")
    if where == "memory":
        s.index_text("a.md", "# Alpha guide\nalpha beta gamma\n", "markdown")
    first = search(s, SearchParams("alpha beta"))
    again = search(s, SearchParams("alpha beta"))
    assert [r.cached for r in _runs(first)] == [False, False]
    assert [r.cached for r in _runs(again)] == [True, True]
    _same_answer(first, again)


def test_variants_sharing_the_runs_reuse_them(disk):
    base = search(disk, SearchParams("alpha beta"))
    for variant in (Variant(fusion_key="rowid"), Variant(rrf_k=10), Variant(rerank="off"), Variant(fuzzy="always")):
        t = search(disk, SearchParams("alpha beta", variant=variant))
        assert [r.cached for r in _runs(t)] == [True, True], variant
        assert [h.rowid for h in t.first.porter.hits] == [h.rowid for h in base.first.porter.hits]
    for different in (
        SearchParams("alpha beta", limit=7),
        SearchParams("alpha beta", source="a.md"),
        SearchParams("alpha beta", content_type="prose"),
        SearchParams("alpha  beta gamma"),
    ):
        t = search(disk, different)
        assert not any(r.cached for r in _runs(t)), different


def test_a_write_through_the_store_is_never_hidden(disk):
    search(disk, SearchParams("gamma"))
    disk.index_text("c.md", "# Gamma\ngamma gamma gamma\n", "markdown")
    t = search(disk, SearchParams("gamma"))
    assert not any(r.cached for r in _runs(t))
    assert {r.candidate.source for r in t.final} == {"a.md", "c.md"}


def test_a_write_by_another_connection_is_never_hidden(disk, tmp_path):
    search(disk, SearchParams("gamma"))
    with Store.open_writable(tmp_path / "s.db") as other:  # another writer (could be another process)
        other.index_text("c.md", "# Gamma\ngamma gamma gamma\n", "markdown")
    t = search(disk, SearchParams("gamma"))
    assert not any(r.cached for r in _runs(t))
    assert "c.md" in {r.candidate.source for r in t.final}


def test_a_live_writer_under_a_read_only_store_is_never_hidden(tmp_path):
    """context-mode writes its store while rankscope browses it read-only."""
    db = tmp_path / "c.db"
    shutil.copy2(MODERN, db)
    writer = apsw.Connection(str(db))
    writer.execute("PRAGMA journal_mode=WAL").fetchall()
    ro = Store.open_readonly(db)
    try:
        assert not ro.immutable
        before = search(ro, SearchParams("zeppelin"))
        assert search(ro, SearchParams("zeppelin")).first.porter.cached
        writer.execute("BEGIN IMMEDIATE")
        writer.execute("INSERT INTO sources (label, chunk_count, code_chunk_count) VALUES ('late.md', 1, 0)")
        sid = writer.last_insert_rowid()
        for table in ("chunks", "chunks_trigram"):
            writer.execute(
                f"INSERT INTO {table} (title, content, source_id, content_type, session_id) "
                "VALUES ('Late', 'zeppelin arrives', ?, 'prose', '')",
                (sid,),
            )
        writer.execute("COMMIT")
        after = search(ro, SearchParams("zeppelin"))
        assert not after.first.porter.cached
        assert before.layer != "rrf" or before.final[0].candidate.source != "late.md"
        assert after.final[0].candidate.source == "late.md"
    finally:
        ro.close()
        writer.close()


def test_fuzzy_corrections_are_cached_until_a_write(disk):
    t1 = search(disk, SearchParams("gamna"))
    assert t1.layer == "rrf-fuzzy" and [c.cached for c in t1.fuzzy.corrections] == [False]
    assert t1.fuzzy.corrections[0].corrected == "gamma"
    t2 = search(disk, SearchParams("gamna"))
    assert [c.cached for c in t2.fuzzy.corrections] == [True]
    assert replace(t2.fuzzy.corrections[0], cached=False) == t1.fuzzy.corrections[0]
    disk.index_text("g.md", "# Gamna\ngamna is a word now\n", "markdown")
    t3 = search(disk, SearchParams("gamna"))
    assert t3.layer == "rrf"  # found as typed: the stale correction was not used


def test_nothing_is_cached_inside_a_transaction_the_caller_opened(disk):
    search(disk, SearchParams("alpha"))
    disk.conn.execute("BEGIN")
    try:
        t = search(disk, SearchParams("alpha"))
        assert not any(r.cached for r in _runs(t))
    finally:
        disk.conn.execute("COMMIT")


def test_versioned_lru_rules():
    c: VersionedLRU[int] = VersionedLRU(2)
    c.put(1, "a", 1)
    c.put(1, "b", 2)
    assert c.get(1, "a") == 1  # a is now the most recent
    c.put(1, "c", 3)  # evicts b
    assert c.get(1, "b") is None and c.get(1, "c") == 3
    assert c.get(2, "a") is None  # another version never sees them
    c.put(2, "d", 4)  # a new version drops the old entries
    assert len(c) == 1 and c.get(2, "a") is None
    c.put(None, "e", 5)
    assert c.get(None, "e") is None and len(c) == 1
    with pytest.raises(ValueError):
        VersionedLRU(0)
