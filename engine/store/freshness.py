"""Which file-backed sources are stale, without statting every file on every search.

The reference (``ContentStore.#refreshStaleSources``) checks every
file-backed source before every search: the file exists, its mtime is after
``indexed_at``, and the SHA-256 of its text differs from ``content_hash``.
At 100,000 chunks that costs a search tens of milliseconds, at 1,000,000
hundreds. :class:`Freshness` gives the same answer from state it keeps:

* the source rows are read once per store *data version*
  (:meth:`engine.store.store.Store.data_version`), not per search;
* each distinct file is examined with one ``stat`` (the reference's
  ``existsSync`` + ``statSync``), and its SHA-256 is computed only when its
  mtime passes the ``indexed_at`` of a source on it, and remembered for that
  (mtime, size, inode, device);
* **watch** (Linux): from the second search of a store on, the folders of
  the files are watched with inotify (``inotify_simple``), and before each
  search the queued events are read without blocking. The kernel queues an
  event inside the writing system call, so every change made before the
  search started is in the queue: only the files named by events (and files
  that are symlinks, whose targets a folder watch cannot see) are examined
  again. The answer is as current as the reference's (method ``"watch"``);
* **scan**: the first search (a one-shot CLI search never starts a
  watcher), a search after a structural change (a watched folder removed or
  moved, a missing folder created, an inotify queue overflow, new folders
  among the sources) and stores that cannot be watched (no inotify here, no
  watches left) with at most :data:`SYNC_SCAN_LIMIT` files examine every
  file, as the reference does (method ``"scan"``);
* **background**: larger stores that cannot be watched are examined by a
  background thread every :data:`BACKGROUND_INTERVAL_S`; a search reads its
  last complete examination (method ``"background"``, and
  :attr:`Answer.age_ms` says how long ago that examination started: only
  this method can miss a change made less than that long ago).

The decision per source is the reference's, in its order: a missing file is
skipped; an ``indexed_at`` that does not parse is an error; a file whose
mtime (milliseconds) is not after ``indexed_at`` is fresh; a path that is not
a regular file is skipped; a file whose text (UTF-8 read as Node reads it)
has the recorded SHA-256 is fresh; anything else is stale. Errors are
``(label, message)`` pairs, as before.

Not seen by a folder watch (examined only by a scan): a change written
through a hard link in another folder, or through ``mmap``.

Why not ``watchfiles``: it delivers events from its own thread, 5-25 ms
after the change on this 2-core machine (measured), and clears pending
events when a wait times out, so a search could not know it had seen every
change before it; an inotify queue read in the search's own thread can.
"""

from __future__ import annotations

import datetime as _dt
import functools
import hashlib
import os
import stat as _stat
import threading
import time
from dataclasses import dataclass

from engine.store import sql
from engine.js.strings import decode_utf8_like_node, to_storage_bytes

#: Files a search examines itself when their folders cannot be watched; above
#: this a background thread examines them.
SYNC_SCAN_LIMIT = 2048
#: Pause between two background examinations, seconds.
BACKGROUND_INTERVAL_S = 1.0
#: Folders watched at most (each costs one inotify watch), and at most this
#: share of the system's ``max_user_watches``.
MAX_WATCHED_FOLDERS = 8192
_WATCH_SHARE = 0.5

INDEXED_AT_FORMAT = "%Y-%m-%d %H:%M:%S"
SOURCES_SQL = (
    f"SELECT {sql.text('label')}, {sql.text('file_path')}, content_hash, indexed_at "
    "FROM sources WHERE file_path IS NOT NULL"
)

#: Methods of :attr:`Answer.method`.
METHODS = ("scan", "watch", "background")


@dataclass(frozen=True)
class Source:
    """One file-backed source row, in the order ``SELECT`` returns them.

    Attributes:
        label: ``sources.label``.
        file_path: ``sources.file_path``.
        content_hash: ``sources.content_hash`` (``None`` when missing).
        indexed_ms: ``indexed_at`` as Unix milliseconds, or ``None`` when
            it does not parse (``error`` then says why).
        error: the parse error's message.
    """

    label: str
    file_path: str
    content_hash: str | None
    indexed_ms: int | None
    error: str | None


@functools.lru_cache(maxsize=4096)
def _parse_indexed(indexed_at: object) -> tuple[int | None, str | None]:
    """``indexed_at`` (``YYYY-MM-DD HH:MM:SS``, UTC) as Unix milliseconds,
    or ``(None, error message)``. Memoised: sources indexed in the same
    second share the string."""
    try:
        when = _dt.datetime.strptime(indexed_at, INDEXED_AT_FORMAT).replace(tzinfo=_dt.timezone.utc)  # type: ignore[arg-type]
    except (ValueError, TypeError) as exc:
        return None, str(exc)
    return int(when.timestamp() * 1000), None


def load_sources(conn: sql.Connection) -> list[Source]:
    """Every file-backed source row (the reference's query, same order)."""
    out = []
    for label, file_path, content_hash, indexed_at in conn.execute(SOURCES_SQL).fetchall():
        ms, err = _parse_indexed(indexed_at)
        out.append(Source(sql.decode(label) or "", sql.decode(file_path) or "", content_hash, ms, err))
    return out


@dataclass(frozen=True)
class FileState:
    """One ``stat`` of a path: ``exists`` as ``os.path.exists`` reads it;
    ``sig`` = (mtime ns, size, inode, device) identifies the content version."""

    exists: bool
    is_file: bool = False
    mtime_ms: int = 0
    sig: tuple[int, ...] = ()


def stat_file(path: str) -> FileState:
    """One ``os.stat`` of ``path`` (following symlinks); any ``OSError`` or
    ``ValueError`` reads as a missing file, as ``os.path.exists`` does."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return FileState(False)
    return FileState(
        True, _stat.S_ISREG(st.st_mode), st.st_mtime_ns // 1_000_000, (st.st_mtime_ns, st.st_size, st.st_ino, st.st_dev)
    )


def sha256_text(text: str) -> str:
    """SHA-256 hex digest of ``text`` encoded as UTF-8 (reference ``content_hash``)."""
    return hashlib.sha256(to_storage_bytes(text)).hexdigest()


def read_text(path: str) -> str:
    """The file's text as the reference reads it (UTF-8, invalid bytes as U+FFFD).

    Raises:
        OSError: it cannot be read.
    """
    with open(path, "rb") as fh:
        return decode_utf8_like_node(fh.read())


class _Digests:
    """SHA-256 of each file's text, remembered per (path, content signature)."""

    def __init__(self) -> None:
        self._by_path: dict[str, tuple[tuple[int, ...], str]] = {}
        self._lock = threading.Lock()

    def digest(self, path: str, sig: tuple[int, ...]) -> str:
        """Raises OSError when the file cannot be read."""
        with self._lock:
            hit = self._by_path.get(path)
        if hit is not None and hit[0] == sig:
            return hit[1]
        value = sha256_text(read_text(path))
        with self._lock:
            self._by_path[path] = (sig, value)
        return value

    def forget(self, path: str) -> None:
        with self._lock:
            self._by_path.pop(path, None)


def verdict(src: Source, state: FileState, digests: _Digests) -> tuple[str, str] | None:
    """The reference's decision for one source: ``None`` (fresh or skipped),
    ``("stale", "")`` or ``("error", message)``."""
    if not state.exists:
        return None
    if src.error is not None:
        return ("error", src.error)
    if state.mtime_ms <= (src.indexed_ms or 0):
        return None
    if not state.is_file:
        return None
    try:
        digest = digests.digest(src.file_path, state.sig)
    except OSError as exc:
        return ("error", str(exc))
    return None if digest == src.content_hash else ("stale", "")


@dataclass(frozen=True)
class Answer:
    """The stale-source answer for one search.

    Attributes:
        checked: file-backed sources.
        stale: labels of stale sources, in source order.
        errors: ``(label, message)`` for sources that could not be checked.
        paths: ``(label, file_path, content_hash)`` of each stale source.
        method: ``"scan"``, ``"watch"`` or ``"background"`` (see the module docstring).
        age_ms: how old the examination behind the answer is (0 for scan and watch).
        examined: files examined (``stat``-ed) for this answer.
    """

    checked: int = 0
    stale: tuple[str, ...] = ()
    errors: tuple[tuple[str, str], ...] = ()
    paths: tuple[tuple[str, str, str | None], ...] = ()
    method: str = "scan"
    age_ms: float = 0.0
    examined: int = 0


class _Watch:
    """inotify watches on some folders (Linux), read without blocking.

    The kernel queues an event while the writing system call runs, so a
    read right before a search sees every change made before it started.
    """

    #: Events that may change a file's answer (content, mtime, the name now pointing elsewhere).
    _MASK = (
        0x2 | 0x4 | 0x8 | 0x40 | 0x80 | 0x100 | 0x200 | 0x400 | 0x800
    )  # MODIFY ATTRIB CLOSE_WRITE MOVED_* CREATE DELETE *_SELF
    _ONLYDIR = 0x01000000
    #: Events after which the watches no longer match the folders: look at everything again.
    _STRUCTURAL = 0x400 | 0x800 | 0x2000 | 0x4000 | 0x8000  # DELETE_SELF MOVE_SELF UNMOUNT Q_OVERFLOW IGNORED

    def __init__(self, folders: list[str]):
        from inotify_simple import INotify

        self._inotify = INotify(nonblocking=True)
        self._folders: dict[int, str] = {}
        try:
            for folder in folders:
                self._folders[self._inotify.add_watch(folder, self._MASK | self._ONLYDIR)] = folder
        except BaseException:
            self._inotify.close()
            raise
        self.folders = frozenset(folders)

    def drain(self) -> tuple[set[str], bool]:
        """``(paths, structural)``: every path with an event since the last
        drain, and whether a watched folder went away (or events were lost)."""
        paths: set[str] = set()
        structural = False
        while True:
            events = self._inotify.read(timeout=0)
            if not events:
                return paths, structural
            for ev in events:
                folder = self._folders.get(ev.wd)
                if ev.mask & self._STRUCTURAL or folder is None:
                    structural = True
                elif ev.name:
                    paths.add(os.path.join(folder, ev.name))

    def close(self) -> None:
        try:
            self._inotify.close()
        except OSError:
            pass


def _watchable(path: str) -> bool:
    """A folder watch reports events under this very spelling of ``path``
    (absolute, normalised, not itself a symlink)."""
    return os.path.isabs(path) and os.path.normpath(path) == path and not os.path.islink(path)


def _folders_for(paths: list[str]) -> tuple[list[str], frozenset[str]]:
    """Folders to watch for ``paths`` (the watchable ones): each file's
    nearest existing ancestor; plus the missing folders between them (an
    event on one of those means a folder came back: look at everything again)."""
    watch: set[str] = set()
    missing: set[str] = set()
    for d in {os.path.dirname(p) for p in paths if os.path.isabs(p)}:
        while not os.path.isdir(d):
            missing.add(d)
            parent = os.path.dirname(d)
            if parent == d:
                break
            d = parent
        watch.add(d)
    return sorted(watch), frozenset(missing)


def _watch_budget() -> int:
    try:
        with open("/proc/sys/fs/inotify/max_user_watches") as fh:
            return min(MAX_WATCHED_FOLDERS, int(int(fh.read()) * _WATCH_SHARE))
    except (OSError, ValueError):
        return MAX_WATCHED_FOLDERS


class Freshness:
    """Keeps one store's stale-source answer current (see the module docstring).
    Thread-safe; :meth:`close` stops watching (idempotent)."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._version: object = object()
        self._sources: list[Source] = []
        self._by_path: dict[str, list[int]] = {}
        self._states: dict[str, FileState] = {}
        #: source index -> its verdict, for sources that are not fresh
        self._verdicts: dict[int, tuple[str, str]] = {}
        self._digests = _Digests()
        self._checks = 0
        self._watch: _Watch | None = None
        #: missing folders between a watched folder and a source's file
        self._missing: frozenset[str] = frozenset()
        #: files a folder watch cannot vouch for (symlinks, relative paths): examined every time
        self._always: list[str] = []
        self._unwatchable = False
        self._bg: _Background | None = None

    def check(self, conn: sql.Connection, version: object) -> Answer:
        """The answer for a search about to start on ``conn``. ``version`` is
        the store's data version, read before the search's snapshot: the
        source rows are read again when it changes (``None``: every time).

        Raises:
            engine.store.sql.Error: the ``sources`` table cannot be read.
        """
        with self._lock:
            self._checks += 1
            if version is None or version != self._version:
                self._reload(conn)
                self._version = version
                if self._watch is not None and not self._watch_covers():
                    self._stop_watch()  # new folders among the sources: scan and watch afresh
            if not self._sources:
                return Answer()
            if self._bg is not None:
                return self._from_background()
            if self._watch is not None:
                changed, structural = self._watch.drain()
                if not structural and not changed & self._missing:
                    paths = [p for p in changed if p in self._by_path]
                    paths += [p for p in self._always if p not in changed]
                    self._examine(paths, forget=True)
                    return self._answer("watch", 0.0, len(paths))
                self._stop_watch()  # a folder came or went, or events were lost: look again
            if self._checks >= 2 and not self._unwatchable:
                self._start_watch()  # before the scan: a change during the scan is then an event
            if self._watch is None and self._unwatchable and len(self._by_path) > SYNC_SCAN_LIMIT:
                started = time.monotonic()
                self._examine(list(self._by_path))
                self._bg = _Background(self, dict(self._states), started)
                self._bg.start()
            else:
                self._examine(list(self._by_path))
            return self._answer("scan", 0.0, len(self._by_path))

    def warm(self, conn: sql.Connection, version: object) -> None:
        """Bring the answer to where a store searched again and again keeps it,
        ahead of its first search (a browser opening a store): the source rows
        read, the folders watched where they can be, then every file examined
        (the watch first: a change during the scan is then an event). The
        search after it reads the watch's queue only.

        Raises:
            engine.store.sql.Error: the ``sources`` table cannot be read.
        """
        with self._lock:
            self._checks = max(self._checks, 1)  # the check below counts as a second one: it watches
            self.check(conn, version)

    def _answer(self, method: str, age_ms: float, examined: int) -> Answer:
        stale, errors, paths = [], [], []
        for i in sorted(self._verdicts):
            kind, msg = self._verdicts[i]
            src = self._sources[i]
            if kind == "stale":
                stale.append(src.label)
                paths.append((src.label, src.file_path, src.content_hash))
            else:
                errors.append((src.label, msg))
        return Answer(len(self._sources), tuple(stale), tuple(errors), tuple(paths), method, age_ms, examined)

    def _reload(self, conn: sql.Connection) -> None:
        self._sources = load_sources(conn)
        by_path: dict[str, list[int]] = {}
        for i, s in enumerate(self._sources):
            by_path.setdefault(s.file_path, []).append(i)
        self._by_path = by_path
        self._states = {p: st for p, st in self._states.items() if p in by_path}
        self._verdicts = {}
        for path, state in self._states.items():
            self._judge(path, state)

    def _judge(self, path: str, state: FileState) -> None:
        for i in self._by_path.get(path, ()):
            v = verdict(self._sources[i], state, self._digests)
            if v is None:
                self._verdicts.pop(i, None)
            else:
                self._verdicts[i] = v

    def _examine(self, paths: list[str], forget: bool = False) -> None:
        """Examine ``paths`` now; ``forget``: their content may have changed
        without a new (mtime, size, inode) (coarse timestamps), so hash again."""
        for path in paths:
            if forget:
                self._digests.forget(path)
            state = stat_file(path)
            self._states[path] = state
            self._judge(path, state)

    # ── watching ──────────────────────────────────────────────────────

    def _watch_covers(self) -> bool:
        assert self._watch is not None
        folders, missing = _folders_for(list(self._by_path))
        return set(folders) <= self._watch.folders and missing <= self._missing

    def _start_watch(self) -> None:
        folders, missing = _folders_for(list(self._by_path))
        if len(folders) > _watch_budget():
            self._unwatchable = True
            return
        try:
            self._watch = _Watch(folders)
        except Exception:  # no inotify on this system, no watches left, a folder we may not watch
            self._watch = None
            self._unwatchable = True
            return
        self._missing = missing
        self._always = [p for p in self._by_path if not _watchable(p)]

    def _stop_watch(self) -> None:
        if self._watch is not None:
            self._watch.close()
            self._watch = None

    # ── background ────────────────────────────────────────────────────

    def _from_background(self) -> Answer:
        assert self._bg is not None
        states, started = self._bg.latest()
        examined = 0
        for path in self._by_path:
            state = states.get(path)
            if state is None:  # a source newer than the background thread's last pass
                state = stat_file(path)
                examined += 1
            if state != self._states.get(path):
                self._states[path] = state
                self._judge(path, state)
        return self._answer("background", (time.monotonic() - started) * 1000.0, examined)

    def paths(self) -> list[str]:
        """The distinct files of the file-backed sources."""
        with self._lock:
            return list(self._by_path)

    @property
    def method(self) -> str:
        """How the next answer will be found: ``"watch"``, ``"background"`` or ``"scan"``."""
        with self._lock:
            return "watch" if self._watch is not None else "background" if self._bg is not None else "scan"

    def close(self) -> None:
        """Stop watching and the background thread."""
        with self._lock:
            self._stop_watch()
            if self._bg is not None:
                self._bg.stop()
                self._bg = None


class _Background(threading.Thread):
    """Examines every file of a :class:`Freshness` again every
    :data:`BACKGROUND_INTERVAL_S` seconds; :meth:`latest` is its last pass."""

    def __init__(self, owner: Freshness, states: dict[str, FileState], started: float):
        super().__init__(name="rankscope-freshness", daemon=True)
        self._owner = owner
        self._stop_event = threading.Event()
        self._lock = threading.Lock()
        self._latest = (states, started)

    def latest(self) -> tuple[dict[str, FileState], float]:
        """``(state per path, time.monotonic() when the pass started)``."""
        with self._lock:
            return self._latest

    def run(self) -> None:
        while not self._stop_event.wait(BACKGROUND_INTERVAL_S):
            started = time.monotonic()
            states = {p: stat_file(p) for p in self._owner.paths()}
            with self._lock:
                self._latest = (states, started)

    def stop(self) -> None:
        self._stop_event.set()


def check_all(sources: list[Source]) -> tuple[list[tuple[str, str, str]], list[tuple[str, str]]]:
    """Examine every source now, the reference's way (one ``stat`` per file,
    text read for files whose mtime passed ``indexed_at``).

    Returns:
        ``(stale, errors)``: stale is ``[(label, file_path, new_text)]``,
        errors is ``[(label, message)]``.
    """
    states: dict[str, FileState] = {}
    texts: dict[str, str | OSError] = {}
    stale: list[tuple[str, str, str]] = []
    errors: list[tuple[str, str]] = []
    for src in sources:
        state = states.get(src.file_path)
        if state is None:
            state = states[src.file_path] = stat_file(src.file_path)
        if not state.exists:
            continue
        if src.error is not None:
            errors.append((src.label, src.error))
            continue
        if state.mtime_ms <= (src.indexed_ms or 0) or not state.is_file:
            continue
        text = texts.get(src.file_path)
        if text is None:
            try:
                text = read_text(src.file_path)
            except OSError as exc:
                text = exc
            texts[src.file_path] = text
        if isinstance(text, OSError):
            errors.append((src.label, str(text)))
            continue
        if sha256_text(text) != src.content_hash:
            stale.append((src.label, src.file_path, text))
    return stale, errors


@dataclass(frozen=True)
class RefreshReport:
    """File-backed sources found stale before searching.

    Attributes:
        checked: sources with a file path.
        stale: labels whose file changed (mtime after ``indexed_at`` and a new
            SHA-256).
        refreshed: whether they were re-indexed (``False`` for read-only stores,
            which are never written: the labels are then what *would* refresh).
        errors: ``(label, message)`` for sources that could not be checked.
        elapsed_ms: time the stage took, milliseconds.
        method: how the answer was found (:mod:`engine.store.freshness`):
            ``"scan"`` (every file examined now, as the reference does),
            ``"watch"`` (files examined again only where the file system
            reported a change since the previous search; as current as a scan)
            or ``"background"`` (a background examination's answer).
        age_ms: how long ago the examination behind the answer started,
            milliseconds: 0 for ``scan`` and ``watch``; for ``background`` a
            change newer than this may not be in the answer yet.
        examined: files examined (``stat``-ed) for this search.
    """

    checked: int = 0
    stale: tuple[str, ...] = ()
    refreshed: bool = False
    errors: tuple[tuple[str, str], ...] = ()
    elapsed_ms: float = 0.0
    method: str = "scan"
    age_ms: float = 0.0
    examined: int = 0
