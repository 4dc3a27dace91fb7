"""Store: opening errors, indexing, de-duplication, stale refresh, bad files."""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
import time

import pytest

from engine import NotADatabaseError, SchemaError, SearchParams, Store, StoreError, StoreNotFoundError, search
from engine.store import sql
from engine.store.corpus import index_paths
from engine.lab.doctor import diagnose
from engine.store.errors import CorruptStoreError, NotOurStoreError, ReadOnlyStoreError
from engine.store.schema import APPLICATION_ID, read_application_id
from engine.lab.why import why_not

from ..conftest import LEGACY, MODERN


def test_missing_db(tmp_path):
    with pytest.raises(StoreNotFoundError, match="no database at .*nope.db"):
        Store.open_readonly(tmp_path / "nope.db")


def test_not_sqlite(tmp_path):
    p = tmp_path / "notes.db"
    p.write_text("hello, not a database")
    with pytest.raises(NotADatabaseError, match="not an SQLite database"):
        Store.open_readonly(p)
    assert p.read_text() == "hello, not a database"  # untouched


def test_sqlite_without_tables(tmp_path):
    p = tmp_path / "other.db"
    c = sqlite3.connect(p)
    c.execute("CREATE TABLE t(x)")
    c.commit()
    c.close()
    before = p.read_bytes()
    with pytest.raises(SchemaError, match="missing table"):
        Store.open_readonly(p)
    assert p.read_bytes() == before


def test_folder_is_not_a_db(tmp_path):
    with pytest.raises(NotADatabaseError, match="folder"):
        Store.open_readonly(tmp_path)


def test_reindexing_a_label_replaces_it(store):
    store.index_text("a.md", "# One\nfirst", "markdown")
    store.index_text("a.md", "# Two\nsecond\n# Three\nthird", "markdown")
    rows = store.iter_chunks()
    assert [r.title for r in rows] == ["Two", "Three"]
    assert [s.label for s in store.sources()] == ["a.md"]
    assert store.sources()[0].chunk_count == 2


def test_rows_of_a_foreign_store_with_nulls_and_an_orphan_chunk(tmp_path):
    """Typed rows read what another writer may leave: a NULL title, content
    type or session id reads as "", an orphan chunk has source None, a REAL
    source_id reads as an int; sources and counts come back typed too."""
    from engine.store.rows import ChunkRow, SourceRow, StoreCounts
    from engine.store.schema import SCHEMA_SQL

    db = tmp_path / "foreign.db"
    conn = sqlite3.connect(db)
    conn.executescript(SCHEMA_SQL)
    conn.execute(
        "INSERT INTO sources (id, label, chunk_count, indexed_at) VALUES (1, 'a.md', 1, '2026-01-02 03:04:05')"
    )
    for table in ("chunks", "chunks_trigram"):
        conn.execute(f"INSERT INTO {table} (rowid, title, content, source_id) VALUES (1, NULL, 'alpha', 1.0)")
        conn.execute(
            f"INSERT INTO {table} (rowid, title, content, source_id, content_type, session_id) VALUES (2, 'T', 'beta', 9, 'code', 's')"
        )
    conn.commit()
    conn.close()
    with Store.open_readonly(db) as s:
        assert s.iter_chunks() == [
            ChunkRow(1, "a.md", "", "alpha", "", "", 1),
            ChunkRow(2, None, "T", "beta", "code", "s", 9),
        ]
        assert s.iter_chunks(with_content=False)[1].content is None
        assert s.chunk(1) == ChunkRow(1, "a.md", "", "alpha", "", "", 1) and s.chunk(2) is None  # no source row
        assert s.sources() == [SourceRow(1, "a.md", 1, 0, "2026-01-02 03:04:05", None, None)]
        assert s.stats() == StoreCounts(1, 2, 1, 0, "2026-01-02 03:04:05")
        assert s.recorded_stats() == StoreCounts(1, 1, 0, 0, "2026-01-02 03:04:05")


def test_readonly_store_refuses_writes(tmp_path):
    p = tmp_path / "s.db"
    s = Store.create(p)
    s.index_text("a.md", "# A\nalpha", "markdown")
    s.close()
    ro = Store.open_readonly(p)
    with pytest.raises(ReadOnlyStoreError, match="read-only"):
        ro.index_text("b.md", "x", "markdown")
    assert search(ro, SearchParams("alpha")).final[0].candidate.title == "A"
    ro.close()


def test_stale_source_is_refreshed_before_search(tmp_path):
    doc = tmp_path / "doc.md"
    doc.write_text("# Old\nlegacy words")
    s = Store.create(tmp_path / "s.db")
    index_paths(s, [doc])
    # make the file newer than indexed_at (second resolution) and different
    doc.write_text("# New\nfresh words")
    future = time.time() + 5
    os.utime(doc, (future, future))
    t = search(s, SearchParams("fresh"))
    assert t.refresh.stale == ("doc.md",) and t.refresh.refreshed
    assert t.final and t.final[0].candidate.title == "New"
    s.close()


def test_binary_and_non_utf8_files(tmp_path):
    root = tmp_path / "c"
    root.mkdir()
    (root / "img.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    (root / "latin1.txt").write_bytes("caf\xe9 au lait\n".encode("latin-1"))
    (root / "ok.md").write_text("# Fine\ntext")
    s = Store.create(":memory:")
    report = index_paths(s, [root])
    reasons = {k.path: k.reason for k in report.skipped}
    assert "binary" in reasons["img.png"]
    assert "U+FFFD" in reasons["latin1.txt"]  # indexed, replacement reported
    assert {r.label for r in report.results} == {"latin1.txt", "ok.md"}
    assert "caf\ufffd au lait" in s.iter_chunks()[0].content


def test_empty_query_has_reason(store):
    store.index_text("a.md", "# A\nalpha", "markdown")
    for q in ("", "   ", "\t\n"):
        t = search(store, SearchParams(q))
        assert t.layer == "none" and not t.final
        assert "empty query" in t.empty_reason


def test_bad_params():
    with pytest.raises(ValueError, match="limit must be 0 or more; got -1"):
        SearchParams("x", limit=-1)
    with pytest.raises(ValueError, match="content_type"):
        SearchParams("x", content_type="binary")
    with pytest.raises(ValueError, match="characters; the maximum"):
        SearchParams("x" * 20000)
    with pytest.raises(
        ValueError, match=r"undecodable character U\+DCFF at position 7; is the terminal's encoding UTF-8\?"
    ):
        SearchParams("quorum \udcff")
    assert SearchParams("quorum \U0001f600 é").query  # a real astral character is fine


def test_limit_zero_behaviour(store):
    store.index_text("a.md", "# Cache\ncache", "markdown", session_id="s1")
    t = search(store, SearchParams("cache", limit=0))
    assert t.layer == "none"  # reference: pool 0, fuzzy pass, nothing
    t = search(store, SearchParams("cache", limit=0, sessions=("s1",)))
    assert t.layer == "rrf" and t.final == () and "limit is 0" in t.empty_reason


# ─── rankscope writes only to stores it created ─────────────────────────


def test_created_stores_carry_the_mark(tmp_path):
    p = tmp_path / "s.db"
    with Store.create(p) as s:
        s.index_text("a.md", "# A\nalpha", "markdown")
    assert read_application_id(p) == APPLICATION_ID
    with Store.open_writable(p) as s:  # reopened for writing: allowed
        s.index_text("b.md", "# B\nbeta", "markdown")
    with Store.create(p) as s:  # "create" on our own store opens it
        assert {x.label for x in s.sources()} == {"a.md", "b.md"}
    empty = tmp_path / "empty.db"
    empty.write_bytes(b"")  # SQLite reads an empty file as an empty database; rankscope did not make it
    with pytest.raises(NotADatabaseError, match="it is an empty file, not a store rankscope made"):
        Store.create(empty)
    assert empty.read_bytes() == b"" and sorted(p.name for p in tmp_path.iterdir()) == ["empty.db", "s.db"]


def _foreign(tmp_path, kind: str):
    p = tmp_path / f"{kind}.db"
    if kind in ("modern", "legacy"):
        shutil.copy2(MODERN if kind == "modern" else LEGACY, p)
        os.chmod(p, 0o644)
    else:
        conn = sqlite3.connect(p)
        if kind == "other-app":
            conn.execute("PRAGMA application_id = 1234")
        conn.execute("CREATE TABLE t (x)")
        conn.commit()
        conn.close()
    return p


@pytest.mark.parametrize("kind", ["modern", "legacy", "plain", "other-app"])
@pytest.mark.parametrize("opener", ["create", "open_writable"])
def test_foreign_databases_are_never_written(tmp_path, kind, opener):
    p = _foreign(tmp_path, kind)
    before = hashlib.sha256(p.read_bytes()).hexdigest()
    with pytest.raises(NotOurStoreError, match="it is not a rankscope store") as exc:
        getattr(Store, opener)(p)
    assert str(p) in str(exc.value) and "never writes to stores it did not create" in str(exc.value)
    if kind in ("modern", "legacy"):
        assert "looks like a context-mode content store" in str(exc.value)
    if kind == "other-app":
        assert "application_id 0x000004d2" in str(exc.value)
    assert hashlib.sha256(p.read_bytes()).hexdigest() == before
    assert sorted(x.name for x in tmp_path.iterdir()) == [p.name]  # no -wal, -shm or -journal


# ─── a damaged file ──────────────────────────────────────────────────────


def test_damaged_store_raises_corrupt_store_error(damaged_db):
    """Every read of a store with damaged pages raises CorruptStoreError
    (a StoreError naming the path and SQLite's words), never a bare
    SQLite error (engine.store.sql.Error)."""
    calls = {
        "search": lambda s: search(s, SearchParams("quorum")),
        "search-sessions": lambda s: search(s, SearchParams("quorum", sessions=("sess-docs",))),
        "session_counts": lambda s: s.session_counts(),
        "stats": lambda s: s.stats(),
        "iter_chunks": lambda s: s.iter_chunks(),
        "diagnose": lambda s: diagnose(s, integrity=False),
        "why_not": lambda s: why_not(s, SearchParams("quorum"), rowid=3),
    }
    for name, call in calls.items():
        with Store.open_readonly(damaged_db) as s:
            with pytest.raises(CorruptStoreError) as exc:
                call(s)
        msg = str(exc.value)
        assert msg.startswith(f"{damaged_db} is damaged: SQLite says 'database disk image is malformed'"), name
        assert (
            f"rankscope doctor --db {damaged_db}" in msg and f"sqlite3 {damaged_db} 'PRAGMA integrity_check'" in msg
        ), name
        assert isinstance(exc.value.__cause__, sql.Error), name


def test_fts_query_errors_are_still_recorded_on_the_run(store):
    from engine.pipeline.stages.retrieve import Request, retrieve

    store.index_text("a.md", "# A\nalpha", "markdown")
    run = retrieve(store.conn, store.schema, Request("porter", "alpha", 10))
    assert run.error is None and run.hits
    from engine.pipeline.stages.retrieve import is_query_error

    try:
        store.conn.execute("SELECT * FROM chunks WHERE chunks MATCH 'alpha AND'").fetchall()
    except sql.Error as exc:
        assert is_query_error(exc)
    else:  # pragma: no cover
        raise AssertionError("FTS5 accepted a dangling AND")


def test_damaged_schema_page_is_a_corrupt_store_error_at_open(sample_db, tmp_path):
    p = tmp_path / "p1.db"
    shutil.copy2(sample_db, p)
    with open(p, "r+b") as fh:
        fh.seek(100)  # just past the 100-byte header: the schema table's page
        fh.write(b"\xaa" * 3000)
    with pytest.raises(CorruptStoreError, match="is damaged: SQLite says 'database disk image is malformed'") as exc:
        Store.open_readonly(p)
    assert isinstance(exc.value, NotADatabaseError)  # what opening raised before


@pytest.mark.parametrize("main", ["missing", "empty"])
def test_create_refuses_a_stray_wal(tmp_path, main):
    p = tmp_path / "s.db"
    if main == "empty":
        p.write_bytes(b"")
    (tmp_path / "s.db-wal").write_bytes(b"\x37\x7f\x06\x82" + b"\x00" * 60)
    with pytest.raises(StoreError, match="s.db-wal file of some other database is beside it"):
        Store.create(p)
    assert sorted(x.name for x in tmp_path.iterdir()) == (["s.db", "s.db-wal"] if main == "empty" else ["s.db-wal"])


def test_close_waits_for_a_thread_using_the_shared_connection():
    """A search holds ``store.lock`` on the shared connection (an in-memory
    store's only one): ``close`` from another thread waits for it instead of
    closing the connection under it (that crashed the browser's tests with
    SIGSEGV when the app closed its store at exit during a search)."""
    import threading

    store = Store.create(":memory:")
    store.index_text("a.md", "# A\nalpha\n")
    inside, leave = threading.Event(), threading.Event()

    def searching():
        with store.using() as conn:
            inside.set()
            leave.wait(10)
            conn.execute("SELECT COUNT(*) FROM chunks").fetchone()

    worker = threading.Thread(target=searching)
    worker.start()
    assert inside.wait(10)
    closer = threading.Thread(target=store.close)
    closer.start()
    closer.join(0.2)
    assert closer.is_alive()  # still waiting for the search
    leave.set()
    worker.join(10)
    closer.join(10)
    assert not closer.is_alive()
    with pytest.raises(sql.Error):  # the connection is closed
        store.conn.execute("SELECT 1")


def test_a_read_on_the_main_connection_waits_for_the_store_lock():
    """An in-memory store has one connection, and its writers hold the
    store's lock for their whole transaction: a row read without a
    connection of its own (``store.sources()``) from another thread waits
    for the lock instead of reading in the middle of a write."""
    import threading

    from engine import Store

    store = Store.create(":memory:")
    store.index_text("a.md", "# A\n\nalpha\n", "markdown")
    held, release = threading.Event(), threading.Event()

    def writer() -> None:
        with store.lock:
            held.set()
            release.wait(10)

    t = threading.Thread(target=writer)
    t.start()
    assert held.wait(10)
    got: list[object] = []
    reader = threading.Thread(target=lambda: got.append(store.sources()))
    reader.start()
    reader.join(0.3)
    assert reader.is_alive() and not got  # waiting for the writer
    release.set()
    reader.join(10)
    t.join(10)
    assert [s.label for s in got[0]] == ["a.md"]
