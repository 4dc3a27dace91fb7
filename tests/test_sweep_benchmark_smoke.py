"""Smoke test of benchmarks/sweep.py at a tiny size: behaviour only, never timing."""

from __future__ import annotations

import re

from benchmarks.sweep import SWEEPS, main


def test_sweep_benchmark_reports_both_sweeps_and_their_run_sharing(capsys):
    assert main(["--size", "300", "--no-cli"]) == 0
    text = capsys.readouterr().out
    assert re.match(r"store: \S+, [\d,]+ chunks, \d+ queries", text)
    shared: dict[str, tuple[int, int]] = {}
    for label in SWEEPS:
        section = text.split(f"\n{label} (", 1)[1]
        assert ": 10 variants)" in section.splitlines()[0]
        assert re.search(r"in-process: one eval [\d.]+ s; sweep [\d.]+ s .*; sweep / separate [\d.]+", section)
        fetched, reused = re.search(r"retriever runs fetched (\d+), reused (\d+)", section).groups()
        shared[label] = int(fetched), int(reused)
        assert "commands:" not in section.split("\n\n")[0]  # --no-cli
    # over the later stages every variant shares the reference's runs: 9 of 10 reuse them all
    fetched, reused = shared["later stages"]
    assert reused >= 9 * fetched
    # five pool sizes fetch five row counts per retriever
    assert shared["pool × rerank"][0] > fetched
