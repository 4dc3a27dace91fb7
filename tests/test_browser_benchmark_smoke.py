"""Smoke test of benchmarks/browser.py: it drives the real browser in a
pseudo-terminal and prints its figures. Behaviour only, never timing."""

from __future__ import annotations

import contextlib
import io
import re

from engine import Store, index_corpus

from .conftest import SAMPLE_CORPUS


def test_keystroke_to_results_prints_its_figures_and_the_querys_rarity(tmp_path):
    from benchmarks.browser import main

    db = tmp_path / "sample.db"
    with Store.create(db) as store:
        index_corpus(store, SAMPLE_CORPUS)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["--runs", "1", "--no-first-paint", "--store", str(db), "--query", "cache", "--cols", "80"]) == 0
    text = out.getvalue()
    assert re.search(r"keystroke to results, 'cache' on .*\(\d+ of \d+ chunks match, [\d.]+%; first result ", text)
    assert re.search(r"the engine alone: [\d.,]+ ms\): p50 [\d,]+ ms, min [\d,]+, max [\d,]+ \(1 runs\)", text)
    assert re.search(r"goal \(issue 25: under 0\.3 s, debounce included\): (met|NOT met)", text)
