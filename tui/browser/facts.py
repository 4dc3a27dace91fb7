"""What the browser reads from a store before it shows it (counts, sessions,
source labels), and how a store that cannot be read is put into words.

A store damaged in the middle can open fine and fail later: the launcher
refuses a store whose counts cannot be read (one line, exit status 2), the
store picker refuses it, and a search that fails on a damaged part of the
index is explained in the browser instead of crashing it. No Textual here.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine import CorruptStoreError, Store, StoreError
from engine.store import sql
from engine.store.errors import is_corruption, sqlite_store_error
from engine.store.rows import StoreCounts


#: Up to this many chunks (as the ``sources`` table records them) the facts
#: are counted exactly before the first paint; a larger store shows the
#: recorded counts at once and has its sessions counted in a worker (reading
#: every chunk: about 0.7 s at 1,000,000 chunks).
EXACT_FACTS_MAX_CHUNKS = 100_000


@dataclass(frozen=True)
class StoreFacts:
    """The store facts the browser shows and offers.

    Attributes:
        stats: :meth:`engine.Store.stats` (chunks counted), or for a store of
            more than :data:`EXACT_FACTS_MAX_CHUNKS` chunks
            :meth:`engine.Store.recorded_stats` (the counts ``sources`` records).
        session_counts: :meth:`engine.Store.session_counts` (empty while
            ``sessions_pending``).
        source_labels: every source label, in store order.
        sessions_pending: the sessions are still to be counted (a large
            store: :func:`read_sessions`, off the UI thread).
    """

    stats: StoreCounts
    session_counts: list[tuple[str, int]]
    source_labels: list[str]
    sessions_pending: bool = False


def read_facts(store: Store) -> StoreFacts:
    """Read :class:`StoreFacts` from ``store``: a few milliseconds whatever
    its size (one pass over ``sources``), plus, for a store of at most
    :data:`EXACT_FACTS_MAX_CHUNKS` chunks, the exact counts and sessions.

    Raises:
        StoreError: the store cannot be read; a raw SQLite error (``engine.store.sql.Error``)
            becomes the engine's error for it (:func:`engine.store.errors.sqlite_store_error`:
            ``CorruptStoreError`` for a damaged file), naming the store.
    """
    try:
        with store.lock:
            recorded = store.recorded_stats()
            labels = store.source_labels()
            if recorded.chunks > EXACT_FACTS_MAX_CHUNKS:
                return StoreFacts(recorded, [], labels, sessions_pending=True)
            return StoreFacts(store.stats(), store.session_counts(), labels)
    except sql.Error as exc:
        raise sqlite_store_error(exc, store.path) from exc


def read_sessions(store: Store, conn: sql.Connection | None = None) -> list[tuple[str, int]]:
    """:meth:`engine.Store.session_counts` for a worker thread (``conn`` from
    :meth:`engine.Store.thread_connection`).

    Raises:
        StoreError: as :func:`read_facts`.
    """
    try:
        with store.using(conn) as c:
            return store.session_counts(c)
    except sql.Error as exc:
        raise sqlite_store_error(exc, store.path) from exc


def is_damage(error: BaseException) -> bool:
    """True when the store file itself is damaged: a
    :class:`~engine.CorruptStoreError`, or a raw SQLite error whose result
    code says so (:func:`engine.store.errors.is_corruption`)."""
    if isinstance(error, CorruptStoreError):
        return True
    return isinstance(error, sql.Error) and is_corruption(error)


def is_store_error(error: BaseException) -> bool:
    """True for an error reading the store (as opposed to a bug)."""
    return isinstance(error, (StoreError, sql.Error))


def problem_headline(error: BaseException) -> str:
    """One short phrase: ``the store is damaged`` / ``the store cannot be read``
    / the error's type."""
    if is_damage(error):
        return "the store is damaged"
    if is_store_error(error):
        return "the store cannot be read"
    return type(error).__name__


def describe_problem(error: BaseException) -> str:
    """One line: :func:`problem_headline` and the error's own words (just the
    words for a :class:`~engine.CorruptStoreError`, whose message already
    names the damaged file)."""
    words = str(error) or type(error).__name__
    if isinstance(error, CorruptStoreError):
        return words
    return f"{problem_headline(error)}: {words}"
