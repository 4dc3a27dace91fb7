"""``search(store, params) -> Trace``: the reference pipeline, stage by stage.

Order (context-mode ``searchWithFallback``):

1. stale-source refresh (writable stores re-index; read-only stores only report);
2. pool size: ``max(8 * limit, 40)`` with a session allow-set, else ``limit``;
3. both retrievers fetch ``max(2 * pool_size, 10)`` rows; RRF fuses them;
   the candidate pool keeps the first ``pool_size`` keys;
4. session filter (with an allow-set): keep session ``""`` or allowed ids;
5. if anything survived: trim to ``limit``, rerank, layer ``rrf``;
6. otherwise the fuzzy fallback corrects the words and re-runs 3-5 with the
   corrected query: layer ``rrf-fuzzy``, or ``none``.

Only this module orders and times stages: the pass stages are declared in
:data:`engine.pipeline.table.STAGES` and each lives in its own module
(:mod:`engine.pipeline.stages.retrieve`, :mod:`engine.pipeline.stages.fusion`, :mod:`engine.pipeline.stages.pool`,
:mod:`engine.pipeline.stages.session_filter`, :mod:`engine.pipeline.stages.trim`, :mod:`engine.pipeline.stages.rerank`),
behind the hooks of :mod:`engine.pipeline.hooks`. Each pass records every
candidate's path (:mod:`engine.pipeline.paths`).
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Callable

from engine.store import sql
from engine.pipeline.empty_reasons import EmptyPart
from engine.pipeline.stages.fuzzy import correct_word_cached
from engine.pipeline.trace import FinalResult, FuzzyStage, Run, SearchParams, Trace
from engine.store.freshness import RefreshReport
from engine.pipeline.paths import run_paths
from engine.pipeline.stages.pool import pool_size_for
from engine.pipeline.query import fuzzy_words
from engine.pipeline.stages.retrieve import fts_limit_for, retrieve_pair, runs_retriever
from engine.pipeline.runcache import RunCache
from engine.pipeline.hooks import PassContext
from engine.pipeline.table import PASS_STAGES, RETRIEVERS, Stage
from engine.store.clock import elapsed_ms
from engine.store.store import Store

__all__ = ["fts_limit_for", "pass_plan", "pool_size_for", "run_pass", "search", "variant_skips"]


def pass_plan(params: SearchParams) -> tuple[Stage, ...]:
    """The pass stages in the order this search runs them: the table's
    order, except that the variant ``rerank=off`` leaves the rerank out and
    ``rerank=before-trim`` runs it just before the trim."""
    plan = list(PASS_STAGES)
    mode = params.variant.rerank
    if mode != "on":
        rr = next(s for s in plan if s.id == "rerank")
        plan.remove(rr)
        if mode == "before-trim":
            plan.insert(next(i for i, s in enumerate(plan) if s.id == "trim"), rr)
    return tuple(plan)


def variant_skips(params: SearchParams) -> dict[str, str]:
    """Pass stages the variant leaves out, with the setting that does it
    (``{"rerank": "rerank=off"}``)."""
    return {"rerank": "rerank=off"} if params.variant.rerank == "off" else {}


def run_pass(
    conn: sql.Connection,
    store: Store,
    params: SearchParams,
    query: str,
    pool_size: int,
    fts_limit: int,
    timings: list[tuple[str, float]],
    pass_name: str = "first",
    runs: "RunCache | None" = None,
    paths: bool = True,
) -> Run:
    """Run the pass stages of :func:`pass_plan` once for ``query``, timing
    each (``timings`` gets ``(stage id, ms)``, ids prefixed ``fuzzy:`` in
    the re-run), and record every candidate's path (``paths=False``: leave
    ``run.paths`` empty). With ``runs``, the retriever stages take their
    runs from that cache (default: an exact handle on the store's run
    cache, :mod:`engine.pipeline.runcache`). The retrievers the variant runs are
    fetched first, together (:func:`engine.pipeline.stages.retrieve.retrieve_pair`: at
    once on two connections for a large store), and each retriever stage's
    time is its own statement's (or cache lookup's)."""
    prefix = "fuzzy:" if pass_name == "fuzzy" else ""
    if runs is None:
        runs = RunCache(store, exact=True)
    wanted = [name for name in RETRIEVERS if runs_retriever(params, name)]
    prefetched = retrieve_pair(
        store, conn, wanted, query, fts_limit, params.source, params.source_match, params.content_type, runs=runs
    )
    records: list[tuple[str, object]] = []
    done: dict[str, object] = {}
    retrievers: list = []
    items: tuple = ()
    for spec in pass_plan(params):
        assert spec.hooks is not None
        ctx = PassContext(
            conn, store, params, query, pool_size, fts_limit, dict(done), tuple(retrievers), runs, prefetched
        )
        start = time.perf_counter()
        record = spec.hooks.step(ctx, items)
        ms = elapsed_ms(start)
        if spec.kind == "retriever" and spec.id in prefetched:
            ms = record.elapsed_ms  # fetched by retrieve_pair: its own statement's time
        record = replace(record, elapsed_ms=ms)
        timings.append((prefix + spec.id, ms))
        records.append((spec.id, record))
        done[spec.id] = record
        if spec.kind == "retriever":
            retrievers.append(record)
            continue
        items = tuple(spec.hooks.ranked(record))
        if spec.ends_pass_when_empty and not items:
            break
    run = Run(query, tuple(records), items, pass_name)
    return replace(run, paths=run_paths(run)) if paths else run


def _refresh(store: Store, conn: sql.Connection) -> RefreshReport:
    return store.refresh_for_search(conn)


def _fuzzy(
    conn: sql.Connection,
    store: Store,
    params: SearchParams,
    first: Run,
    pool_size: int,
    fts_limit: int,
    timings: list[tuple[str, float]],
    runs: "RunCache | None" = None,
    paths: bool = True,
) -> FuzzyStage:
    policy = params.variant.fuzzy
    found = len(first.filter.kept)
    if policy == "never":
        return FuzzyStage(False, "policy-never")
    if found and policy == "fallback":
        return FuzzyStage(False, "first-pass-found", first_pass_results=found)
    if not store.schema.has_vocabulary:
        return FuzzyStage(False, "no-vocabulary")
    shadow = bool(found)
    start = time.perf_counter()
    words = fuzzy_words(params.query)
    if runs is not None:
        corrections = tuple(runs.correction(conn, w) for w in words)
    else:
        corrections = tuple(correct_word_cached(store, conn, w) for w in words)
    corrected_query = " ".join(c.corrected or c.word for c in corrections)
    ms = elapsed_ms(start)
    timings.append(("fuzzy", ms))
    if not words:
        code = "no-word"
    elif corrected_query == " ".join(words):
        code = "no-correction"
    else:
        code = "corrected"
    if shadow:
        trigger = "shadow"
    elif not first.fusion.candidates:
        trigger = "fusion-empty"
    elif not first.pool.kept:
        trigger = "pool-empty"
    else:
        trigger = "all-removed"
    rerun = None
    if words and corrected_query != " ".join(words):
        rerun = run_pass(
            conn,
            store,
            params,
            corrected_query,
            pool_size,
            fts_limit,
            timings,
            pass_name="fuzzy",
            runs=runs,
            paths=paths,
        )
    return FuzzyStage(
        True,
        code,
        trigger,
        tuple(words),
        corrections,
        corrected_query,
        rerun,
        shadow,
        ms,
        first_pass_results=found,
        pool_size=first.pool.pool_size,
    )


#: At most this many of the store's session ids an ``unknown-sessions`` part
#: names (:mod:`engine.pipeline.empty_reasons`).
_SESSIONS_LISTED = 8


def _missing_sessions(first: Run, store_sessions: Callable[[], list[str]]) -> list[EmptyPart]:
    """Why the session filter removed everything, when an allowed id is the
    culprit: ids no chunk in the store has at all (``unknown-sessions``; one
    store query, only on this rare path) and ids only candidates outside the
    pool have (``sessions-not-pooled``). ``[]`` when every allowed id was
    seen on a removed candidate."""
    flt = first.filter
    seen = {c.session_id for c in flt.removed}
    absent = [s for s in dict.fromkeys(flt.allow_set or ()) if s not in seen]
    if not absent:
        return []
    known = store_sessions()
    unknown = [s for s in absent if s not in known]
    parts = []
    if unknown:
        named = sorted(s for s in known if s)
        parts.append(
            EmptyPart.of(
                "unknown-sessions",
                sessions=tuple(unknown),
                store_sessions=tuple(named[:_SESSIONS_LISTED]),
                store_session_count=len(named),
            )
        )
    matched_elsewhere = [s for s in absent if s in known]
    if matched_elsewhere:
        parts.append(EmptyPart.of("sessions-not-pooled", sessions=tuple(matched_elsewhere)))
    return parts


def _empty_parts(
    params: SearchParams, first: Run, fuzzy: FuzzyStage, store_sessions: Callable[[], list[str]] = lambda: []
) -> tuple[EmptyPart, ...]:
    """Why a search with layer ``none`` returned nothing, as the parts of
    :mod:`engine.pipeline.empty_reasons`: at most one about the first pass (with the
    session parts after ``filter-removed-all``), then one about the typo
    fallback; ``(unexplained,)`` when none applies."""
    if not params.query.strip():
        return (EmptyPart.of("empty-query"),)
    parts: list[EmptyPart] = []
    if not first.fusion.candidates and first.porter.fts_limit == 0:
        parts.append(EmptyPart.of("fts-limit-0"))
    elif not first.fusion.candidates:
        failed = first.porter if first.porter.error else first.trigram if first.trigram.error else None
        if failed is not None:
            parts.append(EmptyPart.of("retriever-error", retriever=failed.name, error=failed.error))
        else:
            parts.append(
                EmptyPart.of(
                    "no-match",
                    retrievers=tuple(name for name in RETRIEVERS if runs_retriever(params, name)),
                    variant_retrievers=params.variant.retrievers,
                    source=params.source,
                    source_match=params.source_match,
                    content_type=params.content_type,
                )
            )
    elif not first.pool.kept and params.limit != 0:
        parts.append(EmptyPart.of("pool-empty", pool_size=first.pool.pool_size))
    elif first.filter.allow_set is not None and not first.filter.kept:
        parts.append(EmptyPart.of("filter-removed-all", removed=len(first.filter.removed)))
        parts += _missing_sessions(first, store_sessions)
    elif params.limit == 0:
        parts.append(EmptyPart.of("limit-0", layer="none"))
    if not fuzzy.ran or fuzzy.rerun is None:
        parts.append(EmptyPart.of("fuzzy", fuzzy_code=fuzzy.code))
    elif not fuzzy.rerun.filter.kept:
        parts.append(EmptyPart.of("fuzzy", fuzzy_code=fuzzy.code, corrected_query=fuzzy.corrected_query))
    elif params.limit == 0:
        parts.append(EmptyPart.of("limit-0", layer="none"))
    return tuple(parts) or (EmptyPart.of("unexplained"),)


def search(
    store: Store,
    params: SearchParams,
    conn: sql.Connection | None = None,
    *,
    runs: "RunCache | None" = None,
    refresh: bool = True,
    paths: bool = True,
) -> Trace:
    """Run the pipeline once and record every stage.

    Args:
        store: an open store (read-only stores are never written: stale
            sources are only reported).
        params: the validated search parameters.
        conn: a connection from ``store.connect()`` when searching from
            another thread; defaults to the store's own connection.
        runs: the handle on the store's run cache the retrievers go through
            (:class:`engine.pipeline.runcache.RunCache`); default: an exact one (a
            run is reused only at the same row count). Runs and corrections
            are reused for the data version noted when this call begins the
            read transaction (:meth:`engine.store.store.Store.begin_read`); inside
            a transaction the caller began otherwise, nothing is reused.
        refresh: ``False`` skips the stale-source check (its report is then
            empty): for re-runs of a search that just checked.
        paths: ``False`` leaves every ``run.paths`` empty: for a re-run
            that only needs the answer (a counterfactual's probes).

    Returns:
        An immutable :class:`Trace`. Never raises for any query text; an
        SQLite error of a retriever's query is recorded on that run.

    Raises:
        CorruptStoreError: SQLite reports the file as damaged (``database
            disk image is malformed``) on a stable snapshot (a read that
            failed while another process wrote the store is retried:
            :meth:`~engine.store.store.Store.reading`); the message names the path.
        StoreError: the store cannot be read otherwise (locked, I/O error).
    """
    return store.reading(lambda c: _search(store, params, c, runs, refresh, paths), conn)


def _search(
    store: Store,
    params: SearchParams,
    conn: sql.Connection | None,
    runs: "RunCache | None",
    check: bool,
    paths: bool,
) -> Trace:
    with store.using(conn) as c:
        timings: list[tuple[str, float]] = []
        refresh = _refresh(store, c) if check else RefreshReport()
        timings.append(("refresh", refresh.elapsed_ms))
        pool_size = pool_size_for(params)
        fts_limit = fts_limit_for(params, pool_size)
        # One read transaction for every stage: against a live writer (WAL)
        # all stages see the same snapshot (the run and correction caches key
        # on the data version it notes).
        own_txn = store.begin_read(c)
        try:
            first = run_pass(c, store, params, params.query, pool_size, fts_limit, timings, runs=runs, paths=paths)
            fuzzy = _fuzzy(c, store, params, first, pool_size, fts_limit, timings, runs, paths)
        except BaseException:
            store.end_read(c, own_txn, failed=True)
            raise
        store.end_read(c, own_txn)
    if first.filter.kept:
        layer, results = "rrf", first.results
    elif fuzzy.rerun is not None and fuzzy.rerun.filter.kept and not fuzzy.shadow:
        layer, results = "rrf-fuzzy", fuzzy.rerun.results
    else:
        layer, results = "none", ()
    answering = first if layer == "rrf" else fuzzy.rerun if layer == "rrf-fuzzy" else None
    boosts = {}
    if answering is not None and answering.rerank is not None:
        boosts = {e.candidate.key: e.boost for e in answering.rerank.entries}
    final = tuple(FinalResult(i + 1, cand, layer, boosts.get(cand.key)) for i, cand in enumerate(results))
    if layer == "none":

        def store_sessions() -> list[str]:
            with store.using(conn) as c:
                return [sid for sid, _ in store.session_counts(c)]

        empty = _empty_parts(params, first, fuzzy, store_sessions)
    elif not final:
        empty = (EmptyPart.of("limit-0", layer=layer),)
    else:
        empty = ()
    return Trace(params, pool_size, fts_limit, refresh, first, fuzzy, layer, final, empty, tuple(timings))
