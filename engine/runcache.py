"""Retriever runs and typo corrections reused across searches of one store.

A counterfactual (:mod:`engine.counterfactual`) re-runs the whole pipeline
for many single-parameter changes. Each re-run's retriever runs depend only
on the retriever, the sanitised query, the SQL filters (source, source
match, content type) and the row count (``fts_limit``); its typo
corrections depend only on the word. :class:`RunCache` keeps both for one
*data version* of one store and hands them to :func:`engine.pipeline.search`
(``runs=``), which passes it to the retriever stages
(:attr:`engine.stage_api.PassContext.runs`) and to the fuzzy step.

Reuse across row counts: a run fetched with ``LIMIT m`` answers any
``LIMIT n <= m`` with its first ``n`` rows, and a run that came back with
fewer rows than its limit holds every match, so it answers any limit. This
rests on SQLite's ``ORDER BY ... LIMIT`` being a prefix of the full order
(ties keep scan order: the sorter carries a sequence number); it is checked
against the real statement on every golden case
(``tests/engine/test_runcache.py``), and :func:`engine.counterfactual.would_return_with`
confirms its answer with an uncached re-run. ``exact=True`` turns the
prefix reuse off (only identical row counts are reused).

Data version: :meth:`RunCache.sync` is called before a read transaction
begins; it drops everything when the store may have changed since the
entries were made: any commit by any connection (``PRAGMA data_version`` of
a connection the cache keeps for nothing else), or, for an in-memory store,
any change by its only connection (``total_changes``). Entries made inside
a transaction that began after a sync are therefore at least as new as the
version noted.

This is deliberately small and in one place: a store-level run cache can
replace it by making :meth:`RunCache.run` and :meth:`RunCache.correction`
delegate to it.
"""

from __future__ import annotations

import sqlite3
import threading
from dataclasses import replace
from typing import TYPE_CHECKING, Hashable

from .fuzzy import correct_word
from .model import Correction, RetrieverRun
from .query import sanitize_porter, sanitize_trigram
from .retrieve import retrieve

if TYPE_CHECKING:
    from .store import SchemaInfo, Store

#: Runs kept (least recently used out first).
MAX_RUNS = 64


def run_key(retriever: str, query: str, source: str | None, source_match: str, content_type: str | None) -> tuple:
    """What a retriever run depends on besides its row count: ``(retriever,
    sanitised query, source filter, source match, content type)`` (the match
    mode only counts when there is a source filter)."""
    sanitized = sanitize_porter(query, "OR") if retriever == "porter" else sanitize_trigram(query, "OR")
    return (retriever, sanitized, source or None, source_match if source else None, content_type or None)


class RunCache:
    """Retriever runs and corrections of one store, valid for one data version.

    Thread-safe. Counters: ``hits`` (runs answered from the cache, whole or
    as a prefix), ``misses`` (runs fetched), ``slices`` (answers that are a
    prefix of a deeper run rather than the statement itself) and
    ``rows_fetched``, for tests, benchmarks and the counterfactual's
    confirming run.

    Args:
        store: the store whose runs are kept.
        exact: reuse a run only for the same row count (no prefix reuse).
    """

    def __init__(self, store: "Store", exact: bool = False):
        self.store = store
        self.exact = exact
        self._lock = threading.Lock()
        self._version: Hashable | None = None
        self._sentinel: sqlite3.Connection | None = None
        self._runs: dict[tuple, RetrieverRun] = {}
        self._corrections: dict[str, Correction] = {}
        self.hits = self.misses = self.rows_fetched = self.slices = 0

    # ─── the data version ─────────────────────────────────────────────

    def version(self) -> Hashable:
        """A token that changes when the store may have changed (see the
        module docstring).

        Raises:
            sqlite3.Error: the file cannot be read.
        """
        store = self.store
        if store.path is None:
            return ("memory", store.conn.total_changes)
        with self._lock:
            if self._sentinel is None:
                self._sentinel = store.connect()
            return ("file", self._sentinel.execute("PRAGMA data_version").fetchone()[0])

    def sync(self) -> None:
        """Drop every entry when the data version changed since the last
        sync. Call it before the read transaction the cached runs are used in
        begins."""
        v = self.version()
        with self._lock:
            if v != self._version:
                self._runs.clear()
                self._corrections.clear()
                self._version = v

    def close(self) -> None:
        """Close the connection kept for the data version (idempotent)."""
        with self._lock:
            if self._sentinel is not None:
                try:
                    self._sentinel.close()
                except sqlite3.Error:
                    pass
                self._sentinel = None

    # ─── what the pipeline asks for ───────────────────────────────────

    def _answer(self, key: tuple, fts_limit: int) -> RetrieverRun | None:
        """The cached answer for ``key`` at ``fts_limit`` (lock held), or ``None``."""
        have = self._runs.get(key)
        if have is None:
            return None
        if have.fts_limit == fts_limit:
            self._runs[key] = self._runs.pop(key)  # most recent last
            return have
        complete = len(have.hits) < have.fts_limit
        if self.exact or not (have.fts_limit >= fts_limit or complete):
            return None
        self._runs[key] = self._runs.pop(key)
        self.slices += 1
        return replace(have, fts_limit=fts_limit, hits=have.hits[:fts_limit], elapsed_ms=0.0)

    def _key(self, retriever: str, query: str, fts_limit: int, source: str | None, source_match: str,
             content_type: str | None) -> tuple:
        key = run_key(retriever, query, source, source_match, content_type)
        return key + (fts_limit,) if self.exact else key

    def cached(
        self,
        retriever: str,
        query: str,
        fts_limit: int,
        source: str | None = None,
        source_match: str = "like",
        content_type: str | None = None,
    ) -> RetrieverRun | None:
        """What :meth:`run` would answer without running SQL, or ``None``."""
        key = self._key(retriever, query, fts_limit, source, source_match, content_type)
        with self._lock:
            return self._answer(key, fts_limit)

    def run(
        self,
        conn: sqlite3.Connection,
        schema: "SchemaInfo",
        retriever: str,
        query: str,
        fts_limit: int,
        source: str | None = None,
        source_match: str = "like",
        content_type: str | None = None,
    ) -> RetrieverRun:
        """:func:`engine.retrieve.retrieve` with the same arguments, answered
        from the cache when it holds a run of the same key with at least
        ``fts_limit`` rows fetched (or every match). A new run is fetched at
        ``fts_limit`` or, when a shallower run of the key is cached, at
        ``max(fts_limit, 2 × its limit)`` (a growing scan of row counts then
        costs a logarithmic number of statements). Runs that failed are not
        kept.

        Returns:
            A :class:`RetrieverRun` whose ``fts_limit`` is the one asked for
            and whose ``hits`` are the first ``fts_limit`` rows (1-based
            ranks, as fetched); ``elapsed_ms`` is 0 for a cached answer.
        """
        key = self._key(retriever, query, fts_limit, source, source_match, content_type)
        with self._lock:
            hit = self._answer(key, fts_limit)
            if hit is not None:
                self.hits += 1
                return hit
            have = self._runs.get(key)
            fetch = fts_limit if have is None or self.exact else max(fts_limit, 2 * have.fts_limit)
        run = retrieve(conn, schema, retriever, query, fetch, source, source_match, content_type)
        with self._lock:
            self.misses += 1
            self.rows_fetched += len(run.hits)
            if run.error is None:
                old = self._runs.get(key)
                if old is None or old.fts_limit <= fetch:
                    self._runs.pop(key, None)
                    self._runs[key] = run
                while len(self._runs) > MAX_RUNS:
                    self._runs.pop(next(iter(self._runs)))
            if fetch == fts_limit:
                return run
            self.slices += 1
        return replace(run, fts_limit=fts_limit, hits=run.hits[:fts_limit])

    def correction(self, conn: sqlite3.Connection, word: str) -> Correction:
        """:func:`engine.fuzzy.correct_word`, computed once per word."""
        with self._lock:
            hit = self._corrections.get(word)
        if hit is not None:
            return hit
        c = correct_word(conn, word)
        with self._lock:
            self._corrections[word] = c
        return c
