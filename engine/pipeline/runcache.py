"""The store's retriever-run cache, and the handles searches read it through.

Runs are kept per store in :attr:`engine.store.store.Store.runs`, by
:attr:`~engine.pipeline.stages.retrieve.Request.key` (everything but the row
count) and then by row count, for one store data version at a time (the one
``conn``'s read transaction noted: :meth:`engine.store.store.Store.begin_read`;
outside one nothing is read or stored). Typo corrections live beside them
(:func:`engine.pipeline.stages.fuzzy.correct_word_cached`). Failed runs are not kept.

A :class:`RunCache` is a handle on those entries with a reuse mode and counters:

* ``exact=True`` (a plain search) reuses only a run of the same row count;
* ``exact=False`` (a counterfactual's probes) also answers ``LIMIT n`` from
  a run of ``LIMIT m >= n`` (its first ``n`` rows) or from a run that came
  back short (it holds every match): SQLite's ``ORDER BY ... LIMIT`` is a
  prefix of the full order (ties by rowid), checked on every golden case
  (``tests/engine/test_runcache.py``); the counterfactual confirms such an
  answer with an exact run. A miss after a shallower run fetches ``max(n,
  2 × its limit)`` rows, so a growing scan costs a logarithmic number of statements.
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from typing import Hashable

from engine.pipeline.stages.fuzzy import Correction, correct_word_cached
from engine.pipeline.stages.retrieve import HalfShare, Request, RetrieverRun, retrieve
from engine.store import sql
from engine.store.cache import VersionedLRU, noted_version
from engine.store.clock import elapsed_ms
from engine.store.schema import SchemaInfo
from engine.store.store import Store

#: Row counts kept per run key (the smallest go first).
MAX_LIMITS_PER_KEY = 8
#: The store's entries: per run key, the runs by row count.
Entries = VersionedLRU[dict[int, RetrieverRun]]


def runs_for(entries: Entries, version: Hashable | None, key: Hashable) -> dict[int, RetrieverRun]:
    """The runs of ``key`` by row count (empty when none or another version)."""
    return entries.get(version, key) or {}


def keep(entries: Entries, version: Hashable | None, key: Hashable, run: RetrieverRun) -> None:
    """Store ``run`` (fetched at ``run.fts_limit``) under ``key``, keeping at
    most :data:`MAX_LIMITS_PER_KEY` row counts per key (thread-safe: one put)."""
    if version is None or run.error is not None:
        return
    have = dict(runs_for(entries, version, key))
    have[run.fts_limit] = replace(run, cached=False)
    while len(have) > MAX_LIMITS_PER_KEY:
        del have[min(have)]
    entries.put(version, key, have)


class RunCache:
    """A handle on ``store.runs`` with a reuse mode and counters.

    Counters (this handle's own): ``hits`` (runs answered from the entries,
    whole or as a prefix), ``misses`` (runs fetched), ``slices`` (answers
    that are a prefix of a deeper run rather than the statement itself) and
    ``rows_fetched``, for tests, benchmarks and the counterfactual's
    confirming run.

    Args:
        store: the store whose entries are read and written.
        exact: reuse a run only for the same row count (no prefix reuse).
    """

    def __init__(self, store: Store, exact: bool = False) -> None:
        self.store = store
        self.exact = exact
        self._lock = threading.Lock()
        self.hits = self.misses = self.rows_fetched = self.slices = 0

    def _answer(self, version: Hashable | None, request: Request) -> tuple[RetrieverRun | None, int | None]:
        """``(answer, deepest row count held)`` for ``request``."""
        fts_limit = request.fts_limit
        have = runs_for(self.store.runs, version, request.key)
        if not have:
            return None, None
        deepest = max(have)
        same = have.get(fts_limit)
        if same is not None:
            return same, deepest
        if self.exact:
            return None, deepest
        run = have[deepest]
        complete = len(run.hits) < run.fts_limit
        if not (deepest >= fts_limit or complete):
            return None, deepest
        with self._lock:
            self.slices += 1
        return replace(run, fts_limit=fts_limit, hits=run.hits[:fts_limit], elapsed_ms=0.0), deepest

    def cached(self, conn: sql.Connection, request: Request) -> RetrieverRun | None:
        """What :meth:`run` would answer on ``conn`` without running SQL, or ``None``."""
        start = time.perf_counter()
        hit, _ = self._answer(noted_version(conn), request)
        return None if hit is None else replace(hit, cached=True, elapsed_ms=elapsed_ms(start))

    def lookup(self, conn: sql.Connection, request: Request) -> RetrieverRun | None:
        """:meth:`cached`, counted as a hit when it answers (what :meth:`run` does before it runs SQL)."""
        hit = self.cached(conn, request)
        if hit is not None:
            with self._lock:
                self.hits += 1
        return hit

    def run(
        self, conn: sql.Connection, schema: SchemaInfo, request: Request, *, share: HalfShare | None = None
    ) -> RetrieverRun:
        """:func:`engine.pipeline.stages.retrieve.retrieve`, answered from the
        store's entries when this handle's mode allows.

        Returns:
            A :class:`RetrieverRun` at the row count asked for (its first
            ``fts_limit`` rows, 1-based ranks as fetched); a reused one has
            ``cached=True`` and ``elapsed_ms`` the lookup's time.

        Raises:
            engine.store.sql.Error: the store cannot be read (as :func:`retrieve`).
        """
        start = time.perf_counter()
        version = noted_version(conn)
        hit, deepest = self._answer(version, request)
        if hit is not None:
            with self._lock:
                self.hits += 1
            return replace(hit, cached=True, elapsed_ms=elapsed_ms(start))
        fts_limit = request.fts_limit
        fetch = fts_limit if deepest is None or self.exact else max(fts_limit, 2 * deepest)
        run = retrieve(
            conn,
            schema,
            request.at(fetch),
            share=share,
            phrase_rows=self.store.phrase_rows,
            kept_rows=self.store.kept_rows,
        )
        with self._lock:
            self.misses += 1
            self.rows_fetched += len(run.hits)
        keep(self.store.runs, version, request.key, run)
        if fetch == fts_limit:
            return run
        with self._lock:
            self.slices += 1
        return replace(run, fts_limit=fts_limit, hits=run.hits[:fts_limit])

    def correction(self, conn: sql.Connection, word: str) -> Correction:
        """:func:`engine.pipeline.stages.fuzzy.correct_word`, through the store's correction
        cache (:func:`engine.pipeline.stages.fuzzy.correct_word_cached`)."""
        return correct_word_cached(self.store, conn, word)
