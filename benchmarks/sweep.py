"""Sweep benchmark: a 10-variant ``rankscope eval --sweep`` against 10
separate ``eval`` runs, on the same store and query file.

Run it as a script (it is not a test)::

    python -m benchmarks.sweep                    # 10,000 chunks, 80 queries
    python -m benchmarks.sweep --size 3000 --no-cli

The store is the npm-docs corpus of :mod:`benchmarks.npm_docs` (its 80
queries) when npm's docs are installed, else the synthetic corpus of
:mod:`benchmarks.search` (80 of its queries). The judgments are made up (each
query's reference answer graded 1): the point is the cost, not the numbers.

Two sweeps of 10 variants each:

* ``later stages``: ``rrf_k=10,30,60,100,200`` × ``rerank=on,off``: every
  variant shares the reference's retriever runs;
* ``pool × rerank``: ``pool=default,5,10,20,40`` × ``rerank=on,before-trim``: five
  pool sizes, five row counts per retriever.

Each is timed in-process (:func:`engine.lab.sweep.run_variants` and
:func:`~engine.lab.sweep.evaluate_variants` on one open store, against 10 ×
opening the store, running the queries under the one variant and
:func:`~engine.lab.evaluation.evaluate_traces`: a cold run cache each, as in
separate processes) and, unless ``--no-cli``, as commands (one ``rankscope eval
--sweep`` process against 10 ``rankscope eval --a SPEC`` processes). The floor
is one reference ``eval`` measured in the same run: figures are ratios to it.
Wall clock on whatever else the machine is doing; compare ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Any, Sequence

from engine.lab.evaluation import evaluate_traces, parse_measures, ranked_ids, run_entries
from engine.lab.qrels import Qrels, write_qrels
from engine.lab.sweep import evaluate_variants, parse_axis, run_variants, variant_set
from engine.pipeline.variants import REFERENCE, variant_spec
from engine.store.chunkids import chunk_ids
from engine.store.store import Store

from . import npm_docs
from .search import DEFAULT_SEED, SizeResult, _build_npm, _build_synthetic, build_queries

SWEEPS = {
    "later stages": ["rrf_k=10,30,60,100,200", "rerank=on,off"],
    "pool × rerank": ["pool=default,5,10,20,40", "rerank=on,before-trim"],
}


def build_store(path: str, size: int) -> tuple[str, list[dict[str, Any]]]:
    """Build the store at ``path``; ``(corpus name, 80 query-file entries)``."""
    store = Store.create(path)
    res = SizeResult(size)
    root = npm_docs.find_npm_docs()
    try:
        if root is not None:
            _build_npm(store, size, res, npm_docs.load_docs(root))
            texts = [q for _, q in npm_docs.queries()]
            corpus = "npm-docs"
        else:
            vocab = _build_synthetic(store, size, DEFAULT_SEED, res)
            texts = [q.params.query for q in build_queries(vocab, 80, DEFAULT_SEED)]
            corpus = "synthetic"
    finally:
        store.close()
    return corpus, [{"id": f"q{i + 1}", "query": t} for i, t in enumerate(texts[:80])]


def made_up_qrels(path: str, entries: list[dict[str, Any]]) -> Qrels:
    """Each query's reference answer graded 1."""
    with Store.open_readonly(path) as store:
        ids = chunk_ids(store)
        qrels = Qrels()
        for qid, trace in run_entries(store, entries, REFERENCE):
            for cid in ranked_ids(trace, ids).get("final", []):
                qrels.set_grade(qid, cid, 1)
    return qrels


def in_process(path: str, entries: list[dict[str, Any]], qrels: Qrels, axes: list[str]) -> dict[str, float]:
    """Seconds: one reference eval, the sweep, and 10 separate evals."""
    ms = parse_measures(None)
    vs = variant_set(REFERENCE, [parse_axis(a) for a in axes])

    def one(variant: Any) -> None:  # what one `rankscope eval --a SPEC` does
        with Store.open_readonly(path) as store:
            traces, _ = run_variants(store, entries, [("a", variant)])
            evaluate_traces(traces["a"], qrels, ms, chunk_ids(store), variant)

    # warm up: imports (ir-measures, scipy, statsmodels) and the page cache are not what is measured here
    with Store.open_readonly(path) as store:
        pair = variant_set(REFERENCE, (), [("x", vs.variants[1][1])])
        traces, stats = run_variants(store, entries[:3], pair.variants)
        evaluate_variants(traces, pair, qrels, ms, chunk_ids(store), stats)
    t0 = time.perf_counter()
    one(REFERENCE)
    floor = time.perf_counter() - t0
    t0 = time.perf_counter()
    with Store.open_readonly(path) as store:
        traces, stats = run_variants(store, entries, vs.variants)
        evaluate_variants(traces, vs, qrels, ms, chunk_ids(store), stats)
    swept = time.perf_counter() - t0
    t0 = time.perf_counter()
    for _, v in vs.variants:
        one(v)
    separate = time.perf_counter() - t0
    return {
        "floor": floor,
        "sweep": swept,
        "separate": separate,
        "variants": len(vs.variants),
        "fetched": stats.retriever_runs,
        "reused": stats.reused,
    }


def as_commands(path: str, queries: str, qrels: str, axes: list[str], env: dict[str, str]) -> dict[str, float]:
    """Seconds: one ``rankscope eval`` process, the ``--sweep`` process, 10 processes."""
    base = [
        os.path.join(os.path.dirname(sys.executable), "rankscope"),
        "eval",
        queries,
        "--db",
        path,
        "--qrels",
        qrels,
        "--json",
    ]

    def run(extra: list[str]) -> float:
        t0 = time.perf_counter()
        subprocess.run(base + extra, check=True, stdout=subprocess.DEVNULL, env=env)
        return time.perf_counter() - t0

    vs = variant_set(REFERENCE, [parse_axis(a) for a in axes])
    floor = run([])
    swept = run([x for a in axes for x in ("--sweep", a)])
    separate = sum(run(["--a", variant_spec(v)]) for _, v in vs.variants)
    return {"floor": floor, "sweep": swept, "separate": separate, "variants": len(vs.variants)}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=int, default=10_000, help="target chunk count (default 10000)")
    ap.add_argument("--no-cli", action="store_true", help="skip the timing of separate processes")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="rankscope-sweep-") as tmp:
        db = os.path.join(tmp, "bench.db")
        t0 = time.perf_counter()
        corpus, entries = build_store(db, args.size)
        with Store.open_readonly(db) as store:
            chunks = store.conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
        print(f"store: {corpus}, {chunks:,} chunks, {len(entries)} queries (built in {time.perf_counter() - t0:.1f} s)")
        qrels = made_up_qrels(db, entries)
        queries_path, qrels_path = os.path.join(tmp, "queries.json"), os.path.join(tmp, "qrels.json")
        with open(queries_path, "w", encoding="utf-8") as fh:
            json.dump(entries, fh)
        write_qrels(qrels, qrels_path)
        env = dict(os.environ, RANKSCOPE_DATA_DIR=os.path.join(tmp, "data"))
        for label, axes in SWEEPS.items():
            r = in_process(db, entries, qrels, axes)
            print(f"\n{label} ({' × '.join(axes)}: {r['variants']:.0f} variants)")
            print(
                f"  in-process: one eval {r['floor']:.2f} s; sweep {r['sweep']:.2f} s ({r['sweep'] / r['floor']:.1f}× one); "
                f"{r['variants']:.0f} separate evals {r['separate']:.2f} s ({r['separate'] / r['floor']:.1f}× one); "
                f"sweep / separate {r['sweep'] / r['separate']:.2f}"
            )
            print(f"  retriever runs fetched {r['fetched']:.0f}, reused {r['reused']:.0f}")
            if not args.no_cli:
                c = as_commands(db, queries_path, qrels_path, axes, env)
                print(
                    f"  commands:   one eval {c['floor']:.2f} s; eval --sweep {c['sweep']:.2f} s ({c['sweep'] / c['floor']:.1f}× one); "
                    f"{c['variants']:.0f} eval processes {c['separate']:.2f} s ({c['separate'] / c['floor']:.1f}× one); "
                    f"sweep / separate {c['sweep'] / c['separate']:.2f}"
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
