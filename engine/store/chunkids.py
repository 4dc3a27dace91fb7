"""Stable chunk ids: a document id for judgments that survives re-indexing.

Row ids change every time a source is indexed again (the reference deletes a
label's rows and inserts them anew), so qrels, TREC runs and snapshots name a
chunk by its **chunk id** instead:

* ``SOURCE::TITLE`` for the first chunk (lowest row id) of a source with that
  title: the reference fusion key, so most ids read like the keys shown
  everywhere else;
* ``SOURCE::TITLE#2``, ``SOURCE::TITLE#3``, ... for later chunks of the same
  source with the same title, numbered in row-id order within the source.

Re-indexing unchanged content gives the same chunks in the same order, hence
the same ids; editing one file only moves ids inside that file. ``SOURCE`` is
the source label (``""`` for an orphan chunk whose source row is missing).
In the rare case where ``KEY#n`` is itself the plain key of another chunk of
the store, the later chunk takes the next free number (``KEY#n+1``, ...):
ids are unique within a store.

In TREC files (whitespace-separated) a chunk id is written with
:func:`trec_token`: ``%``, whitespace and non-printable characters are
percent-encoded as UTF-8 (``docs/a.md::Guide > Example`` becomes
``docs/a.md::Guide%20>%20Example``); :func:`from_trec_token` reverses it,
strictly: a ``%`` that starts no escape (``%zz``) or escapes that are not
UTF-8 (``%FF``) are refused, never kept or replaced, so an id read from a
TREC file is written back as the same id.

:func:`chunk_ids` computes the ids of a whole store with one query and caches
them per store and data version (see :func:`store_version`). Pure Python.
"""

from __future__ import annotations

import re
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import islice
from typing import Mapping

from engine.store import sql
from engine.store.errors import sqlite_errors
from engine.store.store import Store

#: Separator between a key and the occurrence number of a later chunk.
OCCURRENCE_MARK = "#"


#: Rows read, or given ids, between two calls of a caller's ``pause``
#: (:func:`chunk_ids`): a few milliseconds of work, so that a search typed
#: meanwhile waits that long at most before the caller steps aside.
PAUSE_EVERY = 2_000


def assign_chunk_ids(
    rows: list[tuple[int, str | None, str]], pause: Callable[[], object] | None = None
) -> dict[int, str]:
    """Chunk ids for ``(rowid, source label, title)`` rows.

    Args:
        rows: every chunk of a store, in any order (they are sorted by rowid).
            A ``None`` label (orphan chunk) counts as ``""``.
        pause: called every :data:`PAUSE_EVERY` rows (it may block).

    Returns:
        ``{rowid: chunk id}`` following the rules in the module docstring.
    """
    ordered = sorted(rows, key=lambda r: r[0])
    plain: dict[str, int] = {}
    later: list[tuple[int, str]] = []
    for i, (rowid, label, title) in enumerate(ordered):
        if pause is not None and i and not i % PAUSE_EVERY:
            pause()
        key = f"{label or ''}::{title}"
        if key in plain:
            later.append((rowid, key))
        else:
            plain[key] = rowid
    ids = {rowid: key for key, rowid in plain.items()}
    taken = set(plain)
    count: dict[str, int] = {}
    for rowid, key in later:
        n = count.get(key, 1) + 1
        while f"{key}{OCCURRENCE_MARK}{n}" in taken:
            n += 1
        count[key] = n
        cid = f"{key}{OCCURRENCE_MARK}{n}"
        taken.add(cid)
        ids[rowid] = cid
    return ids


@dataclass(frozen=True)
class ChunkIds:
    """The chunk ids of one store at one data version.

    Attributes:
        version: the :func:`store_version` they were computed at.
        by_rowid: ``{rowid: chunk id}``.
        by_id: ``{chunk id: rowid}`` (the inverse).
    """

    version: tuple[int | None, ...]
    by_rowid: Mapping[int, str]
    by_id: Mapping[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.by_id:
            object.__setattr__(self, "by_id", {cid: rowid for rowid, cid in self.by_rowid.items()})

    def __len__(self) -> int:
        return len(self.by_rowid)

    def __contains__(self, chunk_id: object) -> bool:
        return chunk_id in self.by_id


_VERSION_SQL = (
    "SELECT (SELECT COALESCE(MAX(id), 0) FROM sources), (SELECT COUNT(*) FROM sources), "
    "(SELECT COALESCE(SUM(chunk_count), 0) FROM sources), "
    "(SELECT rowid FROM chunks ORDER BY rowid DESC LIMIT 1)"
)
_IDS_SQL = (  # text through sql.text: a title may hold invalid UTF-8 (read as U+FFFD, as V8 does)
    f"SELECT chunks.rowid, {sql.text('sources.label')}, {sql.text('chunks.title')} FROM chunks "
    "LEFT JOIN sources ON sources.id = chunks.source_id"
)

_cache: "weakref.WeakKeyDictionary[Store, ChunkIds]" = weakref.WeakKeyDictionary()
#: Per store: held while its ids are computed (a second caller waits for the first's answer).
_computing: "weakref.WeakKeyDictionary[Store, threading.Lock]" = weakref.WeakKeyDictionary()
_cache_lock = threading.Lock()


def store_version(store: Store, conn: sql.Connection | None = None) -> tuple[int | None, ...]:
    """A cheap fingerprint of a store's content (one small query):
    ``(max sources.id, source rows, summed chunk_count, largest chunk rowid)``.

    Every write of rankscope and of context-mode replaces a label's source row
    (a new ``AUTOINCREMENT`` id) or deletes one, and a new chunk gets a row id
    above the largest, so any indexing changes the tuple.

    Raises:
        StoreError: the store cannot be read (:class:`CorruptStoreError` when damaged).
    """
    with sqlite_errors(store.path), store.using(conn) as c:
        return tuple(c.execute(_VERSION_SQL).fetchone())


def chunk_ids(
    store: Store, conn: sql.Connection | None = None, *, pause: Callable[[], object] | None = None
) -> ChunkIds:
    """The chunk ids of every chunk of ``store`` (one query over ``chunks``
    joined to ``sources``), cached per store until :func:`store_version`
    changes. Thread-safe (two callers at once compute them once: the second
    waits for the first's answer); ``conn`` is a connection from
    ``store.connect()`` when called from another thread.

    ``pause``, a background caller's, is called every :data:`PAUSE_EVERY` rows
    read or given ids and may block (the browser's warm-up waits there while
    a search runs); it is not called on the store's main connection, whose
    lock a search may be waiting for.

    Raises:
        StoreError: the store cannot be read (:class:`CorruptStoreError` when damaged).
    """
    version = store_version(store, conn)
    with _cache_lock:
        hit = _cache.get(store)
        computing = _computing.setdefault(store, threading.Lock())
    if hit is not None and hit.version == version:
        return hit
    with computing:
        with _cache_lock:
            hit = _cache.get(store)
        if hit is not None and hit.version == version:
            return hit  # computed meanwhile by another caller
        rows: list[tuple[int, str | None, str]] = []
        with sqlite_errors(store.path), store.using(conn) as c:
            if c is store.conn:
                pause = None
            cursor = iter(c.execute(_IDS_SQL))
            while batch := list(islice(cursor, PAUSE_EVERY)):
                rows.extend((int(r), sql.decode(lbl), sql.decode(t)) for r, lbl, t in batch)
                if pause is not None and len(batch) == PAUSE_EVERY:
                    pause()
        ids = ChunkIds(version, assign_chunk_ids(rows, pause))
        with _cache_lock:
            _cache[store] = ids
        return ids


# ─── TREC tokens ─────────────────────────────────────────────────────────


def _needs_escape(ch: str) -> bool:
    return ch == "%" or ch.isspace() or not ch.isprintable()


def trec_token(text: str) -> str:
    """``text`` as one whitespace-free TREC field: ``%``, whitespace and
    non-printable characters percent-encoded (UTF-8 bytes, upper-case hex);
    everything else kept (chunk ids always contain ``::``, so they are never
    empty)."""
    if not any(_needs_escape(ch) for ch in text):
        return text
    out = []
    for ch in text:
        if _needs_escape(ch):
            out.append("".join(f"%{b:02X}" for b in ch.encode("utf-8", "surrogatepass")))
        else:
            out.append(ch)
    return "".join(out)


#: A ``%`` that does not start a percent escape (``%`` and two hex digits).
_BARE_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")
#: A run of percent escapes: the UTF-8 bytes of one or more characters.
_ESCAPES = re.compile(r"(?:%[0-9A-Fa-f]{2})+")


def _decode_escapes(match: re.Match[str]) -> str:
    run = match.group()
    try:
        return bytes.fromhex(run.replace("%", "")).decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{run!r} is not the UTF-8 of a character (ids are percent-encoded as UTF-8)") from None


def from_trec_token(token: str) -> str:
    """Inverse of :func:`trec_token`: percent escapes decoded as UTF-8,
    either hex case. Strict, so that every id read is written back as it was
    read (``trec_token(from_trec_token(t))`` names the same id as ``t``): a
    ``%`` is always the start of an escape (a ``%`` of the id is ``%25``).

    Raises:
        ValueError: a ``%`` without two hex digits after it (``%zz``, a
            final ``%``), or escapes that are not UTF-8 (``%FF``; a lone
            surrogate's ``%ED%A0%80`` too: no character, and no JSON file
            could hold it); the message quotes the offending part.
    """
    if "%" not in token:
        return token
    bare = _BARE_PERCENT.search(token)
    if bare is not None:
        part = token[bare.start() : bare.start() + 3]
        raise ValueError(f"{part!r} is not a percent escape ('%' and two hex digits; a '%' of the id is written %25)")
    return _ESCAPES.sub(_decode_escapes, token)
