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

Only this module orders and times stages: each lives in its own module
under :mod:`engine.pipeline.stages`, listed by :data:`engine.pipeline.table.STAGES`
and reordered by the variant (:func:`pass_plan`). Each pass records every
candidate's path (:mod:`engine.pipeline.paths`).
"""

from __future__ import annotations

import time
from dataclasses import replace

from engine.pipeline.candidates import FUZZY_PREFIX, FinalResult
from engine.pipeline.empty_reasons import EmptyPart, answered_empty, empty_parts
from engine.pipeline.hooks import Items, PassContext, Stage, candidates
from engine.pipeline.params import SearchParams
from engine.pipeline.passes import Run
from engine.pipeline.paths import run_paths
from engine.pipeline.runcache import RunCache
from engine.pipeline.stages import fuzzy
from engine.pipeline.stages.fuzzy import correct_word_cached
from engine.pipeline.stages.pool import pool_size_for
from engine.pipeline.stages.retrieve import Request, fts_limit_for, retrieve_pair, runs_retriever
from engine.pipeline.table import PASS_STAGES, RETRIEVERS
from engine.pipeline.trace import Trace
from engine.pipeline.variants import SETTINGS
from engine.store import sql
from engine.store.clock import elapsed_ms
from engine.store.freshness import RefreshReport
from engine.store.store import Store

__all__ = ["fts_limit_for", "pass_plan", "pool_size_for", "run_pass", "search", "variant_skips"]


def pass_plan(params: SearchParams) -> tuple[Stage, ...]:
    """The pass stages in the order this search runs them: the table's
    order, with each variant setting's ``plan`` applied (its stage left out,
    or run just before another: ``rerank=off``, ``rerank=before-trim``)."""
    plan = list(PASS_STAGES)
    for s in SETTINGS:
        value = getattr(params.variant, s.name)
        if s.stage is None or value not in s.plan:
            continue
        moved = next(x for x in plan if x.id == s.stage)
        plan.remove(moved)
        before = s.plan[value]
        if before is not None:
            plan.insert(next(i for i, x in enumerate(plan) if x.id == before), moved)
    return tuple(plan)


def variant_skips(params: SearchParams) -> dict[str, str]:
    """Pass stages a variant setting other than the reference leaves out, with
    the setting (``{"rerank": "rerank=off"}``); a stage the reference itself
    leaves out is not listed."""
    out = {}
    for s in SETTINGS:
        value = getattr(params.variant, s.name)
        if s.stage is not None and value != s.reference and value in s.plan and s.plan[value] is None:
            out[s.stage] = f"{s.key}={value}"
    return out


def run_pass(
    conn: sql.Connection,
    store: Store,
    params: SearchParams,
    query: str,
    pool_size: int,
    fts_limit: int,
    timings: list[tuple[str, float]],
    pass_name: str = "first",
    runs: RunCache | None = None,
    paths: bool = True,
) -> Run:
    """Run the stages of :func:`pass_plan` once for ``query``, timing each
    (``timings`` gets ``(stage id, ms)``, ``fuzzy:``-prefixed in the re-run),
    and every candidate's path, computed when first read (``paths=False``: leave
    them empty).
    The retrievers the variant runs are fetched first, together, through
    ``runs`` (default: an exact handle on the store's run cache); each
    retriever stage's time is its own statement's (or cache lookup's)."""
    prefix = FUZZY_PREFIX if pass_name == "fuzzy" else ""
    runs = runs if runs is not None else RunCache(store, exact=True)
    wanted = [Request.of(name, query, fts_limit, params) for name in RETRIEVERS if runs_retriever(params, name)]
    ahead = retrieve_pair(store, conn, wanted, runs=runs)
    records: dict[str, object] = {}
    items: Items = ()
    for spec in pass_plan(params):
        ctx = PassContext(conn, store, params, query, pool_size, fts_limit, dict(records), ahead)
        start = time.perf_counter()
        record = spec.run_step(ctx, items)
        ms = elapsed_ms(start)
        if spec.id in ahead:
            ms = spec.elapsed_of(record) or 0.0  # fetched by retrieve_pair: its own statement's time
        records[spec.id] = spec.timed(record, ms)
        timings.append((prefix + spec.id, ms))
        if spec.kind == "retriever":
            continue
        items = spec.ranked_of(records[spec.id])
        if spec.ends_pass_when_empty and not items:
            break
    return Run(query, tuple(records.items()), candidates(items), pass_name, run_paths if paths else None)


def search(
    store: Store,
    params: SearchParams,
    conn: sql.Connection | None = None,
    *,
    runs: RunCache | None = None,
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
    trace: Trace = store.reading(lambda c: _search(store, params, c, runs, refresh, paths), conn)
    return trace


def _search(
    store: Store,
    params: SearchParams,
    conn: sql.Connection | None,
    runs: RunCache | None,
    check: bool,
    paths: bool,
) -> Trace:
    with store.using(conn) as c:
        timings: list[tuple[str, float]] = []
        refresh = store.refresh_for_search(c) if check else RefreshReport()
        timings.append(("refresh", refresh.elapsed_ms))
        pool_size = pool_size_for(params)
        fts_limit = fts_limit_for(params, pool_size)
        # One read transaction for every stage: against a live writer (WAL)
        # all stages see the same snapshot (the run and correction caches key
        # on the data version it notes).
        with store.snapshot(c):
            first = run_pass(c, store, params, params.query, pool_size, fts_limit, timings, runs=runs, paths=paths)
            correct = (
                (lambda w: runs.correction(c, w)) if runs is not None else (lambda w: correct_word_cached(store, c, w))
            )
            fz = fuzzy.step(store, params, first, correct)
            if fz.ran:
                timings.append(("fuzzy", fz.elapsed_ms))
            if fz.reruns and fz.corrected_query is not None:
                again = run_pass(
                    c, store, params, fz.corrected_query, pool_size, fts_limit, timings, "fuzzy", runs, paths
                )
                fz = replace(fz, rerun=again)
    if first.filter.kept:
        layer, results = "rrf", first.results
    elif fz.rerun is not None and fz.rerun.filter.kept and not fz.shadow:
        layer, results = "rrf-fuzzy", fz.rerun.results
    else:
        layer, results = "none", ()
    answering = first if layer == "rrf" else fz.rerun if layer == "rrf-fuzzy" else None
    boosts: dict[str, float] = {}
    if answering is not None and answering.rerank is not None:
        boosts = {e.candidate.key: e.boost for e in answering.rerank.entries}
    final = tuple(FinalResult(i + 1, cand, layer, boosts.get(cand.key)) for i, cand in enumerate(results))
    if layer == "none":

        def store_sessions() -> list[str]:
            with store.using(conn) as c:
                return [sid for sid, _ in store.session_counts(c)]

        empty: tuple[EmptyPart, ...] = empty_parts(params, first, fz, store_sessions)
    elif not final:
        empty = answered_empty(layer)
    else:
        empty = ()
    return Trace(params, pool_size, fts_limit, refresh, first, fz, layer, final, empty, tuple(timings))
