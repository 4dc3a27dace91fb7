"""The smallest single change that returns a chunk, proven by re-running.

:func:`would_return_with` takes a search and a chunk it does not return and
looks for one parameter change that puts the chunk in the final list. It
never predicts: each change it reports is the outcome of a real run of the
whole pipeline (:func:`engine.pipeline.run.search`) with that change; when that
run took a retriever run as the prefix of a deeper one from the run cache,
a second run that takes nothing from a cache confirms it.

The changes tried (:data:`PARAMS`, in this order at equal distance):

=================  ============================================  =============
param              values                                        distance
=================  ============================================  =============
``limit``          1 … :data:`LIMIT_MAX`                         ``|Δ| / now``
``pool_size``      1 … :func:`pool_bound`                        ``|Δ| / now``
``allow_session``  the chunk's own session added to the          1
                   allow-set (only with an allow-set; another
                   session only adds competitors)
``source``         no source filter (1); the chunk's own         1 or 2
                   source (1 instead of another filter, 2 where
                   there was none: :data:`NARROWING`)
``content_type``   likewise: no filter, or the chunk's own type  1 or 2
(a setting)        each other choice of every variant setting    1
                   marked ``tried`` (:data:`engine.pipeline.variants.SETTINGS`:
                   fusion key, rerank, retrievers)
=================  ============================================  =============

A number's distance is relative (limit 3 → 5 is 0.67, as far as pool size
40 → 67), so doubling a number is as far as switching a setting, and
searching only the chunk's own file is farther still. The change of least
distance that returns the chunk wins; ties go to the order above, then to
the smaller step, then to up before down (``limit`` 4 before ``pool_size``
4, for a current limit 3 without an allow-set). ``pool_size`` sets the
variant's ``pool_size`` (no allow-set) or ``pool_size_sessions`` (with one).
A change is ruled out without a run only when the pipeline provably cannot
return the chunk with it: its source or content-type filter excludes the
chunk; its allow-set excludes the chunk's session; or neither retriever it
runs returns the chunk within its row count for the query or the
typo-corrected query: read from a cached run at that row count, or, before
any deeper run is fetched, from a bound (1 + the rows that match with a
strictly better bm25 under the same filters, one ``COUNT`` each).

Re-runs share one read transaction and the store's run cache, through a
prefix-reusing :class:`~engine.pipeline.runcache.RunCache` handle; an answer
that took a prefix of a deeper run is confirmed by an exact re-run.

Outcome when no change is found (:data:`NO_CHANGE_REASONS`):

* ``returned``: the chunk is in the answer already (data: ``position``);
* ``no-term``: no query term (nor its typo correction) is indexed in it, so
  no parameter can retrieve it;
* ``no-single-change``: every change within the bounds was tried (data:
  ``limit_max``, ``pool_size_max``);
* ``cancelled``: the caller's ``stop()`` said to stop;
* ``already-above`` (:func:`would_reorder_with` only): the chunk is above
  the other one already (data: ``position``, ``other_position``).

:func:`would_reorder_with` searches the same changes for one after which a
chunk is returned *above* another one (both in the answer): "Y would be
above X with ...", the X-versus-Y question of :mod:`engine.lab.explain`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterator, TypedDict

from engine.lab.why import ChunkRef, find_chunks
from engine.pipeline.params import SearchParams
from engine.pipeline.query import fuzzy_words
from engine.pipeline.run import search
from engine.pipeline.runcache import RunCache
from engine.pipeline.stages.pool import pool_size_for
from engine.pipeline.stages.retrieve import RETRIEVERS, TABLES, Request, fts_limit_for, like_pattern, runs_retriever
from engine.pipeline.trace import Trace
from engine.pipeline.variants import SETTINGS
from engine.store import sql
from engine.store.clock import elapsed_ms
from engine.store.errors import sqlite_errors
from engine.store.store import Store

#: The variant settings whose other choices are tried.
TRIED = tuple(s for s in SETTINGS if s.tried and s.choices)
_BY_NAME = {s.name: s for s in SETTINGS}
_TRIED_WORDS = ", ".join(s.label for s in TRIED[:-1]) + f" and {TRIED[-1].label}" if len(TRIED) > 1 else TRIED[0].label
#: The parameters a counterfactual changes, in tie-break order.
PARAMS = ("limit", "pool_size", "allow_session", "source", "content_type") + tuple(s.name for s in TRIED)
#: Largest limit tried.
LIMIT_MAX = 100
#: Largest pool size tried.
POOL_MAX = 200
#: Pool sizes are tried up to this many times the current one (see :func:`pool_bound`).
POOL_FACTOR = 4
#: The distance of a filter the search did not have (narrowing to the chunk's own source or type).
NARROWING = 2
#: Why :attr:`Counterfactual.change` is ``None``.
NO_CHANGE_REASONS = ("returned", "no-term", "no-single-change", "cancelled", "already-above")


@dataclass(frozen=True)
class Change:
    """One single-parameter change.

    Attributes:
        param: a name from :data:`PARAMS`.
        value: the new value (int for ``limit``/``pool_size``, a session id
            for ``allow_session``, ``None`` for "no filter", else a string).
        distance: how far from the current parameters (see the module
            docstring: ``|Δ| / current`` for a number, 1 or
            :data:`NARROWING` for a choice).
        params: the search parameters with the change applied.
    """

    param: str
    value: object
    distance: float
    params: SearchParams


@dataclass(frozen=True)
class Counterfactual:
    """The outcome of :func:`would_return_with`.

    Attributes:
        rowid: the chunk.
        change: the smallest change that returns it, or ``None``.
        position: its 1-based final position with ``change`` (``None``
            without a change).
        layer: the answering layer with ``change`` (``rrf``/``rrf-fuzzy``).
        reason: when ``change`` is ``None``, a code from
            :data:`NO_CHANGE_REASONS`; else ``None``.
        data: the numbers behind ``reason`` as ``(name, value)`` pairs.
        reruns: pipeline runs made (a confirming run included).
        ruled_out: changes ruled out without a run.
        elapsed_ms: wall-clock milliseconds of the whole search.
        finals: with ``change``, the confirming re-run's answer as
            ``(rowid, 1-based position)`` pairs in answer order; else ``()``.
    """

    rowid: int
    change: Change | None
    position: int | None = None
    layer: str | None = None
    reason: str | None = None
    data: tuple[tuple[str, object], ...] = ()
    reruns: int = 0
    ruled_out: int = 0
    elapsed_ms: float = 0.0
    finals: tuple[tuple[int, int], ...] = ()

    def get(self, name: str, default: object = None) -> object:
        """One value of ``data``."""
        return dict(self.data).get(name, default)

    def would_return_with(self) -> dict[str, object] | None:
        """``{"param", "value", "position"}`` or ``None``: the JSON of
        ``rankscope why --json``'s ``would_return_with``."""
        if self.change is None:
            return None
        return {"param": self.change.param, "value": self.change.value, "position": self.position}

    def to_dict(self) -> dict[str, object]:
        """``{"rowid", "would_return_with", "layer", "reason", **data,
        "reruns", "ruled_out", "elapsed_ms"}``."""
        out: dict[str, object] = {
            "rowid": self.rowid,
            "would_return_with": self.would_return_with(),
            "layer": self.layer,
            "reason": self.reason,
        }
        out.update(dict(self.data))
        out.update({"reruns": self.reruns, "ruled_out": self.ruled_out, "elapsed_ms": round(self.elapsed_ms, 3)})
        return out


# ─── in words ────────────────────────────────────────────────────────────


def change_words(change: Change) -> str:
    """The change as a phrase: ``limit 5``, ``pool size 48``, ``allowing
    session 's2'``, ``no source filter``, ``source filter 'a.md'``, ``only
    code chunks``, ``no content-type filter``, ``fusion key rowid``,
    ``rerank off``, ``the trigram retriever only``, ``both retrievers``."""
    p, v = change.param, change.value
    if p == "limit":
        return f"limit {v}"
    if p == "allow_session":
        return f"allowing session {v!r}"
    if p == "source":
        return "no source filter" if v is None else f"source filter {v!r}"
    if p == "content_type":
        return "no content-type filter" if v is None else f"only {v} chunks"
    if p in _BY_NAME:
        return _BY_NAME[p].say(v)
    raise ValueError(f"unknown parameter {p!r}")


def sentence(cf: Counterfactual) -> str:
    """The outcome in words: ``limit 5 would return it at #5``, ``no single
    change returns it: no query term is indexed in it``, ..."""
    if cf.change is not None:
        via = " (after typo correction)" if cf.layer == "rrf-fuzzy" else ""
        return f"{change_words(cf.change)} would return it at #{cf.position}{via}"
    if cf.reason == "returned":
        return f"returned at #{cf.get('position')}"
    if cf.reason == "no-term":
        return "no single change returns it: no query term is indexed in it"
    if cf.reason == "no-single-change":
        return (
            f"no single change returns it (tried limits up to {cf.get('limit_max')}, pool sizes up to "
            f"{cf.get('pool_size_max')}, the filters, the session, {_TRIED_WORDS})"
        )
    if cf.reason == "cancelled":
        return "stopped before a change was found"
    if cf.reason == "already-above":
        return f"it is above already (#{cf.get('position')} against #{cf.get('other_position')})"
    raise ValueError(f"unknown reason {cf.reason!r}")


# ─── naming the chunk ────────────────────────────────────────────────────


class PinName(TypedDict, total=False):
    """A chunk named by ``--pin``: ``key`` (``SOURCE::TITLE``) or ``rowid``."""

    key: str
    rowid: int


def parse_pin(text: str) -> PinName:
    """``"SOURCE::TITLE"`` → ``{"key": ...}``; ``"57"`` → ``{"rowid": 57}``
    (the keyword arguments of :func:`engine.lab.why.find_chunks`).

    Raises:
        ValueError: neither a row id nor a key with ``::``.
    """
    t = text.strip()
    if t.isascii() and t.isdigit():
        return {"rowid": int(t)}
    if "::" in text:
        return {"key": text}
    raise ValueError(f"name a chunk as SOURCE::TITLE or a row id; got {text!r}")


# ─── the search ──────────────────────────────────────────────────────────


def _with(params: SearchParams, **variant: Any) -> SearchParams:
    return replace(params, variant=replace(params.variant, **variant))


def pool_bound(pool_size: int, pool_max: int = POOL_MAX) -> int:
    """The largest pool size tried: :data:`POOL_FACTOR` × the current one,
    at most ``pool_max`` (at least 1). The trim still cuts the list to the
    limit, so a larger pool only helps a chunk the pool cuts (or one a
    deeper retrieval lifts), and far larger pools cost long futile re-runs."""
    return max(1, min(pool_max, POOL_FACTOR * pool_size))


def _candidates(
    params: SearchParams, trace: Trace, chunk: ChunkRef, has_session: bool, limit_max: int, pool_max: int
) -> Iterator[Change]:
    """Every change, least distance first (ties in :data:`PARAMS` order,
    then the smaller step, then up before down). The changed parameters are
    built only for the changes the caller gets to."""
    lim, pool = params.limit, trace.pool_size
    sessions = params.sessions
    pool_field = "pool_size" if sessions is None else "pool_size_sessions"
    v = params.variant
    specs: list[tuple[str, object, float]] = []  # (param, value, distance)
    specs += [("limit", n, abs(n - lim) / max(lim, 1)) for n in range(1, limit_max + 1) if n != lim]
    specs += [
        ("pool_size", n, abs(n - pool) / max(pool, 1)) for n in range(1, pool_bound(pool, pool_max) + 1) if n != pool
    ]
    if sessions is not None and has_session and chunk.session_id and chunk.session_id not in sessions:
        specs.append(("allow_session", chunk.session_id, 1))
    if params.source:
        specs.append(("source", None, 1))
    if params.source != chunk.source:
        specs.append(("source", chunk.source, 1 if params.source else NARROWING))
    if params.content_type:
        specs.append(("content_type", None, 1))
    if params.content_type != chunk.content_type:
        specs.append(("content_type", chunk.content_type, 1 if params.content_type else NARROWING))
    for setting in TRIED:
        specs += [(setting.name, value, 1) for value in setting.choices if value != getattr(v, setting.name)]
    rank = {name: i for i, name in enumerate(PARAMS)}
    current = {"limit": lim, "pool_size": pool}

    def order(spec: tuple[str, object, float]) -> tuple[float, int, int, bool]:
        name, value, distance = spec
        step = value - current[name] if name in current else 0  # type: ignore[operator]
        return (distance, rank[name], abs(step), step < 0)

    def applied(name: str, value: Any) -> SearchParams:  # value's type depends on name (see specs)
        if name == "limit":
            return replace(params, limit=value)
        if name == "pool_size":
            return _with(params, **{pool_field: value})
        if name == "allow_session":
            return replace(params, sessions=sessions + (value,))  # type: ignore[operator]
        if name in ("source", "content_type"):
            return replace(params, **{name: value})
        return _with(params, **{name: value})

    for name, value, distance in sorted(specs, key=order):
        yield Change(name, value, distance, applied(name, value))


class _Search:
    """One :func:`would_return_with` call: the connection, the cache, the chunk."""

    def __init__(self, store: Store, conn: sql.Connection, params: SearchParams, chunk: ChunkRef, runs: RunCache):
        self.store, self.conn, self.params, self.chunk, self.runs = store, conn, params, chunk, runs
        self.reruns = 0
        self.ruled_out = 0
        self._like: dict[tuple[str, str], bool] = {}
        self._corrected: str | None | bool = False  # False: not computed yet
        self._bounds: dict[tuple[str, str, str | None, str | None, str | None], int | None] = {}

    def corrected_query(self) -> str | None:
        """The typo-corrected query the fuzzy fallback would search, or
        ``None`` when it cannot re-run (policy ``never``, no vocabulary, no
        word, nothing corrected)."""
        if self._corrected is False:
            p = self.params
            words = fuzzy_words(p.query)
            out = None
            if p.variant.fuzzy != "never" and self.store.schema.has_vocabulary and words:
                fixed = " ".join(self.runs.correction(self.conn, w).corrected or w for w in words)
                if fixed != " ".join(words):
                    out = fixed
            self._corrected = out
        return self._corrected  # type: ignore[return-value]

    def queries(self) -> Iterator[str]:
        """The texts a pass of any change may search: the query, then (computed
        only when asked for) its correction."""
        yield self.params.query
        fixed = self.corrected_query()
        if fixed is not None:
            yield fixed

    def indexed(self) -> bool:
        """Whether any retriever matches the chunk, for the query or its
        correction, at any depth and without filters."""
        for q in self.queries():
            for name in RETRIEVERS:
                match = Request(name, q, 0).match
                if not match:
                    continue
                t = TABLES[name]
                row = self.conn.execute(
                    f"SELECT 1 FROM {t} WHERE {t} MATCH ? AND rowid = ?", (match, self.chunk.rowid)
                ).fetchone()
                if row is not None:
                    return True
        return False

    def _source_ok(self, p: SearchParams) -> bool:
        if not p.source:
            return True
        if p.source_match == "exact":
            return self.chunk.source == p.source
        key = (p.source, self.chunk.source)
        if key not in self._like:
            row = self.conn.execute(
                "SELECT ? LIKE ? ESCAPE '\\'", (self.chunk.source, like_pattern(p.source))
            ).fetchone()
            self._like[key] = bool(row[0])
        return self._like[key]

    def rank_bound(self, name: str, query: str, p: SearchParams) -> int | None:
        """The best rank the chunk can have in retriever ``name``'s run for
        ``query`` under ``p``'s filters, at any row count: 1 + the rows that
        match with a strictly better bm25 (ties may go either way), or
        ``None`` when the retriever does not match the chunk. One ``COUNT``
        per (retriever, query, filters); bm25 does not depend on the filters
        (its statistics are the whole table's)."""
        request = Request.of(name, query, 0, p)
        key = request.key
        if key not in self._bounds:
            match = request.match
            bound = None
            if match:
                t = TABLES[name]
                own = self.conn.execute(
                    f"SELECT bm25({t}, 5.0, 1.0) FROM {t} WHERE {t} MATCH ? AND rowid = ?", (match, self.chunk.rowid)
                ).fetchone()
                if own is not None:
                    where, args = [f"{t} MATCH ?", f"bm25({t}, 5.0, 1.0) < ?"], [match, own[0]]
                    if p.source:
                        where.append(
                            "sources.label = ?" if p.source_match == "exact" else "sources.label LIKE ? ESCAPE '\\'"
                        )
                        args.append(p.source if p.source_match == "exact" else like_pattern(p.source))
                    if p.content_type:
                        where.append(f"{t}.content_type = ?")
                        args.append(p.content_type)
                    better = self.conn.execute(
                        f"SELECT COUNT(*) FROM {t} JOIN sources ON sources.id = {t}.source_id "
                        f"WHERE {' AND '.join(where)}",
                        args,
                    ).fetchone()[0]
                    bound = int(better) + 1
            self._bounds[key] = bound
        return self._bounds[key]

    def possible(self, p: SearchParams) -> bool:
        """False when the pipeline with ``p`` provably cannot return the
        chunk (see the module docstring); True otherwise. A retriever is
        ruled out by a cached run at that row count without the chunk, or by
        :meth:`rank_bound` beyond the row count; otherwise its run decides."""
        ch = self.chunk
        if not self._source_ok(p) or (p.content_type and ch.content_type != p.content_type):
            return False
        if (
            p.sessions is not None
            and self.store.schema.has_session
            and ch.session_id
            and ch.session_id not in p.sessions
        ):
            return False
        fts = fts_limit_for(p, pool_size_for(p))
        for q in self.queries():
            for name in RETRIEVERS:
                if not runs_retriever(p, name):
                    continue
                request = Request.of(name, q, fts, p)
                run = self.runs.cached(self.conn, request)
                if run is None:
                    bound = self.rank_bound(name, q, p)
                    if bound is None or bound > fts:
                        continue
                    run = self.runs.run(self.conn, self.store.schema, request)
                if any(h.rowid == ch.rowid for h in run.hits):
                    return True
        return False

    def finals(self, p: SearchParams, runs: RunCache | None) -> tuple[dict[int, int], str, bool]:
        """Run the pipeline with ``p``: ``{rowid: 1-based final position}``,
        the layer, and whether a retriever run was a prefix of a deeper one
        (the answer then needs confirming). A probe through the cache skips
        the paths (only the answer is read); the confirming run computes
        everything."""
        self.reruns += 1
        before = runs.slices if runs is not None else 0
        t = search(self.store, p, conn=self.conn, runs=runs, refresh=False, paths=runs is None)
        return finals_of(t), t.layer, runs is not None and runs.slices != before


def finals_of(trace: Trace) -> dict[int, int]:
    """``{rowid: 1-based position}`` of the trace's answer."""
    return {r.candidate.rowid: r.position for r in trace.final}


#: What :func:`_first_change` looks for: true for the answer it wants (``{rowid: position}``).
Goal = Callable[[dict[int, int]], bool]


def _first_change(
    s: _Search,
    params: SearchParams,
    trace: Trace,
    stop: Callable[[], bool] | None,
    limit_max: int,
    pool_max: int,
    goal: Goal,
) -> Counterfactual:
    """The change of least distance whose re-run meets ``goal`` (which
    needs ``s.chunk`` returned: changes that cannot return it are ruled out
    without a run), confirmed as the module docstring says; else
    ``no-single-change`` or ``cancelled``."""
    runs = s.runs
    exact = RunCache(s.store, exact=True)
    rowid = s.chunk.rowid
    for cache in (runs, exact):
        s.runs = cache
        for change in _candidates(params, trace, s.chunk, s.store.schema.has_session, limit_max, pool_max):
            if not s.possible(change.params):
                s.ruled_out += 1
                continue
            if stop is not None and stop():
                return Counterfactual(rowid, None, reason="cancelled", reruns=s.reruns, ruled_out=s.ruled_out)
            finals, layer, sliced = s.finals(change.params, cache)
            if not goal(finals):
                continue
            # A run that took a prefix of a deeper run is confirmed by one that takes nothing from a cache.
            if sliced:
                finals, layer, _ = s.finals(change.params, None)
            if goal(finals):
                return Counterfactual(
                    rowid,
                    change,
                    finals.get(rowid),
                    layer,
                    reruns=s.reruns,
                    ruled_out=s.ruled_out,
                    finals=tuple(sorted(finals.items(), key=lambda kv: kv[1])),
                )
            break  # the cached runs disagreed with SQLite: search again without prefix reuse
        else:
            return Counterfactual(
                rowid,
                None,
                reason="no-single-change",
                data=(("limit_max", limit_max), ("pool_size_max", pool_bound(trace.pool_size, pool_max))),
                reruns=s.reruns,
                ruled_out=s.ruled_out,
            )
    raise AssertionError("a change met the goal through exact runs but not in the confirming run")


def would_return_with(
    store: Store,
    params: SearchParams,
    *,
    rowid: int,
    trace: Trace | None = None,
    runs: RunCache | None = None,
    conn: sql.Connection | None = None,
    stop: Callable[[], bool] | None = None,
    limit_max: int = LIMIT_MAX,
    pool_max: int = POOL_MAX,
) -> Counterfactual:
    """The smallest single change of ``params`` that returns chunk ``rowid``.

    Args:
        store: an open store (nothing is written).
        params: the current search.
        rowid: the chunk's FTS5 row id.
        trace: the trace of ``params`` if you have it (saves a search); it
            must have been produced with these ``params``.
        runs: a run cache to reuse (e.g. the browser's, across keystrokes);
            by default one is made for this call.
        conn: a connection from ``store.connect()`` when called from another
            thread; defaults to the store's own connection.
        stop: called before each re-run; ``True`` stops the search (reason
            ``cancelled``).
        limit_max: the largest limit tried.
        pool_max: the largest pool size tried (:func:`pool_bound` of the
            current pool size, at most this).

    Returns:
        A :class:`Counterfactual`: the change, the chunk's position with it
        and the answering layer, or ``None`` with a reason code.

    Raises:
        ValueError: a ``trace`` made with other parameters.
        ChunkNotFoundError: no chunk has that row id.
        CorruptStoreError / StoreError: the store cannot be read.
    """
    return _timed_in_snapshot(
        store,
        params,
        trace,
        conn,
        runs,
        (rowid,),
        lambda c, chunk, cache: _would_return_with(store, c, params, chunk, trace, cache, stop, limit_max, pool_max),
    )


def _timed_in_snapshot(
    store: Store,
    params: SearchParams,
    trace: Trace | None,
    conn: sql.Connection | None,
    runs: RunCache | None,
    rowids: tuple[int, ...],
    work: Callable[[sql.Connection, ChunkRef, RunCache], Counterfactual],
) -> Counterfactual:
    """``work(conn, chunk, cache)`` for the last of ``rowids`` (each must
    name a chunk, checked in order) in one read snapshot, with
    :attr:`Counterfactual.elapsed_ms` set; ``runs`` or a new cache.

    Raises:
        ValueError: a ``trace`` made with other parameters.
        ChunkNotFoundError: no chunk has one of the row ids.
        CorruptStoreError / StoreError: the store cannot be read.
    """
    if trace is not None and trace.params != params:
        raise ValueError("the trace given was produced with other search parameters")
    start = time.perf_counter()
    c = conn or store.conn
    with sqlite_errors(store.path):
        for rowid in rowids[:-1]:
            find_chunks(store, rowid=rowid, conn=c)
        [chunk] = find_chunks(store, rowid=rowids[-1], conn=c)
        with store.using(c), store.snapshot(c):
            out = work(c, chunk, runs if runs is not None else RunCache(store))
    return replace(out, elapsed_ms=elapsed_ms(start))


def _would_return_with(
    store: Store,
    conn: sql.Connection,
    params: SearchParams,
    chunk: ChunkRef,
    trace: Trace | None,
    runs: RunCache,
    stop: Callable[[], bool] | None,
    limit_max: int,
    pool_max: int,
) -> Counterfactual:
    s = _Search(store, conn, params, chunk, runs)
    if trace is None:
        trace = search(store, params, conn=conn, runs=runs)
        s.reruns += 1
    now = finals_of(trace).get(chunk.rowid)
    if now is not None:
        return Counterfactual(chunk.rowid, None, reason="returned", data=(("position", now),), reruns=s.reruns)
    if not s.indexed():
        return Counterfactual(chunk.rowid, None, reason="no-term", reruns=s.reruns)
    return _first_change(s, params, trace, stop, limit_max, pool_max, lambda finals: chunk.rowid in finals)


def would_reorder_with(
    store: Store,
    params: SearchParams,
    *,
    above: int,
    below: int,
    trace: Trace | None = None,
    runs: RunCache | None = None,
    conn: sql.Connection | None = None,
    stop: Callable[[], bool] | None = None,
    limit_max: int = LIMIT_MAX,
    pool_max: int = POOL_MAX,
) -> Counterfactual:
    """The smallest single change of ``params`` after which chunk ``below``
    is returned above chunk ``above`` (both in the answer, ``below`` at the
    better position): the same changes, order, pruning and proof by
    re-running as :func:`would_return_with` (a change that cannot return
    ``below`` is ruled out without a run).

    Returns:
        A :class:`Counterfactual` for ``below``: the change, ``below``'s
        position with it, the layer and the re-run's whole answer
        (:attr:`Counterfactual.finals`); or no change, with ``no-term``
        (``below`` matches no query term), ``no-single-change``,
        ``cancelled``, or ``already-above`` (``below`` is above ``above``
        in the answer already; data: ``position``, ``other_position``).

    Raises:
        ValueError: ``above == below``, or a ``trace`` made with other parameters.
        ChunkNotFoundError: no chunk has one of the row ids.
        CorruptStoreError / StoreError: the store cannot be read.
    """
    if above == below:
        raise ValueError("the two chunks are the same chunk")
    return _timed_in_snapshot(
        store,
        params,
        trace,
        conn,
        runs,
        (above, below),
        lambda c, chunk, cache: _would_reorder_with(
            store, c, params, above, chunk, trace, cache, stop, limit_max, pool_max
        ),
    )


def _would_reorder_with(
    store: Store,
    conn: sql.Connection,
    params: SearchParams,
    above: int,
    chunk: ChunkRef,
    trace: Trace | None,
    runs: RunCache,
    stop: Callable[[], bool] | None,
    limit_max: int,
    pool_max: int,
) -> Counterfactual:
    below = chunk.rowid
    s = _Search(store, conn, params, chunk, runs)
    if trace is None:
        trace = search(store, params, conn=conn, runs=runs)
        s.reruns += 1

    def flipped(finals: dict[int, int]) -> bool:
        return below in finals and above in finals and finals[below] < finals[above]

    now = finals_of(trace)
    if flipped(now):
        data = (("position", now[below]), ("other_position", now[above]))
        return Counterfactual(below, None, reason="already-above", data=data, reruns=s.reruns)
    if not s.indexed():
        return Counterfactual(below, None, reason="no-term", reruns=s.reruns)
    return _first_change(s, params, trace, stop, limit_max, pool_max, flipped)
