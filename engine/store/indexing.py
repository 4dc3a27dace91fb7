"""Writing a store: a label's text chunked and stored (both FTS tables, its
source row, the vocabulary) in one transaction, a label deleted, and stale
file-backed sources re-indexed before a search (the reference's auto-refresh).

Only writable stores are written (:class:`~engine.store.errors.ReadOnlyStoreError`
otherwise); every SQL value is a bound parameter.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

import regex

from engine.js.strings import js_to_lower, to_storage_bytes, utf16_len
from engine.store import sql
from engine.store.chunking import MAX_CHUNK_BYTES, ChunkDraft, chunk_json, chunk_markdown, chunk_plain_text
from engine.store.clock import elapsed_ms, now_iso
from engine.store.errors import ReadOnlyStoreError, sqlite_errors
from engine.store.freshness import Freshness, RefreshReport, check_all, load_sources, read_text, sha256_text
from engine.store.reading import Connections
from engine.store.schema import FTS_TABLES, SOURCE_INDEX_SQL, SchemaInfo
from engine.store.segments import Structure, indexed_rows, optimize, read_structure
from engine.store.stopwords import STOPWORDS

#: File kinds and the chunker each uses.
KINDS = ("markdown", "json", "plain")
#: A writable store merges its FTS5 indexes (:func:`merge_index`) once the
#: chunks written since the last merge reach the chunks there were then,
#: and at least this many: the index doubles between merges, so the merges
#: of one long run rewrite about twice the final index in all (context-mode
#: merges every 50 inserted sources, which at 100,000 chunks is 127 rewrites).
MERGE_MIN_ROWS = 1_000
#: At the end of an indexing run an index is merged fully when the segments
#: other than its largest hold at least this share of its leaf pages...
MERGE_SHARE = 0.125
#: ...or when it has at most this many leaf pages (about 32 MB; merging it
#: takes well under a second), so that a small incremental run on a large
#: store does not rewrite the whole index for a few new rows.
MERGE_ALWAYS_PAGES = 8_192
_VOCAB_SPLIT = regex.compile(r"[^\p{L}\p{N}_-]+")


@dataclass(frozen=True)
class IndexResult:
    """Outcome of indexing one label.

    Attributes:
        label: the source label.
        source_id: new ``sources.id``.
        kind: chunker used (``markdown``/``json``/``plain``; a JSON file that
            failed to parse reports ``plain``).
        chunks: chunks stored.
        code_chunks: of which ``code``.
        bytes: UTF-8 size of the indexed text.
        vocabulary_added: new vocabulary words.
    """

    label: str
    source_id: int
    kind: str
    chunks: int
    code_chunks: int
    bytes: int
    vocabulary_added: int


@dataclass(frozen=True)
class TableMerge:
    """One FTS table's index at a :func:`merge_index`.

    Attributes:
        table: ``chunks`` or ``chunks_trigram``.
        before, after: segments before and after (``None``: the structure
            record could not be read).
        merged: FTS5's ``optimize`` ran on it.
    """

    table: str
    before: int | None
    after: int | None
    merged: bool


@dataclass(frozen=True)
class MergeReport:
    """What :func:`merge_index` did.

    Attributes:
        tables: one entry per FTS table, in :data:`~engine.store.schema.FTS_TABLES` order.
        elapsed_ms: wall clock of the whole call (milliseconds).
    """

    tables: tuple[TableMerge, ...]
    elapsed_ms: float

    @property
    def merged(self) -> bool:
        """True when at least one table was merged."""
        return any(t.merged for t in self.tables)


def kind_for_path(path: str | os.PathLike[str]) -> str:
    """Chunker for a file name: ``.md`` markdown, ``.json`` JSON, else plain
    (extension compared case-insensitively)."""
    suffix = Path(path).suffix.lower()
    return {".md": "markdown", ".json": "json"}.get(suffix, "plain")


def backing_path(path: str | os.PathLike[str], kind: str) -> str | None:
    """The ``sources.file_path`` to record for a file indexed as ``kind``:
    its resolved absolute path for markdown (the reference makes only
    markdown read from a file stale-refreshable), else ``None``."""
    return str(Path(path).resolve()) if kind == "markdown" else None


def vocabulary_words(text: str) -> list[str]:
    """Words the reference adds to ``vocabulary`` for ``text``: lower-cased,
    split on runs of characters that are not letters, digits, ``_`` or ``-``;
    3+ UTF-16 code units; stopwords dropped; first occurrence order."""
    seen: dict[str, None] = {}
    for word in _VOCAB_SPLIT.split(js_to_lower(text)):
        if word not in seen and utf16_len(word) >= 3 and word not in STOPWORDS:
            seen[word] = None
    return list(seen)


def _require_writable(conns: Connections) -> None:
    if conns.read_only:
        raise ReadOnlyStoreError(f"{conns.path} is open read-only; rankscope never writes to it")


def _rollback(conn: sql.Connection) -> None:
    """Roll back if a transaction is open. An interrupt can land just after
    ``COMMIT``; a bare ``ROLLBACK`` would then raise and hide it."""
    if conn.in_transaction:
        conn.execute("ROLLBACK")


def delete_label_rows(conn: sql.Connection, label: str) -> int:
    """Delete a label's chunks (both FTS tables) and source rows inside the
    caller's transaction; returns the chunks removed from ``chunks``.

    Same rows as the reference's ``DELETE ... WHERE source_id IN (SELECT id
    FROM sources WHERE label = ?)``, but without its full FTS table scans
    (``source_id`` is UNINDEXED, so re-indexing every file of a store was
    quadratic): a label with no source row (every new file) costs one
    indexed lookup, and the chunks of one that has are found through
    :data:`~engine.store.schema.SOURCE_INDEX_SQL` on the content shadow table
    and deleted by rowid.
    """
    ids = [row[0] for row in conn.execute("SELECT id FROM sources WHERE label = ?", (label,))]
    if not ids:
        return 0
    marks = ",".join("?" * len(ids))
    removed = 0
    for table in FTS_TABLES:
        conn.execute(SOURCE_INDEX_SQL.format(table=table))
        rowids = [(r[0],) for r in conn.execute(f"SELECT id FROM {table}_content WHERE c2 IN ({marks})", ids)]
        conn.executemany(f"DELETE FROM {table} WHERE rowid = ?", rowids)
        if table == "chunks":
            removed = len(rowids)
    conn.execute("DELETE FROM sources WHERE label = ?", (label,))
    return removed


def index_text(
    conns: Connections,
    label: str,
    text: str,
    kind: str = "markdown",
    *,
    session_id: str = "",
    event_id: str = "",
    file_path: str | None = None,
    max_chunk_bytes: int = MAX_CHUNK_BYTES,
    content_hash: str | None = None,
) -> IndexResult:
    """Chunk ``text`` with the ``kind`` chunker and store it under ``label``
    on the main connection of ``conns``.

    One transaction replaces any earlier content of ``label`` (both FTS
    tables and the source row, with its ``content_hash``) and adds the
    vocabulary: an interruption leaves either the old label or the new
    one, never a mix. (The reference commits the vocabulary separately;
    the rows written are the same, in the same order.)

    Args:
        label: source label (e.g. a relative path).
        text: the decoded text.
        kind: ``"markdown"``, ``"json"`` or ``"plain"``.
        session_id: attribution stored on every chunk (``""`` = none).
        file_path: makes the source file-backed (stale refresh); the
            reference records it for markdown read from a file.
        max_chunk_bytes: chunk size limit, UTF-8 bytes.
        content_hash: SHA-256 to record on the source row; by default
            the text's SHA-256 for file-backed sources, else ``NULL``.

    Raises:
        ReadOnlyStoreError: the store is read-only.
        ValueError: unknown ``kind``.
        StoreError: SQLite cannot write it.
    """
    _require_writable(conns)
    used: str
    if kind == "markdown":
        drafts, used = chunk_markdown(text, max_chunk_bytes), "markdown"
    elif kind == "json":
        drafts, used = chunk_json(text, max_chunk_bytes)
    elif kind == "plain":
        drafts, used = chunk_plain_text(text, max_chunk_bytes=max_chunk_bytes), "plain"
    else:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}; got {kind!r}")
    if content_hash is None and file_path is not None:
        content_hash = sha256_text(text)
    return insert(conns, label, drafts, text, used, session_id, event_id, file_path, content_hash)


def insert(
    conns: Connections,
    label: str,
    drafts: list[ChunkDraft],
    text: str,
    kind: str,
    session_id: str,
    event_id: str,
    file_path: str | None,
    content_hash: str | None,
) -> IndexResult:
    """Replace ``label``'s rows by ``drafts`` in one transaction (see
    :func:`index_text`, which chunks ``text`` into them).

    Raises:
        StoreError: SQLite cannot write it.
    """
    code = sum(1 for d in drafts if d.has_code)
    now = now_iso()
    with sqlite_errors(conns.path, "write to"), conns.lock:
        conn = conns.conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            delete_label_rows(conn, label)
            conn.execute(
                "INSERT INTO sources (label, chunk_count, code_chunk_count, file_path, content_hash) VALUES (?, ?, ?, ?, ?)",
                (label, len(drafts), code, file_path, content_hash),
            )
            source_id = conn.last_insert_rowid()
            rows = [
                (
                    to_storage_bytes(d.title),
                    to_storage_bytes(d.content),
                    float(source_id),
                    d.content_type,
                    None,
                    session_id,
                    event_id,
                    now,
                )
                for d in drafts
            ]
            for row in rows:
                for table in FTS_TABLES:
                    conn.execute(
                        f"INSERT INTO {table} (title, content, source_id, content_type, source_category, "
                        "session_id, event_id, timestamp) VALUES (CAST(? AS TEXT), CAST(? AS TEXT), ?, ?, ?, ?, ?, ?)",
                        row,
                    )
            added = 0
            if text:
                before = conn.total_changes()
                conn.executemany(
                    "INSERT OR IGNORE INTO vocabulary (word) VALUES (?)", ((w,) for w in vocabulary_words(text))
                )
                added = conn.total_changes() - before
            conn.execute("COMMIT")
        except BaseException:
            _rollback(conn)
            raise
        counter = conns.merges
        counter.rows_since += len(drafts)
        if counter.rows_at is None:
            counter.rows_at = indexed_rows(conn, FTS_TABLES[0])
        if counter.rows_since >= max(MERGE_MIN_ROWS, counter.rows_at):
            merge_index(conns, full=True)
    return IndexResult(label, int(source_id), kind, len(drafts), code, len(to_storage_bytes(text)), added)


def merge_index(conns: Connections, *, full: bool = False) -> MergeReport:
    """Merge each FTS table's index into one segment (FTS5's ``optimize``,
    both tables in one transaction), as context-mode does every 50 inserted
    sources and on close. A table already in one segment is left alone.
    Unless ``full``, a table is merged only when that is cheap or due
    (:data:`MERGE_ALWAYS_PAGES`, :data:`MERGE_SHARE`): what an indexing run
    calls at its end.

    Raises:
        ReadOnlyStoreError: the store is read-only (nothing is written to a
            store rankscope did not create).
        StoreError: SQLite cannot write it.
    """
    _require_writable(conns)
    start = time.perf_counter()
    with sqlite_errors(conns.path, "write to"), conns.lock:
        conn = conns.conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            plan: list[tuple[str, Structure | None, bool]] = []
            for table in FTS_TABLES:
                s = read_structure(conn, table)
                due = s is not None and s.count > 1
                if due and not full and s is not None:
                    due = s.pages <= MERGE_ALWAYS_PAGES or s.outside_largest >= MERGE_SHARE * s.pages
                if due:
                    optimize(conn, table)
                plan.append((table, s, due))
            tables = []
            for table, s, due in plan:
                after = read_structure(conn, table) if due else s
                tables.append(TableMerge(table, s.count if s else None, after.count if after else None, due))
            conn.execute("COMMIT")
        except BaseException:
            _rollback(conn)
            raise
        if all(t.after is None or t.after <= 1 for t in tables):
            conns.merges.rows_since = 0
            conns.merges.rows_at = indexed_rows(conn, FTS_TABLES[0])
    return MergeReport(tuple(tables), elapsed_ms(start))


def delete_label(conns: Connections, label: str) -> int:
    """Remove a label's chunks and source row in one transaction; returns chunks removed.

    Raises:
        ReadOnlyStoreError: the store is read-only.
        StoreError: SQLite cannot write it.
    """
    _require_writable(conns)
    with sqlite_errors(conns.path, "write to"), conns.lock:
        conn = conns.conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            n = delete_label_rows(conn, label)
            conn.execute("COMMIT")
        except BaseException:
            _rollback(conn)
            raise
    return int(n)


# ── stale file-backed sources ──────────────────────────────────────────


def stale_sources(
    conns: Connections, schema: SchemaInfo, conn: sql.Connection | None = None
) -> tuple[list[tuple[str, str, str]], list[tuple[str, str]]]:
    """File-backed sources whose file changed since indexing (reference
    ``#refreshStaleSources`` test: file exists, mtime after ``indexed_at``,
    SHA-256 differs), every file examined now, read on ``conn`` (default the
    main connection).

    Returns:
        ``(stale, errors)``: stale is ``[(label, file_path, new_text)]``,
        errors is ``[(label, message)]``. Nothing is written.

    Raises:
        StoreError: the store cannot be read.
    """
    if not schema.has_file_columns:
        return [], []
    with sqlite_errors(conns.path):
        return check_all(load_sources(conn or conns.conn))


def refresh_for_search(
    conns: Connections, schema: SchemaInfo, freshness: Freshness, conn: sql.Connection
) -> RefreshReport:
    """The refresh stage before a search on ``conn``: which file-backed
    sources are stale (from ``freshness``, kept current without examining
    every file each time), and, when ``conn`` is this writable store's main
    connection, or another connection of it with no transaction open (a
    search thread's: the writes go through the main connection and its
    snapshot begins after them), re-index them first (the reference's
    auto-refresh: each file is read once, and the bytes hashed are the bytes
    indexed). Read-only stores, and a connection inside a transaction (it
    could not see the new rows), only report what would be refreshed.

    Raises:
        StoreError: the store cannot be read or written.
    """
    with sqlite_errors(conns.path):
        start = time.perf_counter()
        if not schema.has_file_columns:
            return RefreshReport()
        answer = freshness.check(conn, conns.data_version())
        how = (answer.method, answer.age_ms, answer.examined)
        if not answer.checked:
            return RefreshReport(elapsed_ms=elapsed_ms(start), method=how[0], age_ms=how[1], examined=how[2])
        if conns.read_only or (conn is not conns.conn and conn.in_transaction) or not answer.stale:
            return RefreshReport(answer.checked, answer.stale, False, answer.errors, elapsed_ms(start), *how)
        done: list[str] = []
        errors = list(answer.errors)
        for label, file_path, content_hash in answer.paths:
            try:
                text = read_text(file_path)
            except OSError as exc:
                errors.append((label, str(exc)))
                continue
            if sha256_text(text) == content_hash:
                continue  # changed back since it was examined
            index_text(conns, label, text, "markdown", file_path=file_path)
            done.append(label)
        return RefreshReport(answer.checked, tuple(done), True, tuple(errors), elapsed_ms(start), *how)


def warm_freshness(conns: Connections, schema: SchemaInfo, freshness: Freshness, conn: sql.Connection) -> None:
    """Examine the file-backed sources now, on ``conn``, and keep them watched
    (:meth:`engine.store.freshness.Freshness.warm`), so that the first search
    does not read every source row and file: what a browser does on opening
    a store. Writes nothing.

    Raises:
        StoreError: the store cannot be read.
    """
    if not schema.has_file_columns:
        return
    version = conns.data_version()
    # an in-memory store's one connection is shared: hold its lock, as every reader does
    with sqlite_errors(conns.path), conns.using(conn) as c:
        freshness.warm(c, version)


def refresh_stale(conns: Connections, schema: SchemaInfo) -> tuple[list[str], list[tuple[str, str]]]:
    """Re-index stale file-backed sources (writable stores only) as
    markdown, like the reference. Returns ``(labels refreshed, errors)``.

    Raises:
        ReadOnlyStoreError: the store is read-only.
        StoreError: the store cannot be read or written.
    """
    _require_writable(conns)
    stale, errors = stale_sources(conns, schema)
    done = []
    for label, file_path, text in stale:
        index_text(conns, label, text, "markdown", file_path=file_path)
        done.append(label)
    return done, errors
