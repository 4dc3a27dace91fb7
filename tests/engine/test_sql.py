"""The pinned SQLite (engine/store/sql.py): its version, FTS5's trigram tokenizer,
and the sqlite3-like surface the engine relies on."""

from __future__ import annotations

import pytest

from engine import SearchParams, Store, search
from engine.store import sql
from engine.store.errors import CorruptStoreError, StoreError, sqlite_store_error


def test_runs_on_the_pinned_sqlite_with_fts5_trigram():
    assert sql.SQLITE_VERSION_INFO[:2] == (3, 54), sql.SQLITE_VERSION
    assert sql.APSW_VERSION.startswith("3.54.")
    conn = sql.connect(":memory:")
    try:
        for name in ("trigram", "porter", "unicode61"):
            conn.execute(f"CREATE VIRTUAL TABLE t_{name} USING fts5(x, tokenize='{name}')")
        with pytest.raises(sql.Error, match="no such tokenizer"):
            conn.execute("CREATE VIRTUAL TABLE t_none USING fts5(x, tokenize='nosuchtokenizer')")
        conn.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize='trigram')")
        conn.execute("INSERT INTO t VALUES ('rankscope')")
        assert conn.execute("SELECT x FROM t WHERE t MATCH 'nksc'").fetchall() == [("rankscope",)]
    finally:
        conn.close()


def test_memory_statistics_are_off_as_in_better_sqlite3():
    """engine.store.sql turns SQLite's memory statistics off on import (their
    process-wide mutex made the two retriever threads queue); a fresh
    process that opens a store and searches shows SQLite counting nothing."""
    import subprocess
    import sys

    code = (
        "import apsw\n"
        "from engine.store import sql\n"
        "c = sql.connect(':memory:')\n"
        "c.execute(\"CREATE VIRTUAL TABLE t USING fts5(x, tokenize='trigram')\")\n"
        "c.execute(\"INSERT INTO t VALUES ('rankscope')\")\n"
        "c.execute(\"SELECT * FROM t WHERE t MATCH 'scope'\").fetchall()\n"
        "print(sql.MEMORY_STATISTICS_OFF, apsw.memory_used())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["True", "0"]
    assert sql.MEMORY_STATISTICS_OFF  # and in this test process


def test_every_store_connection_is_the_pinned_one(tmp_path):
    s = Store.create(tmp_path / "s.db")
    s.index_text("a.md", "# A\nalpha", "markdown")
    other = s.connect()
    for conn in (s.conn, other):
        assert isinstance(conn, sql.Connection)
        assert conn.execute("SELECT sqlite_version()").fetchone()[0] == sql.SQLITE_VERSION
    other.close()
    s.close()
    with Store.open_readonly(tmp_path / "s.db") as ro:
        assert ro.conn.uri_flags == "mode=ro&immutable=1"
        assert ro.conn.execute("SELECT sqlite_version()").fetchone()[0] == sql.SQLITE_VERSION


def test_transactions_changes_and_rowids_read_like_sqlite3():
    conn = sql.connect(":memory:")
    conn.executescript("CREATE TABLE a (x); CREATE TABLE b (y);")
    assert not conn.in_transaction
    conn.execute("BEGIN")
    assert conn.in_transaction
    conn.execute("INSERT INTO a VALUES (1)")
    assert conn.last_insert_rowid() == 1
    conn.executemany("INSERT INTO b VALUES (?)", ((i,) for i in range(3)))
    conn.execute("COMMIT")
    assert not conn.in_transaction
    assert conn.total_changes() == 4
    assert conn.execute("SELECT COUNT(*) FROM b").fetchone() == (3,)
    assert conn.execute("SELECT y FROM b ORDER BY y").fetchall() == [(0,), (1,), (2,)]
    assert conn.execute("SELECT y FROM b WHERE 0").fetchone() is None


def test_invalid_utf8_is_read_as_node_reads_it():
    """A lone surrogate stored by the reference (bytes ED A0 BD) comes back as
    U+FFFD per invalid byte through sql.text/sql.decode, as V8 reads it."""
    conn = sql.connect(":memory:")
    conn.execute("CREATE TABLE t (x TEXT)")
    conn.execute("INSERT INTO t VALUES (CAST(? AS TEXT))", (b"ab\xed\xa0\xbdcd",))
    (raw,) = conn.execute(f"SELECT {sql.text('x')} FROM t").fetchone()
    assert sql.decode(raw) == b"ab\xed\xa0\xbdcd".decode("utf-8", "replace")
    assert sql.decode(None) is None and sql.decode("ok") == "ok"
    with pytest.raises(UnicodeDecodeError):  # read without sql.text: strict, which the engine never does
        conn.execute("SELECT x FROM t").fetchall()


def test_a_stored_lone_surrogate_reaches_every_reader(tmp_path):
    s = Store.create(tmp_path / "s.db")
    s.index_text("cut.md", "# Cut \U0001f600\nzebra text", "markdown")
    s.conn.execute("UPDATE chunks SET title = CAST(? AS TEXT)", (b"Cut \xed\xa0\xbd",))
    expected = b"Cut \xed\xa0\xbd".decode("utf-8", "replace")
    assert s.iter_chunks()[0].title == expected
    assert s.chunk(1).title == expected
    trace = search(s, SearchParams("zebra"))
    assert trace.final[0].candidate.title == expected
    s.close()


def test_sqlite_errors_map_to_store_errors():
    import apsw

    err = sqlite_store_error(apsw.CorruptError("database disk image is malformed"), "/x.db")
    assert isinstance(err, CorruptStoreError) and "PRAGMA integrity_check" in str(err)
    assert sql.primary_code(apsw.CorruptError("x")) is None or sql.primary_code(apsw.CorruptError("x")) == 11
    err = sqlite_store_error(UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte"), "/x.db")
    assert type(err) is StoreError and "not valid UTF-8" in str(err)
    assert sql.primary_code(ValueError("no")) is None
