"""Side by side with the reference: rankscope's traced search against
context-mode's own ``ContentStore.searchWithFallback``, same store, same
queries, alternating query by query in one run.

The reference is not part of rankscope. Install it once, anywhere (it needs
Node.js; on Node 20 skip its install script, which refuses Node < 22, and
build better-sqlite3 by hand)::

    npm install --prefix /tmp/ref --ignore-scripts context-mode@1.0.169
    (cd /tmp/ref/node_modules/better-sqlite3 && npm run install)
    python -m benchmarks.versus --reference /tmp/ref/node_modules/context-mode --100k --keep /tmp/bench

What is measured, per query: the wall clock of one ``searchWithFallback(q,
3)`` call in a long-lived Node process (``benchmarks/reference_driver.mjs``,
timed inside Node with ``process.hrtime``) and of one ``engine.search``
with its full trace in this process, the retriever-run cache cleared first
(the reference has no such cache; both keep their fuzzy corrections). Which
side goes first alternates from query to query. Each side searches its own
copy of the same store file (the reference opens its copy read-write and
switches it to WAL, as the server does); both refresh stale file-backed
sources before searching, as the reference does. The answers are compared
row by row (source, title, match layer): the run says how many differ.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence, TextIO

from engine import search
from engine.store.store import Store

from . import npm_docs
from .search import (
    DEFAULT_SEED,
    SizeResult,
    _clear_run_cache,
    _loadavg,
    _open_or_build,
    _queries_for,
    percentile,
    sqlite_version,
    table,
)

WARMUP = 5
DRIVER = Path(__file__).with_name("reference_driver.mjs")


class ReferenceError_(RuntimeError):
    """The reference could not be started or failed a search."""


class Reference:
    """A Node process running the reference's ``ContentStore`` on ``db``.

    Raises:
        ReferenceError_: Node or the package is missing, or the driver did not start.
    """

    def __init__(self, package: Path, db: str) -> None:
        store_js = package / "build" / "store.js"
        if not store_js.is_file():
            raise ReferenceError_(
                f"{store_js} not found: --reference must be the installed context-mode package folder"
            )
        node = shutil.which("node")
        if node is None:
            raise ReferenceError_("node not found on PATH")
        self.proc = subprocess.Popen(
            [node, str(DRIVER), str(store_js), db],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            encoding="utf-8",
        )
        hello = self._read()
        if not hello.get("ready"):
            raise ReferenceError_(f"the reference driver did not start: {hello}")
        self.sqlite = hello.get("sqlite", "?")
        self.node = hello.get("node", "?")

    def _read(self) -> dict:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise ReferenceError_(f"the reference driver exited (code {self.proc.poll()})")
        return json.loads(line)

    def search(self, query: str, limit: int) -> tuple[float, list[tuple[str, str, str]]]:
        """``(ms, rows)``: the call's wall clock inside Node, and its rows as (source, title, layer)."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"query": query, "limit": limit}) + "\n")
        self.proc.stdin.flush()
        out = self._read()
        if "error" in out:
            raise ReferenceError_(f"reference search {query!r} failed: {out['error']}")
        rows = [(str(r[0]), str(r[1]), str(r[2])) for r in out["rows"]]
        return float(out["ms"]), rows

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


@dataclass
class SideBySide:
    """One size's figures (ms), in query order."""

    target: int
    chunks: int = 0
    ours: list[float] = field(default_factory=list)
    ref: list[float] = field(default_factory=list)
    categories: list[str] = field(default_factory=list)
    queries: list[str] = field(default_factory=list)
    differing: list[str] = field(default_factory=list)


def _ours(store: Store, params) -> tuple[float, list[tuple[str, str, str]]]:
    _clear_run_cache(store)
    t0 = time.perf_counter()
    trace = search(store, params)
    ms = (time.perf_counter() - t0) * 1000.0
    return ms, [(r.candidate.source, r.candidate.title, r.layer) for r in trace.final]


def _stats(values: Sequence[float]) -> tuple[float, float, float, float]:
    return percentile(values, 50), percentile(values, 95), max(values), sum(values) / len(values)


def measure(store: Store, ref: Reference, queries, side: SideBySide) -> None:
    """Time every query on both sides, alternating which goes first, and
    note the queries whose answers differ (``side`` is filled in place)."""
    for q in queries[:WARMUP]:
        _ours(store, q.params)
        ref.search(q.params.query, q.params.limit)
    for i, q in enumerate(queries):
        if i % 2:
            r_ms, r_rows = ref.search(q.params.query, q.params.limit)
            o_ms, o_rows = _ours(store, q.params)
        else:
            o_ms, o_rows = _ours(store, q.params)
            r_ms, r_rows = ref.search(q.params.query, q.params.limit)
        side.ours.append(o_ms)
        side.ref.append(r_ms)
        side.categories.append(q.category)
        side.queries.append(q.params.query)
        if o_rows != r_rows and q.params.query not in side.differing:
            side.differing.append(q.params.query)


def report(side: SideBySide, say) -> None:
    """Print one size's figures: both sides' p50 / p95 / max / mean, the
    ratios, the issue's goal (at most half the reference's p50 and p95),
    per category, and how many answers were identical."""
    rows = []
    for name, values in (("reference", side.ref), ("rankscope", side.ours)):
        p50, p95, mx, mean = _stats(values)
        rows.append((name, len(values), p50, p95, mx, mean))
    say("  search wall clock (ms)")
    for line in table(("", "n", "p50", "p95", "max", "mean"), rows):
        say("    " + line)
    r50, r95, _, rmean = _stats(side.ref)
    o50, o95, _, omean = _stats(side.ours)
    per_query = sorted(r / o for r, o in zip(side.ref, side.ours) if o > 0)
    say(
        f"  reference / rankscope: {r50 / o50:.2f}x at p50, {r95 / o95:.2f}x at p95, {rmean / omean:.2f}x in the mean, "
        f"{percentile(per_query, 50):.2f}x median per query (above 1: rankscope is faster)"
    )
    say(
        f"  goal (issue 12: at most half the reference's time): p50 {o50:.1f} <= {r50 / 2:.1f} ms "
        f"{'met' if o50 <= r50 / 2 else 'NOT met'}; p95 {o95:.1f} <= {r95 / 2:.1f} ms "
        f"{'met' if o95 <= r95 / 2 else 'NOT met'}"
    )
    by_cat: dict[str, tuple[list[float], list[float]]] = defaultdict(lambda: ([], []))
    for cat, o, r in zip(side.categories, side.ours, side.ref):
        by_cat[cat][0].append(o)
        by_cat[cat][1].append(r)
    cat_rows = [
        (cat, len(o), percentile(r, 50), percentile(o, 50), percentile(r, 50) / percentile(o, 50))
        for cat, (o, r) in by_cat.items()
    ]
    say("  by category (p50, ms)")
    for line in table(("category", "n", "reference", "rankscope", "ratio"), cat_rows):
        say("    " + line)
    distinct = len(set(side.queries))
    same = distinct - len(side.differing)
    say(f"  answers: {same} of {distinct} queries identical (source, title, layer of every row)")
    for query in side.differing:
        say(f"    differs: {query!r}")


def run_size(
    target: int, package: Path, out: TextIO, *, rounds: int, keep_dir: str | None, docs, workdir
) -> SideBySide:
    """Build (or reuse from ``keep_dir``) the npm-docs store of ``target``
    chunks, measure both sides on copies of it and print the report."""

    def say(line: str = "") -> None:
        print(line, file=out, flush=True)

    res = SizeResult(target, "npm")
    tmp = tempfile.mkdtemp(prefix="rankscope-versus-", dir=workdir)
    try:
        store, db, _ = _open_or_build(target, DEFAULT_SEED, "npm", tmp, keep_dir, res, docs)
        store.close()
        ours_db, ref_db = os.path.join(tmp, "rankscope.db"), os.path.join(tmp, "reference.db")
        shutil.copyfile(db, ours_db)
        shutil.copyfile(db, ref_db)
        store = Store.open_writable(ours_db)
        try:
            ref = Reference(package, ref_db)
            try:
                side = SideBySide(target, store.stats().chunks)
                say(
                    f"== {side.chunks:,} chunks (target {target:,}) · reference: context-mode ContentStore, "
                    f"Node {ref.node}, SQLite {ref.sqlite} · rankscope: SQLite {sqlite_version()}"
                )
                measure(store, ref, _queries_for("npm", None, 0, DEFAULT_SEED, rounds), side)
            finally:
                ref.close()
        finally:
            store.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    report(side, say)
    return side


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.versus", description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--reference",
        required=True,
        metavar="DIR",
        help="the installed context-mode package folder (the one holding build/store.js)",
    )
    ap.add_argument("--sizes", default="1000,10000", help="comma-separated target chunk counts (default %(default)s)")
    ap.add_argument("--100k", dest="add_100k", action="store_true", help="also run 100,000 chunks")
    ap.add_argument("--rounds", type=int, default=3, help="rounds of the 80 queries (default %(default)s)")
    ap.add_argument("--keep", default=None, metavar="DIR", help="reuse (or keep) the built stores in DIR")
    ap.add_argument("--tmpdir", default=None, help="folder for the store copies (default: the system temp dir)")
    args = ap.parse_args(argv)
    try:
        sizes = [int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()]
    except ValueError:
        ap.error(f"--sizes must be comma-separated integers; got {args.sizes!r}")
    if args.add_100k and 100_000 not in sizes:
        sizes.append(100_000)
    if not sizes or any(s < 1 for s in sizes) or args.rounds < 1:
        ap.error("sizes and --rounds must be positive")
    root = npm_docs.find_npm_docs()
    if root is None:
        ap.error("npm's docs/content folder was not found (install Node's npm, or set RANKSCOPE_NPM_DOCS)")
    docs = npm_docs.load_docs(root)
    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
    print(f"rankscope vs reference, 80 npm-docs queries x {args.rounds} rounds, limit 3; load average {_loadavg()}")
    try:
        for target in sizes:
            run_size(
                target,
                Path(args.reference),
                sys.stdout,
                rounds=args.rounds,
                keep_dir=args.keep,
                docs=docs,
                workdir=args.tmpdir,
            )
    except ReferenceError_ as exc:
        print(f"python -m benchmarks.versus: error: {exc}", file=sys.stderr)
        return 2
    print(f"load average at the end {_loadavg()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
