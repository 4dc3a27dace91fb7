"""Finding context-mode's content stores, and checking what they hold.

Where context-mode keeps them (read from mksglu/context-mode, 2026 sources:
``src/session/db.ts`` / ``src/storage-paths.ts`` for the storage root,
``src/adapters/registry.ts`` / ``detect.ts getSessionDirSegments`` and each
``src/adapters/<client>/index.ts getSessionDir()`` for the per-client
defaults, ``src/server.ts getStorePath()`` for the file name):

* ``$CONTEXT_MODE_DIR/content/`` when that variable is set (an absolute path);
* ``$CONTEXT_MODE_DATA_DIR/context-mode/content/`` (the universal override of
  issue #649, honoured by every adapter);
* otherwise ``<client config dir>/context-mode/content/``: the content folder
  is the sibling of the client's ``context-mode/sessions/`` folder, e.g.
  ``~/.claude/context-mode/content/`` (``$CLAUDE_CONFIG_DIR`` moves it),
  ``~/.codex`` (``$CODEX_HOME``), ``~/.gemini``, ``~/.cursor``, ... — see
  :data:`CLIENTS`. VS Code Copilot uses ``<project>/.github/context-mode/``
  when the project has a ``.github`` folder;
* versions before per-project stores wrote ``$TMPDIR/context-mode-<pid>.db``
  (deleted on exit; a crash can leave one behind).

A content DB is named ``<16 hex>.db``: the first 16 hex digits of SHA-256
over the project directory as context-mode saw it (an environment variable
such as ``CLAUDE_PROJECT_DIR``, or ``$PWD``), normalised by
``normalizeWorktreePath`` (backslashes become ``/``, trailing slashes go)
and lower-cased on macOS and Windows (``hashProjectDirCanonical``). No
symlink is resolved and there is no worktree suffix for content stores.

Everything here reads stores with :meth:`Store.open_readonly` only.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

# The store consistency check lives in engine.store.consistency (shared with
# engine.lab.doctor); CountMismatch and count_mismatches are re-exported here.
from engine.store import sql
from engine.store.consistency import CountMismatch, count_mismatches, read_snapshot, source_count_mismatches  # noqa: F401
from engine.js.strings import decode_utf8_like_node, js_to_lower
from engine.store.errors import StoreError, is_corruption, sqlite_store_error
from engine.store.store import Store

_HASH_NAME = re.compile(r"^[0-9a-f]{16}\.db$")
_WINDOWS_ABS = re.compile(r"^[A-Za-z]:[\\/]")


# ─── locations ───────────────────────────────────────────────────────────


def _expand(value: str, home: Path) -> Path:
    """Tilde-expanded, absolute (relative values resolve against the cwd),
    like context-mode's ``resolveConfigDirValue``."""
    if value.startswith("~"):
        return home / re.sub(r"^~[/\\]?", "", value)
    return Path(os.path.abspath(value))


def _env_dir(name: str, *default: str) -> Callable[[Mapping[str, str], Path], Path]:
    def resolve(env: Mapping[str, str], home: Path) -> Path:
        value = (env.get(name) or "").strip()
        return _expand(value, home) if value else home.joinpath(*default)

    resolve.__doc__ = f"${name} or ~/{'/'.join(default)}"
    return resolve


def _home_dir(*segments: str) -> Callable[[Mapping[str, str], Path], Path]:
    def resolve(env: Mapping[str, str], home: Path) -> Path:
        return home.joinpath(*segments)

    resolve.__doc__ = f"~/{'/'.join(segments)}"
    return resolve


def _xdg_dir(name: str) -> Callable[[Mapping[str, str], Path], Path]:
    def resolve(env: Mapping[str, str], home: Path) -> Path:
        if os.name == "nt":
            root = (env.get("APPDATA") or "").strip() or str(home / "AppData" / "Roaming")
        else:
            root = (env.get("XDG_CONFIG_HOME") or "").strip() or str(home / ".config")
        return Path(root) / name

    resolve.__doc__ = f"$XDG_CONFIG_HOME/{name} or ~/.config/{name}"
    return resolve


#: ``(client id, display name, config-dir resolver)``; the content folder is
#: ``<config dir>/context-mode/content``. Order: most used first.
CLIENTS: tuple[tuple[str, str, Callable[[Mapping[str, str], Path], Path]], ...] = (
    ("claude-code", "Claude Code", _env_dir("CLAUDE_CONFIG_DIR", ".claude")),
    ("codex", "Codex CLI", _env_dir("CODEX_HOME", ".codex")),
    ("gemini-cli", "Gemini CLI / Antigravity", _home_dir(".gemini")),
    ("cursor", "Cursor", _home_dir(".cursor")),
    ("vscode-copilot", "VS Code Copilot", _home_dir(".vscode")),
    ("copilot-cli", "GitHub Copilot CLI", _env_dir("COPILOT_HOME", ".copilot")),
    ("opencode", "OpenCode", _xdg_dir("opencode")),
    ("kilo", "Kilo Code", _xdg_dir("kilo")),
    ("zed", "Zed", _home_dir(".config", "zed")),
    ("jetbrains-copilot", "JetBrains Copilot", _home_dir(".config", "JetBrains")),
    ("qwen-code", "Qwen Code", _home_dir(".qwen")),
    ("kiro", "Kiro", _home_dir(".kiro")),
    ("pi", "Pi", _env_dir("PI_CONFIG_DIR", ".pi")),
    ("omp", "oh-my-pi", _home_dir(".omp")),
    ("openclaw", "OpenClaw", _home_dir(".openclaw")),
    ("kimi", "Kimi Code", _home_dir(".kimi-code")),
    ("devin", "Devin CLI", _env_dir("DEVIN_HOME", ".devin")),
    ("hermes", "Hermes", _env_dir("HERMES_HOME", ".hermes")),
    ("mistral-vibe", "Mistral Vibe", _env_dir("VIBE_HOME", ".vibe")),
)

#: Client id of stores found through the overrides and the temp folder.
OVERRIDE_CLIENT = "CONTEXT_MODE_DIR"
DATA_DIR_CLIENT = "CONTEXT_MODE_DATA_DIR"
TEMP_CLIENT = "legacy-temp"


@dataclass(frozen=True)
class StoreLocation:
    """A folder where context-mode may keep content DBs.

    Attributes:
        client: client id (``claude-code``, ...) or the override's name.
        name: display name.
        path: the content folder.
        via: how it was derived (``$CONTEXT_MODE_DIR``, ``~/.claude``, ...).
        pattern: file-name glob of the stores in it.
    """

    client: str
    name: str
    path: Path
    via: str
    pattern: str = "*.db"


def content_dirs(
    project_dir: str | os.PathLike[str] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    home: str | os.PathLike[str] | None = None,
    include_temp: bool = True,
) -> list[StoreLocation]:
    """Every folder context-mode may use for content DBs, in search order
    (overrides first, then each client's default; duplicates dropped).

    Args:
        project_dir: adds VS Code Copilot's project-local folder.
        env: environment (default ``os.environ``).
        home: home folder (default ``$HOME`` / ``~``).
        include_temp: add the temp folder of pre-1.0.30-style per-process DBs.
    """
    env = os.environ if env is None else env
    home_path = Path(home) if home is not None else Path(env.get("HOME") or Path.home())
    out: list[StoreLocation] = []
    override = (env.get("CONTEXT_MODE_DIR") or "").strip()
    if override and (os.path.isabs(override) or _WINDOWS_ABS.match(override)):
        out.append(StoreLocation(OVERRIDE_CLIENT, "$CONTEXT_MODE_DIR", Path(override) / "content", "$CONTEXT_MODE_DIR"))
    data_dir = (env.get("CONTEXT_MODE_DATA_DIR") or "").strip()
    if data_dir:
        out.append(
            StoreLocation(
                DATA_DIR_CLIENT,
                "$CONTEXT_MODE_DATA_DIR",
                _expand(data_dir, home_path) / "context-mode" / "content",
                "$CONTEXT_MODE_DATA_DIR",
            )
        )
    legacy_session_dir = (env.get("CONTEXT_MODE_SESSION_DIR") or "").strip()
    if legacy_session_dir:
        out.append(
            StoreLocation(
                "claude-code",
                "Claude Code ($CONTEXT_MODE_SESSION_DIR)",
                _expand(legacy_session_dir, home_path).parent / "content",
                "$CONTEXT_MODE_SESSION_DIR (deprecated)",
            )
        )
    for client, name, resolver in CLIENTS:
        out.append(
            StoreLocation(client, name, resolver(env, home_path) / "context-mode" / "content", resolver.__doc__ or "")
        )
    if project_dir is not None:
        out.append(
            StoreLocation(
                "vscode-copilot",
                "VS Code Copilot (project)",
                Path(_absolute(os.fspath(project_dir))) / ".github" / "context-mode" / "content",
                "<project>/.github",
            )
        )
    if include_temp:
        out.append(
            StoreLocation(
                TEMP_CLIENT,
                "per-process (old versions)",
                Path(tempfile.gettempdir()),
                "$TMPDIR",
                "context-mode-[0-9]*.db",
            )
        )
    seen: set[str] = set()
    unique = []
    for loc in out:
        key = os.path.normcase(os.path.abspath(loc.path)) + "\0" + loc.pattern
        if key not in seen:
            seen.add(key)
            unique.append(loc)
    return unique


# ─── project hashing ─────────────────────────────────────────────────────


def _absolute(path: str) -> str:
    if os.path.isabs(path) or _WINDOWS_ABS.match(path) or path.startswith("\\"):
        return path
    return os.path.abspath(path)


def normalise_project_dir(project_dir: str) -> str:
    """context-mode's ``normalizeWorktreePath``: ``\\`` → ``/``, trailing
    slashes removed (``/`` and ``C:/`` stay)."""
    s = project_dir.replace("\\", "/")
    if re.fullmatch(r"/+", s):
        return "/"
    if re.fullmatch(r"[A-Za-z]:/+", s):
        return s[:2] + "/"
    return s.rstrip("/")


def _hash16(text: str) -> str:
    # A path string as Node sees it: raw bytes decoded as UTF-8 (invalid
    # bytes → U+FFFD), hashed as UTF-8.
    raw = text.encode("utf-8", "surrogateescape")
    return hashlib.sha256(decode_utf8_like_node(raw).encode("utf-8")).hexdigest()[:16]


def store_name_for_project(project_dir: str | os.PathLike[str], *, platform: str | None = None) -> str:
    """The content DB file name (without ``.db``) context-mode uses for a
    project directory: ``hashProjectDirCanonical``.

    Args:
        project_dir: the project directory; a relative path is made absolute
            against the cwd (symlinks are *not* resolved, as in context-mode).
        platform: ``sys.platform`` value deciding case folding (``darwin`` and
            ``win32`` lower-case the path).
    """
    norm = normalise_project_dir(_absolute(os.fspath(project_dir)))
    if (platform or sys.platform) in ("darwin", "win32"):
        norm = js_to_lower(norm)
    return _hash16(norm)


def store_names_for_project(project_dir: str | os.PathLike[str], *, platform: str | None = None) -> list[str]:
    """Every name a project's content DB may have: the canonical hash, the
    raw-casing hash of versions up to 1.0.111 (macOS/Windows), and the same
    for the symlink-resolved directory (context-mode hashes the path as its
    host reported it, which may or may not go through a symlink)."""
    given = _absolute(os.fspath(project_dir))
    names: list[str] = []
    for variant in (given, os.path.realpath(given)):
        for name in (store_name_for_project(variant, platform=platform), _hash16(normalise_project_dir(variant))):
            if name not in names:
                names.append(name)
    return names


# ─── reading stores ──────────────────────────────────────────────────────


@dataclass(frozen=True)
class StoreInfo:
    """One content DB and what it holds (read-only).

    Attributes:
        path: the database file.
        size_bytes: its size (the ``-wal`` file is counted in ``wal_bytes``).
        sources, chunks, code_chunks: counts (``None`` when unreadable).
        last_indexed_at: newest ``sources.indexed_at``.
        schema: :attr:`SchemaInfo.generation` (``"8-column (session
            attribution)"`` or ``"4-column (legacy)"``).
        error: why the store could not be read, or ``None``.
        client: client id of the folder it was found in.
        location: that folder.
        project_hash: the 16-hex name when the file is named like one.
        modified: file mtime (seconds since the epoch).
        wal_bytes: size of its ``-wal`` file (a live writer keeps one).
        vocabulary: vocabulary words (``None`` without the table).
        sessions: distinct attributed session ids (unattributed ``""`` not counted).
        session_db: the paired session DB (same 16-hex name in the sibling
            ``sessions/`` folder, see :func:`session_dbs_for_store`), or ``None``.
        session_db_sessions, session_db_events, session_db_searches: its
            sessions, events and recorded ``ctx_search`` calls (``None`` when
            there is none or it cannot be read).
        session_db_error: why the paired session DB cannot be read, or ``None``.
    """

    path: str
    size_bytes: int
    sources: int | None
    chunks: int | None
    code_chunks: int | None
    last_indexed_at: str | None
    schema: str | None
    error: str | None
    client: str = ""
    location: str = ""
    project_hash: str | None = None
    modified: float | None = None
    wal_bytes: int = 0
    vocabulary: int | None = None
    sessions: int | None = None
    session_db: str | None = None
    session_db_sessions: int | None = None
    session_db_events: int | None = None
    session_db_searches: int | None = None
    session_db_error: str | None = None

    @property
    def live(self) -> bool:
        """A ``-wal`` file exists: context-mode may be writing right now."""
        return os.path.exists(self.path + "-wal")

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict of every field."""
        return asdict(self)


def session_dbs_for_store(store_path: str | os.PathLike[str]) -> list[Path]:
    """Session DBs paired with a content store: the same 16-hex name in the
    sibling ``sessions/`` folder (``<root>/content/<hash>.db`` →
    ``<root>/sessions/<hash>.db``; context-mode names both by
    ``hashProjectDirCanonical``, see ``shared/fixtures/session-1.0.169.md``),
    then linked-worktree variants ``<hash>__<suffix>.db``. Existing files
    only, the main one first."""
    p = Path(store_path)
    folder = p.parent.parent / "sessions"
    out: list[Path] = []
    main = folder / f"{p.stem}.db"
    if main.is_file():
        out.append(main)
    try:
        out.extend(sorted(c for c in folder.glob(f"{p.stem}__*.db") if c.is_file()))
    except OSError:
        pass
    return out


#: ``session_events`` rows that record a ``ctx_search`` call (the hooks'
#: ``mcp_tool_call`` rows; host prefixes of the tool name vary).
CTX_SEARCH_CALL_WHERE = (
    "type = 'mcp_tool_call' AND category = 'mcp_tool_call' AND json_valid(data) "
    "AND json_extract(data, '$.tool_name') LIKE '%ctx_search'"
)


def session_db_counts(conn: sql.Connection) -> dict[str, int]:
    """``{"sessions", "events", "ctx_search_calls"}`` of a session DB
    connection (sessions: distinct ids in the events or ``session_meta``
    rows, whichever is more)."""
    sessions = conn.execute("SELECT COUNT(DISTINCT session_id) FROM session_events").fetchone()[0]
    meta = conn.execute("SELECT COUNT(*) FROM session_meta").fetchone()[0]
    events = conn.execute("SELECT COUNT(*) FROM session_events").fetchone()[0]
    calls = conn.execute(f"SELECT COUNT(*) FROM session_events WHERE {CTX_SEARCH_CALL_WHERE}").fetchone()[0]
    return {"sessions": max(sessions, meta), "events": events, "ctx_search_calls": calls}


def read_session_db_counts(path: str | os.PathLike[str]) -> tuple[dict[str, int] | None, str | None]:
    """``(counts, None)`` for a session DB opened read-only (never written:
    ``mode=ro``, ``immutable=1`` without a ``-wal``), or ``(None, why)``."""
    from urllib.parse import quote

    from engine.store.opening import readonly_flags

    p = os.fspath(path)
    try:
        conn = sql.connect(f"file:{quote(os.path.abspath(p))}?{readonly_flags(p)}", read_only=True, uri=True)
    except sql.Error as exc:
        return None, f"cannot open {p}: {exc}"
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        missing = [t for t in ("session_events", "session_meta") if t not in tables]
        if missing:
            return None, f"{p} is not a context-mode session DB: missing table(s) {', '.join(missing)}"
        return session_db_counts(conn), None
    except (sql.Error, UnicodeDecodeError) as exc:
        return None, f"{p} cannot be read: {exc}"
    finally:
        conn.close()


def _session_fields(store_path: str) -> dict[str, Any]:
    paired = session_dbs_for_store(store_path)
    if not paired:
        return {}
    counts, error = read_session_db_counts(paired[0])
    if counts is None:
        return {"session_db": str(paired[0]), "session_db_error": error}
    return {
        "session_db": str(paired[0]),
        "session_db_sessions": counts["sessions"],
        "session_db_events": counts["events"],
        "session_db_searches": counts["ctx_search_calls"],
    }


def read_store_info(path: str | os.PathLike[str], client: str = "", location: str = "") -> StoreInfo:
    """Stats for one DB, opened with :meth:`Store.open_readonly` (never
    written). Problems are returned in ``error``; this never raises for a bad
    file."""
    p = os.fspath(path)
    name = os.path.basename(p)
    project_hash = name[:-3] if _HASH_NAME.match(name) else None
    try:
        st = os.stat(p)
        size, modified = st.st_size, st.st_mtime
    except OSError as exc:
        return StoreInfo(
            p, 0, None, None, None, None, None, f"cannot stat: {exc.strerror or exc}", client, location, project_hash
        )
    try:
        wal = os.path.getsize(p + "-wal")
    except OSError:
        wal = 0
    base = dict(
        client=client,
        location=location,
        project_hash=project_hash,
        modified=modified,
        wal_bytes=wal,
        **_session_fields(p),
    )
    try:
        store = Store.open_readonly(p)
    except StoreError as exc:
        return StoreInfo(p, size, None, None, None, None, None, str(exc), **base)
    except sql.Error as exc:
        return StoreInfo(p, size, None, None, None, None, None, f"cannot open: {exc}", **base)
    try:
        with read_snapshot(store.conn):
            stats = store.stats()
            sessions = sum(1 for sid, _ in store.session_counts() if sid)
    except sql.Error as exc:
        # A damaged store's message says so and how to check it.
        error = str(sqlite_store_error(exc, p)) if is_corruption(exc) else f"cannot read: {exc}"
        return StoreInfo(p, size, None, None, None, None, store.schema.generation, error, **base)
    except StoreError as exc:
        return StoreInfo(p, size, None, None, None, None, store.schema.generation, str(exc), **base)
    finally:
        store.close()
    return StoreInfo(
        p,
        size,
        stats.sources,
        stats.chunks,
        stats.code_chunks,
        stats.last_indexed_at,
        store.schema.generation,
        None,
        vocabulary=stats.vocabulary,
        sessions=sessions,
        **base,
    )


def find_stores(
    project_dir: str | os.PathLike[str] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    home: str | os.PathLike[str] | None = None,
    include_temp: bool = True,
) -> list[StoreInfo]:
    """Every context-mode content DB found, with its stats.

    Searched in :func:`content_dirs` order (``$CONTEXT_MODE_DIR/content``
    first, then each client's default); within a folder, newest first. A
    file reachable from two folders is listed once.

    Args:
        project_dir: only the store(s) of this project (by file name, see
            :func:`store_names_for_project`; the per-process temp DBs of old
            versions are then left out).
        env, home: for tests; default the real environment.
        include_temp: also list old per-process DBs in the temp folder.

    Returns:
        :class:`StoreInfo` list; unreadable stores carry ``error``.
    """
    wanted = set(store_names_for_project(project_dir)) if project_dir is not None else None
    out: list[StoreInfo] = []
    seen: set[str] = set()
    for loc in content_dirs(project_dir, env=env, home=home, include_temp=include_temp and wanted is None):
        try:
            candidates = [c for c in loc.path.glob(loc.pattern) if c.is_file()]
        except OSError:
            continue
        entries = []
        for c in candidates:
            if wanted is not None and c.stem not in wanted:
                continue
            try:
                entries.append((c.stat().st_mtime, c))
            except OSError:
                continue
        for _, c in sorted(entries, key=lambda e: (-e[0], e[1].name)):
            key = os.path.normcase(os.path.realpath(c))
            if key in seen:
                continue
            seen.add(key)
            out.append(read_store_info(c, loc.client, str(loc.path)))
    return out


class StoreFinder:
    """A store search that can say where it looks: calling it returns
    :func:`find_stores` (of one project when ``project_dir`` is given);
    :meth:`locations` gives the folders searched, in order, so that a
    front-end that found nothing can say where it looked."""

    def __init__(self, project_dir: str | os.PathLike[str] | None = None) -> None:
        self.project_dir = project_dir

    def __call__(self) -> list[StoreInfo]:
        return find_stores(self.project_dir)

    def locations(self) -> list[StoreLocation]:
        """The folders :meth:`__call__` searches (:func:`content_dirs`), in order."""
        return content_dirs(self.project_dir, include_temp=self.project_dir is None)


def context_mode_store_reason(
    path: str | os.PathLike[str],
    *,
    env: Mapping[str, str] | None = None,
    home: str | os.PathLike[str] | None = None,
) -> str | None:
    """Why ``path`` looks like a store context-mode owns (so rankscope must
    not write to it), or ``None``: it lies in one of :func:`content_dirs`
    (other than the temp folder), or it is ``<16 hex>.db`` inside a
    ``context-mode/content`` folder."""
    p = Path(os.path.abspath(os.fspath(path)))
    real_parent = os.path.normcase(os.path.realpath(p.parent))
    for loc in content_dirs(env=env, home=home, include_temp=False):
        if os.path.normcase(os.path.realpath(loc.path)) == real_parent:
            return f"it is in {loc.name}'s context-mode content folder {loc.path}"
    if _HASH_NAME.match(p.name) and p.parent.name == "content" and p.parent.parent.name == "context-mode":
        return f"it is named like a context-mode content store and lives in {p.parent}"
    return None
