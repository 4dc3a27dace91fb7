"""Caches that never serve an answer from before a write.

A :class:`VersionedLRU` holds entries for one store *data version* at a time
(:meth:`engine.store.store.Store.data_version`: a token that changes whenever any
connection, in this process or another, commits to the store). A lookup
with any other version misses, and the first entry stored under a new
version drops every older one. Callers read the version *before* their read
transaction takes its snapshot, so an entry stored under version ``v`` was
computed from a snapshot at least as new as ``v``.

The store keeps four (:attr:`engine.store.store.Store.runs`, read and filled by
:mod:`engine.pipeline.runcache`,
:attr:`engine.store.store.Store.corrections` and
:attr:`engine.store.store.Store.phrase_rows`,
:attr:`engine.store.store.Store.kept_rows`): retriever runs, keyed by
:attr:`engine.pipeline.stages.retrieve.Request.key` (retriever, sanitised query, filters) and
then by row count, read through :class:`engine.pipeline.runcache.RunCache` handles;
fuzzy corrections, keyed by the normalised word; and the rows each FTS5
phrase matches, keyed by ``(table, phrase)`` (:func:`engine.pipeline.stages.topk.top_k`);
and each large table's rows grouped for filters, keyed by table
(:mod:`engine.pipeline.stages.kept`). The correction cache
copies the reference's (``ContentStore`` keeps the last 256 corrections in a
``Map`` used as an LRU); the reference clears it when a vocabulary word is
inserted, this one on any write.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Generic, Hashable, TypeVar

V = TypeVar("V")

#: Entries per cache (the reference's fuzzy cache size).
DEFAULT_SIZE = 256


def noted_version(conn: Any) -> Hashable | None:
    """The data version ``conn``'s read transaction noted
    (:meth:`engine.store.store.Store.begin_read`: ``conn.read_version``), or
    ``None`` outside a transaction or when none was noted: what a cache
    lookup on ``conn`` is keyed by."""
    version: Hashable | None = getattr(conn, "read_version", None) if conn.in_transaction else None
    return version


class VersionedLRU(Generic[V]):
    """A thread-safe LRU of at most ``maxsize`` entries, valid for one data
    version at a time. ``version=None`` means "unknown" (for instance a read
    inside a transaction the caller opened): nothing is read or stored."""

    def __init__(self, maxsize: int = DEFAULT_SIZE):
        if maxsize < 1:
            raise ValueError(f"maxsize must be at least 1; got {maxsize}")
        self.maxsize = maxsize
        self._lock = threading.Lock()
        self._version: Hashable | None = None
        self._data: OrderedDict[Hashable, V] = OrderedDict()
        #: Lookups answered and missed since the last :meth:`clear` (for benchmarks and tests).
        self.hits = 0
        self.misses = 0

    def get(self, version: Hashable | None, key: Hashable) -> V | None:
        """The entry for ``key`` stored under ``version`` (made most recent), or ``None``."""
        if version is None:
            return None
        with self._lock:
            if version != self._version or key not in self._data:
                self.misses += 1
                return None
            self._data.move_to_end(key)
            self.hits += 1
            return self._data[key]

    def put(self, version: Hashable | None, key: Hashable, value: V) -> None:
        """Store ``value`` under ``version``; a new version drops every older entry,
        and the least recently used entry goes when the cache is full."""
        if version is None:
            return
        with self._lock:
            if version != self._version:
                self._data.clear()
                self._version = version
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self.maxsize:
                self._data.popitem(last=False)

    def clear(self) -> None:
        """Forget every entry (and the hit/miss counts)."""
        with self._lock:
            self._data.clear()
            self._version = None
            self.hits = self.misses = 0

    def __len__(self) -> int:
        with self._lock:
            return len(self._data)

    def values(self) -> list[V]:
        """The entries held now (least recently used first), whatever their version."""
        with self._lock:
            return list(self._data.values())
