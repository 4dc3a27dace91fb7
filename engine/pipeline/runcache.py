"""The store's retriever-run cache, and the handles searches read it through.

Every retriever run a search makes is kept once per store, in
:attr:`engine.store.store.Store.runs` (a :class:`engine.store.cache.VersionedLRU` of ``{row count: run}`` per run key), for one store *data
version* at a time (:meth:`engine.store.store.Store.data_version`: it changes with
any commit by any connection, in this process or another). A run is valid
for the version noted when the read transaction it was made in began
(:meth:`engine.store.store.Store.begin_read` sets ``conn.read_version``); inside a
transaction the caller opened some other way the version is unknown and
nothing is read or stored. The first entry stored under a new version drops
every older one (:class:`engine.store.cache.VersionedLRU`). Typo corrections live
beside the runs in :attr:`engine.store.store.Store.corrections`
(:func:`engine.pipeline.stages.fuzzy.correct_word_cached`; 256 words, as the reference).

A retriever run depends only on the retriever, the sanitised query, the SQL
filters (source, source match, content type) and the row count
(``fts_limit``): :func:`run_key` is everything but the row count, and each
entry holds the runs fetched for that key by row count.

:class:`RunCache` is a *handle* on those entries (no storage of its own:
every handle of a store shares them), with a reuse mode and counters:

* ``exact=True`` (what a plain :func:`engine.pipeline.run.search` uses) reuses
  only a run fetched at the same row count: the answer is then the one the
  statement gives.
* ``exact=False`` (a counterfactual's probes, :mod:`engine.lab.counterfactual`)
  also answers ``LIMIT n`` from a run fetched with ``LIMIT m >= n`` (its
  first ``n`` rows), and any limit from a run that came back with fewer rows
  than its limit (it holds every match). This rests on SQLite's ``ORDER BY
  ... LIMIT`` being a prefix of the full order (ties keep rowid order); it
  is checked against the real statement on every golden case
  (``tests/engine/test_runcache.py``), and
  :func:`engine.lab.counterfactual.would_return_with` confirms such an answer
  with an exact re-run. A miss after a shallower run fetches ``max(n, 2 ×
  its limit)`` rows, so a growing scan of row counts costs a logarithmic
  number of statements.

Runs that failed (an FTS5 syntax error recorded on the run) are not kept.
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Hashable

from engine.store import sql
from engine.pipeline.stages.fuzzy import correct_word_cached
from engine.pipeline.trace import Correction, RetrieverRun
from engine.pipeline.query import sanitize_porter, sanitize_trigram
from engine.pipeline.stages.retrieve import retrieve
from engine.store.cache import VersionedLRU
from engine.store.clock import elapsed_ms

if TYPE_CHECKING:
    from engine.pipeline.stages.retrieve import HalfShare
    from engine.store.schema import SchemaInfo
    from engine.store.store import Store


def run_key(retriever: str, query: str, source: str | None, source_match: str, content_type: str | None) -> tuple:
    """What a retriever run depends on besides its row count: ``(retriever,
    sanitised query, source filter, source match, content type)`` (the match
    mode only counts when there is a source filter)."""
    sanitized = sanitize_porter(query, "OR") if retriever == "porter" else sanitize_trigram(query, "OR")
    return (retriever, sanitized, source or None, source_match if source else None, content_type or None)


#: Row counts kept per run key (the smallest go first).
MAX_LIMITS_PER_KEY = 8


def runs_for(entries: VersionedLRU[dict[int, Any]], version: Hashable | None, key: tuple) -> dict[int, RetrieverRun]:
    """The runs of ``key`` in the store's run cache, by row count (empty when
    none or another version)."""
    return entries.get(version, key) or {}


def keep(entries: VersionedLRU[dict[int, Any]], version: Hashable | None, key: tuple, run: RetrieverRun) -> None:
    """Store ``run`` (fetched at ``run.fts_limit``) under ``key``, keeping at
    most :data:`MAX_LIMITS_PER_KEY` row counts per key (thread-safe: one put)."""
    if version is None or run.error is not None:
        return
    have = dict(runs_for(entries, version, key))
    have[run.fts_limit] = replace(run, cached=False)
    while len(have) > MAX_LIMITS_PER_KEY:
        del have[min(have)]
    entries.put(version, key, have)


def _version(conn: sql.Connection) -> Hashable | None:
    """The data version ``conn``'s read transaction noted, or ``None``."""
    return getattr(conn, "read_version", None) if conn.in_transaction else None


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

    def __init__(self, store: "Store", exact: bool = False):
        self.store = store
        self.exact = exact
        self._lock = threading.Lock()
        self.hits = self.misses = self.rows_fetched = self.slices = 0

    def _answer(self, version: Hashable | None, key: tuple, fts_limit: int) -> tuple[RetrieverRun | None, int | None]:
        """``(answer, deepest row count held)`` for ``key`` at ``fts_limit``."""
        have = runs_for(self.store.runs, version, key)
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

    def cached(
        self,
        conn: sql.Connection,
        retriever: str,
        query: str,
        fts_limit: int,
        source: str | None = None,
        source_match: str = "like",
        content_type: str | None = None,
    ) -> RetrieverRun | None:
        """What :meth:`run` would answer on ``conn`` without running SQL, or ``None``."""
        start = time.perf_counter()
        hit, _ = self._answer(_version(conn), run_key(retriever, query, source, source_match, content_type), fts_limit)
        return None if hit is None else replace(hit, cached=True, elapsed_ms=elapsed_ms(start))

    def lookup(
        self,
        conn: sql.Connection,
        retriever: str,
        query: str,
        fts_limit: int,
        source: str | None = None,
        source_match: str = "like",
        content_type: str | None = None,
    ) -> RetrieverRun | None:
        """:meth:`cached`, counted as a hit when it answers (what :meth:`run`
        does before it runs SQL)."""
        hit = self.cached(conn, retriever, query, fts_limit, source, source_match, content_type)
        if hit is not None:
            with self._lock:
                self.hits += 1
        return hit

    def run(
        self,
        conn: sql.Connection,
        schema: "SchemaInfo",
        retriever: str,
        query: str,
        fts_limit: int,
        source: str | None = None,
        source_match: str = "like",
        content_type: str | None = None,
        *,
        share: "HalfShare | None" = None,
    ) -> RetrieverRun:
        """:func:`engine.pipeline.stages.retrieve.retrieve` with the same arguments, answered
        from the store's entries when this handle's mode allows.

        Returns:
            A :class:`RetrieverRun` whose ``fts_limit`` is the one asked for
            and whose ``hits`` are the first ``fts_limit`` rows (1-based
            ranks, as fetched); a reused one has ``cached=True`` and
            ``elapsed_ms`` the lookup's time.

        Raises:
            engine.store.sql.Error: the store cannot be read (as :func:`retrieve`).
        """
        start = time.perf_counter()
        version = _version(conn)
        key = run_key(retriever, query, source, source_match, content_type)
        hit, deepest = self._answer(version, key, fts_limit)
        if hit is not None:
            with self._lock:
                self.hits += 1
            return replace(hit, cached=True, elapsed_ms=elapsed_ms(start))
        fetch = fts_limit if deepest is None or self.exact else max(fts_limit, 2 * deepest)
        run = retrieve(
            conn,
            schema,
            retriever,
            query,
            fetch,
            source,
            source_match,
            content_type,
            share=share,
            phrase_rows=getattr(self.store, "phrase_rows", None),
        )
        with self._lock:
            self.misses += 1
            self.rows_fetched += len(run.hits)
        keep(self.store.runs, version, key, run)
        if fetch == fts_limit:
            return run
        with self._lock:
            self.slices += 1
        return replace(run, fts_limit=fts_limit, hits=run.hits[:fts_limit])

    def correction(self, conn: sql.Connection, word: str) -> Correction:
        """:func:`engine.pipeline.stages.fuzzy.correct_word`, through the store's correction
        cache (:func:`engine.pipeline.stages.fuzzy.correct_word_cached`)."""
        return correct_word_cached(self.store, conn, word)
