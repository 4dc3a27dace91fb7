"""Indexing a folder or a list of files the way the parity corpora were built.

Labels are paths relative to the folder given, with ``/`` separators; files
are indexed in ascending order of the UTF-8 bytes of their label; ``.md`` is
markdown, ``.json`` JSON, everything else plain text. A *sessions map* is a
JSON object ``{label: session_id}``; files missing from it get ``""``.

Walking real folders:

* symlinked folders are never followed (:func:`walk_tree`), so a symlink
  loop cannot trap the walk; they are reported; the walk keeps its own
  stack, so folders nested thousands deep need no recursion;
* a symlinked *file* is indexed when it resolves to a regular file inside the
  folder being indexed (the same bytes are reachable there anyway); one that
  points outside the folder, or nowhere, is skipped and reported — indexing
  ``~/project`` must not pull in ``~/.ssh/id_rsa`` through a link;
* FIFOs, sockets and devices are skipped (reading a FIFO would block);
* binary files (a NUL byte in the first 8 KiB), files over the size limit,
  files whose name is not valid UTF-8 and unreadable files or folders are
  skipped, counted and listed in the :class:`IndexReport`; the run goes on;
* ``.git/`` is never walked; an ``ignore`` predicate (see
  :func:`engine.store.gitignore.gitignore_matcher`) can exclude more;
* version-control metadata (``.gitignore``, ``.gitattributes``,
  ``.gitmodules``: :data:`VCS_METADATA`) is not content: skipped and
  reported (kind ``vcs-metadata``);
* the store's own files (``x.db``, ``-wal``, ``-shm``, ``-journal``) are
  never indexed, even when the store lives inside the folder.

Each file is stored in one transaction (:meth:`Store.index_text`), so
interrupting a run (Ctrl-C) leaves every label either as it was or fully
replaced. A run that wrote anything ends by merging the FTS5 indexes
(:meth:`Store.merge_index`), as context-mode does when its store closes.
Incremental runs re-index only files whose SHA-256 changed and remove
labels whose file disappeared from a folder indexed again.
"""

from __future__ import annotations

import os
import stat as _stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Callable, Iterable, Iterator

from engine.store import sql
from engine.files.reading import load_json_input
from engine.js.strings import decode_utf8_like_node, to_storage_bytes
from engine.js.strings import undecodable
from engine.store.errors import ReadOnlyStoreError, sqlite_errors
from engine.store.freshness import sha256_text
from engine.store.indexing import IndexResult, MergeReport, backing_path, kind_for_path
from engine.store.store import Store

#: Name of the sessions map inside a corpus folder (read, never indexed).
SESSIONS_FILE = "_sessions.json"
#: Files larger than this are skipped by default (bytes).
DEFAULT_MAX_FILE_BYTES = 10 * 1024 * 1024
#: Bookkeeping table in rankscope's own stores: which folder (or file) each
#: label was indexed from, so an incremental run only removes labels it owns.
#: context-mode ignores unknown tables; stores we did not create never get it.
TRACK_TABLE = "rankscope_files"

#: File names that are version-control metadata, not content (any folder).
VCS_METADATA = frozenset({".gitignore", ".gitattributes", ".gitmodules"})

#: Skip kinds, in the order the CLI summarises them.
SKIP_KINDS = (
    "missing",
    "unreadable",
    "too-large",
    "binary",
    "not-regular",
    "symlink",
    "bad-name",
    "duplicate",
    "store-file",
    "vcs-metadata",
    "replaced-bytes",
)


@dataclass
class Skip:
    """A file that was not indexed (or, for kind ``replaced-bytes``, was
    indexed with invalid UTF-8 replaced by U+FFFD), and why.

    Attributes:
        path: the label (or the path given, for a missing path).
        reason: one line for people.
        kind: one of :data:`SKIP_KINDS`.
    """

    path: str
    reason: str
    kind: str = "unreadable"


@dataclass
class IndexReport:
    """Summary of one indexing run.

    Attributes:
        results: one per indexed file, in order.
        skipped: files passed over (binary, too large, unreadable, ...) and
            notes on files indexed with replaced bytes (kind
            ``replaced-bytes``); see :attr:`not_indexed` / :attr:`warnings`.
        unchanged: labels not re-indexed because their SHA-256 is unchanged.
        removed: labels deleted because their file is gone (incremental mode)
            or is no longer indexable (now binary or too large).
        kept: labels whose file could not be read this time; their earlier
            content was left in place.
        replaced: ``(label, previous root)`` for labels that another folder
            (or file) had indexed into this store and that this run
            re-indexed from a different one: two folders with a
            ``README.md`` share the label, and the last run wins.
        bytes: bytes read from indexed files.
        bytes_read: bytes read from every file (indexed, unchanged or skipped).
        files_seen: files considered (after ignore rules).
        max_file_bytes: the size limit used.
        merge: the FTS5 index merge at the end of the run
            (:meth:`Store.merge_index`); ``None`` when the run wrote nothing.
    """

    results: list[IndexResult] = field(default_factory=list)
    skipped: list[Skip] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    replaced: list[tuple[str, str]] = field(default_factory=list)
    bytes: int = 0
    bytes_read: int = 0
    files_seen: int = 0
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    merge: MergeReport | None = None

    @property
    def chunks(self) -> int:
        """Total chunks stored."""
        return sum(r.chunks for r in self.results)

    @property
    def not_indexed(self) -> list[Skip]:
        """Real skips (everything in :attr:`skipped` except ``replaced-bytes`` notes)."""
        return [s for s in self.skipped if s.kind != "replaced-bytes"]

    @property
    def warnings(self) -> list[Skip]:
        """Files indexed with invalid UTF-8 bytes replaced by U+FFFD."""
        return [s for s in self.skipped if s.kind == "replaced-bytes"]

    def skip_counts(self) -> dict[str, int]:
        """``kind -> count`` for :attr:`not_indexed`, in :data:`SKIP_KINDS` order."""
        counts = {k: 0 for k in SKIP_KINDS}
        for s in self.not_indexed:
            counts[s.kind] = counts.get(s.kind, 0) + 1
        return {k: n for k, n in counts.items() if n}


class IndexInterrupted(KeyboardInterrupt):
    """Ctrl-C during :func:`index_paths`. Every file finished before it is
    committed; the one in progress was rolled back. ``report`` holds what was
    done (still a :class:`KeyboardInterrupt`, so ``except KeyboardInterrupt``
    catches it)."""

    def __init__(self, report: IndexReport):
        super().__init__("indexing interrupted")
        self.report = report


#: The JSON shape of a sessions map: an object of label → session id.
SESSIONS_MAP_SHAPE = dict[str, str]


def _read_at_most(fh: BinaryIO, size: int, max_bytes: int) -> bytes:
    """The file's bytes, at most ``max_bytes + 1`` of them (one more tells
    that it grew past the limit). The buffer is the file's own size (from
    ``stat``), never the limit, so a limit of 10 TB or 2**63 - 1 allocates
    nothing extra; a file that grew while read is read on in 1 MiB blocks."""
    data = fh.read(min(size, max_bytes) + 1)
    if len(data) <= size or len(data) > max_bytes:
        return data
    parts = [data]
    total = len(data)
    while total <= max_bytes:
        block = fh.read(min(1 << 20, max_bytes + 1 - total))
        if not block:
            break
        parts.append(block)
        total += len(block)
    return b"".join(parts)


def load_sessions_map(path: str | os.PathLike[str]) -> dict[str, str]:
    """Read a sessions map (JSON object of label → session id).

    Only a regular file of at most :data:`engine.files.reading.MAX_INPUT_BYTES` is
    read (a FIFO or a link to a device is refused, never read), and nesting
    is bounded (:func:`engine.files.reading.load_json_input`).

    Raises:
        ValueError: unreadable, not JSON, too large or too deep, not of
            :data:`SESSIONS_MAP_SHAPE` (the message names the label), or a label / session id holding a
            lone surrogate (``\\udXXX`` escapes: not storable text); the
            message names the file.
    """
    p = Path(path)
    data: dict[str, str] = load_json_input(p, "sessions map", SESSIONS_MAP_SHAPE)
    for label, session in data.items():
        for text, role in ((label, "label"), (session, f"session id of label {label!r}")):
            problem = undecodable(text)
            if problem:
                raise ValueError(f"sessions map {p}: the {role} {problem} (a \\udXXX escape that is half of a pair?)")
    return data


def looks_binary(data: bytes) -> bool:
    """True for data with a NUL byte in its first 8 KiB (git's heuristic)."""
    return b"\x00" in data[:8192]


def label_sort_key(label: str) -> bytes:
    """Sort key: the UTF-8 bytes of the label (parity indexing order)."""
    return label.encode("utf-8", "surrogatepass")


def _valid_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def store_files(store: Store) -> set[str]:
    """Resolved paths of the store's database file and its SQLite side files."""
    if not store.path:
        return set()
    base = os.path.realpath(store.path)
    return {base, base + "-wal", base + "-shm", base + "-journal"}


def walk_tree(
    root: str | os.PathLike[str], onerror: Callable[[OSError], None] | None = None
) -> Iterator[tuple[str, list[str], list[str]]]:
    """``os.walk(root, topdown=True, followlinks=False)`` without recursion.

    Python 3.11's ``os.walk`` recurses once per folder level, so a tree
    nested ~1,000 deep raised ``RecursionError``; this walk keeps an
    explicit stack, so depth is limited only by the path length the system
    accepts (a longer path is an ``OSError`` passed to ``onerror``). Same
    contract: yields ``(dirpath, dirnames, filenames)`` top-down in the
    order ``os.walk`` would; the caller may prune ``dirnames`` in place;
    symlinked folders are listed in ``dirnames`` but never entered.
    """
    stack = [os.fspath(root)]
    while stack:
        top = stack.pop()
        try:
            scanner = os.scandir(top)
        except OSError as exc:
            if onerror is not None:
                onerror(exc)
            continue
        dirs: list[str] = []
        files: list[str] = []
        links: set[str] = set()
        with scanner:
            while True:
                try:
                    entry = next(scanner)
                except StopIteration:
                    break
                except OSError as exc:
                    if onerror is not None:
                        onerror(exc)
                    break
                try:
                    is_dir = entry.is_dir()
                except OSError:
                    is_dir = False
                if is_dir:
                    dirs.append(entry.name)
                    try:
                        if entry.is_symlink():
                            links.add(entry.name)
                    except OSError:
                        links.add(entry.name)
                else:
                    files.append(entry.name)
        yield top, dirs, files
        # Children in reverse so they pop in listing order (os.walk's order).
        stack.extend(os.path.join(top, d) for d in reversed(dirs) if d not in links)


def collect_files(
    root: Path,
    ignore: Callable[[str], bool] | None = None,
    skipped: list[Skip] | None = None,
    exclude: set[str] | None = None,
) -> list[tuple[str, Path]]:
    """``(label, path)`` for every indexable regular file under ``root``,
    sorted by label bytes.

    Args:
        root: the folder.
        ignore: ``ignore(label) -> bool`` excludes files and (for labels
            ending in ``/``) whole folders. ``.git/`` and the root sessions
            map are always excluded.
        skipped: when given, receives a :class:`Skip` for each entry passed
            over for a reason other than ``ignore`` (symlinks that are not
            followed, unreadable folders, special files, undecodable names).
        exclude: resolved paths never to return (the store's own files).
    """
    root = Path(root)
    real_root = os.path.realpath(root)
    out = []
    notes: list[Skip] = skipped if skipped is not None else []

    def rel(path: str) -> str:
        try:
            return Path(path).relative_to(root).as_posix()
        except ValueError:
            return path

    def on_error(exc: OSError) -> None:
        notes.append(
            Skip(rel(exc.filename or str(root)) + "/", f"unreadable folder: {exc.strerror or exc}", "unreadable")
        )

    for dirpath, dirnames, filenames in walk_tree(root, on_error):
        rel_dir = Path(dirpath).relative_to(root)
        kept_dirs = []
        for d in sorted(dirnames):
            label = (rel_dir / d).as_posix() + "/"
            if d == ".git" or (ignore and ignore(label)):
                continue
            if os.path.islink(os.path.join(dirpath, d)):
                notes.append(Skip(label, "symlinked folder: not followed", "symlink"))
                continue
            kept_dirs.append(d)
        dirnames[:] = kept_dirs
        for name in filenames:
            label = (rel_dir / name).as_posix()
            if label == SESSIONS_FILE:
                continue
            if ignore and ignore(label):
                continue
            if name in VCS_METADATA:
                notes.append(Skip(label, "version-control metadata, not content", "vcs-metadata"))
                continue
            full = Path(dirpath) / name
            if not _valid_utf8(label):
                shown = label.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
                notes.append(Skip(shown, "file name is not valid UTF-8", "bad-name"))
                continue
            try:
                st = os.lstat(full)
                if _stat.S_ISLNK(st.st_mode):
                    target = os.path.realpath(full)
                    if not os.path.exists(target):
                        notes.append(Skip(label, "dangling symlink", "symlink"))
                        continue
                    if not _inside(target, real_root):
                        notes.append(Skip(label, f"symlink to {target}, outside the folder: not followed", "symlink"))
                        continue
                    st = os.stat(full)
            except OSError as exc:
                notes.append(Skip(label, f"unreadable: {exc.strerror or exc}", "unreadable"))
                continue
            if not _stat.S_ISREG(st.st_mode):
                notes.append(Skip(label, "not a regular file (FIFO, socket or device)", "not-regular"))
                continue
            if exclude and os.path.realpath(full) in exclude:
                notes.append(Skip(label, "the store's own database file", "store-file"))
                continue
            out.append((label, full))
    out.sort(key=lambda item: label_sort_key(item[0]))
    return out


# ─── bookkeeping ─────────────────────────────────────────────────────────


def _tracked(store: Store) -> dict[str, str]:
    with sqlite_errors(store.path, "write to"), store.lock:
        store.conn.execute(f"CREATE TABLE IF NOT EXISTS {TRACK_TABLE} (label TEXT PRIMARY KEY, root TEXT NOT NULL)")
        return {label: root for label, root in store.conn.execute(f"SELECT label, root FROM {TRACK_TABLE}")}


def _track(store: Store, label: str, root: str) -> None:
    # Recorded before the label is written: an interruption can leave a row
    # naming a label that was never stored (harmless), never the reverse.
    with sqlite_errors(store.path, "write to"), store.lock:
        store.conn.execute(f"INSERT OR REPLACE INTO {TRACK_TABLE} (label, root) VALUES (?, ?)", (label, root))


def _untrack(store: Store, label: str) -> None:
    with sqlite_errors(store.path, "write to"), store.lock:
        store.conn.execute(f"DELETE FROM {TRACK_TABLE} WHERE label = ?", (label,))


# ─── indexing ────────────────────────────────────────────────────────────


def index_paths(
    store: Store,
    paths: Iterable[str | os.PathLike[str]],
    sessions: dict[str, str] | None = None,
    default_session: str = "",
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
    incremental: bool = False,
    progress: Callable[[str, int], None] | None = None,
    ignore_factory: Callable[[Path], Callable[[str], bool] | None] | None = None,
    on_plan: Callable[[int], None] | None = None,
) -> IndexReport:
    """Index files and folders into a writable store.

    Folder contents are labelled relative to that folder; a file given
    directly is labelled by its name (a label met twice keeps the first
    file). See the module docstring for what is skipped.

    Args:
        store: a writable store (rankscope's own).
        paths: files and folders.
        sessions: label → session id; ``default_session`` for the rest.
        max_file_bytes: larger files are skipped (and reported).
        incremental: skip files whose SHA-256 equals the stored one; remove
            labels indexed earlier from one of these folders whose file is
            gone, and labels whose file is now binary or too large. Labels
            indexed from elsewhere (another folder, ``index_text``) are never
            removed.
        progress: ``progress(label, bytes_read)`` after every file considered
            (indexed, unchanged or skipped); may raise to stop the run.
        ignore_factory: ``ignore_factory(folder)`` returns an ignore
            predicate for that folder (e.g. :func:`engine.store.gitignore.gitignore_matcher`).
        on_plan: ``on_plan(files)`` once, with the number of files to consider.

    Returns:
        An :class:`IndexReport`.

    Raises:
        ReadOnlyStoreError: the store is read-only.
        ValueError: a negative ``max_file_bytes``, or a session id that is
            not storable text (see :func:`engine.pipeline.trace.undecodable`).
        IndexInterrupted: Ctrl-C; committed work stays, the store is consistent.
    """
    if store.read_only:
        raise ReadOnlyStoreError(f"{store.path} is open read-only; rankscope never writes to it")
    if max_file_bytes < 0:
        raise ValueError(f"max_file_bytes must be 0 or more; got {max_file_bytes}")
    sessions = sessions or {}
    problem = undecodable(default_session)
    if problem:
        raise ValueError(f"the session id {problem}")
    for label, session in sessions.items():
        problem = undecodable(session)
        if problem:
            raise ValueError(f"the session id of label {label!r} {problem}")
    report = IndexReport(max_file_bytes=max_file_bytes)
    own = store_files(store)
    plan: list[tuple[str, Path, str]] = []
    roots: set[str] = set()
    for given in paths:
        p = Path(given)
        key = os.path.realpath(p)
        if p.is_dir():
            roots.add(key)
            ignore = ignore_factory(p) if ignore_factory else None
            plan.extend((label, path, key) for label, path in collect_files(p, ignore, report.skipped, own))
        elif p.is_file():
            roots.add(key)
            if key in own:
                report.skipped.append(Skip(p.name, "the store's own database file", "store-file"))
            else:
                plan.append((p.name, p, key))
        elif p.exists():
            report.skipped.append(Skip(str(p), "not a regular file (FIFO, socket or device)", "not-regular"))
        else:
            roots.add(key)  # a file given before and deleted since: its label can go
            report.skipped.append(Skip(str(p), "no such file or folder", "missing"))
    if on_plan:
        on_plan(len(plan))

    tracked = _tracked(store)
    stored_labels = _labels(store)
    known = store.source_hashes() if incremental else {}
    seen: dict[str, Path] = {}
    unindexable: set[str] = set()
    # The file being stored when Ctrl-C lands: (label, kind, text, bytes,
    # highest source id before it). The interrupt is delivered when SQLite
    # hands control back, typically right after the COMMIT (the slow,
    # fsyncing step), so the file can be stored although index_text never
    # returned: see _recover_committed.
    in_flight: tuple[str, str, str, bytes, int] | None = None
    last_id = _max_source_id(store)
    try:
        for label, path, root_key in plan:
            nbytes = 0
            try:
                if label in seen:
                    report.skipped.append(Skip(label, f"label already indexed from {seen[label]}", "duplicate"))
                    continue
                seen[label] = path
                report.files_seen += 1
                try:
                    size = path.stat().st_size
                    if size > max_file_bytes:
                        report.skipped.append(
                            Skip(label, f"{size} bytes is over the {max_file_bytes}-byte limit", "too-large")
                        )
                        unindexable.add(label)
                        continue
                    with open(path, "rb") as fh:
                        data = _read_at_most(fh, size, max_file_bytes)
                except OSError as exc:
                    report.skipped.append(Skip(label, f"unreadable: {exc.strerror or exc}", "unreadable"))
                    if label in known:
                        report.kept.append(label)
                    continue
                nbytes = len(data)
                if nbytes > max_file_bytes:
                    report.skipped.append(
                        Skip(label, f"grew past the {max_file_bytes}-byte limit while read", "too-large")
                    )
                    unindexable.add(label)
                    continue
                if looks_binary(data):
                    report.skipped.append(Skip(label, "binary file (NUL byte)", "binary"))
                    unindexable.add(label)
                    continue
                text = decode_utf8_like_node(data)
                digest = sha256_text(text)
                previous_root = tracked.get(label)
                if previous_root != root_key:
                    _track(store, label, root_key)
                    tracked[label] = root_key
                if incremental and known.get(label) == digest:
                    report.unchanged.append(label)
                    continue
                kind = kind_for_path(path)
                in_flight = (label, kind, text, data, last_id)
                result = store.index_text(
                    label,
                    text,
                    kind,
                    session_id=sessions.get(label, default_session),
                    file_path=backing_path(path, kind),
                    content_hash=digest,
                )
                _record(report, result, text, data)
                in_flight = None
                if previous_root is not None and previous_root != root_key and label in stored_labels:
                    report.replaced.append((label, previous_root))
                last_id = max(last_id, result.source_id)
            finally:
                report.bytes_read += nbytes
                if progress:
                    progress(label, nbytes)
        if incremental:
            for label in sorted(known, key=label_sort_key):
                gone = label not in seen and tracked.get(label) in roots
                if gone or label in unindexable:
                    store.delete_label(label)
                    _untrack(store, label)
                    report.removed.append(label)
        if report.results or report.removed:
            report.merge = store.merge_index()
    except KeyboardInterrupt as exc:
        if isinstance(exc, IndexInterrupted):
            raise
        if in_flight is not None:
            _recover_committed(store, report, *in_flight)
        raise IndexInterrupted(report) from exc
    return report


def _record(report: IndexReport, result: IndexResult, text: str, data: bytes) -> None:
    """Add a stored file to ``report`` (and the U+FFFD note when its bytes
    were not valid UTF-8)."""
    if "\ufffd" in text and b"\xef\xbf\xbd" not in data:
        report.skipped.append(
            Skip(result.label, "indexed, but invalid UTF-8 bytes were replaced by U+FFFD", "replaced-bytes")
        )
    report.results.append(result)
    report.bytes += len(data)


def _labels(store: Store) -> set[str]:
    with sqlite_errors(store.path), store.lock:
        return {r[0] for r in store.conn.execute("SELECT label FROM sources")}


def _max_source_id(store: Store) -> int:
    """Highest ``sources.id`` ever handed out (``sqlite_sequence``, as
    AUTOINCREMENT uses it; ``MAX(id)`` as a fallback): a row stored later
    has a larger id."""
    with sqlite_errors(store.path), store.lock:
        row = store.conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'sources'").fetchone()
        top = store.conn.execute("SELECT COALESCE(MAX(id), 0) FROM sources").fetchone()[0]
    return max(int(row[0]) if row else 0, int(top))


def _recover_committed(
    store: Store, report: IndexReport, label: str, kind: str, text: str, data: bytes, before: int
) -> None:
    """After Ctrl-C: if the file in flight was committed anyway (a source row
    for ``label`` newer than ``before``), count it as indexed. Any error here
    is ignored: the interrupt is what must propagate."""
    if report.results and report.results[-1].label == label and report.results[-1].source_id > before:
        return  # already recorded
    try:
        with store.lock:
            row = store.conn.execute(
                "SELECT id, chunk_count, code_chunk_count FROM sources WHERE label = ? AND id > ? ORDER BY id DESC",
                (label, before),
            ).fetchone()
    except sql.Error:
        return
    if row is None:
        return  # rolled back: the label keeps its previous content
    # kind: as planned (a JSON file that failed to parse really used "plain");
    # vocabulary_added: unknown, 0.
    result = IndexResult(label, int(row[0]), kind, int(row[1]), int(row[2]), len(to_storage_bytes(text)), 0)
    _record(report, result, text, data)


def index_corpus(store: Store, root: str | os.PathLike[str], sessions: dict[str, str] | None = None) -> IndexReport:
    """Index a parity-style corpus folder; reads ``_sessions.json`` from it
    when ``sessions`` is not given."""
    root = Path(root)
    if sessions is None and (root / SESSIONS_FILE).is_file():
        sessions = load_sessions_map(root / SESSIONS_FILE)
    return index_paths(store, [root], sessions=sessions)
