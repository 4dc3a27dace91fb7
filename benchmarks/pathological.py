"""Bounded work per search (issue 26, class 5): searches on the two stores
that took seconds to minutes, each about 10,000-20,000 chunks and built by
rankscope's own indexer.

Run it as a script (it is not a test)::

    python -m benchmarks.pathological                  # builds both stores in a temporary folder
    python -m benchmarks.pathological --keep /tmp/patho # keeps (and reuses) them

The stores:

* ``long chunks``: npm's docs x 7 (10,059 chunks) and two markdown files
  with CRLF line ends, 4 MB and 10 MB (the indexer's default size limit),
  each one chunk (no blank line the chunker splits at), with the query's
  words on every line. FTS5's ``highlight()`` of such a chunk takes time
  quadratic in its matches (45 s for the 4 MB one before).
* ``log lines``: about 20,000 chunks of log lines that all hold ``INFO
  request`` (the plain-text chunker's cut). The exact top-k found no rare
  phrase to prune with and tokenized every row (7.4 s before).

Per query: the traced search (``engine.search``, run cache cleared, the
median and the maximum of ``--rounds``), what the retrievers decided (how
each was ranked; long contents left unhighlighted), and FTS5's own ranking
of the same two MATCH strings (``ORDER BY rank LIMIT``, no highlight) as
the floor. Then ``rankscope search`` of the first query as a fresh process
(wall clock, start-up included). The goal: every search under a second.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Sequence

from engine import SearchParams, Store, search
from engine.pipeline.marks import Marks
from engine.pipeline.query import sanitize_porter, sanitize_trigram
from engine.pipeline.stages.retrieve import RetrieverRun

from . import npm_docs
from .search import _clear_run_cache, _loadavg, table

#: The goal of issue 26: a search on a store the indexer can build, under a second.
GOAL_MS = 1000.0
#: Words of the long chunks' lines.
RELAY_WORDS = (
    "the quorum relay forwards write batches to each replica node and waits for acknowledgements "
    "from a majority before commit"
).split()
LONG_QUERIES = ("quorum relay", "quorum", "relay acknowledgements majority", "npm publish", "workspaces")
LOG_QUERIES = ("info request", "request", "status 404", "info request orders", "api login")
PATHS = ("/api/users", "/api/orders", "/api/items", "/health", "/api/login", "/api/cart", "/static/app.js")


def crlf_markdown(nbytes: int, seed: int) -> str:
    """A markdown file of ``nbytes`` bytes (ASCII): a heading, then lines of
    :data:`RELAY_WORDS` ending in CRLF, so the chunker keeps it whole."""
    rng = random.Random(seed)
    parts = ["# Relay notes\r\n\r\n"]
    size = len(parts[0])
    i = 0
    while True:
        line = " ".join(rng.choice(RELAY_WORDS) for _ in range(12)) + f" item{i}\r\n"
        if size + len(line) > nbytes:
            break
        parts.append(line)
        size += len(line)
        i += 1
    return "".join(parts)


def log_text(lines: int, seed: int) -> str:
    """``lines`` log lines, every one holding ``INFO request``."""
    rng = random.Random(seed)
    return "".join(
        f"2026-01-01T{i // 3600 % 24:02d}:{i // 60 % 60:02d}:{i % 60:02d}Z INFO request id={rng.getrandbits(40):010x} "
        f"path={rng.choice(PATHS)} status={rng.choice((200, 200, 200, 201, 204, 404, 500))} ms={rng.randint(1, 900)}\n"
        for i in range(lines)
    )


def build_long_chunks(db: str, say) -> None:
    """npm docs x 7 and the two long CRLF files, then the end-of-run merge."""
    root = npm_docs.find_npm_docs()
    if root is None:
        raise SystemExit("npm's docs/content folder was not found (install Node's npm, or set RANKSCOPE_NPM_DOCS)")
    docs = npm_docs.load_docs(root)
    t0 = time.perf_counter()
    with Store.create(db) as store:
        for label, f in npm_docs.replica_files(docs, 7):
            store.index_text(label, f.text, "markdown", file_path=f.path)
        for mb, seed in ((4, 1), (10, 2)):
            store.index_text(f"relay/relay-{mb}mb.md", crlf_markdown(mb * 1024 * 1024 - 1024, seed), "markdown")
        store.merge_index()
    say(f"  built in {time.perf_counter() - t0:,.1f} s")


def build_log_lines(db: str, say) -> None:
    """20 log files of 18,000 lines each, as the plain-text chunker cuts them."""
    t0 = time.perf_counter()
    with Store.create(db) as store:
        for f in range(20):
            store.index_text(f"logs/app-{f:02d}.log", log_text(18_000, f), "plain")
        store.merge_index()
    say(f"  built in {time.perf_counter() - t0:,.1f} s")


def _decisions(runs: Sequence[RetrieverRun]) -> str:
    out = []
    for run in runs:
        if run.skipped:
            out.append(f"{run.name} skipped")
            continue
        how = run.ranked_by
        declined = run.ranking_fact("declined")
        if declined:
            how += f" ({declined})"
        lazy = [h for h in run.hits if isinstance(h.marked, Marks)]
        if lazy:
            computed = sum(1 for h in lazy if isinstance(h.marked, Marks) and h.marked.computed)
            how += f", {len(lazy)} long highlighted when shown ({computed} so far)"
        out.append(f"{run.name} {how}")
    return "; ".join(out)


def floor_ms(store: Store, query: str, fts_limit: int) -> float:
    """FTS5 ranking the two MATCH strings itself (``ORDER BY rank LIMIT``, rowid and rank only)."""
    t0 = time.perf_counter()
    with store.lock:
        for table_name, match in (
            ("chunks", sanitize_porter(query, "OR")),
            ("chunks_trigram", sanitize_trigram(query, "OR")),
        ):
            if match:
                store.conn.execute(
                    f"SELECT rowid, rank FROM {table_name} WHERE {table_name} MATCH ? "
                    f"AND {table_name}.rank MATCH 'bm25(5.0, 1.0)' ORDER BY rank LIMIT ?",
                    (match, fts_limit),
                ).fetchall()
    return (time.perf_counter() - t0) * 1000.0


def measure(db: str, queries: Sequence[str], rounds: int, say) -> list[float]:
    """Time every query; print one row each. Returns every search's milliseconds."""
    rows = []
    every: list[float] = []
    notes = []
    with Store.open_readonly(db) as store:
        say(f"  {store.stats().chunks:,} chunks")
        for q in queries:
            times = []
            trace = None
            for _ in range(rounds):
                _clear_run_cache(store)
                t0 = time.perf_counter()
                trace = search(store, SearchParams(q, limit=3))
                times.append((time.perf_counter() - t0) * 1000.0)
            assert trace is not None
            floor = statistics.median(floor_ms(store, q, 10) for _ in range(rounds))
            every += times
            rows.append((q, rounds, statistics.median(times), max(times), floor))
            notes.append(f"    {q}: {_decisions([trace.first.porter, trace.first.trigram])}")
    say("  search (ms; floor: FTS5 ranking the two MATCH strings itself, no highlight)")
    for line in table(("query", "n", "p50", "max", "floor p50"), rows):
        say("    " + line)
    say("  how the retrievers ranked")
    for note in notes:
        say(note)
    return every


def cli_wall(db: str, query: str) -> float:
    """Seconds for ``rankscope search QUERY --db DB`` as a fresh process."""
    t0 = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "tui.cli", "search", query, "--db", db],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return time.perf_counter() - t0


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.pathological", description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--keep", default=None, metavar="DIR", help="reuse (or keep) the two stores in DIR")
    ap.add_argument("--rounds", type=int, default=5, help="searches per query (default %(default)s)")
    args = ap.parse_args(argv)
    if args.rounds < 1:
        ap.error("--rounds must be positive")
    folder = args.keep or tempfile.mkdtemp(prefix="rankscope-patho-")
    os.makedirs(folder, exist_ok=True)

    def say(line: str = "") -> None:
        print(line, flush=True)

    say(f"bounded work per search; load average {_loadavg()}")
    every: list[float] = []
    walls = []
    for name, file, build, queries in (
        ("long chunks", "long-chunks.db", build_long_chunks, LONG_QUERIES),
        ("log lines", "log-lines.db", build_log_lines, LOG_QUERIES),
    ):
        db = os.path.join(folder, file)
        say(f"== {name} ({db})")
        if not os.path.exists(db):
            build(db, say)
        every += measure(db, queries, args.rounds, say)
        walls.append((name, queries[0], cli_wall(db, queries[0])))
    for name, query, wall in walls:
        say(f"rankscope search {query!r} on {name}: {wall:,.2f} s wall, process start-up included")
    worst = max(every)
    say(
        f"goal (issue 26: every search under {GOAL_MS / 1000:.0f} s): slowest {worst:,.0f} ms "
        f"{'met' if worst < GOAL_MS else 'NOT met'}"
    )
    say(f"load average at the end {_loadavg()}")
    if not args.keep:
        import shutil

        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
