"""Do a store's recorded counts agree with the rows it holds?

One check, shared by :mod:`engine.store.discovery` (which re-exports it) and
:mod:`engine.lab.doctor`: :func:`count_mismatches` compares ``sources.chunk_count``
/ ``code_chunk_count`` with the chunks stored, each source's rows in
``chunks`` with those in ``chunks_trigram``, and finds chunks whose source row
is missing. Read-only; pure Python, no Textual.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

from engine.store import sql
from engine.store.store import Store

#: :attr:`CountMismatch.what` of the two counts recorded on a ``sources`` row.
RECORDED_COUNTS = ("chunk_count", "code_chunk_count")
#: :attr:`CountMismatch.what` of a source whose rows differ between the FTS tables.
TRIGRAM_ROWS = "trigram rows"
#: :attr:`CountMismatch.what` of chunks whose source row is missing.
ORPHAN_CHUNKS = "orphan chunks"
#: :attr:`CountMismatch.what` of a whole-table difference between the FTS tables.
TRIGRAM_TOTAL = "chunks_trigram total"


@contextmanager
def read_snapshot(conn: sql.Connection) -> Iterator[None]:
    """Run several SELECTs in one read transaction (one consistent snapshot
    of a store another process is writing). Nested use is a no-op."""
    if conn.in_transaction:
        yield
        return
    conn.execute("BEGIN")
    try:
        yield
    finally:
        if conn.in_transaction:
            conn.execute("COMMIT")


@dataclass(frozen=True)
class CountMismatch:
    """A count in ``sources`` (or between the FTS tables) that disagrees
    with the rows actually stored.

    Attributes:
        source_id: ``sources.id`` (or the chunks' ``source_id`` for orphans;
            ``None`` for a whole-table difference).
        label: the source label (``None`` for orphans and table totals).
        what: ``"chunk_count"``, ``"code_chunk_count"``, ``"trigram rows"``
            (rows of this source in ``chunks_trigram``), ``"orphan chunks"``
            (chunks whose source row is missing) or ``"chunks_trigram
            total"``.
        recorded: what the store says (for ``trigram rows`` and the total:
            the rows in ``chunks``).
        actual: what is there.
    """

    source_id: SqlValue
    label: str | None
    what: str
    recorded: int
    actual: int

    @property
    def who(self) -> str:
        """The label, else ``source_id N``, else ``store`` (a table total)."""
        if self.label is not None:
            return self.label
        return f"source_id {self.source_id}" if self.source_id is not None else "store"

    def __str__(self) -> str:
        if self.what == ORPHAN_CHUNKS:
            return f"{self.who}: {self.actual} chunk(s) point to a source row that does not exist"
        if self.what in (TRIGRAM_ROWS, TRIGRAM_TOTAL):
            return f"{self.who}: chunks has {self.recorded} row(s) but chunks_trigram has {self.actual}"
        return f"{self.who}: sources.{self.what} says {self.recorded}, the chunks table has {self.actual}"


#: A value as SQLite returns it (``source_id`` is UNINDEXED and untyped: any of these; never a BLOB here).
SqlValue = int | float | str | None


def _source_key(value: SqlValue) -> SqlValue:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        try:
            f = float(value)
        except ValueError:
            return value
        return int(f) if f.is_integer() else f
    return value


def count_mismatches(store: Store, conn: sql.Connection | None = None) -> list[CountMismatch]:
    """Every place where ``sources.chunk_count`` / ``code_chunk_count``
    disagree with the chunks stored, where a source's rows differ between
    ``chunks`` and ``chunks_trigram``, and chunks without a source row.
    Read-only (three scans in one read transaction, so a live writer cannot
    make them disagree); an empty list means consistent.

    Args:
        store: an open store (read-only or writable).
        conn: a connection from ``store.connect()`` when called from another
            thread; defaults to the store's own connection (then guarded by
            ``store.lock``, which is re-entrant).
    """
    with store.using(conn) as c, read_snapshot(c):
        return _count_mismatches(c)


def _count_mismatches(c: sql.Connection) -> list[CountMismatch]:
    porter: dict[SqlValue, tuple[int, int]] = {}
    for sid, n, code in c.execute(
        "SELECT source_id, COUNT(*), SUM(CASE WHEN content_type = 'code' THEN 1 ELSE 0 END) FROM chunks GROUP BY source_id"
    ):
        k = _source_key(sid)
        prev = porter.get(k, (0, 0))
        porter[k] = (prev[0] + int(n), prev[1] + int(code or 0))
    trigram: dict[SqlValue, int] = {}
    for sid, n in c.execute("SELECT source_id, COUNT(*) FROM chunks_trigram GROUP BY source_id"):
        k = _source_key(sid)
        trigram[k] = trigram.get(k, 0) + int(n)
    out: list[CountMismatch] = []
    ids = set()
    for sid, label, chunk_count, code_count in c.execute(
        "SELECT id, label, chunk_count, code_chunk_count FROM sources ORDER BY id"
    ):
        ids.add(sid)
        n, code = porter.get(sid, (0, 0))
        if chunk_count != n:
            out.append(CountMismatch(sid, label, "chunk_count", int(chunk_count or 0), n))
        if code_count != code:
            out.append(CountMismatch(sid, label, "code_chunk_count", int(code_count or 0), code))
        if trigram.get(sid, 0) != n:
            out.append(CountMismatch(sid, label, TRIGRAM_ROWS, n, trigram.get(sid, 0)))
    for sid in sorted(set(porter) | set(trigram), key=repr):
        if sid not in ids:
            out.append(CountMismatch(sid, None, ORPHAN_CHUNKS, 0, max(porter.get(sid, (0, 0))[0], trigram.get(sid, 0))))
    total_p = sum(n for n, _ in porter.values())
    total_t = sum(trigram.values())
    if total_p != total_t:
        out.append(CountMismatch(None, None, TRIGRAM_TOTAL, total_p, total_t))
    return out


#: Alias kept for callers that use the longer name.
source_count_mismatches = count_mismatches
