"""``search(store, params) -> Trace``: the reference pipeline, stage by stage.

Order (context-mode ``searchWithFallback``):

1. stale-source refresh (writable stores re-index; read-only stores only report);
2. pool size: ``max(8 * limit, 40)`` with a session allow-set, else ``limit``;
3. both retrievers fetch ``max(2 * pool_size, 10)`` rows; RRF fuses them and
   keeps the first ``pool_size`` keys;
4. session filter (with an allow-set): keep session ``""`` or allowed ids;
5. if anything survived: trim to ``limit``, rerank, layer ``rrf``;
6. otherwise the fuzzy fallback corrects the words and re-runs 3-5 with the
   corrected query: layer ``rrf-fuzzy``, or ``none``.

Only this module orders and times stages; each stage is a pure function in
its own module.
"""

from __future__ import annotations

import time
from typing import Callable

from . import sql
from .fusion import fuse
from .fuzzy import correct_word_cached
from .model import (
    Candidate,
    FilterStage,
    FinalResult,
    FusionStage,
    FuzzyStage,
    RefreshReport,
    RetrieverRun,
    Run,
    SearchParams,
    Trace,
    TrimStage,
    RerankStage,
)
from .query import fuzzy_words, rerank_terms
from .rerank import rerank
from .retrieve import retrieve_pair
from .store import Store, elapsed_ms


def pool_size_for(params: SearchParams) -> int:
    """Fusion limit: ``max(8 * limit, 40)`` with an allow-set, else ``limit``
    (or the variant's override)."""
    v = params.variant
    if params.sessions is not None:
        return v.pool_size_sessions if v.pool_size_sessions is not None else max(params.limit * 8, 40)
    return v.pool_size if v.pool_size is not None else params.limit


def fts_limit_for(params: SearchParams, pool_size: int) -> int:
    """Rows per retriever: ``max(2 * pool_size, 10)`` (or the variant's override)."""
    v = params.variant
    return v.fts_limit if v.fts_limit is not None else max(pool_size * 2, 10)


def session_filter(pool: tuple[Candidate, ...], allow_set: tuple[str, ...] | None) -> FilterStage:
    """Keep candidates whose session id is ``""`` or in ``allow_set``;
    ``None`` means no filter (everything kept)."""
    if allow_set is None:
        return FilterStage(None, pool, ())
    allowed = set(allow_set) | {""}
    kept: list[Candidate] = []
    removed: list[Candidate] = []
    for c in pool:
        (kept if c.session_id in allowed else removed).append(c)
    return FilterStage(tuple(allow_set), tuple(kept), tuple(removed))


def trim(candidates: tuple[Candidate, ...], limit: int) -> TrimStage:
    """``candidates[:limit]`` and what was cut."""
    return TrimStage(limit, candidates[:limit], candidates[limit:])


def _timed(fn, *args, **kwargs):
    start = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, elapsed_ms(start)


def _skipped(name: str, fts_limit: int, why: str) -> RetrieverRun:
    return RetrieverRun(name, "", fts_limit, (), skipped=why)


def run_pass(
    conn: sql.Connection,
    store: Store,
    params: SearchParams,
    query: str,
    pool_size: int,
    fts_limit: int,
    timings: list[tuple[str, float]],
    prefix: str = "",
) -> Run:
    """Retrieve, fuse, filter, trim and rerank ``query`` once."""
    v = params.variant
    wanted = [name for name in ("porter", "trigram") if v.retrievers in ("both", name)]
    runs = retrieve_pair(store, conn, wanted, query, fts_limit, params.source, params.source_match, params.content_type)
    for name in ("porter", "trigram"):
        if name not in runs:
            runs[name] = _skipped(name, fts_limit, f"variant: {v.retrievers} retriever only")
        timings.append((prefix + name, runs[name].elapsed_ms))
    candidates, ms = _timed(fuse, [runs["porter"], runs["trigram"]], v.rrf_k, v.fusion_key)
    fusion = FusionStage(v.rrf_k, candidates, pool_size, ms)
    timings.append((prefix + "fusion", ms))
    filt, ms = _timed(session_filter, fusion.pool, params.sessions)
    note = None
    if params.sessions is not None and not store.schema.has_session:
        note = "this store has no session column (older schema): every chunk is unattributed and passes"
    filt = FilterStage(filt.allow_set, filt.kept, filt.removed, ms, note)
    timings.append((prefix + "filter", ms))
    if not filt.kept:
        return Run(query, runs["porter"], runs["trigram"], fusion, filt, None, None, ())
    terms = rerank_terms(query)
    if v.rerank == "before-trim":
        entries, rms = _timed(rerank, filt.kept, terms)
        rr = RerankStage(query, tuple(terms), entries, rms)
        timings.append((prefix + "rerank", rms))
        tr, tms = _timed(trim, tuple(e.candidate for e in entries), params.limit)
        tr = TrimStage(tr.limit, tr.kept, tr.cut, tms)
        timings.append((prefix + "trim", tms))
        return Run(query, runs["porter"], runs["trigram"], fusion, filt, tr, rr, tr.kept)
    tr, tms = _timed(trim, filt.kept, params.limit)
    tr = TrimStage(tr.limit, tr.kept, tr.cut, tms)
    timings.append((prefix + "trim", tms))
    if v.rerank == "off":
        return Run(query, runs["porter"], runs["trigram"], fusion, filt, tr, None, tr.kept)
    entries, rms = _timed(rerank, tr.kept, terms)
    rr = RerankStage(query, tuple(terms), entries, rms)
    timings.append((prefix + "rerank", rms))
    return Run(query, runs["porter"], runs["trigram"], fusion, filt, tr, rr, tuple(e.candidate for e in entries))


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
) -> FuzzyStage:
    policy = params.variant.fuzzy
    found = len(first.filter.kept)
    if policy == "never":
        return FuzzyStage(False, "fuzzy policy is 'never': typo correction disabled")
    if found and policy == "fallback":
        noun = "result" if found == 1 else "results"
        return FuzzyStage(
            False, f"fusion returned {found} {noun} after the session filter: typo correction not attempted"
        )
    if not store.schema.has_vocabulary:
        return FuzzyStage(False, "this store has no vocabulary table: typo correction is unavailable")
    shadow = bool(found)
    start = time.perf_counter()
    words = fuzzy_words(params.query)
    corrections = tuple(correct_word_cached(store, conn, w) for w in words)
    corrected_query = " ".join(c.corrected or c.word for c in corrections)
    ms = elapsed_ms(start)
    timings.append(("fuzzy", ms))
    if not words:
        reason = "no query word of 3+ characters outside the stopword list to correct"
    elif corrected_query == " ".join(words):
        reason = "no word needed or found a correction in the vocabulary"
    else:
        reason = "corrected " + ", ".join(f"{c.word} → {c.corrected}" for c in corrections if c.corrected)
    if shadow:
        reason = f"shadow run (fuzzy policy 'always'): {reason}"
    elif not found:
        if not first.fusion.candidates:
            why = "fusion found nothing"
        elif not first.fusion.pool:
            why = f"the candidate pool is empty (pool size {first.fusion.pool_size})"
        else:
            why = "every candidate was removed by the session filter"
        reason = f"{why}; {reason}"
    rerun = None
    if words and corrected_query != " ".join(words):
        rerun = run_pass(conn, store, params, corrected_query, pool_size, fts_limit, timings, prefix="fuzzy:")
    return FuzzyStage(True, reason, tuple(words), corrections, corrected_query, rerun, shadow, ms)


#: At most this many session ids are listed when an allowed id is unknown.
_SESSIONS_LISTED = 8


def _quoted(ids: list[str]) -> str:
    return ", ".join(f"'{s}'" for s in ids)


def _missing_sessions(first: Run, store_sessions: Callable[[], list[str]]) -> str:
    """Why the session filter removed everything, when an allowed id is the
    culprit: ids no removed candidate has, and (one store query, only on
    this rare path) ids no chunk in the store has at all."""
    flt = first.filter
    seen = {c.session_id for c in flt.removed}
    absent = [s for s in dict.fromkeys(flt.allow_set or ()) if s not in seen]
    if not absent:
        return ""
    known = store_sessions()
    unknown = [s for s in absent if s not in known]
    parts = []
    if unknown:
        named = sorted(s for s in known if s)
        listed = named[:_SESSIONS_LISTED]
        more = len(named) - len(listed)
        names = ", ".join(listed) + (f", … ({more} more)" if more > 0 else "") if listed else "none"
        noun = "session" if len(unknown) == 1 else "sessions"
        parts.append(f"no chunk in this store has {noun} {_quoted(unknown)} (sessions: {names})")
    matched_elsewhere = [s for s in absent if s in known]
    if matched_elsewhere:
        parts.append(f"no pooled candidate has session {_quoted(matched_elsewhere)}")
    return "; ".join(parts)


def _empty_reason(
    params: SearchParams, first: Run, fuzzy: FuzzyStage, store_sessions: Callable[[], list[str]] = lambda: []
) -> str:
    if not params.query.strip():
        return "empty query: nothing to search for"
    parts = []
    filters = f" with {params.filter_text}" if params.filter_text else ""
    if not first.fusion.candidates and first.porter.fts_limit == 0:
        parts.append("the retrievers fetch 0 rows (fts_limit 0)")
    elif not first.fusion.candidates:
        if first.porter.error or first.trigram.error:
            parts.append("a retriever failed: " + (first.porter.error or first.trigram.error or ""))
        else:
            searched = [r.name for r in (first.porter, first.trigram) if not (r.skipped or "").startswith("variant:")]
            where = "either index" if len(searched) == 2 else f"the {searched[0]} index ({params.variant.retrievers} only)" if searched else "any index"
            parts.append(f"no match in {where}{filters}")
    elif not first.fusion.pool and params.limit != 0:
        parts.append(f"the candidate pool is empty (pool size {first.fusion.pool_size}): fusion handed nothing on")
    elif first.filter.allow_set is not None and not first.filter.kept:
        n = len(first.filter.removed)
        parts.append("the only pooled candidate was removed by the session filter" if n == 1
                     else f"all {n} pooled candidates were removed by the session filter")
        missing = _missing_sessions(first, store_sessions)
        if missing:
            parts.append(missing)
    elif params.limit == 0:
        parts.append("limit is 0")
    if not fuzzy.ran:
        parts.append(fuzzy.reason)
    elif fuzzy.rerun is None:
        parts.append("fuzzy found no correction" if fuzzy.words else "fuzzy had no word to correct")
    elif not fuzzy.rerun.filter.kept:
        parts.append(f"the corrected query {fuzzy.corrected_query!r} matched nothing that passed the filters")
    elif params.limit == 0:
        parts.append("limit is 0")
    return "; ".join(parts) or "no results"


def search(store: Store, params: SearchParams, conn: sql.Connection | None = None) -> Trace:
    """Run the pipeline once and record every stage.

    Args:
        store: an open store (read-only stores are never written: stale
            sources are only reported).
        params: the validated search parameters.
        conn: a connection from ``store.connect()`` when searching from
            another thread; defaults to the store's own connection.

    Returns:
        An immutable :class:`Trace`. Never raises for any query text; an
        SQLite error of a retriever's query is recorded on that run.

    Raises:
        CorruptStoreError: SQLite reports the file as damaged (``database
            disk image is malformed``) on a stable snapshot (a read that
            failed while another process wrote the store is retried:
            :meth:`~engine.store.Store.reading`); the message names the path.
        StoreError: the store cannot be read otherwise (locked, I/O error).
    """
    return store.reading(lambda c: _search(store, params, c), conn)


def _search(store: Store, params: SearchParams, conn: sql.Connection | None) -> Trace:
    with store.using(conn) as c:
        timings: list[tuple[str, float]] = []
        refresh = _refresh(store, c)
        timings.append(("refresh", refresh.elapsed_ms))
        pool_size = pool_size_for(params)
        fts_limit = fts_limit_for(params, pool_size)
        # One read transaction for every stage: against a live writer (WAL)
        # all stages see the same snapshot (caches key on the version it notes).
        own_txn = store.begin_read(c)
        try:
            first = run_pass(c, store, params, params.query, pool_size, fts_limit, timings)
            fuzzy = _fuzzy(c, store, params, first, pool_size, fts_limit, timings)
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
    final = tuple(
        FinalResult(i + 1, cand, layer, boosts.get(cand.key)) for i, cand in enumerate(results)
    )
    if layer == "none":

        def store_sessions() -> list[str]:
            with store.using(conn) as c:
                return [sid for sid, _ in store.session_counts(c)]

        empty_reason = _empty_reason(params, first, fuzzy, store_sessions)
    elif not final:
        empty_reason = "limit is 0: the pipeline ran but the trim keeps nothing"
    else:
        empty_reason = None
    return Trace(params, pool_size, fts_limit, refresh, first, fuzzy, layer, final, empty_reason, tuple(timings))
