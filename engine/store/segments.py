"""FTS5 index segments: reading how many b-trees an index is split into,
and merging them as context-mode does.

FTS5 writes each transaction's new entries as a new segment and merges
segments of one level when ``automerge`` (4) of them pile up, so a store
indexed file by file holds several segments per level (7-14 per table in
a 1,437-chunk store). A search reads each term's doclist once per
segment; context-mode merges both tables into one segment (``INSERT INTO
t(t) VALUES('optimize')``) every 50 inserted sources and when its store
closes (``ContentStore.#optimizeFTS``, context-mode 1.0.169
``src/store.ts``).

The structure record (``%_data`` row 10; ``fts5StructureDecode`` in
SQLite's ``ext/fts5/fts5_index.c``): a 4-byte cookie, the 4 bytes
``FF 00 00 01`` in the V2 format (``contentless_delete=1`` tables), then
varints: levels, segments, write counter; per level: segments being
merged, segments on the level, then per segment its id, first and last
leaf page (V2: five more varints per segment).
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.store import sql

#: Row of the structure record in ``%_data``.
STRUCTURE_ROWID = 10
#: What follows the cookie in a V2 structure record.
_V2 = b"\xff\x00\x00\x01"


@dataclass
class MergeCounter:
    """What a writable store's handle wrote since its last full merge.

    Attributes:
        rows_since: chunks written since then.
        rows_at: the chunks the store held then (``None``: not read yet).
    """

    rows_since: int = 0
    rows_at: int | None = None


@dataclass(frozen=True)
class Segment:
    """One b-tree of an FTS5 index.

    Attributes:
        level: 0-based merge level.
        segid: FTS5's segment id.
        pages: leaf pages (``pgnoLast - pgnoFirst + 1``).
    """

    level: int
    segid: int
    pages: int


@dataclass(frozen=True)
class Structure:
    """An FTS5 table's index structure.

    Attributes:
        levels: levels recorded (some may be empty).
        segments: every segment, level by level, oldest first.
    """

    levels: int
    segments: tuple[Segment, ...]

    @property
    def count(self) -> int:
        """Segments in all."""
        return len(self.segments)

    @property
    def pages(self) -> int:
        """Leaf pages in all segments."""
        return sum(s.pages for s in self.segments)

    @property
    def outside_largest(self) -> int:
        """Leaf pages of every segment but the largest."""
        return self.pages - max((s.pages for s in self.segments), default=0)


def _varint(blob: bytes, i: int) -> tuple[int, int]:
    """One SQLite varint at byte ``i``: ``(value, next i)``.

    Raises:
        IndexError: the blob ends inside the varint.
    """
    v = 0
    for j in range(9):
        c = blob[i]
        i += 1
        if j == 8:
            return (v << 8) | c, i
        v = (v << 7) | (c & 0x7F)
        if c < 0x80:
            break
    return v, i


def decode_structure(blob: bytes) -> Structure | None:
    """The :class:`Structure` a structure record holds, or ``None`` when the
    bytes are not one (too short, counts that disagree)."""
    i = 4
    v2 = blob[4:8] == _V2
    if v2:
        i = 8
    try:
        levels, i = _varint(blob, i)
        total, i = _varint(blob, i)
        _, i = _varint(blob, i)  # write counter
        segments: list[Segment] = []
        for level in range(levels):
            _, i = _varint(blob, i)  # segments in an ongoing merge
            n, i = _varint(blob, i)
            for _ in range(n):
                segid, i = _varint(blob, i)
                first, i = _varint(blob, i)
                last, i = _varint(blob, i)
                if v2:
                    for _ in range(5):  # origin1, origin2, tombstone pages, tombstone entries, entries
                        _, i = _varint(blob, i)
                segments.append(Segment(level, segid, max(0, last - first + 1)))
    except IndexError:
        return None
    if len(segments) != total:
        return None
    return Structure(levels, tuple(segments))


def read_structure(conn: sql.Connection, table: str) -> Structure | None:
    """``table``'s index structure, read from its ``%_data`` table (a read:
    nothing is written), or ``None`` when the table or record is missing or
    not readable as one.

    Raises:
        engine.store.sql.Error: the store cannot be read (damaged, locked).
    """
    if not sql.table_exists(conn, f"{table}_data"):
        return None
    row = conn.execute(f'SELECT block FROM "{table}_data" WHERE id = ?', (STRUCTURE_ROWID,)).fetchone()
    if row is None or not isinstance(row[0], (bytes, memoryview)):
        return None
    return decode_structure(bytes(row[0]))


def indexed_rows(conn: sql.Connection, table: str) -> int:
    """Rows in ``table`` as FTS5's averages record counts them (``%_data``
    row 1, its first varint; 0 when missing): no scan of the table.

    Raises:
        engine.store.sql.Error: the store cannot be read.
    """
    row = conn.execute(f'SELECT block FROM "{table}_data" WHERE id = 1').fetchone()
    if row is None or not isinstance(row[0], (bytes, memoryview)) or not row[0]:
        return 0
    try:
        return _varint(bytes(row[0]), 0)[0]
    except IndexError:
        return 0


def optimize(conn: sql.Connection, table: str) -> None:
    """Merge ``table``'s whole index into one segment (FTS5's ``optimize``:
    one transaction; it rewrites every segment).

    Raises:
        engine.store.sql.Error: as any write.
    """
    conn.execute(f'INSERT INTO "{table}"("{table}") VALUES(\'optimize\')')
