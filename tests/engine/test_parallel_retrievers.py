"""Porter and trigram run at once on two connections of a file store
(engine/pipeline/stages/retrieve.py ``retrieve_pair``): same answers as one after the other,
stage by stage, each run timed on its own, and one snapshot for both."""

from __future__ import annotations

import json
import threading
import time
from functools import lru_cache

import os

import pytest

import engine.pipeline.runcache as runcache_mod
from engine import SearchParams, Store, index_corpus, search, trace_to_dict
from engine.pipeline.stages.retrieve import LONGER_RETRIEVER

from ..conftest import SAMPLE_CORPUS, parity_set
from ..helpers import case_params

#: The retriever run on the calling thread (the longer one) and the one handed to a worker.
HERE = LONGER_RETRIEVER
AWAY = "porter" if HERE == "trigram" else "trigram"


def _answer(trace) -> dict:
    d = trace_to_dict(trace)
    d.pop("timings_ms", None)
    d["refresh"].pop("method")  # the first search of a store scans, later ones read the watch
    return d


@pytest.fixture
def spy(monkeypatch):
    """Records the thread and connection of every retriever statement."""
    calls: list[tuple[str, str, object]] = []
    real = runcache_mod.retrieve  # every pipeline statement goes through the run cache

    def wrapped(conn, schema, request, **kwargs):
        calls.append((request.retriever, threading.current_thread().name, conn))
        return real(conn, schema, request, **kwargs)

    monkeypatch.setattr(runcache_mod, "retrieve", wrapped)
    return calls


@lru_cache(maxsize=None)
def _memory_store(name: str) -> Store:
    s = Store.create(":memory:")
    index_corpus(s, parity_set(name) / "corpus")
    return s


@pytest.mark.parametrize("name", ["stages", "context7"])
def test_every_parity_case_answers_the_same_in_parallel(name, tmp_path, spy):
    """The golden cases on an on-disk store (retrievers in parallel) give the
    same trace, stage by stage, as on the in-memory store test_parity checks
    against the reference (sequential): bm25 and fused scores compared with ==."""
    disk = Store.create(tmp_path / "p.db")
    disk.parallel = True  # a small store would run them one after the other
    index_corpus(disk, parity_set(name) / "corpus")
    memory = _memory_store(name)
    queries = json.loads((parity_set(name) / "expected.json").read_text("utf-8"))["queries"]
    try:
        for q in queries:
            params = case_params(q)
            disk.runs.clear()  # every case pays for its statements (no run from an earlier case)
            memory.runs.clear()
            assert _answer(search(disk, params)) == _answer(search(memory, params)), q["id"]
        main = disk.conn
    finally:
        disk.close()
    on_disk = [c for c in spy if c[2] is not memory.conn]
    away = [c for c in on_disk if c[0] == AWAY]
    assert away and all(c[2] is not main for c in away)  # on the second connection, same snapshot
    assert all(c[2] is main for c in on_disk if c[0] == HERE)


def test_a_long_first_statement_runs_beside_the_second(tmp_path, monkeypatch):
    """While the longer retriever's statement runs on the calling thread
    (trigram's), the other's runs in a worker thread on the second
    connection: the two intervals overlap."""
    s = Store.create(tmp_path / "s.db")
    s.parallel = True
    index_corpus(s, SAMPLE_CORPUS)
    spans: dict[str, tuple[float, float, str]] = {}
    real = runcache_mod.retrieve  # every pipeline statement goes through the run cache
    away_started = threading.Event()

    def slow(conn, schema, request, **kwargs):
        name = request.retriever
        start = time.perf_counter()
        if name == HERE:
            away_started.wait(10)  # a long statement (GIL released, as SQLite releases it)
        else:
            away_started.set()
        run = real(conn, schema, request, **kwargs)
        spans[name] = (start, time.perf_counter(), threading.current_thread().name)
        return run

    monkeypatch.setattr(runcache_mod, "retrieve", slow)
    try:
        t = search(s, SearchParams("install deploy"))
    finally:
        s.close()
    assert t.final
    assert spans[AWAY][2].startswith("rankscope-retriever")
    assert spans[HERE][2] == threading.current_thread().name
    assert spans[AWAY][0] < spans[HERE][1] and spans[HERE][0] < spans[AWAY][1]


def test_a_browser_worker_connection_reads_in_parallel_too(sample_db, spy):
    with Store.open_readonly(sample_db) as s:
        s.parallel = True
        with s.thread_connection() as conn:
            t = search(s, SearchParams("install deploy"), conn=conn)
        assert t.final
    used = {c[0]: c[2] for c in spy}
    assert used[HERE] is conn and used[AWAY] is not conn
    assert used[AWAY].uri_flags == conn.uri_flags  # the second connection opened like the worker's


def test_each_run_is_timed_on_its_own(sample_db):
    with Store.open_readonly(sample_db) as s:
        start = time.perf_counter()
        t = search(s, SearchParams("install deploy configuration"))
        wall = (time.perf_counter() - start) * 1000.0
    timings = dict(t.timings_ms)
    assert 0 < t.first.porter.elapsed_ms <= wall and 0 < t.first.trigram.elapsed_ms <= wall
    assert timings["porter"] == t.first.porter.elapsed_ms and timings["trigram"] == t.first.trigram.elapsed_ms


def test_a_commit_between_the_two_snapshots_falls_back_to_one_connection(tmp_path, spy, monkeypatch):
    s = Store.create(tmp_path / "s.db")
    s.parallel = True
    index_corpus(s, SAMPLE_CORPUS)
    try:
        expected = _answer(search(s, SearchParams("install deploy")))
        s.runs.clear()
        spy.clear()
        versions = iter(range(1_000_000))
        # every read: "someone committed"
        monkeypatch.setattr(s.connections, "data_version", lambda: ("file", 0, next(versions)))
        t = search(s, SearchParams("install deploy"))
        assert _answer(t) == expected
        assert {c[1] for c in spy} == {threading.current_thread().name}  # both on the search's own connection
    finally:
        s.close()


def test_in_memory_stores_run_one_after_the_other(spy):
    s = Store.create(":memory:")
    index_corpus(s, SAMPLE_CORPUS)
    search(s, SearchParams("install deploy"))
    assert [c[0] for c in spy] == ["porter", "trigram"]
    assert {c[1] for c in spy} == {threading.current_thread().name}


def test_auto_runs_them_at_once_only_for_a_large_enough_file_and_a_free_core(tmp_path, spy, monkeypatch):
    import engine.store.parallel as store_mod

    s = Store.create(tmp_path / "s.db")
    index_corpus(s, SAMPLE_CORPUS)
    monkeypatch.setattr(store_mod, "core_free", lambda: True)
    try:
        search(s, SearchParams("install deploy"))
        assert all(c[2] is s.conn for c in spy)  # auto: a small file
        spy.clear()
        s.runs.clear()
        monkeypatch.setattr(store_mod, "PARALLEL_MIN_BYTES", 1)
        search(s, SearchParams("install deploy"))
        assert {c[0]: c[2] is s.conn for c in spy} == {HERE: True, AWAY: False}  # auto: a "large" file
        spy.clear()
        s.runs.clear()
        monkeypatch.setattr(store_mod, "core_free", lambda: False)
        search(s, SearchParams("install deploy"))
        assert all(c[2] is s.conn for c in spy)  # auto: a busy machine
    finally:
        s.close()


class Clock:
    """Fake readings for core_free: wall time, machine busy seconds, own CPU seconds."""

    def __init__(self, monkeypatch, cores=2, busy: float | None = 100.0):
        import engine.store.parallel as store_mod

        self.now, self.busy, self.own = 1000.0, busy, 5.0
        monkeypatch.setattr(store_mod, "_cpu_seen", (float("-inf"), None, 0.0, True))
        monkeypatch.setattr(store_mod.os, "cpu_count", lambda: cores)
        monkeypatch.setattr(store_mod.time, "monotonic", lambda: self.now)
        monkeypatch.setattr(store_mod.time, "process_time", lambda: self.own)
        monkeypatch.setattr(store_mod, "_system_busy_seconds", lambda: self.busy)

    def advance(self, seconds: float, others: float, own: float = 0.0) -> None:
        """``seconds`` pass; other processes use ``others`` cores, this one ``own``."""
        self.now += seconds
        self.own += own * seconds
        if self.busy is not None:
            self.busy += (others + own) * seconds


@pytest.mark.parametrize(
    ("cores", "others", "own", "free"),
    [
        (2, 0.0, 0.0, True),
        (2, 0.6, 0.0, True),
        (2, 0.0, 1.9, True),  # this process's own two threads do not count
        (2, 1.2, 0.0, False),
        (2, 2.0, 0.0, False),
        (4, 2.5, 1.0, True),
        (4, 3.1, 0.0, False),
        (1, 0.0, 0.0, False),
    ],
)
def test_core_free_counts_only_other_processes(monkeypatch, cores, others, own, free):
    import engine.store.parallel as store_mod

    clock = Clock(monkeypatch, cores)
    assert store_mod.core_free() is (cores >= 2)  # the first reading: nothing to compare yet
    clock.advance(2.0, others, own)
    assert store_mod.core_free() is free
    clock.advance(0.5, 0.0 if not free else 2.0 * cores)  # within a second: the last answer stands
    assert store_mod.core_free() is free


def test_core_free_falls_back_on_the_load_average(monkeypatch):
    import engine.store.parallel as store_mod

    Clock(monkeypatch, 2, busy=None)
    monkeypatch.setattr(store_mod.os, "getloadavg", lambda: (0.4, 0.0, 0.0))
    assert store_mod.core_free() is True
    Clock(monkeypatch, 2, busy=None)
    monkeypatch.setattr(store_mod.os, "getloadavg", lambda: (1.6, 0.0, 0.0))
    assert store_mod.core_free() is False

    def no_load():
        raise OSError("no load average here")

    Clock(monkeypatch, 2, busy=None)
    monkeypatch.setattr(store_mod.os, "getloadavg", no_load)
    assert store_mod.core_free() is False


def test_system_busy_seconds_reads_proc_stat():
    import engine.store.parallel as store_mod

    busy = store_mod._system_busy_seconds()
    if not os.path.exists("/proc/stat"):
        assert busy is None
    else:
        assert busy is not None and busy > 0


def test_side_connections_are_reused_and_closed(tmp_path):
    s = Store.create(tmp_path / "s.db")
    s.parallel = True
    index_corpus(s, SAMPLE_CORPUS)
    for q in ("install", "deploy", "configuration"):
        search(s, SearchParams(q))
    readers = [c for idle in s.connections._readers.values() for c in idle]
    assert len(readers) == 1  # one reader, reused by every search
    s.close()
    assert s.connections._readers == {} and s.connections._sentinel is None


# ─── FTS5 orders the matches: the same rows as the reference's statement ───


def _rows(conn, schema, retriever, match, fts_limit, source, source_match, content_type, reference, bounded=True):
    from engine.pipeline.stages.retrieve import build_sql, like_pattern

    statement, names = build_sql(
        retriever, schema, source, source_match, content_type, reference=reference, bounded=bounded
    )
    values = {
        "match": match,
        "source": source if source_match == "exact" else like_pattern(source or ""),
        "content_type": content_type,
        "limit": fts_limit,
    }
    return conn.execute(statement, [values[n] for n in names]).fetchall()


@pytest.mark.parametrize("bounded", [True, False])
@pytest.mark.parametrize("name", ["stages", "context7"])
def test_fts5_ranked_statement_returns_the_reference_statements_rows(name, bounded):
    """Every golden query, both retrievers, at the pipeline's row limit and at
    a large one (ties included): rowids, bm25 values, titles, contents and
    highlights equal (==) to the reference's ORDER BY bm25() statement."""
    from engine.pipeline.query import sanitize_porter, sanitize_trigram

    s = _memory_store(name)
    queries = json.loads((parity_set(name) / "expected.json").read_text("utf-8"))["queries"]
    compared = 0
    for q in queries:
        p = case_params(q)
        for retriever, sanitize in (("porter", sanitize_porter), ("trigram", sanitize_trigram)):
            match = sanitize(p.query, "OR")
            if not match:
                continue
            for limit in (10, 1000):
                args = (s.conn, s.schema, retriever, match, limit, p.source, p.source_match, p.content_type)
                try:
                    ours = _rows(*args, reference=False, bounded=bounded)
                except Exception as exc:  # a query error must be the same error
                    with pytest.raises(type(exc)):
                        _rows(*args, reference=True)
                    continue
                assert ours == _rows(*args, reference=True), (q["id"], retriever, limit)
                compared += 1
    assert compared > len(queries)


@pytest.mark.parametrize("name", ["stages", "context7"])
def test_every_parity_case_answers_the_same_ranked_in_two_halves(name, tmp_path, monkeypatch):
    """FTS5's ranking split at the middle rowid, one half offered to the other
    retriever's thread, the halves merged by (bm25, rowid), gives every golden
    case's trace, bm25 bits included: as on the in-memory store, which runs
    each statement whole."""
    import engine.pipeline.stages.retrieve as retrieve_mod
    from engine.pipeline.stages import topk

    monkeypatch.setattr(retrieve_mod, "SPLIT_MIN_MATCHES", 0)  # split every statement
    monkeypatch.setattr(retrieve_mod, "BOUNDED_MIN_MATCHES", 0)  # each half a bounded sort
    monkeypatch.setattr(topk, "MIN_ROWS", 10**9)  # FTS5 ranks every run
    disk = Store.create(tmp_path / "h.db")
    disk.parallel = True
    index_corpus(disk, parity_set(name) / "corpus")
    memory = _memory_store(name)
    queries = json.loads((parity_set(name) / "expected.json").read_text("utf-8"))["queries"]
    halves = helped = 0
    try:
        for q in queries:
            params = case_params(q)
            disk.runs.clear()
            memory.runs.clear()
            got, want = _answer(search(disk, params)), _answer(search(memory, params))
            halves += sum(r.get("halves", 0) == 2 for r in got["ranking"].values())
            helped += sum(r.get("half_helped", False) for r in got["ranking"].values())
            for d in (got, want, got["fuzzy"], want["fuzzy"]):
                d.pop("ranking", None)
            assert got == want, q["id"]
    finally:
        disk.close()
    assert halves > len(queries), halves  # most statements ran in halves (filters included)
    print(f"{halves} statements in halves, {helped} with a half run by the other thread")


def _reference_answers(name: str) -> list[dict]:
    """Every golden case's answer on the in-memory store as searches run
    (a small store: top-k declines before counting anything)."""
    reference = _memory_store(name)
    out = []
    for q in json.loads((parity_set(name) / "expected.json").read_text("utf-8"))["queries"]:
        reference.runs.clear()
        out.append(_answer(search(reference, case_params(q))))
    return out


def _assert_answers_as_reference(name: str, wanted: list[dict]) -> None:
    """Every golden case on a fresh in-memory store, with whatever is
    patched now, answers as ``wanted`` (ranking facts aside)."""
    store = Store.create(":memory:")  # its own: the reference's run cache must not answer for it
    index_corpus(store, parity_set(name) / "corpus")
    queries = json.loads((parity_set(name) / "expected.json").read_text("utf-8"))["queries"]
    for q, want in zip(queries, wanted):
        got = _answer(search(store, case_params(q)))
        for d in (got, want, got["fuzzy"], want["fuzzy"]):
            d.pop("ranking", None)
        assert got == want, q["id"]


@pytest.mark.parametrize("bounded", [0, 10**9])
@pytest.mark.parametrize("name", ["stages", "context7"])
def test_every_parity_case_answers_the_same_without_its_unmatched_phrases(name, bounded, monkeypatch):
    """Top-k made to count every run's phrases and then decline: FTS5 ranks
    the query without the phrases that match no row (a typo beside a real
    word), bounded sort or not, and every golden case's trace is the one the
    full query gives, bm25 bits and highlights included."""
    import engine.pipeline.stages.retrieve as retrieve_mod
    from engine.pipeline.stages import topk

    wanted = _reference_answers(name)
    monkeypatch.setattr(topk, "MIN_ROWS", 0)
    monkeypatch.setattr(topk, "MIN_MATCHES", 10**9)  # counted, then declined: few-matches
    monkeypatch.setattr(retrieve_mod, "BOUNDED_MIN_MATCHES", bounded)
    dropped: list[str] = []
    real = retrieve_mod.without_unmatched

    def spy(match: str, phrase_rows: tuple[int, ...]) -> str:
        out = real(match, phrase_rows)
        if out != match:
            dropped.append(match)
        return out

    monkeypatch.setattr(retrieve_mod, "without_unmatched", spy)
    _assert_answers_as_reference(name, wanted)
    assert dropped, "no golden query has a phrase that matches nothing"


@pytest.mark.parametrize("name", ["stages", "context7"])
def test_every_parity_case_answers_the_same_when_one_phrase_is_declined_uncounted(name, monkeypatch):
    """As on a large table: a query of one multi-token phrase (a trigram word)
    is declined without counting its rows and ranked by the bounded sort;
    every golden case answers as the reference's statements do."""
    from engine.pipeline.stages import topk

    wanted = _reference_answers(name)
    monkeypatch.setattr(topk, "MIN_ROWS", 0)
    monkeypatch.setattr(topk, "UNCOUNTED_ROWS", 0)
    uncounted: list[str] = []
    real = topk.top_k

    def spy(conn, table, match, k, **kwargs):
        try:
            return real(conn, table, match, k, **kwargs)
        except topk.Declined as declined:
            if declined.large:
                uncounted.append(match)
            raise

    monkeypatch.setattr(topk, "top_k", spy)
    _assert_answers_as_reference(name, wanted)
    assert uncounted, "no golden query is one trigram word"


def _halves_store(tmp_path) -> Store:
    s = Store.create(tmp_path / "halves.db")
    index_corpus(s, SAMPLE_CORPUS)
    return s


class _EagerShare:
    """A share whose helper takes every offered half at once, on ``reader``."""

    def __init__(self, reader):
        self.reader, self.taken = reader, 0

    def offer(self, half):
        assert half.claim()
        self.taken += 1
        t = threading.Thread(target=half.run, args=(self.reader,))
        t.start()
        t.join()


@pytest.mark.parametrize("query", ["install deploy", "cache", "hook session cache"])
def test_a_half_run_by_the_helper_merges_into_the_whole_statements_rows(tmp_path, query):
    from engine.pipeline.stages.retrieve import _in_halves, build_sql
    from engine.pipeline.query import sanitize_porter

    s = _halves_store(tmp_path)
    try:

        def statement(rowids):
            return build_sql("porter", s.schema, None, "like", None, rowids=rowids)

        values = {"match": sanitize_porter(query, "OR"), "limit": 7}
        text, names = statement(None)
        whole = s.conn.execute(text, [values[n] for n in names]).fetchall()
        began = s.begin_read(s.conn)
        try:
            with s.parallel_reader(s.conn) as reader:
                assert reader is not None
                share = _EagerShare(reader)
                rows, helped = _in_halves(s.conn, share, "porter", statement, values, 7)
        finally:
            s.end_read(s.conn, began)
        assert helped is True and share.taken == 1
        assert rows == whole and len(rows) > 1
    finally:
        s.close()


def test_an_error_in_the_helpers_half_reaches_the_retriever_that_split(tmp_path):
    from engine.pipeline.stages.retrieve import _in_halves, build_sql

    s = _halves_store(tmp_path)
    broken = Store.create(tmp_path / "other.db").conn  # no such rows, and closed below
    broken.close()
    try:

        def statement(rowids):
            return build_sql("porter", s.schema, None, "like", None, rowids=rowids)

        with pytest.raises(Exception) as info:
            _in_halves(s.conn, _EagerShare(broken), "porter", statement, {"match": '"install"', "limit": 5}, 5)
        assert "closed" in str(info.value).lower()
    finally:
        s.close()


def test_the_caller_takes_the_workers_run_without_waiting_for_its_thread(tmp_path, monkeypatch):
    """Once the worker's statement is done the search goes on: it does not
    wait for the worker's thread to wake and return (the worker is held in
    its helping loop here until the search has returned)."""
    from engine.pipeline.stages.retrieve import HalfShare

    s = Store.create(tmp_path / "s.db")
    s.parallel = True
    index_corpus(s, SAMPLE_CORPUS)
    expected = _answer(search(s, SearchParams("install deploy")))
    s.runs.clear()
    release, held = threading.Event(), threading.Event()
    still_held = []
    real = HalfShare.help_until

    def hold_the_worker(self, conn, finished):
        if threading.current_thread().name.startswith("rankscope-retriever"):
            still_held.append(True)
            held.set()
            release.wait(10)
            still_held[-1] = False
        return real(self, conn, finished)

    monkeypatch.setattr(HalfShare, "help_until", hold_the_worker)
    # The caller's own run waits until the worker has taken the second one: on
    # a corpus this small (and a busy machine) the caller could otherwise be
    # done before the worker thread wakes, and then runs the second itself.
    worker_started = threading.Event()
    real_run = runcache_mod.RunCache.run

    def run_once_the_worker_has_started(self, conn, schema, request, **kw):
        if threading.current_thread().name.startswith("rankscope-retriever"):
            worker_started.set()
        else:
            worker_started.wait(10)
        return real_run(self, conn, schema, request, **kw)

    monkeypatch.setattr(runcache_mod.RunCache, "run", run_once_the_worker_has_started)
    try:
        t = search(s, SearchParams("install deploy"))
        assert held.is_set() and still_held == [True]  # returned while the worker was still held
        assert _answer(t) == expected
    finally:
        release.set()
        s.close()


def test_closing_a_share_waits_for_a_half_a_helper_runs_and_ends_its_helping():
    from engine.pipeline.stages.retrieve import HalfShare, _Half

    share = HalfShare()
    started, go, order = threading.Event(), threading.Event(), []

    def work(conn):
        started.set()
        go.wait(30)
        order.append("half done")
        return [conn]

    half = _Half(work)
    share.offer(half)
    helper = threading.Thread(target=share.help_until, args=("reader", lambda: False))
    helper.start()
    assert started.wait(30)

    def close():
        share.close()
        order.append("closed")

    closer = threading.Thread(target=close)
    closer.start()
    assert closer.is_alive()  # the half is still running: close cannot have returned
    go.set()
    closer.join(30)
    helper.join(30)
    assert order == ["half done", "closed"] and half.rows == ["reader"]
    assert not helper.is_alive()  # finished() never said so: close ended the helping

    late = _Half(lambda conn: [conn])
    share.offer(late)
    share.help_until("reader", lambda: False)  # returns at once, runs nothing
    assert late.claim()  # nobody took it


@pytest.mark.parametrize("retriever", ["porter", "trigram"])
def test_a_match_whose_source_row_is_missing_is_skipped_as_the_reference_skips_it(retriever, monkeypatch):
    """The bounded sort keeps LIMIT matches before joining their sources; a
    match with no source row would leave it one short. The reference's inner
    join skips it and takes the next match: so does the run (the bounded
    statement alone does not, which is what the fallback is for)."""
    from engine.pipeline.query import sanitize_porter, sanitize_trigram
    import engine.pipeline.stages.retrieve as retrieve_mod
    from engine.pipeline.stages.retrieve import Request, build_sql, retrieve

    monkeypatch.setattr(retrieve_mod, "BOUNDED_MIN_MATCHES", 0)  # the bounded sort on this small store
    s = Store.create(":memory:")  # its own: a source row is deleted below (the shared one stays whole)
    index_corpus(s, parity_set("stages") / "corpus")
    match = (sanitize_porter if retriever == "porter" else sanitize_trigram)("cache", "OR")
    reference = _rows(s.conn, s.schema, retriever, match, 3, None, "like", None, True)
    first = reference[0][0]
    table = "chunks" if retriever == "porter" else "chunks_trigram"
    (source_id,) = s.conn.execute(f"SELECT source_id FROM {table} WHERE rowid = ?", (first,)).fetchone()
    s.conn.execute("DELETE FROM sources WHERE id = ?", (source_id,))
    reference = _rows(s.conn, s.schema, retriever, match, 3, None, "like", None, True)
    assert len(reference) == 3 and first not in [r[0] for r in reference]
    bounded, names = build_sql(retriever, s.schema, None, "like", None)
    alone = s.conn.execute(bounded, [{"match": match, "limit": 3}[n] for n in names]).fetchall()
    assert [r[4] for r in alone].count(None) >= 1  # the bounded statement keeps the orphan
    run = retrieve(s.conn, s.schema, Request(retriever, "cache", 3))
    assert [h.rowid for h in run.hits] == [r[0] for r in reference]
    assert [h.bm25 for h in run.hits] == [r[5] for r in reference]
