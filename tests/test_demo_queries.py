"""docs/demo-queries.json (the README's ten queries) runs as a query file and
gives the README's what-if lab example."""

from __future__ import annotations

import json
from pathlib import Path

from engine import Store, index_corpus
from engine.lab.compare import compare_set

from .engine.test_sample_corpus import DEMO_QUERIES

ROOT = Path(__file__).parents[1]


def test_demo_queries_file_matches_the_demo_queries():
    entries = json.loads((ROOT / "docs" / "demo-queries.json").read_text("utf-8"))
    assert [
        (
            e["id"],
            e["query"],
            tuple(e["sessions"]) if "sessions" in e else None,
            e.get("content_type"),
            e.get("limit", 3),
        )
        for e in entries
    ] == [(q["id"], q["query"], q["sessions"], q["content_type"], q["limit"]) for q in DEMO_QUERIES]


def test_demo_queries_compare_under_rowid_key():
    entries = json.loads((ROOT / "docs" / "demo-queries.json").read_text("utf-8"))
    assert len(entries) == 10 and all(isinstance(e["query"], str) for e in entries)
    store = Store.create(":memory:")
    index_corpus(store, ROOT / "sample_corpus")
    sc = compare_set(store, entries, None, "key=rowid")
    changed = {q.id: q for q in sc.queries if q.changed}
    assert set(changed) == {"key-collision", "trim"}
    assert (sc.totals.worsened, sc.totals.unchanged, sc.totals.only_in_a, sc.totals.only_in_b) == (1, 24, 2, 2)
    assert round(sc.mean_overlap, 2) == 0.93
