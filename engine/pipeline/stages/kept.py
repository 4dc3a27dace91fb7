"""The rowids a retriever's source and content-type filters keep, on large tables.

The reference filters after FTS5 ranks: ``... JOIN sources ... WHERE t MATCH ?
AND sources.label LIKE ? ORDER BY rank LIMIT ?`` has FTS5 compute bm25 for
every match before SQLite reads each match's row, in rank order, to test the
filter. With a frequent word on a large table that is most of a search
(``config`` in ``commands/npm-config`` at 1,000,152 chunks: 672,336 trigram
matches, 504 ms). Testing the filter before bm25 in the same statement is no
faster: it reads every match's content row (about 0.4 µs a match, as much as
bm25 itself).

Knowing the rowids the filter keeps, the statement tests a match's rowid alone
(``+rowid IN (SELECT value FROM json_each(?))``: SQLite builds an ephemeral
index of them once per statement) and computes bm25 only for the rows kept, in
a bounded sort (:func:`engine.pipeline.stages.retrieve.build_sql`): the same
rows in the same order (bm25, then rowid) with the same bm25 bits, since FTS5
computes them; 154 ms for that query.

:class:`KeptRows` holds, for one FTS5 table, every row's rowid grouped by its
``(source_id, content_type)``, read in one ``GROUP BY`` over the table's
``%_content`` (0.4-0.5 s a table at 1,000,152 chunks, 45 ms at 100,590, 5 ms at
14,370).
Rows whose ``source_id`` names no ``sources`` row are left out, as the
reference's inner join leaves them out. It is kept per store data version
(:attr:`engine.store.store.Store.kept_rows`) for tables of at least
:data:`MIN_ROWS` rows, and built by the rule of renting skis: the filtered
runs of a data version go the reference's way until the time they took
(:func:`spend`) reaches what building would cost (:data:`BUILD_US_PER_ROW`),
then the next one builds. A one-off search (``rankscope search``, even with
its fuzzy re-run) rarely pays for it; a session pays at most about twice
what the better of the two choices would have cost.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable

from engine.store import sql
from engine.store.cache import noted_version

if TYPE_CHECKING:
    from engine.store.cache import VersionedLRU

#: Tables with fewer rows are filtered as the reference does. npm docs, the
#: light set's 16 filtered queries, 3 rounds, this way against the
#: reference's: 14,370 chunks p50 2.62 → 1.96 ms, p95 5.95 → 3.22 (5 ms a
#: table to build); 100,590 chunks 16.0 → 7.6 and 41.6 → 20.8 ms (45 ms);
#: 1,437 chunks 0.94 → 0.90 and 1.42 → 1.28 ms, too close to call.
MIN_ROWS = 10_000
#: What :func:`build` costs a table row (microseconds), for the renting rule
#: (:func:`kept_rows`): 0.4-0.5 s at 1,000,152 rows with the pages cached
#: (more when they are read from disk), 45 ms at 100,590, 5 ms at 14,370.
BUILD_US_PER_ROW = 0.5

#: Why a table's rows are not grouped (the value kept for it instead of a :class:`KeptRows`).
UNSUPPORTED = "unsupported"


@dataclass(frozen=True)
class Kept:
    """The rows one filter keeps: ``json`` a JSON array of rowids (any order,
    for ``json_each``), ``rows`` how many."""

    json: str
    rows: int


class KeptRows:
    """Every row of one FTS5 table whose source exists, by ``(source_id,
    content_type)``.

    Attributes:
        table: the FTS5 table.
        groups: ``{source_id: [(content_type, rowids, rows), ...]}``, where
            ``content_type`` is the stored text's bytes in the database's
            encoding (:attr:`codec`; ``None`` when the stored value is not
            text: no content-type filter keeps it) and
            ``rowids`` comma-separated decimal rowids.
    """

    def __init__(
        self, table: str, groups: dict[int, list[tuple[bytes | None, str, int]]], codec: str = "utf-8"
    ) -> None:
        self.table = table
        self.groups = groups
        #: The database's text encoding as a Python codec (``PRAGMA encoding``):
        #: the bytes SQLite compares text in.
        self.codec = codec
        self._by_type: dict[bytes, Kept] = {}

    def kept(self, source_ids: Iterable[int] | None, content_type: str | None) -> Kept | None:
        """The rows whose source is one of ``source_ids`` (``None``: any)
        and whose content type is ``content_type`` (``None``: any), as SQL's
        ``sources.id = t.source_id AND t.content_type = ?`` keeps them
        (SQLite compares text as bytes in the database's encoding: so does
        this); ``None`` when ``content_type`` cannot be encoded so."""
        ctype = None
        if content_type is not None:
            try:
                ctype = content_type.encode(self.codec)
            except UnicodeEncodeError:
                return None
        if source_ids is None:
            if ctype is None:
                return _joined(g for gs in self.groups.values() for g in gs)
            held = self._by_type.get(ctype)
            if held is None:
                held = _joined(g for gs in self.groups.values() for g in gs if g[0] == ctype)
                self._by_type[ctype] = held
            return held
        return _joined(g for s in source_ids for g in self.groups.get(s, ()) if ctype is None or g[0] == ctype)


def _joined(groups: Iterable[tuple[bytes | None, str, int]]) -> Kept:
    texts: list[str] = []
    rows = 0
    for _, text, n in groups:
        texts.append(text)
        rows += n
    return Kept("[" + ",".join(texts) + "]", rows)


def content_columns(conn: sql.Connection, table: str) -> tuple[int, int] | None:
    """The ``%_content`` column numbers (``c<N>``, 0-based) of ``source_id``
    and ``content_type`` in ``table``; ``None`` when the table keeps no
    ``%_content`` of its own (external or no content) or lacks either column."""
    if not sql.table_exists(conn, f"{table}_content"):
        return None
    names = [str(r[1]) for r in conn.execute(f'PRAGMA table_xinfo("{table}")')]
    if "source_id" not in names or "content_type" not in names:
        return None
    return names.index("source_id"), names.index("content_type")


#: ``PRAGMA encoding`` → the Python codec of the bytes SQLite compares text in.
CODECS = {"UTF-8": "utf-8", "UTF-16le": "utf-16-le", "UTF-16be": "utf-16-be"}


def build(conn: sql.Connection, table: str) -> KeptRows | None:
    """Group every row of ``table`` (one pass over its ``%_content``, inside
    ``conn``'s read transaction); ``None`` when the table cannot be grouped
    (:func:`content_columns`), a ``sources.id`` is not an integer or repeats
    (a foreign schema: SQL's join would then pair a chunk with none or with
    several sources), or a ``source_id`` is stored as text or a blob (SQL's
    join would convert text to a number; this does not). An integral double
    (how context-mode stores a ``source_id``) counts as that integer, as in
    SQL's comparison."""
    columns = content_columns(conn, table)
    codec = CODECS.get(str(conn.execute("PRAGMA encoding").fetchone()[0]))
    if columns is None or codec is None:
        return None
    s, c = columns
    ids = [r[0] for r in conn.execute("SELECT id FROM sources")]
    sources = set(ids)
    if len(sources) != len(ids) or any(type(i) is not int for i in ids):
        return None
    groups: dict[int, list[tuple[bytes | None, str, int]]] = {}
    for source_id, ctype, rowids, rows in conn.execute(
        f"SELECT c{s}, CASE WHEN typeof(c{c}) = 'text' THEN CAST(c{c} AS BLOB) END, group_concat(id), count(*) "
        f'FROM "{table}_content" GROUP BY c{s}, c{c}'
    ):
        if type(source_id) is float and source_id.is_integer():
            source_id = int(source_id)  # a JavaScript number: context-mode binds every number as a double
        elif source_id is None or type(source_id) is float:
            continue  # equal to no integer id
        elif type(source_id) is not int:
            return None
        if source_id in sources:
            groups.setdefault(source_id, []).append((bytes(ctype) if ctype is not None else None, rowids, rows))
    return KeptRows(table, groups, codec)


def kept_rows(conn: sql.Connection, table: str, n_rows: int, cache: VersionedLRU[object] | None) -> KeptRows | None:
    """``table``'s :class:`KeptRows` for ``conn``'s read transaction, when a
    filtered run should use them: held for its data version, or built now
    because that version's filtered runs of ``table`` have spent (:func:`spend`)
    at least ``n_rows`` x :data:`BUILD_US_PER_ROW` the reference's way.
    ``None`` (run the reference's way) below :data:`MIN_ROWS` rows
    (``n_rows``), without a cache or a noted data version
    (``conn.read_version``), before that, or for a table that cannot be
    grouped."""
    version = noted_version(conn)
    if cache is None or version is None or n_rows < MIN_ROWS:
        return None
    held = cache.get(version, table)
    if isinstance(held, KeptRows):
        return held
    if held == UNSUPPORTED:
        return None
    spent = held if isinstance(held, float) else 0.0
    if spent < n_rows * BUILD_US_PER_ROW / 1000.0:
        return None
    built = build(conn, table)
    cache.put(version, table, built if built is not None else UNSUPPORTED)
    return built


def spend(conn: sql.Connection, table: str, ms: float, cache: VersionedLRU[object] | None) -> None:
    """Note that a filtered run of ``table`` took ``ms`` milliseconds the
    reference's way under ``conn``'s data version (for :func:`kept_rows`'s
    rule; nothing without a cache or a noted version, or once built)."""
    version = noted_version(conn)
    if cache is None or version is None:
        return
    held = cache.get(version, table)
    if isinstance(held, KeptRows) or held == UNSUPPORTED:
        return
    cache.put(version, table, (held if isinstance(held, float) else 0.0) + ms)
