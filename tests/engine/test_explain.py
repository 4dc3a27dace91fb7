"""engine.lab.explain: a retriever's bm25 phrase by phrase, exactly FTS5's,
and "why is X above Y" consistent with the trace's positions.

The exactness is proven on every golden case (every parity set present:
``stages`` always, ``context7`` with ``../shared``) and on a stress table
(repeated and overlapping instances, multi-token phrases, title hits,
diacritics): for every chunk each retriever returned, the parts added in
query order give FTS5's ``bm25()`` to the last bit, and each phrase's
``rows_matching`` is both FTS5's ``count(*)`` and a count made here by
tokenizing every row.
"""

from __future__ import annotations

import itertools
import random
import struct
from functools import lru_cache

import pytest

from engine import SearchParams, Store, search
from engine.lab.explain import (
    decide,
    explain_chunk,
    explain_chunks,
    explain_versus,
    explained_run,
    retriever_anatomy,
)
from engine.lab.why import ChunkNotFoundError
from engine.pipeline.query import sanitize_porter, sanitize_trigram
from engine.pipeline.stages import bm25
from engine.pipeline.stages.retrieve import TABLES
from engine.pipeline.table import base_id, depth, run_stage_ids, stage
from engine.pipeline.trace import Run
from engine.store import sql

from ..helpers import case_params, index_zebra
from .test_parity import _store, parity_cases
from .test_topk import _build, _queries


def _bits(x: float) -> bytes:
    return struct.pack("<d", x)


def _left_fold(parts: list[float]) -> float:
    total = 0.0
    for p in parts:
        total = total + p
    return total


@lru_cache(maxsize=None)
def _tokenized(conn_id: int, table: str) -> tuple[tuple[tuple[str, ...], tuple[str, ...]], ...]:
    """Every row of ``table`` as (title tokens, content tokens), tokenized here."""
    conn = _CONNS[conn_id]
    tok = bm25.tokenizer_for(conn, table)
    rows = conn.execute(f'SELECT CAST(title AS BLOB), CAST(content AS BLOB) FROM "{table}"').fetchall()
    return tuple(
        (tuple(bm25.document_tokens(tok, bytes(t or b""))), tuple(bm25.document_tokens(tok, bytes(c or b""))))
        for t, c in rows
    )


_CONNS: dict[int, sql.Connection] = {}


def _rows_with(conn: sql.Connection, table: str, phrase: str) -> int:
    """Rows holding ``phrase``, counted by tokenizing every row (no FTS5 index)."""
    _CONNS[id(conn)] = conn
    toks = bm25.phrase_tokens(bm25.tokenizer_for(conn, table), phrase)
    if not toks:
        return 0
    return sum(
        1
        for title, content in _tokenized(id(conn), table)
        if bm25.count_instances(list(title), toks) or bm25.count_instances(list(content), toks)
    )


def _check_run(conn: sql.Connection, run: Run, counts: dict[str, int]) -> None:
    for name in ("porter", "trigram"):
        r = run.record(name)
        if r is None or r.skipped or r.error:
            continue
        for hit in r.hits:
            a = retriever_anatomy(conn, name, r.query, hit.rowid, hit.rank)
            assert a.unsupported is None, (name, hit.rowid, a.unsupported)
            parts = [p.part for p in a.phrases]
            # the value the retriever ranked by, FTS5's value read with the parts, and the parts' sum
            assert _bits(a.bm25) == _bits(hit.bm25), (name, r.query, hit.rowid)
            assert _bits(-1.0 * _left_fold(parts)) == _bits(hit.bm25), (name, r.query, hit.rowid, parts)
            assert a.exact
            assert len(a.phrases) == len(bm25.phrases_of(r.query))
            table = TABLES[name]
            for p in a.phrases:
                fts5 = conn.execute(
                    f'SELECT count(*) FROM "{table}" WHERE "{table}" MATCH ?', (bm25.match_phrase(p.phrase),)
                ).fetchone()[0]
                assert p.rows_matching == fts5 == _rows_with(conn, table, p.phrase), (name, p.phrase)
                assert p.weighted_tf == 5.0 * p.title_hits + 1.0 * p.content_hits
                assert (p.part > 0) == (p.weighted_tf > 0)
            counts["chunks"] += 1
            counts["phrases"] += len(a.phrases)


@pytest.mark.parametrize(("set_name", "case"), list(parity_cases()))
def test_parts_add_up_to_fts5_bm25_on_every_golden_case(set_name, case):
    store = _store(set_name)
    trace = search(store, case_params(case))
    counts = {"chunks": 0, "phrases": 0}
    with store.using() as conn:
        for run in (trace.first, trace.fuzzy.rerun):
            if run is not None:
                _check_run(conn, run, counts)
    if trace.first.fusion.candidates:
        assert counts["chunks"] > 0


def test_parts_add_up_on_a_stress_table():
    """Random queries over a table built to stress the counting (a word in
    most rows: idf floored at 1e-6; repeats, overlapping trigrams, phrases of
    several tokens, diacritics, title hits): every matching row, both tables."""
    conn = sql.connect(":memory:")
    _build(conn, 400, seed=3)
    checked = floored = 0
    for q in _queries(5, 60):
        for name, sanitize in (("porter", sanitize_porter), ("trigram", sanitize_trigram)):
            match = sanitize(q, "OR")
            if not match:
                continue
            t = TABLES[name]
            for rowid, want in conn.execute(
                f"SELECT rowid, bm25({t}, 5.0, 1.0) FROM {t} WHERE {t} MATCH ? LIMIT 40", (match,)
            ).fetchall():
                a = retriever_anatomy(conn, name, match, rowid)
                assert _bits(-1.0 * _left_fold([p.part for p in a.phrases])) == _bits(want), (q, name, rowid)
                assert _bits(a.bm25) == _bits(want)
                floored += sum(p.idf == bm25.IDF_FLOOR for p in a.phrases)
                checked += 1
    assert checked > 1000 and floored > 0, (checked, floored)


def test_a_row_that_does_not_match_has_no_bm25_and_no_parts(store):
    index_zebra(store)
    a = retriever_anatomy(store.conn, "porter", sanitize_porter("zebra", "OR"), 3)
    assert a.bm25 is None and not a.exact
    assert [(p.phrase, p.title_hits, p.content_hits, p.part) for p in a.phrases] == [("zebra", 0, 0, 0.0)]
    assert a.phrases[0].rows_matching == 2 and a.rows == 6
    skipped = retriever_anatomy(store.conn, "trigram", "", 1)
    assert skipped.phrases == () and skipped.bm25 is None and skipped.rows == 6


def test_anatomy_of_a_returned_chunk(store):
    index_zebra(store)
    trace = search(store, SearchParams("zebra crossing", limit=2))
    a = explain_chunk(store, trace, 1)
    assert a.chunk_id == "a.md::Zebra crossing guide"
    porter = a.retriever("porter")
    assert porter is not None and porter.rank == trace.first.porter.hits[0].rank
    # the content repeats the heading: "# Zebra crossing guide" then "zebra <40 lorem> crossing"
    assert [(p.phrase, p.title_hits, p.content_hits) for p in porter.phrases] == [("zebra", 1, 2), ("crossing", 1, 2)]
    assert [p.weighted_tf for p in porter.phrases] == [7.0, 7.0]
    assert porter.row_tokens == 3 + 3 + 42 and porter.avg_tokens == porter.total_tokens / porter.rows
    assert a.steps == trace.first.path(1).steps
    d = a.to_dict()
    assert d["chunk"] == {"rowid": 1, "id": "a.md::Zebra crossing guide"}
    assert d["stages"][-1] == {"stage": "final", "position": a.final}
    p = d["retrievers"]["porter"]
    assert p["k1"] == 1.2 and p["b"] == 0.75 and p["weights"] == {"title": 5.0, "content": 1.0}
    assert p["bm25"] == -_left_fold([x["part"] for x in p["phrases"]])
    with pytest.raises(ChunkNotFoundError):
        explain_chunk(store, trace, 999)


# ─── X versus Y ──────────────────────────────────────────────────────────


def _above(run: Run, x: int, y: int) -> int | None:
    """Which of ``x``, ``y`` ends above the other, from the paths alone:
    the better final position; the one in the answer; the one that got
    further; at the same exit stage, the better position where both last
    held one. ``None`` when neither was retrieved or neither reached fusion."""
    px, py = run.path(x), run.path(y)
    if px is None and py is None:
        return None
    if py is None:
        return x
    if px is None:
        return y
    fx, fy = px.steps[-1][1], py.steps[-1][1]
    if fx is not None or fy is not None:
        return x if fy is None or (fx is not None and fx < fy) else y
    dx, dy = depth(px.exit.stage), depth(py.exit.stage)
    if dx != dy:
        return x if dx > dy else y
    both = [(a, b) for (sid, a), (_, b) in zip(px.steps, py.steps) if stage(sid).kind != "retriever" and a and b]
    if not both:
        return None
    a, b = both[-1]
    return x if a < b else y


def _holds(run: Run, sid: str, above: int, below: int) -> bool | None:
    pa = run.path(above).position(sid) if run.path(above) else None
    pb = run.path(below).position(sid) if run.path(below) else None
    if pa is None and pb is None:
        return None
    return pb is None or (pa is not None and pa < pb)


def _check_decision(store: Store, trace, x: int, y: int) -> str:
    """Check :func:`decide` for ``x`` against ``y`` with rules read from the
    paths alone; return the deciding stage."""
    run = explained_run(trace)
    ax, ay = explain_chunks(store, trace, [x, y])
    d = decide(run, ax, ay)
    want = _above(run, x, y)
    assert d.above == want, (x, y, d)
    if want is None:
        return d.stage
    below = y if want == x else x
    assert d.below == below
    # the stage that removed the lower chunk decides when it left first
    gone = {r: run.path(r).exit if run.path(r) else None for r in (want, below)}
    if gone[below] is not None and (gone[want] is None or depth(gone[want].stage) > depth(gone[below].stage)):
        assert d.stage == gone[below].stage
        assert d.exits[0 if below == x else 1] == gone[below]
    else:
        assert d.stage == d.order_since
    # order_since: from there on the order is final; just before it, it was not
    chain = [s for s in run_stage_ids(run) if stage(s).kind != "retriever"]
    since = d.order_since
    assert since is not None
    if base_id(since) in ("porter", "trigram", "retrieve"):
        assert all(_holds(run, s, want, below) in (True, None) for s in chain)
        agree = [r for r in ("porter", "trigram") if _holds(run, run.prefix + r, want, below) is True]
        assert agree and all(_holds(run, run.prefix + r, want, below) in (True, None) for r in ("porter", "trigram"))
        assert base_id(since) == (agree[0] if len(agree) == 1 else "retrieve")
        if d.stage == since:
            assert {r.retriever for r in d.retrievers} == set(agree)
        return d.stage
    i = chain.index(since)
    assert _holds(run, chain[i], want, below) is True
    assert all(_holds(run, s, want, below) in (True, None) for s in chain[i:])
    if i > 0:
        assert _holds(run, chain[i - 1], want, below) is False
    else:
        assert any(_holds(run, run.prefix + r, want, below) is False for r in ("porter", "trigram"))
    return d.stage


@pytest.mark.parametrize(("set_name", "case"), list(parity_cases()))
def test_versus_names_the_deciding_stage_consistently_with_the_paths(set_name, case):
    store = _store(set_name)
    trace = search(store, case_params(case))
    run = explained_run(trace)
    rowids = [p.rowid for p in run.paths][:8]
    for x, y in itertools.permutations(rowids, 2):
        _check_decision(store, trace, x, y)


def test_versus_covers_every_kind_of_decision():
    """Over the ``stages`` set's cases, the deciding stages include the
    retrievers, fusion, the cuts and the rerank."""
    store = _store("stages")
    seen: set[str] = set()
    for param in parity_cases():
        set_name, case = param.values
        if set_name != "stages":
            continue
        trace = search(store, case_params(case))
        run = explained_run(trace)
        rowids = [p.rowid for p in run.paths]
        rng = random.Random(case["id"])
        for x, y in rng.sample(list(itertools.permutations(rowids, 2)), min(6, len(rowids) * (len(rowids) - 1))):
            seen.add(base_id(_check_decision(store, trace, x, y)))
    assert {"fusion", "rerank", "pool", "filter", "trim"} <= seen, seen
    assert seen & {"porter", "trigram", "retrieve"}, seen


def test_versus_flip_is_proven_by_rerunning(store):
    """``Beta`` (row 2) is fused #2 but its boost puts it first: the rerank
    decides, and rerank off would put row 1 above it."""
    index_zebra(store)
    trace = search(store, SearchParams("zebra crossing", limit=2))
    assert [r.candidate.rowid for r in trace.final] == [2, 1]
    v = explain_versus(store, trace, 1, 2)
    assert v.decision.stage == "rerank" and (v.decision.above, v.decision.below) == (2, 1)
    assert v.decision.rerank is not None and v.decision.rerank[1].boost > v.decision.rerank[0].boost
    flip = v.would_flip_with()
    assert flip is not None and flip["positions"]["chunk"] < flip["positions"]["vs"]
    rerun = search(store, v.flip.change.params)
    got = {r.candidate.rowid: r.position for r in rerun.final}
    assert got[1] < got[2]
    d = v.to_dict()
    assert d["decided_by"]["stage"] == "rerank" and d["would_flip_with"] == flip
    with pytest.raises(ValueError, match="same chunk"):
        explain_versus(store, trace, 1, 1)
