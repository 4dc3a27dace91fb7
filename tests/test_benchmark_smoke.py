"""Smoke test of benchmarks/search.py at a tiny size: behaviour only, never timing."""

from __future__ import annotations

import io
import re
import random

from benchmarks.search import CorpusGenerator, Vocabulary, build_queries, run


def test_benchmark_runs_and_reports_every_section(tmp_path):
    out = io.StringIO()
    results = run(sizes=[300], queries_per_size=24, out=out, workdir=str(tmp_path))
    text = out.getvalue()

    for section in (
        "== size 300 chunks",
        "corpus",
        "index",
        "throughput",
        "MB/s",
        "chunks/s",
        "query latency",
        "per stage",
        "by category",
        "layers",
        "db size",
        "peak RSS",
        "phases",
        "summary",
        "total elapsed",
    ):
        assert section in text, f"missing {section!r} in report"
    for stage in ("refresh", "porter", "trigram", "fusion", "filter"):
        assert f"\n  {stage} " in text
    assert re.search(r"\n  open +[\d.,]+ ms Store\.open_readonly \+ [\d.,]+ ms reading the browser's facts", text)

    (res,) = results
    assert 240 <= res.chunks <= 360, res.chunks  # within ±20% of the target
    assert len(res.latencies_ms) == 24
    assert sum(res.layers.values()) == 24
    assert set(res.layers) <= {"rrf", "rrf-fuzzy", "none"}
    assert res.layers["rrf"] > 0
    assert res.db_bytes > 0
    assert list(tmp_path.iterdir()) == []  # the temporary store is removed


def test_generator_and_queries_are_deterministic():
    def corpus(seed):
        rng = random.Random(seed)
        vocab = Vocabulary(rng)
        return vocab, [(f.label, f.session_id, f.text) for f in CorpusGenerator(vocab, rng).files(200)]

    v1, c1 = corpus(5)
    v2, c2 = corpus(5)
    assert c1 == c2
    assert sum(1 for _ in c1) > 0
    q1 = [(q.category, q.params) for q in build_queries(v1, 50, 5)]
    q2 = [(q.category, q.params) for q in build_queries(v2, 50, 5)]
    assert q1 == q2
    assert len(q1) == 50
    kinds = {label.split("/")[0] for label, _, _ in c1}
    assert kinds <= {"docs", "data", "logs"}


def test_typo_queries_reach_the_fuzzy_layer(tmp_path):
    out = io.StringIO()
    (res,) = run(sizes=[300], queries_per_size=60, out=out, workdir=str(tmp_path))
    typo_layers = {layer for _, layer, _ in res.by_category["typo"]}
    assert typo_layers <= {"rrf-fuzzy", "none"}
    assert "rrf-fuzzy" in typo_layers
    assert {layer for _, layer, _ in res.by_category["no-match"]} == {"none"}
