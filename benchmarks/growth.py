"""Growth benchmark: does the work grow like its input (issue 13, item 5)?

Run it as a script (it is not a test)::

    python -m benchmarks.growth            # long line 4 / 16 MB, re-index 1,000 / 4,000 files
    python -m benchmarks.growth --quick    # 1 / 4 MB and 250 / 1,000 files

Two measurements, each at a size and 4 times that size, printing the
wall-clock seconds and the ratio (about 4 when linear, about 16 when
quadratic):

* ``long line``: :func:`engine.store.chunking.chunk_plain_text` of a single line
  of N MB (plain text, byte-capped split into 4,096-byte pieces);
* ``full re-index``: ``index_paths(..., incremental=False)`` of N small
  markdown files into an on-disk store that already holds them (every file
  replaces its previous chunks), as ``rankscope index --full`` does.

Timings include whatever else the machine is doing; compare ratios, and run
it twice when they look odd. Each file is committed (and fsynced) on its
own, which dominates small runs on a disk: ``--workdir /dev/shm`` measures
the work itself.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import TextIO


def _ratio_line(name: str, small: float, large: float, n_small: str, n_large: str, out: TextIO) -> None:
    out.write(
        f"{name:<15} {n_small:>11}: {small:7.2f} s   {n_large:>11}: {large:7.2f} s   "
        f"ratio {large / max(small, 1e-9):5.1f}  (linear ≈ 4, quadratic ≈ 16)\n"
    )


def long_line_seconds(megabytes: int) -> float:
    """Seconds to chunk one line of ``megabytes`` MB of words."""
    from engine.store.chunking import chunk_plain_text

    text = ("lorem ipsum dolor sit amet " * (megabytes * 1024 * 1024 // 27 + 1))[: megabytes * 1024 * 1024]
    start = time.perf_counter()
    chunks = chunk_plain_text(text)
    elapsed = time.perf_counter() - start
    assert "".join(c.content for c in chunks) == text
    return elapsed


def full_reindex_seconds(files: int, workdir: str) -> float:
    """Seconds for a full re-index of ``files`` markdown files already in
    the store (the first, fresh index is not timed)."""
    from engine import Store, index_paths

    folder = Path(workdir) / f"corpus-{files}"
    folder.mkdir()
    for i in range(files):
        (folder / f"f{i:06d}.md").write_text(f"# Title {i}\nsome words about item {i} and zebra{i % 50}\n", "utf-8")
    db = Path(workdir) / f"s-{files}.db"
    with Store.create(db) as store:
        index_paths(store, [folder])
        start = time.perf_counter()
        index_paths(store, [folder], incremental=False)
        return time.perf_counter() - start


def run(quick: bool = False, out: TextIO = sys.stdout, workdir: str | None = None) -> dict[str, tuple[float, float]]:
    """Run both measurements; returns ``{name: (small seconds, large seconds)}``."""
    line_mb = (1, 4) if quick else (4, 16)
    files = (250, 1000) if quick else (1000, 4000)
    results: dict[str, tuple[float, float]] = {}
    a, b = long_line_seconds(line_mb[0]), long_line_seconds(line_mb[1])
    results["long line"] = (a, b)
    _ratio_line("long line", a, b, f"{line_mb[0]} MB", f"{line_mb[1]} MB", out)
    out.flush()
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        a, b = full_reindex_seconds(files[0], tmp), full_reindex_seconds(files[1], tmp)
    results["full re-index"] = (a, b)
    _ratio_line("full re-index", a, b, f"{files[0]} files", f"{files[1]} files", out)
    return results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes (a smoke run)")
    parser.add_argument(
        "--workdir",
        default=None,
        help="folder for the stores (default: the temp folder; /dev/shm keeps fsync out of the figures)",
    )
    args = parser.parse_args(argv)
    sys.stdout.write(f"python {sys.version.split()[0]} on {os.cpu_count()} CPUs\n")
    run(quick=args.quick, workdir=args.workdir)


if __name__ == "__main__":
    main()
