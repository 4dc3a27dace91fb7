"""Smoke test of benchmarks/counterfactual.py at a tiny size: behaviour only, never timing."""

from __future__ import annotations

import io

from benchmarks.counterfactual import PIN_KINDS, run


def test_counterfactual_benchmark_reports_every_pin_kind_it_found(tmp_path):
    out = io.StringIO()
    (res,) = run(sizes=[400], queries=8, out=out, workdir=str(tmp_path))
    text = out.getvalue()
    for section in ("== size 400 chunks", "store", "search", "counterfactual", "cold p50", "warm p50", "re-runs"):
        assert section in text, section
    assert len(res.search_ms) == 8
    assert set(res.pins) <= set(PIN_KINDS) and len(res.pins["random"]) == 8
    for kind, pins in res.pins.items():
        assert f"\n  {kind} " in text
        assert all(outcome in ("change", "returned", "no-term", "no-single-change") for *_, outcome in pins)
