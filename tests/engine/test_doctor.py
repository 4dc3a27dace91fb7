"""Store diagnostics: each finding on a store built to show it."""

from __future__ import annotations

import json
import os
import time

import pytest

from engine import Store, index_paths
from engine.lab.doctor import diagnose
from engine.store.indexing import vocabulary_words

from ..conftest import FIXTURES


def _raw_chunk(store, title, content, source_id, content_type="prose", trigram=True):
    tables = ("chunks", "chunks_trigram") if trigram else ("chunks",)
    for t in tables:
        store.conn.execute(
            f"INSERT INTO {t} (title, content, source_id, content_type, session_id) VALUES (?, ?, ?, ?, '')",
            (title, content, source_id, content_type),
        )


def test_clean_store(store):
    text = "# Alpha\nsome words\n# Beta\n```\ncode here\n```\n"
    store.index_text("a.md", text, "markdown")
    r = diagnose(store)
    assert r.ok and r.findings == []
    # "some" and "here" are reference stopwords.
    assert vocabulary_words(text) == ["alpha", "words", "beta", "code"]
    assert (r.sources, r.chunks, r.trigram_rows, r.vocabulary_size) == (1, 2, 2, 4)
    assert r.schema.startswith("8-column") and r.path is None


def test_fusion_key_collisions(store):
    store.index_text("guide.md", "# Guide\n## Example\none\n## Example\ntwo\n## Example\nthree\n", "markdown")
    store.index_text("other.md", "# Notes\n## Tip\nx\n## Tip\ny\n", "markdown")
    r = diagnose(store)
    assert [(c.key, c.count, c.rowids) for c in r.collisions] == [
        ("guide.md::Guide > Example", 3, (2, 3, 4)),
        ("other.md::Notes > Tip", 2, (6, 7)),
    ]
    assert r.hidden_by_collisions == 3
    assert r.findings == [
        "2 fusion keys shared by several chunks (3 chunks can be merged away by source::title fusion)"
    ]


def test_oversized_chunks_are_measured_in_utf8_bytes(store):
    # One paragraph over the cap stays whole (reference chunker); 2100 "é"
    # are 2100 characters but 4200 bytes.
    store.index_text("big.md", "# Big\n" + "é" * 2100 + "\n", "markdown")
    store.index_text("small.md", "# Small\n" + "e" * 4000 + "\n", "markdown")
    r = diagnose(store)
    [o] = r.oversized
    assert (o.source, o.title, o.bytes) == ("big.md", "Big", len(("# Big\n" + "é" * 2100).encode("utf-8")))
    assert o.bytes > 4096 and r.max_chunk_bytes == 4096
    assert "1 chunk over 4096 bytes" in r.findings
    assert diagnose(store, max_chunk_bytes=10_000).oversized == ()


def test_untitled_and_empty_titles(store):
    store.index_text("notitle.md", "just text, no heading\n", "markdown")
    store.index_text("titled.md", "# Fine\ntext\n", "markdown")
    _raw_chunk(store, "", "empty title", 2)
    _raw_chunk(store, "Untitled (2)", "a split part", 2)
    r = diagnose(store)
    assert [(u.source, u.title) for u in r.untitled] == [
        ("notitle.md", "Untitled"),
        ("titled.md", ""),
        ("titled.md", "Untitled (2)"),
    ]
    assert "3 chunks with an empty or Untitled title" in r.findings


def _miscounted(store, a_md: str, damage: str):
    """Index ``a.md`` (text ``a_md``) and ``b.md``, run the SQL ``damage``,
    diagnose: ``(report, [(label, what, recorded, actual)] of its count mismatches)``."""
    store.index_text("a.md", a_md, "markdown")
    store.index_text("b.md", "# C\ntext\n", "markdown")
    store.conn.execute(damage)
    r = diagnose(store)
    return r, [(m.label, m.what, m.recorded, m.actual) for m in r.count_mismatches]


def test_source_counts_that_disagree(store):
    r, mismatches = _miscounted(
        store,
        "# A\ntext\n# B\n```\ncode\n```\n",
        "UPDATE sources SET chunk_count = 5, code_chunk_count = 0 WHERE label = 'a.md'",
    )
    assert mismatches == [
        ("a.md", "chunk_count", 5, 2),
        ("a.md", "code_chunk_count", 0, 1),
    ]
    assert r.miscounted_sources == 1
    assert "1 source whose recorded chunk counts disagree with their chunks" in r.findings
    assert r.to_dict()["count_mismatches"][0] == {
        "source_id": 1,
        "label": "a.md",
        "what": "chunk_count",
        "recorded": 5,
        "actual": 2,
    }


def test_trigram_rows_of_a_source_that_disagree(store):
    # Totals agree, but one trigram row names the wrong source.
    r, mismatches = _miscounted(
        store, "# A\ntext\n# B\nmore\n", "UPDATE chunks_trigram SET source_id = 2 WHERE rowid = 1"
    )
    assert mismatches == [
        ("a.md", "trigram rows", 2, 1),
        ("b.md", "trigram rows", 1, 2),
    ]
    assert r.findings == ["2 sources with a different number of rows in chunks_trigram than in chunks"]


def test_orphan_chunks_and_trigram_row_count(store):
    store.index_text("a.md", "# A\ntext\n", "markdown")
    _raw_chunk(store, "Lost", "no source row", 99, trigram=False)
    r = diagnose(store)
    assert r.orphan_chunks == 1
    assert [(m.source_id, m.what, m.actual) for m in r.count_mismatches] == [
        (99, "orphan chunks", 1),
        (None, "chunks_trigram total", 1),
    ]
    assert (r.chunks, r.trigram_rows) == (2, 1)
    assert "1 chunk without a source row" in r.findings
    assert "chunks_trigram has 1 rows but chunks has 2" in r.findings


def test_missing_vocabulary(tmp_path):
    db = tmp_path / "s.db"
    with Store.create(db) as s:
        s.index_text("a.md", "# A\ntext\n", "markdown")
        s.conn.execute("DROP TABLE vocabulary")
    with Store.open_readonly(db) as s:
        r = diagnose(s)
    assert r.vocabulary_size is None
    assert "no vocabulary table: the fuzzy typo fallback is unavailable" in r.findings


def test_stale_sources_are_reported_not_refreshed(tmp_path):
    doc = tmp_path / "doc.md"
    doc.write_text("# Doc\nold text\n", "utf-8")
    db = tmp_path / "s.db"
    with Store.create(db) as s:
        index_paths(s, [doc])
    doc.write_text("# Doc\nnew text\n", "utf-8")
    future = time.time() + 120
    os.utime(doc, (future, future))
    with Store.open_writable(db) as s:
        r = diagnose(s)
        assert [(x.label, x.file_path) for x in r.stale] == [("doc.md", str(doc.resolve()))]
        assert "1 stale file-backed source (a search would re-index them)" in r.findings
        assert s.iter_chunks()[0].content == "# Doc\nold text"  # nothing was refreshed


def test_report_is_json(store):
    store.index_text("guide.md", "# Guide\n## Example\none\n## Example\ntwo\n", "markdown")
    d = json.loads(json.dumps(diagnose(store).to_dict()))
    assert d["collisions"] == [{"source": "guide.md", "title": "Guide > Example", "count": 2, "rowids": [2, 3]}]
    assert d["ok"] is False and d["vocabulary_size"] == store.stats().vocabulary and d["findings"]


@pytest.mark.parametrize(
    "name, schema", [("context-mode-1.0.169.db", "8-column"), ("context-mode-1.0.22.db", "4-column")]
)
def test_real_context_mode_stores(name, schema):
    with Store.open_readonly(FIXTURES / name) as s:  # vendored: tests/golden/fixtures
        r = diagnose(s)
    assert r.schema.startswith(schema)
    assert r.chunks == r.trigram_rows > 100 and r.sources == 11
    assert r.count_mismatches == () and r.orphan_chunks == 0
    assert r.collisions and all(c.count >= 2 for c in r.collisions)


def test_a_truncated_store_says_so_not_sqlites_success_string(tmp_path, capsys):
    """A store cut to 50 KB: the private copy stops at the first missing
    page. The backup step reports the destination's message, SQLite's
    "not an error"; the doctor printed "private copy failed: not an error"."""
    from engine.lab.doctor import check_integrity, truncation
    from tui.cli import main

    full = tmp_path / "full.db"
    with Store.create(full) as s:
        for i in range(300):
            s.index_text(f"f{i}.md", f"# Title {i}\n\n" + f"text about topic {i} and zebra crossings " * 40, "markdown")
    cut = tmp_path / "trunc.db"
    cut.write_bytes(full.read_bytes()[: 50 * 1024])
    assert truncation(str(full)) is None
    (check,) = check_integrity(str(cut))
    assert check.check == "copy" and check.damage
    assert check.problems[0].startswith(
        "the copy stopped early: the file is truncated: 51,200 bytes where its header says "
    )
    assert "not an error" not in " ".join(check.problems)
    with pytest.raises(SystemExit) as exc:
        main(["doctor", "--db", str(cut), "--json"])
    assert exc.value.code == 1
    report = json.loads(capsys.readouterr().out)
    (copy,) = report["integrity"]
    assert copy["problems"][0].startswith("the copy stopped early: the file is truncated")
    assert copy["problems"][1] == "database disk image is malformed"
