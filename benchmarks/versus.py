"""Side by side with the reference: rankscope's traced search against
context-mode's own ``ContentStore.searchWithFallback``, each on the store its
own indexer built, on two query sets, alternating query by query in one run.

The reference is not part of rankscope. Install it once, anywhere (it needs
Node.js; on Node 20 skip its install script, which refuses Node < 22, and
build better-sqlite3 by hand)::

    npm install --prefix /tmp/ref --ignore-scripts context-mode@1.0.169
    (cd /tmp/ref/node_modules/better-sqlite3 && npm run install)
    python -m benchmarks.versus --reference /tmp/ref/node_modules/context-mode --100k --keep /tmp/bench

The stores: the npm-docs corpus (:mod:`benchmarks.npm_docs`) indexed by each
side's own indexer, file by file, every source file-backed. rankscope's
through :meth:`engine.store.store.Store.index_text` and the FTS5 merge an
indexing run ends with (what ``rankscope index`` does); the reference's
through ``ContentStore.index({path, source})`` in Node, which merges its
indexes every 50 inserts and when the store closes. ``--keep DIR`` keeps
both (``npm-N.db`` and ``npm-N.ref.db``) for the next run.

The query sets (both limit 3):

* ``heavy``: the 80 queries of :data:`benchmarks.npm_docs.QUERIES`
  (commands, terms, flags, questions, code lines, typos, no match); a
  quarter contain ``npm``, which is in 76% of the chunks.
* ``light``: the 80 of :func:`benchmarks.npm_docs.light_queries`: single
  terms, flags, filtered (source label or content type), no-match and
  two-word queries, in about the proportions a person types them.

What is measured, per query: the wall clock of one ``searchWithFallback``
call in a long-lived Node process (``benchmarks/reference_driver.mjs``, timed
inside Node with ``process.hrtime``) and of one ``engine.search`` with its
full trace in this process, the retriever-run cache cleared first (the
reference has no such cache; both keep their fuzzy corrections). Which side
goes first alternates from query to query. Each side searches a copy of its
own store (the reference opens its copy read-write and switches it to WAL,
as the server does); both refresh stale file-backed sources before
searching, as the reference does. The answers are compared row by row
(source, title, match layer): the run says how many differ.
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
from typing import Any, Callable, Sequence, TextIO

from engine import search
from engine.pipeline.params import SearchParams
from engine.store.store import Store

from . import npm_docs
from .search import (
    DEFAULT_SEED,
    BenchQuery,
    SizeResult,
    _clear_run_cache,
    _loadavg,
    _open_or_build,
    parse_sizes,
    percentile,
    sqlite_version,
    table,
)

WARMUP = 5
DRIVER = Path(__file__).with_name("reference_driver.mjs")
#: The query sets, in the order they run and are printed.
QUERY_SETS = ("heavy", "light")
#: Below this many chunks the goal is parity (ratio >= 1.0); from it on,
#: half the reference's time (ratio >= 2.0) (issue 25).
SMALL_STORE = 5_000

Say = Callable[..., None]


class ReferenceError_(RuntimeError):
    """The reference could not be started or failed a search."""


def _store_js(package: Path) -> Path:
    store_js = package / "build" / "store.js"
    if not store_js.is_file():
        raise ReferenceError_(f"{store_js} not found: --reference must be the installed context-mode package folder")
    return store_js


def _node() -> str:
    node = shutil.which("node")
    if node is None:
        raise ReferenceError_("node not found on PATH")
    return node


class Reference:
    """A Node process running the reference's ``ContentStore`` on ``db``.

    Raises:
        ReferenceError_: Node or the package is missing, or the driver did not start.
    """

    def __init__(self, package: Path, db: str) -> None:
        store_js = _store_js(package)
        self.proc = subprocess.Popen(
            [_node(), str(DRIVER), str(store_js), db],
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

    def _read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise ReferenceError_(f"the reference driver exited (code {self.proc.poll()})")
        out: dict[str, Any] = json.loads(line)
        return out

    def search(self, query: str | SearchParams, limit: int = 3) -> tuple[float, list[tuple[str, str, str]]]:
        """``(ms, rows)``: the call's wall clock inside Node, and its rows as
        (source, title, layer). ``query`` is the query text (with ``limit``)
        or a :class:`SearchParams` (its limit, source and content-type
        filters, source match mode)."""
        p = query if isinstance(query, SearchParams) else SearchParams(query, limit=limit)
        request = {
            "query": p.query,
            "limit": p.limit,
            "source": p.source or None,
            "contentType": p.content_type,
            "sourceMatchMode": p.source_match,
        }
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        out = self._read()
        if "error" in out:
            raise ReferenceError_(f"reference search {p.query!r} failed: {out['error']}")
        rows = [(str(r[0]), str(r[1]), str(r[2])) for r in out["rows"]]
        return float(out["ms"]), rows

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def build_reference_store(package: Path, db: str, files: Sequence[tuple[str, str]]) -> tuple[float, int]:
    """Index ``files`` (``(label, path)``) into a new store at ``db`` with the
    reference's own ``ContentStore`` (file-backed sources, its merges
    included). Returns ``(seconds, chunks)``: the wall clock of the whole
    build, measured in Node.

    Raises:
        ReferenceError_: Node or the package is missing, or the build failed.
    """
    proc = subprocess.run(
        [_node(), str(DRIVER), str(_store_js(package)), db, "--build"],
        input=json.dumps([list(f) for f in files]) + "\n",
        capture_output=True,
        text=True,
        encoding="utf-8",
    )
    if proc.returncode != 0 or not proc.stdout.strip():
        raise ReferenceError_(f"the reference could not build {db}: {proc.stderr.strip()[-500:]}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    return float(out["ms"]) / 1000.0, int(out["chunks"])


@dataclass
class SideBySide:
    """One size's figures (ms) on one query set, in query order."""

    target: int
    chunks: int = 0
    query_set: str = "heavy"
    ours: list[float] = field(default_factory=list)
    ref: list[float] = field(default_factory=list)
    categories: list[str] = field(default_factory=list)
    queries: list[str] = field(default_factory=list)
    differing: list[str] = field(default_factory=list)


def _ours(store: Store, params: SearchParams) -> tuple[float, list[tuple[str, str, str]]]:
    _clear_run_cache(store)
    t0 = time.perf_counter()
    trace = search(store, params)
    ms = (time.perf_counter() - t0) * 1000.0
    return ms, [(r.candidate.source, r.candidate.title, r.layer) for r in trace.final]


def _stats(values: Sequence[float]) -> tuple[float, float, float, float]:
    return percentile(values, 50), percentile(values, 95), max(values), sum(values) / len(values)


def _label(params: SearchParams) -> str:
    """The query as the report names it: its text, and its filters."""
    if params.filter_text:
        return f"{params.query} [{params.filter_text}]"
    return params.query


def measure(store: Store, ref: Reference, queries: Sequence[BenchQuery], side: SideBySide) -> None:
    """Time every query on both sides, alternating which goes first, and
    note the queries whose answers differ (``side`` is filled in place)."""
    for q in queries[:WARMUP]:
        _ours(store, q.params)
        ref.search(q.params)
    for i, q in enumerate(queries):
        if i % 2:
            r_ms, r_rows = ref.search(q.params)
            o_ms, o_rows = _ours(store, q.params)
        else:
            o_ms, o_rows = _ours(store, q.params)
            r_ms, r_rows = ref.search(q.params)
        side.ours.append(o_ms)
        side.ref.append(r_ms)
        side.categories.append(q.category)
        label = _label(q.params)
        side.queries.append(label)
        if o_rows != r_rows and label not in side.differing:
            side.differing.append(label)


#: The queries of the cold-start comparison (one process per search).
COLD_QUERIES = ("npm publish", "workspaces", "--save-dev", "how do I publish a scoped package publicly")


#: Issue 25's goal for ``import tui.cli.main`` (ms).
IMPORT_GOAL_MS = 120.0


def import_ms() -> float:
    """``import tui.cli.main`` in a fresh interpreter, as ``python -X
    importtime`` reports it (its cumulative time, ms)."""
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import tui.cli.main"], capture_output=True, text=True, check=True
    )
    line = next(ln for ln in reversed(out.stderr.splitlines()) if ln.rstrip().endswith("| tui.cli.main"))
    return int(line.split("|")[1]) / 1000.0


def cold_start(package: Path, ours_db: str, ref_db: str, rounds: int, say: Say) -> tuple[list[float], list[float]]:
    """Wall clock (s) of one search as a fresh process on each side,
    alternating: ``rankscope search Q --db DB`` (its output to
    ``/dev/null``) against ``node`` running the reference driver for one
    query (Node's start, loading context-mode and better-sqlite3, opening
    the store, the search); and, once per search, ``import tui.cli.main``
    (:func:`import_ms`). Returns ``(rankscope, reference)``."""
    ours: list[float] = []
    ref: list[float] = []
    imports: list[float] = []
    node, store_js = _node(), str(_store_js(package))
    for i in range(rounds):
        for j, q in enumerate(COLD_QUERIES):

            def run_ours(q: str = q) -> None:
                t0 = time.perf_counter()
                subprocess.run(
                    [sys.executable, "-m", "tui.cli", "search", "--db", ours_db, "--", q],
                    check=True,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
                ours.append(time.perf_counter() - t0)

            def run_ref(q: str = q) -> None:
                t0 = time.perf_counter()
                subprocess.run(
                    [node, str(DRIVER), store_js, ref_db],
                    input=json.dumps({"query": q, "limit": 3}) + "\n",
                    check=True,
                    stdout=subprocess.DEVNULL,
                    text=True,
                )
                ref.append(time.perf_counter() - t0)

            for run in (run_ours, run_ref) if (i + j) % 2 == 0 else (run_ref, run_ours):
                run()
            imports.append(import_ms())
    o50, r50 = percentile(ours, 50), percentile(ref, 50)
    say(
        f"  one search as a fresh process ({len(ours)} each, {', '.join(repr(q) for q in COLD_QUERIES)}): "
        f"rankscope search p50 {o50 * 1000:,.0f} ms (max {max(ours) * 1000:,.0f}), reference node process p50 "
        f"{r50 * 1000:,.0f} ms (max {max(ref) * 1000:,.0f}); {'met' if o50 < r50 else 'NOT met'} "
        "(issue 25: rankscope faster)"
    )
    say(
        f"  import tui.cli.main (python -X importtime, {len(imports)} fresh processes): min {min(imports):,.0f} ms, "
        f"p50 {percentile(imports, 50):,.0f} ms; {'met' if min(imports) < IMPORT_GOAL_MS else 'NOT met'} "
        f"at best (issue 25: under {IMPORT_GOAL_MS:.0f} ms)"
    )
    return ours, ref


def goal_ratio(chunks: int) -> float:
    """The ratio (reference ÷ rankscope) issue 25 asks for at this size."""
    return 1.0 if chunks < SMALL_STORE else 2.0


def report(side: SideBySide, say: Say) -> None:
    """Print one size's figures on one query set: both sides' p50 / p95 /
    max / mean, the ratios against the goal, per category, and how many
    answers were identical."""
    rows = []
    for name, values in (("reference", side.ref), ("rankscope", side.ours)):
        p50, p95, mx, mean = _stats(values)
        rows.append((name, len(values), p50, p95, mx, mean))
    say(f"  {side.query_set} queries: search wall clock (ms)")
    for line in table(("", "n", "p50", "p95", "max", "mean"), rows):
        say("    " + line)
    r50, r95, _, rmean = _stats(side.ref)
    o50, o95, _, omean = _stats(side.ours)
    per_query = sorted(r / o for r, o in zip(side.ref, side.ours) if o > 0)
    say(
        f"  reference / rankscope: {r50 / o50:.2f}x at p50, {r95 / o95:.2f}x at p95, {rmean / omean:.2f}x in the mean, "
        f"{percentile(per_query, 50):.2f}x median per query (above 1: rankscope is faster)"
    )
    want = goal_ratio(side.chunks)
    say(
        f"  goal (issue 25: ratio >= {want:.1f} at {side.chunks:,} chunks): p50 {r50 / o50:.2f} "
        f"{'met' if r50 / o50 >= want else 'NOT met'}; p95 {r95 / o95:.2f} {'met' if r95 / o95 >= want else 'NOT met'}"
    )
    by_cat: dict[str, tuple[list[float], list[float]]] = defaultdict(lambda: ([], []))
    for cat, o, r in zip(side.categories, side.ours, side.ref):
        by_cat[cat][0].append(o)
        by_cat[cat][1].append(r)
    cat_rows = [
        (
            cat,
            len(o),
            percentile(r, 50),
            percentile(o, 50),
            percentile(r, 50) / percentile(o, 50),
            percentile(r, 95),
            percentile(o, 95),
            percentile(r, 95) / percentile(o, 95),
        )
        for cat, (o, r) in by_cat.items()
    ]
    say("  by category (ms)")
    header = ("category", "n", "ref p50", "ours p50", "ratio", "ref p95", "ours p95", "ratio")
    for line in table(header, cat_rows):
        say("    " + line)
    distinct = len(set(side.queries))
    same = distinct - len(side.differing)
    say(f"  answers: {same} of {distinct} queries identical (source, title, layer of every row)")
    for query in side.differing:
        say(f"    differs: {query!r}")


def summary(sides: Sequence[SideBySide], say: Say) -> None:
    """Both query sets of every size in one table: each side's p50 / p95,
    the ratios, and whether issue 25's goal is met."""
    rows = []
    for s in sides:
        r50, r95, _, _ = _stats(s.ref)
        o50, o95, _, _ = _stats(s.ours)
        want = goal_ratio(s.chunks)
        met = "met" if min(r50 / o50, r95 / o95) >= want else "NOT met"
        rows.append((f"{s.chunks:,}", s.query_set, len(s.ours), r50, r95, o50, o95, r50 / o50, r95 / o95, want, met))
    header = ("chunks", "set", "n", "ref p50", "ref p95", "ours p50", "ours p95", "p50 x", "p95 x", "goal", "")
    say("summary (ms; x = reference / rankscope, above 1: rankscope is faster)")
    for line in table(header, rows):
        say("  " + line)


def queries_of(query_set: str, rounds: int) -> list[BenchQuery]:
    """The ``rounds`` x 80 queries of ``heavy`` or ``light``, limit 3."""
    if query_set == "heavy":
        one = [BenchQuery(cat, SearchParams(q, limit=3)) for cat, q in npm_docs.queries()]
    elif query_set == "light":
        one = [
            BenchQuery(cat, SearchParams(q, limit=3, source=src, content_type=ctype))
            for cat, q, src, ctype in npm_docs.light_queries()
        ]
    else:
        raise ValueError(f"query set must be one of {', '.join(QUERY_SETS)}; got {query_set!r}")
    return [q for _ in range(rounds) for q in one]


def reference_store(
    package: Path, target: int, docs: list[npm_docs.DocFile], keep_dir: str | None, tmp: str, say: Say
) -> str:
    """The reference's own store of ``target`` chunks: reused from
    ``keep_dir`` when a kept one exists, else built (and kept there)."""
    folder = keep_dir or tmp
    db = os.path.join(folder, f"npm-{target}.ref.db")
    meta_path = db + ".json"
    if keep_dir and os.path.exists(db) and os.path.exists(meta_path):
        with open(meta_path, encoding="utf-8") as fh:
            meta = json.load(fh)
        say(
            f"  reference store: reused {db} (built by ContentStore.index in {meta['seconds']:,.1f} s, "
            f"{meta['chunks']:,} chunks)"
        )
        return db
    for stale in (db, db + "-wal", db + "-shm", meta_path):
        if os.path.exists(stale):
            os.unlink(stale)
    files = [(label, f.path) for label, f in npm_docs.replica_files(docs, npm_docs.replicas_for(target))]
    seconds, chunks = build_reference_store(package, db, files)
    with open(meta_path, "w", encoding="utf-8") as fh:
        json.dump({"seconds": seconds, "chunks": chunks, "files": len(files)}, fh)
    say(
        f"  reference store: built by ContentStore.index in {seconds:,.1f} s "
        f"({chunks:,} chunks, {chunks / max(seconds, 1e-9):,.0f} chunks/s)"
    )
    return db


def run_size(
    target: int,
    package: Path,
    out: TextIO,
    *,
    rounds: int,
    keep_dir: str | None,
    docs: list[npm_docs.DocFile],
    workdir: str | None,
    sets: Sequence[str] = QUERY_SETS,
    cold: int = 0,
) -> list[SideBySide]:
    """Build (or reuse from ``keep_dir``) both sides' npm-docs stores of
    ``target`` chunks, measure both sides on copies of them, query set by
    query set, and print the reports."""

    def say(line: str = "") -> None:
        print(line, file=out, flush=True)

    res = SizeResult(target, "npm")
    tmp = tempfile.mkdtemp(prefix="rankscope-versus-", dir=workdir)
    sides: list[SideBySide] = []
    try:
        store, db, _ = _open_or_build(target, DEFAULT_SEED, "npm", tmp, keep_dir, res, docs)
        store.close()
        say(f"== target {target:,} chunks")
        how = "reused" if res.reused else "built"
        say(
            f"  rankscope store: {how} (Store.index_text and the end-of-run merge, {res.index_s:,.1f} s; "
            f"merge {res.merge_s:,.2f} s)"
        )
        ref_src = reference_store(package, target, docs, keep_dir, tmp, say)
        ours_db, ref_db = os.path.join(tmp, "rankscope.db"), os.path.join(tmp, "reference.db")
        shutil.copyfile(db, ours_db)
        shutil.copyfile(ref_src, ref_db)
        store = Store.open_writable(ours_db)
        try:
            ref = Reference(package, ref_db)
            try:
                chunks = store.stats().chunks
                segments = {t: (s.count if s else None) for t, s in store.index_segments().items()}
                say(
                    f"  {chunks:,} chunks · reference: context-mode ContentStore, Node {ref.node}, SQLite {ref.sqlite} "
                    f"· rankscope: SQLite {sqlite_version()}, index segments {segments}"
                )
                for name in sets:
                    side = SideBySide(target, chunks, name)
                    measure(store, ref, queries_of(name, rounds), side)
                    report(side, say)
                    sides.append(side)
            finally:
                ref.close()
        finally:
            store.close()
        if cold:
            cold_start(package, ours_db, ref_db, cold, say)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return sides


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.versus", description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument(
        "--reference",
        required=True,
        metavar="DIR",
        help="the installed context-mode package folder (the one holding build/store.js)",
    )
    ap.add_argument("--sizes", default="1437,14370", help="comma-separated target chunk counts (default %(default)s)")
    ap.add_argument("--100k", dest="add_100k", action="store_true", help="also run 100,590 chunks")
    ap.add_argument("--rounds", type=int, default=3, help="rounds of each set's 80 queries (default %(default)s)")
    ap.add_argument(
        "--sets",
        default=",".join(QUERY_SETS),
        help="comma-separated query sets to run, of heavy and light (default %(default)s)",
    )
    ap.add_argument(
        "--cold",
        type=int,
        default=0,
        metavar="N",
        help=f"also time N rounds of {len(COLD_QUERIES)} searches as fresh processes on each side (default 0)",
    )
    ap.add_argument("--keep", default=None, metavar="DIR", help="reuse (or keep) both sides' built stores in DIR")
    ap.add_argument("--tmpdir", default=None, help="folder for the store copies (default: the system temp dir)")
    args = ap.parse_args(argv)
    sizes = parse_sizes(ap, args.sizes)
    if args.add_100k and 100_590 not in sizes:
        sizes.append(100_590)
    sets = [s.strip() for s in args.sets.split(",") if s.strip()]
    if not sets or any(s not in QUERY_SETS for s in sets):
        ap.error(f"--sets must name query sets of {', '.join(QUERY_SETS)}; got {args.sets!r}")
    if not sizes or any(s < 1 for s in sizes) or args.rounds < 1:
        ap.error("sizes and --rounds must be positive")
    root = npm_docs.find_npm_docs()
    if root is None:
        ap.error("npm's docs/content folder was not found (install Node's npm, or set RANKSCOPE_NPM_DOCS)")
    docs = npm_docs.load_docs(root)
    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
    print(
        f"rankscope vs reference, query sets {', '.join(sets)} (80 npm-docs queries each) x {args.rounds} rounds, "
        f"limit 3; load average {_loadavg()}"
    )
    sides: list[SideBySide] = []
    try:
        for target in sizes:
            sides += run_size(
                target,
                Path(args.reference),
                sys.stdout,
                rounds=args.rounds,
                keep_dir=args.keep,
                docs=docs,
                workdir=args.tmpdir,
                sets=sets,
                cold=args.cold,
            )
    except ReferenceError_ as exc:
        print(f"python -m benchmarks.versus: error: {exc}", file=sys.stderr)
        return 2
    summary(sides, print)
    print(f"load average at the end {_loadavg()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
