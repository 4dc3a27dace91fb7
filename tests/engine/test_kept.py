"""Filtered runs over the rows their filters keep (:mod:`engine.pipeline.stages.kept`).

The kept path must return what the reference's statement returns (FTS5
ranks every match, SQLite joins ``sources`` and tests the filters): same
rows, order, bm25 bits, highlights, for LIKE and exact source filters,
content types, both together, rows whose source row is gone, content
types stored as something other than text, and source ids stored as
integers, integral doubles (context-mode's JavaScript numbers) or text.
"""

from __future__ import annotations

import itertools
from pathlib import Path
import json
import random

import apsw
import pytest

from engine import SearchParams, Store, search, trace_to_dict
from engine.pipeline.stages import kept
from engine.pipeline.stages.retrieve import (
    TABLES,
    Request,
    _headline,
    build_sql,
    like_pattern,
    retrieve,
    source_condition,
)
from engine.store.cache import VersionedLRU

WORDS = ["relay", "quorum", "replica", "config", "install", "cache", "naïve", "café", "lease", "vote"]
LABELS = ["docs/a.md", "docs/b.md", "DOCS/c.md", "100%/d.md", "x_y/e.md", "back\\slash.md", "café/f.md", "notes.md"]
FILTERS = [
    (None, "like", "code"),
    (None, "like", "prose"),
    ("docs", "like", None),
    ("docs", "like", "code"),
    ("DOCS", "like", None),
    ("100%", "like", None),
    ("x_y", "like", None),
    ("x%y", "like", None),
    ("back\\", "like", None),
    ("CAFÉ", "like", None),
    ("café", "like", None),
    ("docs/a.md", "exact", None),
    ("docs/a.md", "exact", "prose"),
    ("docs", "exact", None),
    ("gone.md", "like", None),
]


def _text(rng: random.Random, n: int) -> str:
    parts = []
    for i in range(n):
        line = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12)))
        if rng.random() < 0.4:
            parts.append(f"## {rng.choice(WORDS)} {i}\n\n```sh\n{line}\n```\n")
        else:
            parts.append(f"## {rng.choice(WORDS)} {i}\n\n{line}\n")
    return "\n".join(parts)


@pytest.fixture
def store(tmp_path):
    """A file store of eight sources (labels with LIKE's metacharacters),
    prose and code chunks, one source row deleted (its chunks stay), one
    chunk's content type stored as an integer."""
    s = Store.create(tmp_path / "kept.db")
    rng = random.Random(7)
    for label in [*LABELS, "gone.md"]:
        s.index_text(label, _text(rng, 30), "markdown")
    s.conn.execute("DELETE FROM sources WHERE label = 'gone.md'")
    for table in ("chunks", "chunks_trigram"):
        s.conn.execute(f"UPDATE {table} SET content_type = 5 WHERE rowid = 3")
    yield s
    s.close()


def _force(monkeypatch) -> None:
    monkeypatch.setattr(kept, "MIN_ROWS", 0)
    monkeypatch.setattr(kept, "BUILD_US_PER_ROW", 0.0)


def _rows(run):
    return [(h.rowid, h.bm25.hex(), h.source, h.title, h.content, h.content_type, str(h.marked)) for h in run.hits]


def _reference(store, request):
    """The reference's own statement (:func:`build_sql` ``reference=True``)."""
    sql_text, names = build_sql(
        request.retriever, store.schema, request.source, request.source_match, request.content_type, reference=True
    )
    values = {
        "match": request.match,
        "source": request.source if request.source_match == "exact" else like_pattern(request.source or ""),
        "content_type": request.content_type,
        "limit": request.fts_limit,
    }
    return [int(r[0]) for r in store.conn.execute(sql_text, [values[n] for n in names])]


def test_kept_runs_equal_the_reference(store, monkeypatch):
    _force(monkeypatch)
    cache: VersionedLRU[object] = VersionedLRU(4)
    used = 0
    with store.snapshot(store.conn) as conn:
        assert conn.read_version is not None
        for (source, mode, ctype), query, retriever, limit in itertools.product(
            FILTERS, ["relay", "config cache", "naïve café", "vote lease quorum"], ("porter", "trigram"), (1, 5, 40)
        ):
            params = SearchParams(query, limit=3, source=source, source_match=mode, content_type=ctype)
            request = Request.of(retriever, query, limit, params)
            fast = retrieve(conn, store.schema, request, kept_rows=cache)
            slow = retrieve(conn, store.schema, request)
            assert slow.ranking_fact("kept_rows") is None
            used += fast.ranking_fact("kept_rows") is not None
            assert _rows(fast) == _rows(slow), (source, mode, ctype, query, retriever, limit)
            assert [h.rowid for h in fast.hits] == _reference(store, request)
    assert used == len(FILTERS) * 4 * 2 * 3


def test_kept_counts_what_sql_keeps(store):
    with store.snapshot(store.conn) as conn:
        rows = kept.build(conn, "chunks")
        assert rows is not None
        for source, mode, ctype in FILTERS:
            ids = None
            if source is not None:
                label = source if mode == "exact" else like_pattern(source)
                ids = [r[0] for r in conn.execute(f"SELECT id FROM sources WHERE {source_condition(mode)}", (label,))]
            got = rows.kept(ids, ctype)
            where = ["1"]
            args: list[object] = []
            if ids is not None:
                where.append(f"sources.id IN ({','.join(map(str, ids)) or 'NULL'})")
            if ctype is not None:
                where.append("chunks.content_type = ?")
                args.append(ctype)
            expected = sorted(
                r[0]
                for r in conn.execute(
                    f"SELECT chunks.rowid FROM chunks JOIN sources ON sources.id = chunks.source_id WHERE {' AND '.join(where)}",
                    args,
                )
            )
            assert sorted(json.loads(got.json)) == expected and got.rows == len(expected), (source, mode, ctype)


def test_source_ids_stored_as_doubles_count_and_text_declines(store):
    """Rankscope's indexer, like context-mode, stores ``source_id`` as a
    double; an integer counts the same; a text id makes the table
    unsupported (SQL would convert it), and the run goes the reference's way."""
    with store.snapshot(store.conn) as conn:
        assert conn.execute("SELECT DISTINCT typeof(c2) FROM chunks_content").fetchall() == [("real",)]
        assert kept.build(conn, "chunks") is not None
    store.conn.execute("UPDATE chunks SET source_id = 1 WHERE rowid = 1")
    with store.snapshot(store.conn) as conn:
        assert kept.build(conn, "chunks") is not None
    store.conn.execute("UPDATE chunks SET source_id = '1' WHERE rowid = 2")
    with store.snapshot(store.conn) as conn:
        assert kept.build(conn, "chunks") is None
        cache: VersionedLRU[object] = VersionedLRU(4)
        kept.spend(conn, "chunks", 1e9, cache)
        assert kept.kept_rows(conn, "chunks", 10**6, cache) is None  # built: unsupported, kept as such
        assert cache.get(conn.read_version, "chunks") == kept.UNSUPPORTED
        kept.spend(conn, "chunks", 1.0, cache)
        assert cache.get(conn.read_version, "chunks") == kept.UNSUPPORTED


def test_external_content_tables_are_not_grouped(tmp_path):
    s = Store.create(tmp_path / "plain.db")
    try:
        s.conn.execute("CREATE TABLE docs(id INTEGER PRIMARY KEY, title, content, source_id, content_type)")
        s.conn.execute(
            "CREATE VIRTUAL TABLE ext USING fts5(title, content, source_id UNINDEXED, content_type UNINDEXED, content='docs')"
        )
        s.conn.execute("CREATE VIRTUAL TABLE bare USING fts5(title, content)")
        with s.snapshot(s.conn) as conn:
            assert kept.content_columns(conn, "ext") is None
            assert kept.content_columns(conn, "bare") is None
            assert kept.content_columns(conn, "chunks") == (2, 3)
    finally:
        s.close()


def test_built_once_the_reference_way_has_cost_what_building_costs(store, monkeypatch):
    """The renting rule: below MIN_ROWS never; else once the filtered runs
    of a data version have spent n_rows x BUILD_US_PER_ROW; a write starts over."""
    monkeypatch.setattr(kept, "MIN_ROWS", 100)
    monkeypatch.setattr(kept, "BUILD_US_PER_ROW", 10.0)  # 1 ms for 100 rows
    cache: VersionedLRU[object] = VersionedLRU(4)
    with store.snapshot(store.conn) as conn:
        kept.spend(conn, "chunks", 5.0, cache)
        assert kept.kept_rows(conn, "chunks", 99, cache) is None  # too small, whatever was spent
        assert kept.kept_rows(conn, "chunks", 1000, cache) is None  # 5 ms spent of 10
        kept.spend(conn, "chunks", 4.9, cache)
        assert kept.kept_rows(conn, "chunks", 1000, cache) is None  # 9.9 of 10
        assert kept.kept_rows(conn, "chunks_trigram", 100, cache) is None  # per table
        kept.spend(conn, "chunks", 0.1, cache)
        built = kept.kept_rows(conn, "chunks", 1000, cache)
        assert isinstance(built, kept.KeptRows)
        assert kept.kept_rows(conn, "chunks", 1000, cache) is built  # held for the data version
        kept.spend(conn, "chunks", 99.0, cache)
        assert cache.get(conn.read_version, "chunks") is built  # spending after the build changes nothing
    store.index_text("new.md", "## relay\n\nrelay config\n", "markdown")
    with store.snapshot(store.conn) as conn:
        assert kept.kept_rows(conn, "chunks", 1000, cache) is None  # a write: spent again from nothing
    assert not store.conn.in_transaction
    kept.spend(store.conn, "chunks", 1e9, cache)
    assert kept.kept_rows(store.conn, "chunks", 1000, cache) is None  # no read transaction noted


def test_filtered_searches_build_after_spending_the_price(tmp_path, monkeypatch):
    """Through search(): the first filtered searches go the reference's way and
    note their time; once it reaches the price the next one ranks over kept rows."""
    s = Store.create(tmp_path / "rent.db")
    try:
        rng = random.Random(3)
        for label in LABELS:
            s.index_text(label, _text(rng, 30), "markdown")
        monkeypatch.setattr(kept, "MIN_ROWS", 0)
        price = s.stats().chunks * kept.BUILD_US_PER_ROW / 1000.0
        before: dict[str, float] = {}
        for i in range(200):
            trace = search(s, SearchParams(f"relay q{i:04d}", limit=3, content_type="code"))
            used = {TABLES[r.name] for r in (trace.first.porter, trace.first.trigram) if r.ranking_fact("kept_rows")}
            for table in TABLES.values():  # built exactly when that table's runs had spent the price
                assert (table in used) == (before.get(table, 0.0) >= price), (i, table, before, price)
            if used:
                break
            held = {t: s.kept_rows.get(s.data_version(), t) for t in TABLES.values()}
            before = {t: v for t, v in held.items() if isinstance(v, float)}
        else:
            raise AssertionError("200 filtered searches never built the kept rows")
        assert i >= 1  # the first went the reference's way
    finally:
        s.close()


def test_search_after_a_write_sees_the_new_rows(store, monkeypatch):
    """The rows are per data version: a chunk indexed after they were built is found."""
    _force(monkeypatch)
    params = SearchParams("zephyr", limit=3, source="docs")
    assert not search(store, params).final
    store.index_text("docs/z.md", "## zephyr\n\nzephyr winds\n", "markdown")
    trace = search(store, params)
    assert [r.candidate.source for r in trace.final] == ["docs/z.md"]
    assert any(r.ranking_fact("kept_rows") is not None for r in (trace.first.porter, trace.first.trigram))


def test_headline_names_the_kept_rows(store, monkeypatch):
    _force(monkeypatch)
    params = SearchParams("relay", limit=3, content_type="code")
    cache: VersionedLRU[object] = VersionedLRU(4)
    with store.snapshot(store.conn) as conn:
        run = retrieve(conn, store.schema, Request.of("porter", "relay", 10, params), kept_rows=cache)
    n = run.ranking_fact("kept_rows")
    assert isinstance(n, int) and n > 0
    assert f"FTS5 ranked only the {n:,} rows the filters keep" in _headline(run, params)


def test_json_trace_says_how_many_rows_were_kept(store, monkeypatch):
    _force(monkeypatch)
    d = trace_to_dict(search(store, SearchParams("relay", limit=3, source="docs", content_type="code")))
    for name in ("porter", "trigram"):
        facts = d["ranking"][name]
        assert facts["by"] == "fts5" and isinstance(facts["kept_rows"], int) and facts["kept_rows"] > 0


def _utf16_copy(src: Path, dst: Path) -> None:
    """``src`` (a store) copied table by table into a new UTF-16le database at
    ``dst`` (SQLite attaches no database of another encoding: rows go through Python)."""
    old = apsw.Connection(str(src), flags=apsw.SQLITE_OPEN_READONLY)
    c = apsw.Connection(str(dst))
    try:
        c.execute("PRAGMA encoding = 'UTF-16le'")
        c.execute(f"PRAGMA application_id = {old.execute('PRAGMA application_id').fetchone()[0]}")
        schema = old.execute("SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL").fetchall()
        virtual = [name for kind, name, text in schema if text.upper().startswith("CREATE VIRTUAL TABLE")]
        shadows = {f"{v}_{suffix}" for v in virtual for suffix in ("data", "idx", "content", "docsize", "config")}
        tables = [(n, t) for k, n, t in schema if k == "table" and n not in shadows and not n.startswith("sqlite_")]
        with c:
            for _name, text in tables:
                c.execute(text)
            for name, _ in tables:
                info = old.execute(f'PRAGMA table_xinfo("{name}")').fetchall()
                columns = ", ".join(["rowid", *(f'"{r[1]}"' for r in info if r[6] == 0)])  # not hidden
                rows = old.execute(f'SELECT {columns} FROM "{name}"').fetchall()
                marks = ", ".join("?" * len(columns.split(", ")))
                c.executemany(f'INSERT INTO "{name}"({columns}) VALUES ({marks})', rows)
            for kind, _name, text in schema:
                if kind == "index":
                    c.execute(text)
    finally:
        c.close()
        old.close()


def _runs_equal_the_reference_way(store: Store, params: SearchParams, *, used: bool) -> None:
    with store.snapshot(store.conn) as conn:
        for retriever in ("porter", "trigram"):
            request = Request.of(retriever, params.query, 10, params)
            cache: VersionedLRU[object] = VersionedLRU(4)
            fast = retrieve(conn, store.schema, request, kept_rows=cache)
            slow = retrieve(conn, store.schema, request)
            assert _rows(fast) == _rows(slow) and slow.hits, (retriever, params)
            assert (fast.ranking_fact("kept_rows") is not None) == used


def test_a_utf16_store_keeps_what_sql_keeps(store, tmp_path, monkeypatch):
    """SQLite compares text in the database's encoding: a content type read
    as UTF-16 bytes must be compared with the filter's UTF-16 bytes (it was
    compared with UTF-8 ones, so a content-type filter kept nothing)."""
    _force(monkeypatch)
    path = tmp_path / "utf16.db"
    store.close()
    _utf16_copy(tmp_path / "kept.db", path)
    s = Store.open_readonly(path)
    try:
        assert s.conn.execute("PRAGMA encoding").fetchone()[0] == "UTF-16le"
        for ctype in ("code", "prose"):
            _runs_equal_the_reference_way(s, SearchParams("relay", limit=3, content_type=ctype), used=True)
        _runs_equal_the_reference_way(s, SearchParams("café", limit=3, source="café", content_type="code"), used=True)
    finally:
        s.close()


def test_a_table_that_cannot_be_read_fails_its_run_not_the_search(store, monkeypatch):
    """A missing shadow table is the retriever's error, as without kept rows
    (the kept path read it first and failed the whole search)."""
    _force(monkeypatch)
    store.conn.execute("DROP TABLE chunks_trigram_data")
    trace = search(store, SearchParams("relay", limit=3, content_type="prose"))
    assert trace.first.trigram.error and not trace.first.porter.error
    assert trace.final


@pytest.mark.parametrize(
    "change",
    [
        "INSERT INTO sources2 VALUES('abc','zz.md',0,0,'',NULL,NULL)",  # an id that is not an integer
        "INSERT INTO sources2 SELECT 1, 'other/dup.md', 0, 0, '', NULL, NULL",  # an id twice: the join pairs twice
    ],
    ids=["text-id", "repeated-id"],
)
def test_a_foreign_sources_table_goes_the_reference_way(store, monkeypatch, change):
    _force(monkeypatch)
    c = store.conn
    c.execute(
        "CREATE TABLE sources2(id, label TEXT NOT NULL, chunk_count INTEGER, code_chunk_count INTEGER, "
        "indexed_at TEXT, file_path TEXT, content_hash TEXT)"
    )
    c.execute(
        "INSERT INTO sources2 SELECT id, label, chunk_count, code_chunk_count, indexed_at, file_path, content_hash FROM sources"
    )
    c.execute(change)
    c.execute("DROP TABLE sources")
    c.execute("ALTER TABLE sources2 RENAME TO sources")
    with store.snapshot(c) as conn:
        assert kept.build(conn, "chunks") is None
    for params in (
        SearchParams("relay", limit=3, content_type="code"),
        SearchParams("relay", limit=3, source="docs"),
    ):
        _runs_equal_the_reference_way(store, params, used=False)
