"""What the browser reads from a store before it shows it (counts, sessions,
source labels), and how a store that cannot be read is put into words.

A store damaged in the middle can open fine and fail later: the launcher
refuses a store whose counts cannot be read (one line, exit status 2), the
store picker refuses it, and a search that fails on a damaged part of the
index is explained in the browser instead of crashing it. No Textual here.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from engine import CorruptStoreError, Store, StoreError
from engine.store import is_corruption, sqlite_store_error


@dataclass(frozen=True)
class StoreFacts:
    """The store facts the browser shows and offers.

    Attributes:
        stats: :meth:`engine.Store.stats`.
        session_counts: :meth:`engine.Store.session_counts`.
        source_labels: every source label, in store order.
    """

    stats: dict
    session_counts: list[tuple[str, int]]
    source_labels: list[str]


def read_facts(store: Store) -> StoreFacts:
    """Read :class:`StoreFacts` from ``store``.

    Raises:
        StoreError: the store cannot be read; a raw ``sqlite3.DatabaseError``
            becomes the engine's error for it (:func:`engine.store.sqlite_store_error`:
            ``CorruptStoreError`` for a damaged file), naming the store.
    """
    try:
        with store.lock:
            return StoreFacts(store.stats(), store.session_counts(), [s["label"] for s in store.sources()])
    except sqlite3.DatabaseError as exc:
        raise sqlite_store_error(exc, store.path) from exc


def is_damage(error: BaseException) -> bool:
    """True when the store file itself is damaged: a
    :class:`~engine.CorruptStoreError`, or a raw SQLite error whose result
    code says so (:func:`engine.store.is_corruption`)."""
    if isinstance(error, CorruptStoreError):
        return True
    return isinstance(error, sqlite3.DatabaseError) and is_corruption(error)


def is_store_error(error: BaseException) -> bool:
    """True for an error reading the store (as opposed to a bug)."""
    return isinstance(error, (StoreError, sqlite3.DatabaseError))


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
