"""Real context-mode stores (``tests/golden/fixtures``, vendored), opened read-only in place.

Each store written by context-mode 1.0.169 (8 FTS columns, session
attribution) and 1.0.22 (4 columns, no session column) must: open read-only
without a single byte changing, report its schema and counts, list its
sources and chunks exactly, and answer every query in ``expected.json`` with
the same layer and final list (source, title, content type, rank exactly,
session id, SHA-256 of the content).
"""

from __future__ import annotations

import hashlib
import json
import os
from functools import lru_cache

import pytest

from engine import SearchParams, Store, search
from engine.store.discovery import count_mismatches, read_store_info

from ..conftest import FIXTURES
from ..helpers import case_params

EXPECTED = FIXTURES / "expected.json"


@lru_cache(maxsize=None)
def _expected() -> dict:
    return json.loads(EXPECTED.read_text("utf-8"))


def _stores() -> list[str]:
    return sorted(_expected()["stores"]) if EXPECTED.is_file() else []


def _sha256(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _cases():
    for name in _stores():
        store = _expected()["stores"][name]
        for case in store["cases"] + store.get("cases_allow_set", []):
            yield pytest.param(name, case, id=f"{name}/{case['id']}")


@pytest.fixture
def untouched():
    """Asserts after the test that no fixture file changed and no file
    (``-wal``, ``-shm``, journal) appeared next to them."""
    before = sorted(os.listdir(FIXTURES))
    yield
    assert sorted(os.listdir(FIXTURES)) == before
    for name in _stores():
        assert _sha256(FIXTURES / name) == _expected()["stores"][name]["sha256"], name


def test_fixtures_present():
    assert set(_stores()) == {"context-mode-1.0.169.db", "context-mode-1.0.22.db"}
    for name in _stores():
        assert _sha256(FIXTURES / name) == _expected()["stores"][name]["sha256"]
    assert sum(1 for _ in _cases()) == 30


@pytest.mark.parametrize(("name", "case"), list(_cases()))
def test_case(name, case, untouched):
    store = Store.open_readonly(FIXTURES / name)
    try:
        trace = search(store, case_params(case))
    finally:
        store.close()
    assert trace.layer == case["layer"]
    got = [
        {
            "source": f.candidate.source,
            "title": f.candidate.title,
            "content_type": f.candidate.content_type,
            "rank": f.rank,
            "match_layer": f.layer,
            "session_id": f.candidate.session_id,
            "content_sha256": hashlib.sha256(f.candidate.content.encode("utf-8")).hexdigest(),
        }
        for f in trace.final
    ]
    assert got == case["final"]  # rank compared exactly (== on floats)
    assert trace.refresh.refreshed is False  # read-only: never re-indexed


@pytest.mark.parametrize("name", _stores())
def test_schema_and_counts(name, untouched):
    exp = _expected()["stores"][name]
    store = Store.open_readonly(FIXTURES / name)
    try:
        cols = [r[1] for r in store.conn.execute("SELECT * FROM pragma_table_xinfo('chunks')")]
        tri = [r[1] for r in store.conn.execute("SELECT * FROM pragma_table_xinfo('chunks_trigram')")]
        assert cols == exp["pragma_table_xinfo_chunks"]
        assert tri == exp["pragma_table_xinfo_chunks_trigram"]
        modern = name.endswith("1.0.169.db")
        assert store.schema.fts_columns == (8 if modern else 4)
        assert store.schema.has_session is modern
        assert store.schema.has_file_columns is modern
        assert store.schema.has_vocabulary is True
        assert store.schema.generation == ("8-column (session attribution)" if modern else "4-column (legacy)")

        counts = exp["counts"]
        stats = store.stats()
        assert stats.sources == counts["sources"]
        assert stats.chunks == counts["chunks"] == counts["chunks_trigram"]
        assert stats.code_chunks == counts["code_chunks"]
        assert stats.vocabulary == counts["vocabulary"]
        assert dict(store.session_counts()) == counts["session_ids"]
        assert count_mismatches(store) == []

        sources = store.sources()
        keys = ("id", "label", "chunk_count", "code_chunk_count", "indexed_at")
        assert [{k: getattr(s, k) for k in keys} for s in sources] == [{k: s[k] for k in keys} for s in exp["sources"]]
        if modern:
            assert [(s.file_path, s.content_hash) for s in sources] == [
                (s["file_path"], s["content_hash"]) for s in exp["sources"]
            ]
        else:
            assert all(s.file_path is None and s.content_hash is None for s in sources)

        chunks = [
            {
                "rowid": c.rowid,
                "source": c.source,
                "title": c.title,
                "content_type": c.content_type,
                "session_id": c.session_id,
                "bytes": len(c.content.encode("utf-8")),
                "sha256": hashlib.sha256(c.content.encode("utf-8")).hexdigest(),
            }
            for c in store.iter_chunks()
        ]
        assert chunks == exp["chunks"]
        trigram_rowids = [r[0] for r in store.conn.execute("SELECT rowid FROM chunks_trigram ORDER BY rowid")]
        assert trigram_rowids == [c["rowid"] for c in exp["chunks"]]
    finally:
        store.close()


@pytest.mark.parametrize("name", _stores())
def test_header_says_wal_and_still_nothing_is_written(name, untouched):
    exp = _expected()["stores"][name]
    header = (FIXTURES / name).read_bytes()[:100]
    assert header[18] == header[19] == 2  # WAL: a plain mode=ro open would create -wal/-shm
    assert int.from_bytes(header[16:18], "big") == exp["sqlite"]["page_size"]
    info = read_store_info(FIXTURES / name)
    assert info.error is None
    assert (info.sources, info.chunks, info.code_chunks) == (
        exp["counts"]["sources"],
        exp["counts"]["chunks"],
        exp["counts"]["code_chunks"],
    )
    assert info.size_bytes == exp["bytes"]
    assert info.wal_bytes == 0 and not info.live


def test_stale_check_on_a_real_store_never_reads_missing_files(untouched):
    """1.0.169 records build-time file paths that do not exist here: the
    stale check skips them (as the reference does) and reports nothing."""
    store = Store.open_readonly(FIXTURES / "context-mode-1.0.169.db")
    try:
        trace = search(store, SearchParams("journal"))
    finally:
        store.close()
    assert trace.refresh.checked == 9  # the markdown sources
    if not any(
        os.path.exists(s["file_path"])
        for s in _expected()["stores"]["context-mode-1.0.169.db"]["sources"]
        if s["file_path"]
    ):
        assert trace.refresh.stale == ()
    assert trace.refresh.refreshed is False
