"""Indexing a folder or a list of files the way the parity corpora were built.

Labels are paths relative to the folder given, with ``/`` separators; files
are indexed in ascending order of the UTF-8 bytes of their label; ``.md`` is
markdown, ``.json`` JSON, everything else plain text. A *sessions map* is a
JSON object ``{label: session_id}``; files missing from it get ``""``.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from .store import IndexResult, Store

#: Name of the sessions map inside a corpus folder (read, never indexed).
SESSIONS_FILE = "_sessions.json"
#: Files larger than this are skipped by default (bytes).
DEFAULT_MAX_FILE_BYTES = 10 * 1024 * 1024


@dataclass
class Skip:
    """A file that was not indexed, and why."""

    path: str
    reason: str


@dataclass
class IndexReport:
    """Summary of one indexing run.

    Attributes:
        results: one per indexed file, in order.
        skipped: files passed over (binary, too large, unreadable, ...).
        unchanged: labels not re-indexed because their SHA-256 is unchanged.
        removed: labels deleted because their file is gone (incremental mode).
        bytes: bytes read from indexed files.
    """

    results: list[IndexResult] = field(default_factory=list)
    skipped: list[Skip] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    bytes: int = 0

    @property
    def chunks(self) -> int:
        """Total chunks stored."""
        return sum(r.chunks for r in self.results)


def load_sessions_map(path: str | os.PathLike[str]) -> dict[str, str]:
    """Read a sessions map (JSON object of label → session id).

    Raises:
        ValueError: not JSON, not an object, or a non-string value; the
            message names the file.
    """
    p = Path(path)
    try:
        data = json.loads(p.read_text("utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"cannot read sessions map {p}: {exc}") from exc
    if not isinstance(data, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in data.items()):
        raise ValueError(f"sessions map {p} must be a JSON object of label → session id strings")
    return data


def looks_binary(data: bytes) -> bool:
    """True for data with a NUL byte in its first 8 KiB (git's heuristic)."""
    return b"\x00" in data[:8192]


def label_sort_key(label: str) -> bytes:
    """Sort key: the UTF-8 bytes of the label (parity indexing order)."""
    return label.encode("utf-8", "surrogatepass")


def collect_files(root: Path, ignore: Callable[[str], bool] | None = None) -> list[tuple[str, Path]]:
    """``(label, path)`` for every regular file under ``root`` (symlinked
    folders are not followed), sorted by label bytes. ``ignore(label)`` may
    exclude files; the sessions map is always excluded."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        rel_dir = Path(dirpath).relative_to(root)
        dirnames[:] = [
            d for d in dirnames
            if d != ".git" and not (ignore and ignore((rel_dir / d).as_posix() + "/"))
        ]
        for name in filenames:
            label = (rel_dir / name).as_posix()
            if label == SESSIONS_FILE:
                continue
            full = Path(dirpath) / name
            if full.is_symlink() and not full.is_file():
                continue
            if ignore and ignore(label):
                continue
            out.append((label, full))
    out.sort(key=lambda item: label_sort_key(item[0]))
    return out


def index_paths(
    store: Store,
    paths: Iterable[str | os.PathLike[str]],
    sessions: dict[str, str] | None = None,
    default_session: str = "",
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
    incremental: bool = False,
    progress: Callable[[str, int], None] | None = None,
    ignore_factory: Callable[[Path], Callable[[str], bool] | None] | None = None,
) -> IndexReport:
    """Index files and folders.

    Folder contents are labelled relative to that folder; a file given
    directly is labelled by its name. Binary files, files over
    ``max_file_bytes`` and unreadable files are skipped and reported. With
    ``incremental``, files whose SHA-256 matches the stored source are
    skipped and labels under an indexed folder whose file disappeared are
    removed. ``progress(label, bytes)`` is called after each file.
    """
    sessions = sessions or {}
    report = IndexReport()
    known = store.source_hashes() if incremental else {}
    seen: set[str] = set()
    files: list[tuple[str, Path]] = []
    for given in paths:
        p = Path(given)
        if p.is_dir():
            ignore = ignore_factory(p) if ignore_factory else None
            files.extend(collect_files(p, ignore))
        elif p.is_file():
            files.append((p.name, p))
        else:
            report.skipped.append(Skip(str(p), "no such file or folder"))
    from .store import decode_utf8_like_node, kind_for_path, sha256_text

    for label, path in files:
        seen.add(label)
        try:
            size = path.stat().st_size
            if size > max_file_bytes:
                report.skipped.append(Skip(label, f"{size} bytes is over the {max_file_bytes}-byte limit"))
                continue
            data = path.read_bytes()
        except OSError as exc:
            report.skipped.append(Skip(label, f"unreadable: {exc.strerror or exc}"))
            continue
        if looks_binary(data):
            report.skipped.append(Skip(label, "binary file (NUL byte)"))
            continue
        text = decode_utf8_like_node(data)
        if incremental and known.get(label) == sha256_text(text):
            report.unchanged.append(label)
            if progress:
                progress(label, len(data))
            continue
        kind = kind_for_path(path)
        session = sessions.get(label, default_session)
        result = store.index_text(
            label, text, kind, session_id=session, file_path=str(path.resolve()) if kind == "markdown" else None
        )
        if kind != "markdown":
            with store.lock:
                store.conn.execute(
                    "UPDATE sources SET content_hash = ? WHERE id = ?", (sha256_text(text), result.source_id)
                )
        if "\ufffd" in text and b"\xef\xbf\xbd" not in data:
            report.skipped.append(Skip(label, "indexed, but invalid UTF-8 bytes were replaced by U+FFFD"))
        report.results.append(result)
        report.bytes += len(data)
        if progress:
            progress(label, len(data))
    if incremental:
        for label in known:
            if label not in seen:
                store.delete_label(label)
                report.removed.append(label)
    return report


def index_corpus(store: Store, root: str | os.PathLike[str], sessions: dict[str, str] | None = None) -> IndexReport:
    """Index a parity-style corpus folder; reads ``_sessions.json`` from it
    when ``sessions`` is not given."""
    root = Path(root)
    if sessions is None and (root / SESSIONS_FILE).is_file():
        sessions = load_sessions_map(root / SESSIONS_FILE)
    return index_paths(store, [root], sessions=sessions)
