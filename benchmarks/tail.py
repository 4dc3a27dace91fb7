"""rankscope alone on one large store: each query set's p50 / p95 / max against the
issue 25 goal (p95 at most 300 ms at 1,000,152 chunks), and its slowest searches
with what each retriever did.

Run it as a script (it is not a test)::

    python -m benchmarks.tail --store KEEP/npm-1000000.db            # both sets, 3 rounds
    python -m benchmarks.tail --store S.db --sets light --rounds 1 --slowest 20

The store is one ``benchmarks.search --1m --keep`` built (npm's docs replicated;
``benchmarks.versus`` runs the reference beside us, which at 1M takes hours). The
queries are :func:`benchmarks.versus.queries_of`'s, limit 3, in their set's order,
round after round. Before each timed search the retriever-run cache and the phrase
counts are cleared (:func:`benchmarks.search._clear_run_cache`), as everywhere: every
search pays for its SQL. What a store keeps per data version for every query (the
filters' kept rows, :mod:`engine.pipeline.stages.kept`) stays, as in a session; the
search that built it is timed with the rest and named below the table.

Each set is preceded by its first five queries, untimed, as a warm-up.
"""

from __future__ import annotations

import argparse
import os
import time
from dataclasses import dataclass

from engine import Store, search
from engine.store.errors import StoreError
from engine.pipeline.stages.kept import KeptRows
from engine.pipeline.trace import Trace

from .search import _clear_run_cache, _loadavg, percentile, ranking_label, table
from .versus import QUERY_SETS, BenchQuery, queries_of

#: The issue 25 goal (ms), for a store of at least :data:`GOAL_CHUNKS` chunks.
GOAL_P95_MS = 300.0
GOAL_CHUNKS = 1_000_000
WARM_UP = 5


@dataclass(frozen=True)
class Timed:
    """One timed search: wall time (ms), the query, its retriever runs
    (:func:`_runs`), and whether it built a table's kept rows."""

    ms: float
    query: BenchQuery
    runs: str
    built_kept: bool


def _runs(trace: Trace) -> str:
    """Each retriever run of ``trace`` as ``p|t:how:ms`` (``how``: :func:`ranking_label`)."""
    return " ".join(
        f"{r.name[0]}:{ranking_label(r)}:{r.elapsed_ms:.0f}" for run in trace.runs for r in (run.porter, run.trigram)
    )


def _built(store: Store) -> int:
    """Tables whose kept rows the store holds now."""
    return sum(isinstance(v, KeptRows) for v in store.kept_rows.values())


def measure(store: Store, queries: list[BenchQuery]) -> list[Timed]:
    """Time ``queries`` one after the other (caches cleared before each, as above)."""
    for q in queries[:WARM_UP]:
        _clear_run_cache(store)
        search(store, q.params)
    out = []
    for q in queries:
        _clear_run_cache(store)
        held = _built(store)
        t0 = time.perf_counter()
        trace = search(store, q.params)
        ms = (time.perf_counter() - t0) * 1000.0
        out.append(Timed(ms, q, _runs(trace), _built(store) > held))
    return out


def report(name: str, timed: list[Timed], slowest: int, chunks: int) -> list[str]:
    """The set's summary line (with the goal's verdict on a store of at
    least :data:`GOAL_CHUNKS` chunks) and its ``slowest`` searches."""
    ms = [t.ms for t in timed]
    p95 = percentile(ms, 95)
    if chunks >= GOAL_CHUNKS:
        goal = f"goal p95 <= {GOAL_P95_MS:.0f} ms: {'met' if p95 <= GOAL_P95_MS else 'not met'}"
    else:
        goal = f"the goal is set at {GOAL_CHUNKS:,} chunks"
    lines = [
        f"{name}: {len(ms)} searches, p50 {percentile(ms, 50):.1f} / p95 {p95:.1f} / max {max(ms):.1f} ms ({goal})"
    ]
    rows = []
    for t in sorted(timed, key=lambda t: -t.ms)[:slowest]:
        p = t.query.params
        label = p.query + (f" [{p.filter_text}]" if p.filter_text else "")
        runs = t.runs + ("  (built kept rows)" if t.built_kept else "")
        rows.append((label, t.query.category, runs, f"{t.ms:.1f}"))
    lines += ["  " + line for line in table(("query", "category", "runs (retriever:how:ms)", "ms"), rows, left=3)]
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.tail", description=__doc__.split("\n\n")[0])
    ap.add_argument("--store", required=True, help="the store to search (opened read-only)")
    ap.add_argument("--sets", default=",".join(QUERY_SETS), help="comma-separated query sets (default heavy,light)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds of each set's 80 queries (default 3)")
    ap.add_argument("--slowest", type=int, default=10, help="slowest searches listed per set (default 10)")
    args = ap.parse_args(argv)
    sets = [s.strip() for s in args.sets.split(",") if s.strip()]
    if not sets or any(s not in QUERY_SETS for s in sets):
        ap.error(f"--sets must name query sets of {', '.join(QUERY_SETS)}; got {args.sets!r}")
    if args.rounds < 1:
        ap.error(f"--rounds must be at least 1; got {args.rounds}")
    if args.slowest < 1:
        ap.error(f"--slowest must be at least 1; got {args.slowest}")
    if os.path.isdir(args.store):
        ap.error(f"--store: {args.store} is a folder, not a store file")
    if not os.path.isfile(args.store):
        ap.error(f"--store: no such file: {args.store}")
    try:
        store = Store.open_readonly(args.store)
    except StoreError as exc:
        ap.error(f"--store: {exc}")
    try:
        chunks = store.stats().chunks
        print(f"{args.store}: {chunks:,} chunks; load average {_loadavg()}")
        for name in sets:
            timed = measure(store, queries_of(name, args.rounds))
            for line in report(name, timed, args.slowest, chunks):
                print(line)
            print(f"  load average {_loadavg()}")
    except StoreError as exc:
        ap.exit(1, f"{ap.prog}: error: {exc}\n")
    finally:
        store.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
