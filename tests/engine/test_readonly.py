"""Stores we did not create are only ever read.

* While another *process* writes the store in WAL mode (as context-mode
  does), for ``seconds`` (:func:`tests.helpers.spans`; the writer stops
  at :data:`WRITER_MAX_BYTES`), searches here open and read it without an error on either side,
  see the writer's commits, and leave the main database file byte for byte
  as the writer left it. The writer turns automatic checkpoints off, so
  during that phase every change to the main file could only come from us;
  after it stops (its close checkpoints and removes the ``-wal``), repeated
  read-only opens change no byte of any file and create none.
* A store in a read-only folder opens and answers, writing nothing.
* Stale file-backed sources are reported, not refreshed.
* A store without ``vocabulary`` searches with fuzzy disabled, and says why.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
import time

import pytest

from engine import ReadOnlyStoreError, SearchParams, Store, search
from engine.store.corpus import index_paths
from engine.store.discovery import count_mismatches

from ..conftest import FIXTURES, REPO
from ..helpers import folder_bytes, rounds, spans

FIXTURE = FIXTURES / "context-mode-1.0.169.db"
#: The writer commits about this many times in the test's ``seconds`` (each commit adds about
#: 110 KB to the ``-wal``, which it never checkpoints) ...
WRITER_COMMITS = 150
#: ... and stops committing once its store's files (database and ``-wal``) hold this many bytes.
WRITER_MAX_BYTES = 32 * 2**20
#: The test's temporary folder stays under this many bytes.
TEMP_LIMIT = 50 * 2**20

WRITER = r"""
import os, sys, time
sys.path.insert(0, sys.argv[1])
from engine.store.store import Store

path, stop_file, max_bytes, pause = sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5])
store = Store.create(path)
store.index_text("seed.md", "# Seed\nalpha beta gamma retry backoff", "markdown")
store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
store.conn.execute("PRAGMA wal_autocheckpoint = 0")  # from now on the main file only changes on close
print("ready", flush=True)
i = 0
capped = False
while (i < 20 and not capped) or not os.path.exists(stop_file):
    if capped or sum(os.path.getsize(p) for p in (path, path + "-wal") if os.path.exists(p)) >= max_bytes:
        capped = True  # wait for the stop file, writing nothing more (closing would checkpoint)
        time.sleep(0.01)
        continue
    store.index_text(f"doc{i}.md", f"# Doc {i}\nalpha entry {i} beta retry\n\n## Part\nbackoff {i}", "markdown",
                     session_id=f"s{i % 3}")
    if i % 5 == 4:
        store.index_text(f"doc{i - 4}.md", f"# Doc {i - 4} again\nalpha replaced", "markdown")  # replace a label
    if i % 7 == 6:
        store.delete_label(f"doc{i - 6}.md")
    i += 1
    time.sleep(pause)
print(f"wrote {i}" + (" (stopped at the size cap)" if capped else ""), flush=True)
store.close()
"""


def _sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _snapshot(folder) -> dict[str, str]:
    """Every file under ``folder`` (relative path → SHA-256): what exists and what it holds."""
    return {str(p.relative_to(folder)): _sha(p) for p in sorted(folder.rglob("*")) if p.is_file()}


def _assert_clean_run(trace) -> None:
    assert trace.first.porter.error is None, trace.first.porter.error
    assert trace.first.trigram.error is None, trace.first.trigram.error
    assert trace.refresh.refreshed is False


@pytest.mark.parametrize("seconds", spans())
def test_search_while_another_process_writes(tmp_path, seconds):
    db = tmp_path / "live.db"
    stop = tmp_path / "stop"
    peak = 0
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            WRITER,
            str(REPO),
            str(db),
            str(stop),
            str(WRITER_MAX_BYTES),
            str(seconds / WRITER_COMMITS),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
        assert (tmp_path / "live.db-wal").exists()  # the writer is live: we must read through its WAL
        main_before = _sha(db)
        first_sources = None
        reads = 0
        for _ in rounds(seconds):
            reads += 1
            store = Store.open_readonly(db)
            try:
                assert store.read_only
                trace = search(store, SearchParams("alpha retry", limit=5))
                _assert_clean_run(trace)
                assert trace.final, "the seed document always matches"
                search(store, SearchParams("alpah", limit=3))  # fuzzy path reads vocabulary too
                with pytest.raises(ReadOnlyStoreError):
                    store.index_text("x.md", "# X\nno", "markdown")
                assert count_mismatches(store) == []  # one consistent snapshot per check
                n = store.stats().sources
                first_sources = n if first_sources is None else first_sources
            finally:
                store.close()
            peak = max(peak, folder_bytes(tmp_path))
        # The reader sees the writer's commits (through the WAL) ...
        deadline = time.monotonic() + 60
        while True:
            store = Store.open_readonly(db)
            try:
                n = store.stats().sources
            finally:
                store.close()
            if n > first_sources or time.monotonic() > deadline:
                break
            time.sleep(0.01)
        assert n > first_sources
        # ... and never wrote the main file (the writer has checkpoints off).
        assert _sha(db) == main_before
        peak = max(peak, folder_bytes(tmp_path))
    finally:
        stop.touch()
        out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    print(
        f"\n{seconds:g} s: {reads} read-only opens, writer: {out.strip()}; temporary files peaked at {peak / 2**20:.1f} MiB"
    )
    assert peak < TEMP_LIMIT, f"temporary files reached {peak} bytes"
    assert "size cap" not in out, f"the writer stopped before the reads ended: {out.strip()}"
    assert out.startswith("wrote "), out
    assert "Error" not in err and "Traceback" not in err, err

    # The writer closed: it checkpointed and removed its WAL. Now nothing
    # we do may change or create any file.
    assert not (tmp_path / "live.db-wal").exists()
    before = _snapshot(tmp_path)
    for _ in range(25):
        store = Store.open_readonly(db)
        try:
            _assert_clean_run(search(store, SearchParams("alpha backoff", limit=5, sessions=("s1",))))
            assert count_mismatches(store) == []
            conn = store.connect()  # a second (thread) connection is read-only as well
            try:
                search(store, SearchParams("retry"), conn=conn)
            finally:
                conn.close()
        finally:
            store.close()
    assert _snapshot(tmp_path) == before


def test_read_only_folder(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    shutil.copy2(FIXTURE, folder / FIXTURE.name)
    os.chmod(folder / FIXTURE.name, 0o444)
    os.chmod(folder, 0o555)
    try:
        before = _snapshot(folder)
        store = Store.open_readonly(folder / FIXTURE.name)
        try:
            for query in ("journal compaction", "deploymnet chekclist", "retry storm jitter"):
                trace = search(store, SearchParams(query, limit=5, sessions=("s-alpha",)))
                _assert_clean_run(trace)
                assert trace.final
            assert count_mismatches(store) == []
            assert store.stats().chunks == 123
        finally:
            store.close()
        assert _snapshot(folder) == before
        assert _sha(folder / FIXTURE.name) == _sha(FIXTURE)
    finally:
        os.chmod(folder, 0o755)


def test_copied_fixture_opened_many_times_changes_nothing(tmp_path):
    shutil.copy2(FIXTURE, tmp_path / "copy.db")
    before = _snapshot(tmp_path)
    for _ in range(10):
        with Store.open_readonly(tmp_path / "copy.db") as store:
            _assert_clean_run(search(store, SearchParams("on-call rotation", limit=5)))
    assert _snapshot(tmp_path) == before


def test_stale_file_backed_source_is_reported_not_refreshed(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "guide.md").write_text("# Guide\nthe old install steps\n")
    (docs / "other.md").write_text("# Other\nunrelated text\n")
    db = tmp_path / "s.db"
    store = Store.create(db)
    index_paths(store, [docs])
    store.close()
    (docs / "guide.md").write_text("# Guide\nthe new zeppelin steps\n")
    future = time.time() + 10  # indexed_at has second resolution
    os.utime(docs / "guide.md", (future, future))
    before = _snapshot(tmp_path)

    with Store.open_readonly(db) as ro:
        trace = search(ro, SearchParams("zeppelin"))
        assert trace.refresh.checked == 2
        assert trace.refresh.stale == ("guide.md",)  # what the reference would re-index
        assert trace.refresh.refreshed is False
        assert trace.layer == "none"  # the new text was not indexed
        old = search(ro, SearchParams("install steps"))
        assert old.final and old.final[0].candidate.content.endswith("the old install steps")
    assert _snapshot(tmp_path) == before


def test_store_without_vocabulary(tmp_path):
    db = tmp_path / "novocab.db"
    shutil.copy2(FIXTURE, db)
    conn = sqlite3.connect(db)
    conn.execute("DROP TABLE vocabulary")
    conn.commit()
    conn.close()
    before = _snapshot(tmp_path)
    with Store.open_readonly(db) as store:
        assert store.schema.has_vocabulary is False
        assert store.stats().vocabulary is None
        trace = search(store, SearchParams("deploymnet chekclist"))  # a fuzzy case in the fixture
        assert trace.layer == "none" and not trace.final
        assert trace.fuzzy.ran is False
        assert "no vocabulary table" in trace.fuzzy.reason
        assert "no vocabulary table" in trace.empty_reason
        ok = search(store, SearchParams("journal compaction"))
        assert ok.layer == "rrf" and ok.final
    assert _snapshot(tmp_path) == before


def test_index_paths_refuses_a_read_only_store(tmp_path):
    shutil.copy2(FIXTURE, tmp_path / "c.db")
    (tmp_path / "a.md").write_text("# A\n")
    with Store.open_readonly(tmp_path / "c.db") as store:
        with pytest.raises(ReadOnlyStoreError):
            index_paths(store, [tmp_path / "a.md"])
    assert _sha(tmp_path / "c.db") == _sha(FIXTURE)


@pytest.mark.skipif(os.geteuid() == 0 if hasattr(os, "geteuid") else True, reason="root ignores file modes")
def test_read_only_file_in_writable_folder(tmp_path):
    shutil.copy2(FIXTURE, tmp_path / "c.db")
    os.chmod(tmp_path / "c.db", stat.S_IRUSR)
    before = _snapshot(tmp_path)
    with Store.open_readonly(tmp_path / "c.db") as store:
        _assert_clean_run(search(store, SearchParams("journal")))
    assert _snapshot(tmp_path) == before


def _context_mode_writer(db) -> sqlite3.Connection:
    """What context-mode does to its own store (rankscope never writes there):
    a WAL-mode connection that adds the source ``late.md`` (one chunk,
    "zeppelin arrives") and stays open."""
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("BEGIN IMMEDIATE")
    sid = conn.execute("INSERT INTO sources (label, chunk_count, code_chunk_count) VALUES ('late.md', 1, 0)").lastrowid
    for table in ("chunks", "chunks_trigram"):
        conn.execute(
            f"INSERT INTO {table} (title, content, source_id, content_type, session_id) "
            "VALUES ('Late', 'zeppelin arrives', ?, 'prose', '')",
            (sid,),
        )
    conn.execute("COMMIT")
    return conn


def test_long_lived_reader_follows_a_writer_that_starts_later(tmp_path):
    db = tmp_path / "c.db"
    shutil.copy2(FIXTURE, db)
    ro = Store.open_readonly(db)
    try:
        assert ro.immutable  # nobody was writing: nothing may be created next to it
        assert ro.reopen_if_writer_started() is False
        writer = _context_mode_writer(db)  # context-mode starts (the file is in WAL mode)
        try:
            assert (tmp_path / "c.db-wal").exists()
            assert ro.reopen_if_writer_started() is True
            assert not ro.immutable and ro.read_only
            assert ro.stats().sources == 12
            assert search(ro, SearchParams("zeppelin")).final[0].candidate.source == "late.md"
            assert ro.reopen_if_writer_started() is False
            with pytest.raises(ReadOnlyStoreError):
                ro.index_text("x.md", "no", "markdown")
        finally:
            writer.close()
    finally:
        ro.close()
