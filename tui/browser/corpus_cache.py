"""The corpus cache: a folder is indexed once into a store under the user's
cache directory and re-used while the folder is unchanged.

* The store for a folder is ``<cache dir>/<sha256(resolved folder path)[:16]>.db``;
  the fingerprint of the folder it was built from sits next to it as
  ``<same name>.fingerprint`` (JSON).
* The fingerprint is the SHA-256 of the sorted ``(label, size, mtime_ns)`` of
  every file :func:`engine.store.corpus.collect_files` would index, plus the
  sessions map (``_sessions.json``), which changes attribution.
* The files indexing passed over (binary, too large, unreadable, ...) are
  listed in the fingerprint file too (``skipped``), so the browser can show
  them whether it indexed the folder just now or found it cached.
* A cached store is rankscope's own, so it is opened for writing
  (:meth:`engine.Store.open_writable`): as in context-mode, a search first
  re-indexes the sources whose file changed since indexing (the stale
  refresh stage), so an edit shows in the next search. A file added or
  removed changes the fingerprint: the store is rebuilt at the next start.
  Each search thread opens its own connection.

The cache directory is ``platformdirs.user_cache_dir("rankscope")``, or
``$RANKSCOPE_CACHE_DIR`` when that is set (tests, sandboxes).

No Textual here: the loading screen calls :func:`build_cache` from a thread.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from engine.files.reading import load_json_input
from engine.files.writing import write_text_file
from engine import Store, StoreError
from engine.store.gitignore import gitignore_matcher
from engine.store.corpus import (
    DEFAULT_MAX_FILE_BYTES,
    SESSIONS_FILE,
    IndexReport,
    Skip,
    collect_files,
    index_paths,
    load_sessions_map,
)

from tui.present.fmt import human_bytes

#: Bumped when the cache layout or the indexing rules change.
CACHE_FORMAT = 2  # 2: .gitignore rules applied (format 1 stores indexed ignored files)


def cache_dir() -> Path:
    """The folder holding cached stores (created on demand by :func:`build_cache`)."""
    override = os.environ.get("RANKSCOPE_CACHE_DIR")
    if override:
        return Path(override)
    import platformdirs

    return Path(platformdirs.user_cache_dir("rankscope"))


@dataclass(frozen=True)
class CacheEntry:
    """Where the cached store of one corpus folder lives.

    Attributes:
        folder: the corpus folder (resolved).
        db_path: the cached store.
        fingerprint_path: the fingerprint of the folder the store was built from.
    """

    folder: Path
    db_path: Path
    fingerprint_path: Path


def cache_entry(folder: str | os.PathLike[str], root: Path | None = None) -> CacheEntry:
    """The cache paths for ``folder`` (named by a hash of its resolved path)."""
    resolved = Path(folder).expanduser().resolve()
    digest = hashlib.sha256(str(resolved).encode("utf-8", "surrogatepass")).hexdigest()[:16]
    base = (root or cache_dir()) / digest
    return CacheEntry(resolved, base.with_suffix(".db"), base.with_suffix(".fingerprint"))


def corpus_files(folder: Path) -> list[tuple[str, Path]]:
    """The ``(label, path)`` pairs indexing would read, in indexing order
    (``.gitignore`` rules applied, as ``rankscope index`` applies them)."""
    return collect_files(folder, gitignore_matcher(folder))


def fingerprint(folder: str | os.PathLike[str]) -> str:
    """SHA-256 over ``(label, size, mtime_ns)`` of every indexed file, the
    sessions map and the ``.gitignore`` files that decide what is indexed;
    any added, removed, resized or touched one changes it."""
    root = Path(folder)
    items = []
    extra = [(SESSIONS_FILE, root / SESSIONS_FILE)] if (root / SESSIONS_FILE).is_file() else []
    rules = gitignore_matcher(root)
    files = collect_files(root, rules)
    # Every rule file the walk consulted decides what is indexed: editing,
    # adding or removing one changes the fingerprint too.
    extra += [(p.relative_to(root).as_posix(), p) for p in rules.rule_files() if p.is_file()]
    for label, path in files + extra:
        try:
            st = path.stat()
        except OSError:
            continue
        items.append([label, st.st_size, st.st_mtime_ns])
    payload = json.dumps({"format": CACHE_FORMAT, "files": sorted(items)}, ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8", "surrogatepass")).hexdigest()


def load_cached(entry: CacheEntry, writable: bool = True) -> Store | None:
    """The cached store, opened for writing (``writable=False``: read-only,
    for a demo visitor reading the user's cache), if it exists, its fingerprint
    matches the folder now and its counts can be read; else ``None`` (never
    raises for a stale or broken cache: it is simply rebuilt)."""
    if not entry.db_path.is_file() or not entry.fingerprint_path.is_file():
        return None
    try:
        saved = load_json_input(entry.fingerprint_path, "cache fingerprint")
    except (OSError, ValueError):
        return None
    if not isinstance(saved, dict) or saved.get("fingerprint") != fingerprint(entry.folder):
        return None
    try:
        store = Store.open_writable(entry.db_path) if writable else Store.open_readonly(entry.db_path)
    except StoreError:
        return None
    from tui.browser.facts import read_facts

    try:
        read_facts(store)  # a damaged cache is rebuilt, not browsed
    except StoreError:
        store.close()
        return None
    return store


@dataclass(frozen=True)
class SkipList:
    """Files an indexing run did not index, and why.

    Attributes:
        skipped: the files (:class:`engine.store.corpus.Skip`), in indexing order.
        max_file_bytes: the size limit that run used.
    """

    skipped: tuple[Skip, ...] = ()
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES

    @classmethod
    def from_report(cls, report: IndexReport) -> "SkipList":
        """The real skips of ``report`` (not the replaced-bytes notes)."""
        return cls(tuple(report.not_indexed), report.max_file_bytes)

    def summary(self) -> str:
        """``3 files skipped (2 binary, 1 over 1.0 MiB)``, or ``""`` when none."""
        if not self.skipped:
            return ""
        counts: dict[str, int] = {}
        for s in self.skipped:
            counts[s.kind] = counts.get(s.kind, 0) + 1
        kinds = {"too-large": f"over {human_bytes(self.max_file_bytes)}"}
        parts = ", ".join(f"{n} {kinds.get(k, k)}" for k, n in counts.items())
        n = len(self.skipped)
        return f"{n} file{'s' if n != 1 else ''} skipped ({parts})"

    def to_json(self) -> dict:
        """``{"max_file_bytes": int, "files": [{"path", "reason", "kind"}]}``
        (plain JSON values; read back with :meth:`from_json`)."""
        return {
            "max_file_bytes": self.max_file_bytes,
            "files": [{"path": s.path, "reason": s.reason, "kind": s.kind} for s in self.skipped],
        }

    @classmethod
    def from_json(cls, data: object) -> "SkipList":
        """Parse :meth:`to_json` output; anything malformed reads as no skips."""
        if not isinstance(data, dict) or not isinstance(data.get("files"), list):
            return cls()
        files = tuple(
            Skip(str(f.get("path", "")), str(f.get("reason", "")), str(f.get("kind", "unreadable")))
            for f in data["files"]
            if isinstance(f, dict)
        )
        limit = data.get("max_file_bytes")
        return cls(files, limit if isinstance(limit, int) else DEFAULT_MAX_FILE_BYTES)


def cached_skips(entry: CacheEntry) -> SkipList:
    """The files the cached store's indexing skipped (none when unknown)."""
    try:
        saved = load_json_input(entry.fingerprint_path, "cache fingerprint")
    except (OSError, ValueError):
        return SkipList()
    return SkipList.from_json(saved.get("skipped") if isinstance(saved, dict) else None)


def _remove(path: Path) -> None:
    for p in (path, Path(str(path) + "-wal"), Path(str(path) + "-shm"), Path(str(path) + "-journal")):
        try:
            p.unlink()
        except FileNotFoundError:
            pass


def build_cache(
    entry: CacheEntry,
    progress: Callable[[str, int], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
    on_skips: Callable[[SkipList], None] | None = None,
    writable: bool = True,
) -> Store:
    """Index ``entry.folder`` into a fresh cached store and open it for
    writing (``writable=False``: read-only, a demo's store).

    The store is written to a temporary file and renamed into place, so an
    interrupted build never leaves a half-filled store behind a valid
    fingerprint. ``progress(label, nbytes)`` is called after each file;
    ``on_skips`` gets the files that were not indexed (also saved with the
    fingerprint: :func:`cached_skips`).

    Raises:
        StoreError: the cache folder is not writable or the store is unusable.
        ValueError: the folder's ``_sessions.json`` is malformed.
        InterruptedError: ``cancelled()`` returned true.
    """
    folder = entry.folder
    sessions = load_sessions_map(folder / SESSIONS_FILE) if (folder / SESSIONS_FILE).is_file() else None
    print_ = fingerprint(folder)
    try:
        entry.db_path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(f"cannot create the cache folder {entry.db_path.parent}: {exc.strerror or exc}") from exc
    tmp = entry.db_path.with_name(entry.db_path.name + f".tmp{os.getpid()}")
    _remove(tmp)

    def tick(label: str, nbytes: int) -> None:
        if cancelled is not None and cancelled():
            raise InterruptedError("indexing cancelled")
        if progress is not None:
            progress(label, nbytes)

    store = Store.create(tmp)
    try:
        report = index_paths(store, [folder], sessions=sessions, progress=tick, ignore_factory=gitignore_matcher)
    except BaseException:
        store.close()
        _remove(tmp)
        raise
    store.close()  # the last connection closing checkpoints and removes the -wal file
    _remove(entry.db_path)
    os.replace(tmp, entry.db_path)
    _remove(tmp)
    skips = SkipList.from_report(report)
    write_text_file(
        entry.fingerprint_path,
        json.dumps({"folder": str(folder), "fingerprint": print_, "format": CACHE_FORMAT, "skipped": skips.to_json()}),
        overwrite=True,
    )
    if on_skips is not None:
        on_skips(skips)
    return Store.open_writable(entry.db_path) if writable else Store.open_readonly(entry.db_path)
