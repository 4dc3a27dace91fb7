"""Store diagnostics: what in a content store will surprise a search.

:func:`diagnose` reads a store (never writes it) and reports:

* fusion-key collisions: chunks sharing ``source::title``, which the
  reference fusion merges into one candidate (only the first row seen shows);
* chunks over the 4096-byte chunking cap (UTF-8 bytes);
* chunks titled ``""`` / ``Untitled`` (no heading: weak title boost, and
  every such chunk of a source collides on ``source::Untitled``);
* sources whose recorded ``chunk_count`` / ``code_chunk_count`` disagree
  with their chunks, sources whose rows differ between the Porter and
  trigram tables, and chunks whose source row is missing (one check,
  :func:`engine.store.consistency.count_mismatches`, shared with discovery);
* a trigram table whose row count differs from the Porter table's;
* the vocabulary size (``None`` when the table is missing: no typo fallback);
* stale file-backed sources (:meth:`engine.store.store.Store.stale_sources`,
  report only: nothing is refreshed);
* each FTS table's index segments (:mod:`engine.store.segments`): one once
  merged, as context-mode and ``rankscope index`` leave them;
* damage (:func:`check_integrity`): SQLite's ``PRAGMA integrity_check`` and
  FTS5's ``integrity-check`` command on both FTS tables, plus their shadow
  tables present. FTS5's check is an ``INSERT``, so it runs on a private
  copy of the store (SQLite's backup API, into a temporary folder): the
  store itself is only read. A damaged FTS index can answer searches
  without any error, just differently; this is how it is noticed.

Pure Python; no Textual.
"""

from __future__ import annotations

import dataclasses
import os
import re
import tempfile
from dataclasses import asdict, dataclass
from typing import Any

from engine.files.reading import peek
from engine.store import sql
from engine.store.chunking import MAX_CHUNK_BYTES
from engine.store.consistency import ORPHAN_CHUNKS, RECORDED_COUNTS, TRIGRAM_ROWS, CountMismatch, count_mismatches
from engine.lab.journey import plural
from engine.store.errors import CorruptStoreError, StoreError, is_corruption, side_files, side_files_hint
from engine.store.schema import FTS_TABLES, fts_shadow_tables
from engine.store.opening import connect_file
from engine.store.store import Store

#: Titles that carry no heading (besides empty / whitespace-only ones).
_UNTITLED = re.compile(r"Untitled( \(\d+\))?")


@dataclass(frozen=True)
class ChunkNote:
    """A chunk named in a report.

    Attributes:
        rowid: FTS5 row id.
        source: source label (``None`` for an orphan chunk).
        title: chunk title.
    """

    rowid: int
    source: str | None
    title: str


@dataclass(frozen=True)
class KeyCollision:
    """Chunks sharing one fusion key ``source::title``.

    Attributes:
        source, title: the shared key parts.
        rowids: the chunks' row ids, ascending (the reference keeps whichever
            a retriever lists first and merges the others into it).
    """

    source: str
    title: str
    rowids: tuple[int, ...]

    @property
    def key(self) -> str:
        """``source::title``."""
        return f"{self.source}::{self.title}"

    @property
    def count(self) -> int:
        """How many chunks share the key."""
        return len(self.rowids)


@dataclass(frozen=True)
class OversizedChunk:
    """A chunk over the chunking cap.

    Attributes:
        rowid, source, title: the chunk.
        bytes: its content length in UTF-8 bytes.
    """

    rowid: int
    source: str | None
    title: str
    bytes: int


@dataclass(frozen=True)
class StaleSource:
    """A file-backed source whose file changed since it was indexed.

    Attributes:
        label: the source label.
        file_path: the file it was read from.
    """

    label: str
    file_path: str


@dataclass(frozen=True)
class IntegrityCheck:
    """One integrity check, run on a private copy of the store.

    Attributes:
        check: ``"sqlite"`` (``PRAGMA integrity_check``), ``"fts5:chunks"``
            or ``"fts5:chunks_trigram"`` (FTS5's ``integrity-check`` and the
            table's shadow tables), or ``"copy"`` (the private copy itself
            could not be made).
        problems: SQLite's words for each problem found; empty when the
            check passed.
        damage: the problems mean the store is damaged. ``False`` for a
            check that could not run for another reason (e.g. no room for
            the copy in the temporary folder): nothing is known then.
    """

    check: str
    problems: tuple[str, ...] = ()
    damage: bool = True

    @property
    def ok(self) -> bool:
        """True when the check ran and found nothing."""
        return not self.problems

    @property
    def title(self) -> str:
        """The check in words: ``SQLite integrity_check``, ``FTS5
        integrity-check of chunks``, ``private copy``."""
        if self.check == "sqlite":
            return "SQLite integrity_check"
        if self.check.startswith("fts5:"):
            return f"FTS5 integrity-check of {self.check[5:]}"
        return "private copy"


@dataclass(frozen=True)
class DoctorReport:
    """Everything :func:`diagnose` found.

    Attributes:
        path: the store file (``None`` in memory).
        schema: schema generation in words (8-column or 4-column legacy).
        sources / chunks: row counts of ``sources`` and ``chunks``.
        trigram_rows: row count of ``chunks_trigram`` (should equal ``chunks``).
        collisions: fusion-key collisions, most chunks first.
        oversized: chunks over ``max_chunk_bytes``, largest first.
        max_chunk_bytes: the cap checked (4096).
        untitled: chunks titled ``""``, whitespace, ``Untitled`` or
            ``Untitled (n)``, in row id order.
        count_mismatches: every count that disagrees with the rows stored
            (:func:`engine.store.consistency.count_mismatches`: a source's
            recorded ``chunk_count`` / ``code_chunk_count``, its rows in
            ``chunks_trigram``, orphan chunks, the trigram table total).
        vocabulary_size: rows in ``vocabulary``, or ``None`` when the table
            is missing (the fuzzy fallback is then unavailable).
        stale: stale file-backed sources (not refreshed).
        stale_errors: ``(label, message)`` for sources that could not be checked.
        integrity: :func:`check_integrity` results (empty when not run).
        segments: ``(table, segments)`` for each FTS table: how many b-trees
            its FTS5 index is split into (1 once merged; a search reads
            each; ``None`` when its structure record cannot be read).
        read_error: when the store is too damaged to read the rest of the
            report, the error (the counts are then ``None`` and the lists
            empty); ``None`` otherwise.
        side_files: the ``-wal`` / ``-shm`` files beside the store when it
            was diagnosed (:func:`engine.store.errors.side_files`); on a
            damaged store, a finding says another database's can be the cause.
    """

    path: str | None
    schema: str
    sources: int | None
    chunks: int | None
    trigram_rows: int | None
    collisions: tuple[KeyCollision, ...]
    oversized: tuple[OversizedChunk, ...]
    max_chunk_bytes: int
    untitled: tuple[ChunkNote, ...]
    count_mismatches: tuple[CountMismatch, ...]
    vocabulary_size: int | None
    stale: tuple[StaleSource, ...]
    stale_errors: tuple[tuple[str, str], ...]
    integrity: tuple[IntegrityCheck, ...] = ()
    segments: tuple[tuple[str, int | None], ...] = ()
    read_error: str | None = None
    side_files: tuple[str, ...] = ()

    @classmethod
    def unreadable(
        cls, path: str | None, schema: str, error: str, integrity: tuple[IntegrityCheck, ...]
    ) -> "DoctorReport":
        """The report on a store too damaged to be read (or opened): the
        integrity checks, the error and the side files beside it now, nothing else."""
        empty = (None, None, None, (), (), MAX_CHUNK_BYTES, (), (), None, (), ())
        return cls(path, schema, *empty, integrity, (), error, side_files=side_files(path))

    @property
    def damaged(self) -> bool:
        """True when an integrity check found damage or the store could not
        be read for damage."""
        return self.read_error is not None or any(c.damage and not c.ok for c in self.integrity)

    @property
    def hidden_by_collisions(self) -> int:
        """Chunks beyond the first of each colliding key (each can be merged away)."""
        return sum(c.count - 1 for c in self.collisions)

    @property
    def miscounted_sources(self) -> int:
        """Sources whose recorded ``chunk_count`` / ``code_chunk_count`` is wrong."""
        return len({m.source_id for m in self.count_mismatches if m.what in RECORDED_COUNTS})

    @property
    def trigram_mismatched_sources(self) -> int:
        """Sources whose rows in ``chunks_trigram`` differ from those in ``chunks``."""
        return sum(1 for m in self.count_mismatches if m.what == TRIGRAM_ROWS)

    @property
    def orphan_chunks(self) -> int:
        """Chunks whose ``source_id`` has no source row (they can never be
        retrieved: the retrievers join on ``sources``)."""
        return sum(m.actual for m in self.count_mismatches if m.what == ORPHAN_CHUNKS)

    @property
    def findings(self) -> list[str]:
        """One line per kind of problem found, with counts (empty when clean);
        damage first."""
        out = []
        if self.read_error is not None:
            out.append(f"the store is damaged: reading it failed: {self.read_error}")
        for c in self.integrity:
            if c.ok:
                continue
            shown = "; ".join(c.problems[:3]) + (f"; … ({len(c.problems) - 3} more)" if len(c.problems) > 3 else "")
            if c.damage:
                out.append(f"the store is damaged: {c.title} failed: {shown}")
            else:
                out.append(f"the integrity checks could not run: {shown}")
        if self.damaged and self.side_files:
            out.append(side_files_hint(self.side_files))
        if self.read_error is not None:
            return out
        if self.collisions:
            out.append(
                f"{plural(len(self.collisions), 'fusion key')} shared by several chunks "
                f"({plural(self.hidden_by_collisions, 'chunk')} can be merged away by source::title fusion)"
            )
        if self.oversized:
            out.append(f"{plural(len(self.oversized), 'chunk')} over {self.max_chunk_bytes} bytes")
        if self.untitled:
            out.append(f"{plural(len(self.untitled), 'chunk')} with an empty or Untitled title")
        if self.miscounted_sources:
            out.append(
                f"{plural(self.miscounted_sources, 'source')} whose recorded chunk counts disagree with their chunks"
            )
        if self.trigram_mismatched_sources:
            out.append(
                f"{plural(self.trigram_mismatched_sources, 'source')} with a different number of rows "
                "in chunks_trigram than in chunks"
            )
        if self.orphan_chunks:
            out.append(f"{plural(self.orphan_chunks, 'chunk')} without a source row")
        if self.trigram_rows != self.chunks:
            out.append(f"chunks_trigram has {self.trigram_rows} rows but chunks has {self.chunks}")
        if self.vocabulary_size is None:
            out.append("no vocabulary table: the fuzzy typo fallback is unavailable")
        if self.stale:
            out.append(f"{plural(len(self.stale), 'stale file-backed source')} (a search would re-index them)")
        if self.stale_errors:
            out.append(f"{plural(len(self.stale_errors), 'file-backed source')} could not be checked")
        return out

    @property
    def ok(self) -> bool:
        """True when nothing was found."""
        return not self.findings

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (every attribute, plus ``findings`` and ``ok``)."""
        return {
            "path": self.path,
            "schema": self.schema,
            "sources": self.sources,
            "chunks": self.chunks,
            "trigram_rows": self.trigram_rows,
            "collisions": [
                {"source": c.source, "title": c.title, "count": c.count, "rowids": list(c.rowids)}
                for c in self.collisions
            ],
            "hidden_by_collisions": self.hidden_by_collisions,
            "oversized": [
                {"rowid": o.rowid, "source": o.source, "title": o.title, "bytes": o.bytes} for o in self.oversized
            ],
            "max_chunk_bytes": self.max_chunk_bytes,
            "untitled": [{"rowid": u.rowid, "source": u.source, "title": u.title} for u in self.untitled],
            "count_mismatches": [asdict(m) for m in self.count_mismatches],
            "orphan_chunks": self.orphan_chunks,
            "vocabulary_size": self.vocabulary_size,
            "stale": [{"label": s.label, "file_path": s.file_path} for s in self.stale],
            "stale_errors": [{"label": lbl, "message": msg} for lbl, msg in self.stale_errors],
            "integrity": [
                {"check": c.check, "ok": c.ok, "damage": c.damage and not c.ok, "problems": list(c.problems)}
                for c in self.integrity
            ],
            "segments": {table: n for table, n in self.segments},
            "read_error": self.read_error,
            "side_files": list(self.side_files),
            "damaged": self.damaged,
            "findings": self.findings,
            "ok": self.ok,
        }


def diagnose(
    store: Store,
    *,
    max_chunk_bytes: int = MAX_CHUNK_BYTES,
    conn: sql.Connection | None = None,
    integrity: bool = True,
) -> DoctorReport:
    """Inspect ``store`` and report what may surprise a search. Read-only:
    stale sources are reported, never refreshed.

    Args:
        store: an open store (read-only or writable).
        max_chunk_bytes: the cap to check chunk sizes against (UTF-8 bytes;
            reference 4096).
        conn: a connection from ``store.connect()`` when called from another
            thread; defaults to the store's own connection.
        integrity: also run :func:`check_integrity` (copies the store to a
            temporary folder and reads every page: the slow part on a large
            store).

    Returns:
        A :class:`DoctorReport`. With ``integrity``, a store too damaged to
        read gives a report with :attr:`DoctorReport.read_error` set.

    Raises:
        CorruptStoreError: the store's file is damaged (corrupt pages) and
            ``integrity`` is false.
        StoreError: the store cannot be read otherwise.
    """
    checks = check_integrity(store, conn) if integrity else ()
    try:
        # retried while another process writing the store breaks a read (Store.reading)
        report = store.reading(lambda c: _diagnose(store, max_chunk_bytes, c), conn, action="diagnose")
    except CorruptStoreError as exc:
        if not integrity:
            raise
        return DoctorReport.unreadable(store.path, store.schema.generation, exc.reason, checks)
    except StoreError as exc:
        # a missing shadow table (chunks_content) fails the first read with "no such table", which SQLite does
        # not call corruption; the integrity checks found the damage: report it as such
        if not any(c.damage and not c.ok for c in checks):
            raise
        return DoctorReport.unreadable(store.path, store.schema.generation, str(exc), checks)
    return dataclasses.replace(report, integrity=checks, side_files=side_files(store.path))


def check_integrity(source: Store | str, conn: sql.Connection | None = None) -> tuple[IntegrityCheck, ...]:
    """SQLite's and FTS5's integrity checks, on a private copy.

    The copy is made with SQLite's backup API from ``source`` (an open
    store, through ``conn`` or its own connection; or the path of a store
    that cannot be opened, read with a read-only connection) into a
    temporary folder, which is removed afterwards. On the copy:
    ``PRAGMA integrity_check``, then for ``chunks`` and ``chunks_trigram``
    their shadow tables (``_data``, ``_idx``, ``_content``, ``_docsize``,
    ``_config``) and ``INSERT INTO t(t) VALUES('integrity-check')``.

    Returns:
        One :class:`IntegrityCheck` per check (``sqlite``, ``fts5:chunks``,
        ``fts5:chunks_trigram``), or a single ``copy`` check when the copy
        failed (damage when SQLite called the file damaged).
    """
    with tempfile.TemporaryDirectory(prefix="rankscope-doctor-") as tmp:
        copy = sql.connect(os.path.join(tmp, "copy.db"))
        try:
            try:
                if isinstance(source, Store):
                    with source.using(conn) as c:
                        sql.backup(c, copy)
                else:
                    src = connect_file(str(source), read_only=True)
                    try:
                        sql.backup(src, copy)
                    finally:
                        src.close()
            except sql.Error as exc:
                path = source.path if isinstance(source, Store) else str(source)
                said = str(exc) or type(exc).__name__
                short = truncation(path) if path is not None else None
                problems = (f"the copy stopped early: {short}", said) if short else (said,)
                return (IntegrityCheck("copy", problems, damage=short is not None or is_corruption(exc)),)
            return _run_checks(copy)
        finally:
            copy.close()


#: SQLite's database header: its size, and where it keeps the page size
#: (2 bytes, big-endian; 1 means 65536), the change counter, the size in
#: pages (4 bytes each) and the change counter that size is valid for
#: (https://www.sqlite.org/fileformat2.html#the_database_header).
HEADER_BYTES, PAGE_SIZE_AT, CHANGE_COUNTER_AT, PAGE_COUNT_AT, VALID_FOR_AT = 100, 16, 24, 28, 92


def truncation(path: str) -> str | None:
    """How much of the database file ``path`` is missing, in words
    (``"the file is truncated: 51,200 bytes where its header says
    8,130,560 (1,985 pages of 4,096 bytes)"``), or ``None``: the file is as
    long as its header says, the header's size is not valid (an old
    writer's), or the file cannot be read."""
    try:
        size = os.path.getsize(path)
    except OSError:
        return None
    head = peek(path, HEADER_BYTES)
    if size and not head:  # not readable
        return None
    if len(head) < HEADER_BYTES:
        return f"the file is truncated: {size:,} bytes, less than SQLite's {HEADER_BYTES}-byte header"
    page_size = int.from_bytes(head[PAGE_SIZE_AT : PAGE_SIZE_AT + 2], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(head[PAGE_COUNT_AT : PAGE_COUNT_AT + 4], "big")
    valid = head[CHANGE_COUNTER_AT : CHANGE_COUNTER_AT + 4] == head[VALID_FOR_AT : VALID_FOR_AT + 4]
    if not valid or not pages or size >= pages * page_size:
        return None
    return (
        f"the file is truncated: {size:,} bytes where its header says {pages * page_size:,} "
        f"({pages:,} pages of {page_size:,} bytes)"
    )


def _run_checks(copy: sql.Connection) -> tuple[IntegrityCheck, ...]:
    checks = []
    try:
        lines = [line for (row,) in copy.execute("PRAGMA integrity_check(100)") for line in str(row).splitlines()]
        problems = tuple(line for line in lines if line not in ("ok", "*** in database main ***"))
    except sql.Error as exc:
        problems = (str(exc),)
    checks.append(IntegrityCheck("sqlite", problems))
    try:
        declared = {r[0]: r[1] for r in copy.execute("SELECT name, sql FROM sqlite_master")}
    except sql.Error as exc:
        declared = {}
        checks[0] = IntegrityCheck("sqlite", checks[0].problems + (str(exc),))
    for table in FTS_TABLES:
        if table not in declared:
            checks.append(IntegrityCheck(f"fts5:{table}", (f"table {table} is missing",)))
            continue
        # the shadow tables this table's own options call for (content='', columnsize=0, ... have fewer)
        expected = fts_shadow_tables(declared[table], table)
        missing = [f"shadow table {table}_{x} is missing" for x in expected if f"{table}_{x}" not in declared]
        try:
            copy.execute(f"INSERT INTO {table}({table}) VALUES('integrity-check')")
        except sql.Error as exc:
            missing.append(str(exc) or type(exc).__name__)
        checks.append(IntegrityCheck(f"fts5:{table}", tuple(missing)))
    return tuple(checks)


def _diagnose(store: Store, max_chunk_bytes: int, conn: sql.Connection | None) -> DoctorReport:
    with store.using(conn) as c:
        n_sources = int(c.execute("SELECT COUNT(*) FROM sources").fetchone()[0])
        n_chunks = int(c.execute("SELECT COUNT(*) FROM chunks").fetchone()[0])
        n_trigram = int(c.execute("SELECT COUNT(*) FROM chunks_trigram").fetchone()[0])

        # One pass over every chunk's title: key collisions (chunks with a
        # source) and untitled chunks (orphans included).
        groups: dict[tuple[str, str], list[int]] = {}
        untitled_notes: list[ChunkNote] = []
        dec = sql.decode
        for rowid, label, title in c.execute(
            f"SELECT chunks.rowid, {sql.text('sources.label')}, {sql.text('chunks.title')} FROM chunks "
            "LEFT JOIN sources ON sources.id = chunks.source_id ORDER BY chunks.rowid"
        ):
            label, title = dec(label), dec(title)
            if label is not None:
                groups.setdefault((label, title if title is not None else ""), []).append(int(rowid))
            if title is None or not title.strip() or _UNTITLED.fullmatch(title):
                untitled_notes.append(ChunkNote(int(rowid), label, title or ""))
        collisions = sorted(
            (KeyCollision(src, title, tuple(ids)) for (src, title), ids in groups.items() if len(ids) > 1),
            key=lambda k: (-k.count, k.rowids[0]),
        )

        oversized = tuple(
            OversizedChunk(int(r), dec(s), dec(t) or "", int(n))
            for r, s, t, n in c.execute(
                f"SELECT chunks.rowid, {sql.text('sources.label')}, {sql.text('chunks.title')}, "
                "length(CAST(chunks.content AS BLOB)) AS n "
                "FROM chunks LEFT JOIN sources ON sources.id = chunks.source_id WHERE n > ? "
                "ORDER BY n DESC, chunks.rowid",
                (max_chunk_bytes,),
            )
        )

        untitled = tuple(untitled_notes)

        mismatches = count_mismatches(store, c)

        vocab = int(c.execute("SELECT COUNT(*) FROM vocabulary").fetchone()[0]) if store.schema.has_vocabulary else None
        stale_rows, stale_errors = store.stale_sources(c)
        segments = tuple((t, s.count if s else None) for t, s in store.index_segments(c).items())

    return DoctorReport(
        path=store.path,
        schema=store.schema.generation,
        sources=n_sources,
        chunks=n_chunks,
        trigram_rows=n_trigram,
        collisions=tuple(collisions),
        oversized=oversized,
        max_chunk_bytes=max_chunk_bytes,
        untitled=untitled,
        count_mismatches=tuple(mismatches),
        vocabulary_size=vocab,
        stale=tuple(StaleSource(label, path) for label, path, _ in stale_rows),
        stale_errors=tuple((label, msg) for label, msg in stale_errors),
        segments=segments,
    )
