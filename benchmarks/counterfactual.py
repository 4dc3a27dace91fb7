"""Counterfactual benchmark: how long "which single change would return this
chunk?" takes (:func:`engine.lab.counterfactual.would_return_with`), beside the
search it explains.

Run it as a script (it is not a test)::

    python -m benchmarks.counterfactual                 # sizes 10000,100000
    python -m benchmarks.counterfactual --sizes 2000 --queries 20

For each size it builds the synthetic store of :mod:`benchmarks.search`
(same generator, same seed), takes that benchmark's query set (the
``no-match`` queries left out: nothing to pin), and for each query pins up to
three chunks the search did not return:

* ``near miss``: the best-placed candidate that left the answering pass
  (trimmed, beyond the pool, or removed by the session filter);
* ``merged``: a row fusion merged into another (``source::title`` collision);
* ``random``: a chunk drawn at random from the store (mostly one no query
  term is indexed in).

Each pin is timed twice: ``cold``, with a run cache of its own (the first
counterfactual after a query changed), and ``warm``, with the cache the
search itself filled (the browser's case: it searches and then explains the
pinned chunk with one cache). The report gives milliseconds (p50/p95/max),
the ratio to the search's own time, the re-runs made and how many pins a
single change returns. Timings are wall clock on whatever else the machine
is doing; compare ratios, not absolute numbers, across machines.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Sequence, TextIO

from engine.store import sql
from engine.lab.counterfactual import would_return_with
from engine.lab.flow import trace_flows
from engine.pipeline.run import search
from engine.pipeline.runcache import RunCache
from engine.store.store import Store

from .search import DEFAULT_SEED, CorpusGenerator, Vocabulary, build_queries, parse_sizes, percentile, table

DEFAULT_SIZES = (10_000, 100_000)
DEFAULT_QUERIES = 60
PIN_KINDS = ("near miss", "merged", "random")


@dataclass
class SizeResult:
    target: int
    chunks: int = 0
    build_s: float = 0.0
    search_ms: list[float] = field(default_factory=list)
    #: pin kind -> [(cold ms, warm ms, search ms, reruns, outcome)]
    pins: dict[str, list[tuple[float, float, float, int, str]]] = field(default_factory=lambda: defaultdict(list))


def build_store(target: int, seed: int, folder: str) -> tuple[Store, Vocabulary]:
    """The synthetic store of :mod:`benchmarks.search` at ``target`` chunks, in ``folder``."""
    rng = random.Random(seed)
    vocab = Vocabulary(rng)
    gen = CorpusGenerator(vocab, rng)
    store = Store.create(os.path.join(folder, "bench.db"))
    for f in gen.files(target):
        store.index_text(f.label, f.text, f.kind, session_id=f.session_id)
    return store, vocab


def _pins(trace, rng: random.Random, total: int) -> dict[str, int]:
    flows = trace_flows(trace)
    out: dict[str, int] = {}
    main = flows[0]
    for row in main.rows:
        left = row.exit.stage if row.exit is not None else None  # a stage id: where it left
        if left in ("pool", "filter", "trim") and "near miss" not in out:
            out["near miss"] = row.rowid
        if left == "fusion" and "merged" not in out:  # fusion drops a row only by merging it
            out["merged"] = row.rowid
    out["random"] = rng.randint(1, total)
    return out


def run_size(target: int, n_queries: int, seed: int, out: TextIO, workdir: str | None) -> SizeResult:
    res = SizeResult(target)
    say = lambda line="": print(line, file=out, flush=True)  # noqa: E731
    say(f"== size {target:,} chunks (target) " + "=" * 40)
    tmp = tempfile.mkdtemp(prefix="rankscope-cf-", dir=workdir)
    try:
        t0 = time.perf_counter()
        store, vocab = build_store(target, seed, tmp)
        res.build_s = time.perf_counter() - t0
        res.chunks = store.stats().chunks
        say(f"store     {res.chunks:,} chunks, built in {res.build_s:,.1f} s")
        queries = [q for q in build_queries(vocab, n_queries * 2, seed) if q.category != "no-match"][:n_queries]
        rng = random.Random(seed + 1)
        for q in queries[:3]:
            search(store, q.params)  # warm SQLite's page cache
        for q in queries:
            t0 = time.perf_counter()
            trace = search(store, q.params)
            s_ms = (time.perf_counter() - t0) * 1000.0
            res.search_ms.append(s_ms)
            for kind, rowid in _pins(trace, rng, res.chunks).items():
                store.runs.clear()  # cold: no run, phrase count or correction from an earlier search
                store.phrase_rows.clear()
                store.corrections.clear()
                t0 = time.perf_counter()
                cold = would_return_with(store, q.params, rowid=rowid, trace=trace)
                cold_ms = (time.perf_counter() - t0) * 1000.0
                cache = RunCache(store)
                t = search(store, q.params, runs=cache)
                t0 = time.perf_counter()
                warm = would_return_with(store, q.params, rowid=rowid, trace=t, runs=cache)
                warm_ms = (time.perf_counter() - t0) * 1000.0
                assert warm.would_return_with() == cold.would_return_with(), (q.params, rowid)
                outcome = "change" if cold.change is not None else cold.reason or "?"
                res.pins[kind].append((cold_ms, warm_ms, s_ms, cold.reruns, outcome))
        store.close()
        s = res.search_ms
        say(
            f"search    {len(s)} queries: p50 {percentile(s, 50):.1f} ms, p95 {percentile(s, 95):.1f} ms, "
            f"max {max(s):.1f} ms"
        )
        rows = []
        for kind in PIN_KINDS:
            pins = res.pins.get(kind, [])
            if not pins:
                continue
            colds = [p[0] for p in pins]
            warms = [p[1] for p in pins]
            ratio = [p[0] / p[2] for p in pins if p[2] > 0]
            reruns = [p[3] for p in pins]
            outcomes = Counter(p[4] for p in pins)
            rows.append(
                (
                    kind,
                    len(pins),
                    percentile(colds, 50),
                    percentile(colds, 95),
                    max(colds),
                    percentile(warms, 50),
                    percentile(warms, 95),
                    percentile(ratio, 50),
                    percentile(ratio, 95),
                    percentile(reruns, 50),
                    max(reruns),
                    ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items())),
                )
            )
        say("counterfactual (ms; ratio = cold / the search's own time; re-runs include the confirming one)")
        for line in table(
            (
                "pin",
                "n",
                "cold p50",
                "cold p95",
                "cold max",
                "warm p50",
                "warm p95",
                "ratio p50",
                "ratio p95",
                "re-runs p50",
                "re-runs max",
                "outcome",
            ),
            rows,
        ):
            say("  " + line)
        say()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return res


def run(
    sizes: Sequence[int] = DEFAULT_SIZES,
    queries: int = DEFAULT_QUERIES,
    seed: int = DEFAULT_SEED,
    out: TextIO | None = None,
    workdir: str | None = None,
) -> list[SizeResult]:
    """Run the benchmark for each size and print the report to ``out`` (stdout by default)."""
    out = out or sys.stdout
    print(
        f"rankscope counterfactual benchmark  seed {seed}, sizes {', '.join(f'{s:,}' for s in sizes)}, "
        f"{queries} queries per size; SQLite {sql.SQLITE_VERSION}, {os.cpu_count()} CPUs",
        file=out,
    )
    return [run_size(size, queries, seed, out, workdir) for size in sizes]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.counterfactual", description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--sizes",
        default=",".join(str(s) for s in DEFAULT_SIZES),
        help="comma-separated target chunk counts (default %(default)s)",
    )
    ap.add_argument("--queries", type=int, default=DEFAULT_QUERIES, help="queries per size (default %(default)s)")
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED, help="random seed (default %(default)s)")
    ap.add_argument("--tmpdir", default=None, help="folder for the temporary store")
    args = ap.parse_args(argv)
    sizes = parse_sizes(ap, args.sizes)
    if not sizes or any(s < 1 for s in sizes) or args.queries < 1:
        ap.error("sizes and --queries must be positive")
    run(sizes, args.queries, args.seed, workdir=args.tmpdir)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
