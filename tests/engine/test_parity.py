"""Parity with the reference implementation: every golden case of the
parity sets (produced by running context-mode 1.0.169 itself): ``stages``,
vendored in ``tests/golden/parity/``, and ``context7``, read from
``../shared/parity/`` when present (not vendored: its corpus is
context-mode's own fixture files); without it those cases skip, saying why.

Per query id: sanitised query strings, each retriever's run (bm25 within
1e-12 relative), the fused list (scores exactly equal), pool, session filter,
trim, rerank components, fuzzy corrections and re-run, layer and final list.
Per file: chunk titles, content types, byte lengths and SHA-256.
"""

from __future__ import annotations

import hashlib
import json
import math
from functools import lru_cache

import pytest

from engine import Store, index_corpus, search, trace_to_dict
from engine.pipeline.stages import kept, topk

from ..conftest import NOT_VENDORED, PARITY_SETS, parity_set
from ..helpers import case_params

#: Every parity set, present or not (an absent one yields one skipped case per test).
SETS = sorted(PARITY_SETS)
#: Queries per set, from ../shared/parity/README.md: a set that loses cases fails.
QUERY_COUNTS = {"stages": 119, "context7": 59}


def _present(name: str) -> bool:
    return (PARITY_SETS[name] / "expected.json").is_file()


@lru_cache(maxsize=None)
def _expected(name: str) -> dict:
    return json.loads((parity_set(name) / "expected.json").read_text("utf-8"))


@lru_cache(maxsize=None)
def _store(name: str) -> Store:
    store = Store.create(":memory:")
    index_corpus(store, parity_set(name) / "corpus")
    return store


def _absent(name: str):
    reason = NOT_VENDORED.format(path=PARITY_SETS[name])
    return pytest.param(name, None, id=f"{name}/absent", marks=pytest.mark.skip(reason=reason))


def parity_cases():
    """Every golden case as ``pytest.param(set_name, case)``; an absent set
    (``context7`` without ``../shared``) is one skipped case saying why."""
    for name in SETS:
        if not _present(name):
            yield _absent(name)
            continue
        for q in _expected(name)["queries"]:
            yield pytest.param(name, q, id=f"{name}/{q['id']}")


def _files():
    for name in SETS:
        if not _present(name):
            yield _absent(name)
            continue
        for f in _expected(name)["chunks"]:
            yield pytest.param(name, f, id=f"{name}/{f['source']}")


@pytest.mark.parametrize("set_name", SETS)
def test_parity_set_complete(set_name):
    """Each set has every one of its queries (``context7`` skips when absent)."""
    assert len(_expected(set_name)["queries"]) == QUERY_COUNTS[set_name]


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=0.0)


def _compare_run(got: dict, exp: dict, where: str) -> list[str]:
    errs = []
    for key in ("porter_query", "trigram_query"):
        if got[key] != exp[key]:
            errs.append(f"{where}{key}: {got[key]!r} != {exp[key]!r}")
    for name in ("porter", "trigram"):
        g = [(h["source"], h["title"]) for h in got[name]]
        e = [(h["source"], h["title"]) for h in exp[name]]
        if g != e:
            errs.append(f"{where}{name} list differs:\n  got {g}\n  exp {e}")
        else:
            for gh, eh in zip(got[name], exp[name]):
                if not _close(gh["bm25"], eh["bm25"]):
                    errs.append(f"{where}{name} bm25 {gh['title']!r}: {gh['bm25']!r} != {eh['bm25']!r}")
    fields = ("source", "title", "score", "porter_rank", "trigram_rank", "key_collision")
    g = [tuple(x[f] for f in fields) for x in got["fused"]]
    e = [tuple(x[f] for f in fields) for x in exp["fused"]]
    if g != e:
        errs.append(f"{where}fused differs:\n  got {g}\n  exp {e}")
    for key, fields in (
        ("pool", ("source", "title", "score")),
        ("filtered", ("source", "title", "session_id")),
        ("trimmed", ("source", "title")),
    ):
        g = [tuple(x[f] for f in fields) for x in got[key]]
        e = [tuple(x[f] for f in fields) for x in exp[key]]
        if g != e:
            errs.append(f"{where}{key} differs:\n  got {g}\n  exp {e}")
    if (got["rerank"] is None) != (exp["rerank"] is None):
        errs.append(f"{where}rerank ran={got['rerank'] is not None}, expected {exp['rerank'] is not None}")
    elif exp["rerank"] is not None:
        if got["rerank"]["terms"] != exp["rerank"]["terms"]:
            errs.append(f"{where}rerank terms {got['rerank']['terms']} != {exp['rerank']['terms']}")
        fields = tuple(exp["rerank"]["results"][0].keys()) if exp["rerank"]["results"] else ()
        g = [tuple(x[f] for f in fields) for x in got["rerank"]["results"]]
        e = [tuple(x[f] for f in fields) for x in exp["rerank"]["results"]]
        if g != e:
            errs.append(f"{where}rerank differs ({fields}):\n  got {g}\n  exp {e}")
    return errs


def _force_top_k(monkeypatch) -> None:
    """:mod:`engine.pipeline.stages.topk` tried on every run whatever the
    table's size and whatever it would save; no run computed the other way
    may answer."""
    monkeypatch.setattr(topk, "MIN_ROWS", 0)
    monkeypatch.setattr(topk, "MIN_MATCHES", 0)
    monkeypatch.setattr(topk, "SEED_SHARE_MAX", 1.0)
    monkeypatch.setattr(topk, "RARE_SHARE_MAX", 1.0)
    monkeypatch.setattr(topk, "WALK_MIN_TEXTS", 10**9)


def _top_k_runs(trace) -> int:
    """Retriever runs of ``trace`` that :mod:`engine.pipeline.stages.topk` answered."""
    return sum(r.ranked_by == "top-k" for p in (trace.first, trace.fuzzy.rerun) if p for r in (p.porter, p.trigram))


def _force_kept(monkeypatch) -> None:
    """Every filtered run ranks only the rows its filters keep
    (:mod:`engine.pipeline.stages.kept`), whatever the table's size, from the first."""
    monkeypatch.setattr(kept, "MIN_ROWS", 0)
    monkeypatch.setattr(kept, "BUILD_US_PER_ROW", 0.0)


def _kept_runs(trace) -> int:
    """Retriever runs of ``trace`` that ranked only the rows their filters keep."""
    runs = (r for p in (trace.first, trace.fuzzy.rerun) if p for r in (p.porter, p.trigram))
    return sum(r.ranking_fact("kept_rows") is not None for r in runs)


@pytest.fixture(params=["fts5", "top-k", "kept"])
def ranking(request, monkeypatch):
    """Each case three times: as searches run (top-k only on large tables,
    filters as the reference tests them below 100,000 rows), with top-k
    forced (:func:`_force_top_k`), and with the filters' kept rows forced
    (:func:`_force_kept`)."""
    if request.param == "top-k":
        _force_top_k(monkeypatch)
    if request.param == "kept":
        _force_kept(monkeypatch)
    for name in SETS:  # no run computed the other way may answer
        if _present(name):
            _store(name).runs.clear()
    return request.param


@pytest.mark.parametrize(("set_name", "case"), list(parity_cases()))
def test_query_parity(set_name, case, ranking):
    trace = search(_store(set_name), case_params(case))
    got = trace_to_dict(trace)
    errs = []
    for key in ("pool_size", "fts_limit", "layer"):
        if got[key] != case[key]:
            errs.append(f"{key}: {got[key]!r} != {case[key]!r}")
    errs += _compare_run(got, case, "")
    gf, ef = got["fuzzy"], case["fuzzy"]
    if gf["ran"] != ef["ran"]:
        errs.append(f"fuzzy ran {gf['ran']} != {ef['ran']}")
    if ef["ran"]:
        if gf["words"] != ef["words"]:
            errs.append(f"fuzzy words {gf['words']} != {ef['words']}")
        fields = ("word", "corrected", "max_distance", "candidates_within")
        g = [tuple(c[f] for f in fields) for c in gf["corrections"]]
        e = [tuple(c[f] for f in fields) for c in ef["corrections"]]
        if g != e:
            errs.append(f"fuzzy corrections {g} != {e}")
        if gf["corrected_query"] != ef["corrected_query"]:
            errs.append(f"corrected_query {gf['corrected_query']!r} != {ef['corrected_query']!r}")
        if ("porter" in ef) != ("porter" in gf):
            errs.append(f"fuzzy re-run: got {'porter' in gf}, expected {'porter' in ef}")
        elif "porter" in ef:
            errs += _compare_run(gf, ef, "fuzzy.")
    fields = ("source", "title", "content_type", "rank", "session_id")
    g = [tuple(x[f] for f in fields) for x in got["final"]]
    e = [tuple(x[f] for f in fields) for x in case["final"]]
    if g != e:
        errs.append(f"final differs:\n  got {g}\n  exp {e}")
    assert not errs, f"{set_name}/{case['id']} ({case.get('why', '')}):\n" + "\n".join(errs)


@pytest.mark.parametrize(("set_name", "expected_file"), list(_files()))
def test_chunk_parity(set_name, expected_file):
    store = _store(set_name)
    rows = [r for r in store.iter_chunks() if r.source == expected_file["source"]]
    got = [
        (
            r.title,
            r.content_type,
            len(r.content.encode("utf-8", "surrogatepass")),
            hashlib.sha256(r.content.encode("utf-8", "surrogatepass")).hexdigest(),
            r.session_id,
        )
        for r in rows
    ]
    exp = [
        (c["title"], c["content_type"], c["bytes"], c["sha256"], expected_file["session_id"])
        for c in expected_file["chunks"]
    ]
    assert got == exp


@pytest.mark.parametrize("set_name", SETS)
def test_vocabulary_size(set_name):
    assert _store(set_name).stats().vocabulary == _expected(set_name)["vocabulary_size"]


def test_top_k_answered_in_forced_cases(monkeypatch):
    """The forced cases exercise top-k (it may decline many runs: one phrase,
    too few rows), so their passing says something. Searches the vendored
    set's cases itself: under pytest-xdist the parity cases run on other
    workers, so counting what they did here counted nothing."""
    _force_top_k(monkeypatch)
    store = _store("stages")
    store.runs.clear()
    try:
        answered = sum(_top_k_runs(search(store, case_params(case))) for case in _expected("stages")["queries"])
    finally:
        store.runs.clear()
    assert answered >= 10, answered


def test_kept_rows_answered_in_forced_cases(monkeypatch):
    """The forced cases rank filtered runs over the rows their filters keep,
    so their passing says something (searched here, as above)."""
    _force_kept(monkeypatch)
    store = _store("stages")
    store.runs.clear()
    store.kept_rows.clear()
    try:
        cases = _expected("stages")["queries"]
        answered = sum(_kept_runs(search(store, case_params(case))) for case in cases)
        filtered = sum(bool(c["params"]["source"] or c["params"]["content_type"]) for c in cases)
    finally:
        store.runs.clear()
        store.kept_rows.clear()
    assert filtered >= 5 and answered >= 2 * filtered - 2, (answered, filtered)
