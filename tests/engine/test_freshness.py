"""The stale-source answer without a per-search file scan (engine/store/freshness.py).

Every case edits files between searches of one open store and searches
right away: the answer must be the reference's (a writable store re-indexes
before that very search; a read-only store reports what would refresh), and
the trace must say how it was found.
"""

from __future__ import annotations

import os
import shutil
import time

import pytest

from engine import SearchParams, Store, index_paths, search
from engine.store import freshness as fr
from engine.store.freshness import check_all, load_sources


def _future(path, seconds: float = 5.0) -> None:
    """Make ``path`` newer than ``indexed_at`` (second resolution)."""
    t = time.time() + seconds
    os.utime(path, (t, t))


def _edit(path, text: str) -> None:
    path.write_text(text)
    _future(path)


def _warm(store, n: int = 3) -> None:
    """Search until the store watches its files (the first search scans,
    the second starts the watcher and scans, later ones read events)."""
    for _ in range(n):
        search(store, SearchParams("warmup"))


@pytest.fixture
def docs(tmp_path):
    d = tmp_path / "docs"
    d.mkdir()
    (d / "guide.md").write_text("# Guide\nthe old install steps\n")
    (d / "other.md").write_text("# Other\nunrelated text\n")
    return d


@pytest.fixture
def writable(tmp_path, docs):
    s = Store.create(tmp_path / "s.db")
    index_paths(s, [docs / "guide.md"])
    index_paths(s, [docs / "other.md"])
    yield s
    s.close()


def test_first_search_scans_later_ones_read_the_watch(writable):
    methods = [search(writable, SearchParams("install")).refresh for _ in range(4)]
    assert [r.method for r in methods] == ["scan", "scan", "watch", "watch"]
    assert all(r.checked == 2 and r.stale == () and r.age_ms == 0.0 for r in methods)
    assert methods[0].examined == 2 and methods[-1].examined == 0  # nothing changed: no file examined


def test_warming_makes_the_first_search_read_the_watch(tmp_path, writable, docs):
    """What the browser does on opening a store: the sources are examined and
    watched before any search, so the first search reads the watch's queue;
    a change made after the warm-up is seen by that first search, and the
    warm-up itself writes nothing (a stale source stays as it was)."""
    _edit(docs / "guide.md", "# Guide\nthe new zeppelin steps\n")
    writable.close()
    ro = Store.open_readonly(tmp_path / "s.db")
    try:
        with ro.thread_connection() as conn:
            ro.warm_freshness(conn)
        assert ro.freshness.method == "watch"
        _edit(docs / "other.md", "# Other\nnow about zeppelins\n")
        t = search(ro, SearchParams("zeppelin"))
        assert t.refresh.method == "watch" and t.refresh.examined == 1  # the file changed since, only
        assert t.refresh.stale == ("guide.md", "other.md") and t.refresh.refreshed is False
    finally:
        ro.close()


def test_a_change_is_refreshed_before_the_very_next_search(writable, docs):
    _warm(writable)
    _edit(docs / "guide.md", "# Guide\nthe new zeppelin steps\n")
    t = search(writable, SearchParams("zeppelin"))  # no pause: the change must already be seen
    assert t.refresh.method == "watch" and t.refresh.examined == 1
    assert t.refresh.stale == ("guide.md",) and t.refresh.refreshed
    assert t.final and t.final[0].candidate.content.endswith("the new zeppelin steps")
    again = search(writable, SearchParams("zeppelin"))
    assert again.refresh.stale == () and again.refresh.method == "watch"


def test_touched_but_unchanged_file_is_not_stale(writable, docs):
    _warm(writable)
    _future(docs / "guide.md")  # mtime after indexed_at, same SHA-256: the reference skips it
    for _ in range(2):
        assert search(writable, SearchParams("install")).refresh.stale == ()


def test_atomic_save_by_rename_is_seen(writable, docs):
    _warm(writable)
    tmp = docs / ".guide.md.swp"
    tmp.write_text("# Guide\nrenamed zeppelin text\n")
    _future(tmp)
    os.replace(tmp, docs / "guide.md")
    t = search(writable, SearchParams("zeppelin"))
    assert t.refresh.stale == ("guide.md",) and t.refresh.refreshed and t.final


def test_deleted_file_is_skipped_and_a_recreated_folder_is_seen(writable, docs, tmp_path):
    _warm(writable)
    shutil.rmtree(docs)
    t = search(writable, SearchParams("install"))
    assert t.refresh.stale == () and t.refresh.errors == ()  # a missing file keeps its chunks (reference)
    assert t.final  # still found from the index
    search(writable, SearchParams("install"))
    docs.mkdir()
    _edit(docs / "guide.md", "# Guide\nthe folder came back with zeppelin\n")
    t = search(writable, SearchParams("zeppelin"))
    assert t.refresh.stale == ("guide.md",) and t.final


def test_read_only_store_reports_every_time_and_never_writes(tmp_path, writable, docs):
    writable.close()
    ro = Store.open_readonly(tmp_path / "s.db")
    try:
        _warm(ro)
        _edit(docs / "other.md", "# Other\nnow about zeppelins\n")
        for _ in range(3):
            t = search(ro, SearchParams("zeppelin"))
            assert t.refresh.method == "watch"
            assert t.refresh.stale == ("other.md",) and t.refresh.refreshed is False
            assert t.layer == "none"
    finally:
        ro.close()


def test_a_symlinked_source_is_examined_on_every_search(tmp_path, docs):
    real = docs / "guide.md"
    link = tmp_path / "link.md"
    link.symlink_to(real)
    s = Store.create(tmp_path / "s.db")
    try:
        # a foreign store may record the path as given (not resolved)
        s.index_text("link.md", real.read_text(), "markdown", file_path=str(link))
        _warm(s)
        assert s.freshness.method == "watch"
        _edit(real, "# Guide\nthrough the link: zeppelin\n")  # the link's folder sees no event
        t = search(s, SearchParams("zeppelin"))
        assert t.refresh.stale == ("link.md",) and t.final
    finally:
        s.close()


def test_new_source_in_a_new_folder_is_watched_too(writable, tmp_path):
    _warm(writable)
    other = tmp_path / "more"
    other.mkdir()
    (other / "new.md").write_text("# New\nfresh material\n")
    index_paths(writable, [other / "new.md"])
    search(writable, SearchParams("fresh"))  # a new folder: scanned, watched afresh
    search(writable, SearchParams("fresh"))
    _edit(other / "new.md", "# New\nfresh zeppelin material\n")
    t = search(writable, SearchParams("zeppelin"))
    assert t.refresh.method == "watch" and t.refresh.stale == ("new.md",) and t.final


def test_without_watching_large_stores_use_a_background_examination(tmp_path, docs, monkeypatch):
    def no_watch(folders):
        raise OSError(28, "No space left on device (inotify watches)")

    monkeypatch.setattr(fr, "_Watch", no_watch)
    monkeypatch.setattr(fr, "SYNC_SCAN_LIMIT", 1)
    monkeypatch.setattr(fr, "BACKGROUND_INTERVAL_S", 0.05)
    s = Store.create(tmp_path / "s.db")
    try:
        for name in ("guide.md", "other.md"):
            index_paths(s, [docs / name])
        r = [search(s, SearchParams("install")).refresh for _ in range(3)]
        assert [x.method for x in r] == ["scan", "scan", "background"]
        assert r[2].age_ms > 0
        _edit(docs / "guide.md", "# Guide\nbackground zeppelin\n")
        deadline = time.monotonic() + 10
        while True:
            t = search(s, SearchParams("zeppelin"))
            if t.refresh.stale or time.monotonic() > deadline:
                break
            time.sleep(0.02)
        assert t.refresh.method == "background" and t.refresh.stale == ("guide.md",) and t.final
    finally:
        s.close()


def test_small_unwatchable_stores_scan_every_search(writable, docs, monkeypatch):
    monkeypatch.setattr(fr, "_Watch", lambda folders: (_ for _ in ()).throw(OSError("no inotify")))
    r = [search(writable, SearchParams("install")).refresh for _ in range(3)]
    assert [x.method for x in r] == ["scan"] * 3 and r[2].examined == 2
    _edit(docs / "guide.md", "# Guide\nscanned zeppelin\n")
    assert search(writable, SearchParams("zeppelin")).refresh.stale == ("guide.md",)


def test_watch_answer_equals_a_full_examination(tmp_path, docs):
    """Missing files, an unparsable indexed_at, a folder at a file's path,
    touched-only and changed files: the kept answer and a fresh full
    examination (the reference's way) agree after every step."""
    s = Store.create(tmp_path / "s.db")
    try:
        for i in range(6):
            (docs / f"f{i}.md").write_text(f"# F{i}\nbody {i}\n")
            index_paths(s, [docs / f"f{i}.md"])
        s.conn.execute("UPDATE sources SET indexed_at = 'not a date' WHERE label = 'f5.md'")

        def agree() -> None:
            t = search(s, SearchParams("body"))
            stale, errors = check_all(load_sources(s.conn))
            assert t.refresh.stale == tuple(x[0] for x in stale) or t.refresh.refreshed
            assert list(t.refresh.errors) == errors

        agree()
        agree()
        _edit(docs / "f0.md", "# F0\nchanged\n")
        _future(docs / "f1.md")
        os.unlink(docs / "f2.md")
        os.unlink(docs / "f3.md")
        (docs / "f3.md").mkdir()
        _future(docs / "f3.md")
        _future(docs / "f5.md")
        agree()
        agree()
    finally:
        s.close()


def test_closing_the_store_stops_watching(writable):
    _warm(writable)
    assert writable.freshness.method == "watch"
    writable.close()
    assert writable.freshness.method == "scan"
