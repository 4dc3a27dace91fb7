"""FTS5 index segments: rankscope's indexer leaves both indexes merged, as
context-mode does; doctor reports the count; a foreign store is only read."""

from __future__ import annotations

import hashlib
import shutil

import pytest

import engine.store.indexing as indexing
from engine import SearchParams, Store, search
from engine.lab.doctor import diagnose
from engine.store.corpus import index_paths
from engine.store.segments import Segment, Structure, decode_structure, indexed_rows, read_structure
from engine.store.errors import ReadOnlyStoreError
from engine.store.schema import FTS_TABLES

from ..conftest import FIXTURES, SAMPLE_CORPUS


def _counts(store: Store) -> dict[str, int | None]:
    return {t: (s.count if s else None) for t, s in store.index_segments().items()}


def _unmerged(tmp_path, files: int = 12, words: int = 1) -> Store:
    """A store written file by file (one segment per transaction, as FTS5
    writes them), with the periodic merge kept off; ``words`` distinct words
    per file make its index larger."""
    store = Store.create(tmp_path / "u.db")
    store.connections.merges.rows_at = 10**9  # no periodic merge
    for i in range(files):
        extra = " ".join(f"w{i}x{j}" for j in range(words))
        store.index_text(f"f{i}.md", f"# Title {i}\nword{i} shared text {i} {extra}\n", "markdown")
    return store


def test_decode_structure_legacy_and_v2():
    # cookie, 1 level, 2 segments, write counter 5; level 0: 0 merging, 2 segments (id, first, last)
    legacy = b"\0\0\0\0" + bytes([1, 2, 5, 0, 2, 1, 1, 3, 2, 1, 1])
    assert decode_structure(legacy) == Structure(1, (Segment(0, 1, 3), Segment(0, 2, 1)))
    v2 = b"\0\0\0\0\xff\x00\x00\x01" + bytes([1, 1, 5, 0, 1, 7, 1, 4, 0, 0, 0, 0, 9])
    assert decode_structure(v2) == Structure(1, (Segment(0, 7, 4),))
    assert decode_structure(b"\0\0\0\0" + bytes([1, 3, 5, 0, 2, 1, 1, 3])) is None  # ends early
    assert decode_structure(b"\0\0\0\0" + bytes([1, 3, 5, 0, 1, 1, 1, 3])) is None  # 3 announced, 1 found


def test_file_by_file_writes_leave_several_segments(tmp_path):
    store = _unmerged(tmp_path)
    try:
        counts = _counts(store)
        assert all(n is not None and n > 1 for n in counts.values()), counts
        s = read_structure(store.conn, "chunks")
        assert s is not None and s.pages >= s.count and indexed_rows(store.conn, "chunks") == 12
    finally:
        store.close()


def test_merge_index_leaves_one_segment_and_the_same_answers(tmp_path):
    store = _unmerged(tmp_path)
    try:
        before = [(r.candidate.rowid, r.candidate.score) for r in search(store, SearchParams("shared word3")).final]
        report = store.merge_index()
        assert report.merged and all(t.merged and t.before and t.before > 1 and t.after == 1 for t in report.tables)
        assert _counts(store) == {t: 1 for t in FTS_TABLES}
        store.runs.clear()
        after = [(r.candidate.rowid, r.candidate.score) for r in search(store, SearchParams("shared word3")).final]
        assert after == before
        again = store.merge_index()  # nothing left to merge
        assert not again.merged and all(t.before == 1 for t in again.tables)
    finally:
        store.close()


def test_a_small_run_on_a_large_merged_index_is_not_rewritten(tmp_path, monkeypatch):
    store = _unmerged(tmp_path, files=40, words=300)
    try:
        store.merge_index(full=True)
        monkeypatch.setattr(indexing, "MERGE_ALWAYS_PAGES", 0)  # as if the index were large
        store.index_text("new.md", "# New\none more file\n", "markdown")
        report = store.merge_index()
        # the new segment holds far less than MERGE_SHARE of the pages: left for later
        assert not report.merged and _counts(store) == {t: 2 for t in FTS_TABLES}
        monkeypatch.setattr(indexing, "MERGE_SHARE", 0.0)
        assert store.merge_index().merged and _counts(store) == {t: 1 for t in FTS_TABLES}
    finally:
        store.close()


def test_index_run_ends_merged(tmp_path):
    store = Store.create(tmp_path / "s.db")
    try:
        report = index_paths(store, [SAMPLE_CORPUS])
        assert report.merge is not None and report.merge.merged
        assert _counts(store) == {t: 1 for t in FTS_TABLES}
        unchanged = index_paths(store, [SAMPLE_CORPUS], incremental=True)
        assert unchanged.results == [] and unchanged.merge is None  # nothing written, nothing merged
    finally:
        store.close()


def test_long_runs_merge_when_the_index_has_doubled(tmp_path, monkeypatch):
    monkeypatch.setattr(indexing, "MERGE_MIN_ROWS", 4)
    store = Store.create(tmp_path / "s.db")
    merges: list[int] = []
    real = indexing.merge_index

    def counting(conns, *, full=False):
        merges.append(indexed_rows(conns.conn, "chunks"))
        return real(conns, full=full)

    monkeypatch.setattr(indexing, "merge_index", counting)
    try:
        for i in range(40):
            store.index_text(f"f{i}.md", f"# T{i}\nbody {i}\n", "markdown")  # one chunk each
        # at 4 rows (the minimum), then each time the rows written reach the rows at the last merge
        assert merges == [4, 8, 16, 32]
        assert _counts(store) != {t: 1 for t in FTS_TABLES}  # 8 rows since the last merge, in their own segments
    finally:
        store.close()


def test_read_only_stores_are_never_merged(tmp_path):
    path = tmp_path / "s.db"
    _unmerged(tmp_path).close()
    shutil.move(tmp_path / "u.db", path)
    store = Store.open_readonly(path)
    try:
        with pytest.raises(ReadOnlyStoreError):
            store.merge_index()
    finally:
        store.close()


def test_doctor_reports_segments_and_leaves_a_foreign_store_untouched(tmp_path):
    copy = tmp_path / "cm.db"
    shutil.copyfile(FIXTURES / "context-mode-1.0.169.db", copy)
    digest = hashlib.sha256(copy.read_bytes()).hexdigest()
    mtime = copy.stat().st_mtime_ns
    store = Store.open_readonly(copy)
    try:
        report = diagnose(store)
    finally:
        store.close()
    counts = dict(report.segments)
    assert set(counts) == set(FTS_TABLES) and all(isinstance(n, int) and n >= 1 for n in counts.values())
    assert report.to_dict()["segments"] == counts
    assert hashlib.sha256(copy.read_bytes()).hexdigest() == digest and copy.stat().st_mtime_ns == mtime
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cm.db"]
