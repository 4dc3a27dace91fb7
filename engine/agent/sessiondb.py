"""context-mode's per-project **session DB**, read-only.

Source: context-mode 1.0.169 ``src/session/db.ts`` (``SessionDB``) and the
fixture ``shared/fixtures/session-1.0.169.db`` with its ``.md`` (path rules,
schema, how a ``ctx_search`` call is stored). rankscope never writes to it
nor creates a file beside it: it is opened with ``mode=ro`` while a writer
has it open (``-wal`` and ``-shm`` exist), ``immutable=1`` otherwise, and
through a private copy when a killed writer left a ``-wal`` without ``-shm``
(the store's read modes, :data:`engine.store.store.READ_MODES`).

* :meth:`SessionDb.session_ids_for_project` is ``getSessionIdsForProject``,
  the plugin-mode allow-set: ``SELECT DISTINCT session_id FROM
  session_events WHERE RTRIM(REPLACE(project_dir, '\\', '/'), '/') = ?``
  bound to ``normalizeWorktreePath(projectDir)``.
* :meth:`SessionDb.search_events` is ``searchEvents`` (timeline mode):
  ``(project_dir = ? OR project_dir = '')``, ``data`` or ``category``
  ``LIKE '%q%' ESCAPE '\\'`` with ``%`` and ``_`` escaped (not ``\\``),
  optional exact ``category``, ``ORDER BY id ASC LIMIT ?``.
* :meth:`SessionDb.ctx_search_calls` lists the agent's recorded searches:
  the PostToolUse ``mcp_tool_call`` rows whose tool name ends in
  ``ctx_search``, each with the answer of the ``mcp`` row the same hook call
  wrote just before it, and the ``#N`` of its ``external_ref`` row.
"""

from __future__ import annotations

import datetime as _dt
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from engine.files.reading import InputFileError, require_regular_file
from engine.store import sql
from engine.store.discovery import (
    normalise_project_dir,
    session_db_counts,
    session_dbs_for_store,
)
from engine.js.json import JSONParseError
from engine.store.errors import StoreError
from engine.store.opening import private_copy, read_mode_for, readonly_flags

from .jsvalue import js_json_parse

#: Tables a file must have to be read as a session DB.
REQUIRED_TABLES = ("session_events", "session_meta")


class SessionDbError(StoreError):
    """A session DB cannot be opened or read; the message names the path."""


@dataclass(frozen=True)
class EventRow:
    """One ``searchEvents`` row (the columns it selects)."""

    id: int
    session_id: str
    category: str
    type: str
    data: str
    created_at: str


@dataclass(frozen=True)
class SkippedRow:
    """A ``session_events`` row rankscope could not read as the hooks write
    it (context-mode's hooks write what they write; a bad row is reported
    and skipped, never fatal).

    Attributes:
        event_id: its ``id`` (``None`` when the id itself is not an integer).
        reason: what is wrong, in words (``data is a BLOB, not text``).
    """

    event_id: int | None
    reason: str

    def describe(self) -> str:
        """``session_events row 12 skipped: created_at 'yesterday' is not a UTC time``"""
        return f"session_events row {self.event_id if self.event_id is not None else '?'} skipped: {self.reason}"


@dataclass(frozen=True)
class RecordedCall:
    """One ``ctx_search`` call the agent made, as the hooks stored it.

    Attributes:
        event_id: ``session_events.id`` of the ``mcp_tool_call`` row.
        session_id, created_at, project_dir: that row's columns (UTC
            ``YYYY-MM-DD HH:MM:SS``; ties within a second, order by id).
        tool_name: the host's tool name (``mcp__plugin_…__ctx_search``).
        params: the arguments object as sent (``None`` when truncated).
        params_raw: the cut JSON text of a truncated row, else ``None``.
        answer: the answer text, when the ``mcp`` row of the same hook call
            holds it, else ``None``.
        answer_event_id: id of that ``mcp`` row.
        answer_note: why there is no answer (``None`` when there is).
        footer_count: the ``#N`` of the call's ``external_ref`` row (the
            throttle count printed in the answer), or ``None``.
    """

    event_id: int
    session_id: str
    created_at: str
    project_dir: str
    tool_name: str
    params: dict[str, Any] | None
    params_raw: str | None
    answer: str | None
    answer_event_id: int | None
    answer_note: str | None
    footer_count: int | None

    @property
    def truncated(self) -> bool:
        return self.params is None


def session_db_for_store(store_path: str | os.PathLike[str]) -> list[Path]:
    """The session DBs paired with a content store (see
    :func:`engine.store.discovery.session_dbs_for_store`)."""
    return session_dbs_for_store(store_path)


def _escape_like(query: str) -> str:
    # searchEvents: query.replace(/[%_]/g, (c) => "\\" + c) (backslash itself is not escaped)
    return query.replace("%", "\\%").replace("_", "\\_")


#: ``created_at`` as SQLite's ``datetime('now')`` writes it.
TIME_FORMAT = "%Y-%m-%d %H:%M:%S"


def _kind(value: object) -> str:
    """SQLite's storage class of a column value, in words."""
    if value is None:
        return "NULL"
    if isinstance(value, bytes):
        return "a BLOB"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a real number"
    return "text"


def _shown(value: object) -> str:
    """A value as a message quotes it: repr, cut to 40 characters."""
    text = repr(value)
    return text if len(text) <= 40 else text[:39] + "…"


def parse_created_at(value: object) -> _dt.datetime | None:
    """A ``created_at`` value as a UTC time, or ``None`` when it is not
    text in :data:`TIME_FORMAT`."""
    if not isinstance(value, str):
        return None
    try:
        return _dt.datetime.strptime(value, TIME_FORMAT).replace(tzinfo=_dt.timezone.utc)
    except ValueError:
        return None


def _read_json(value: object, what: str) -> tuple[object, str | None]:
    """``(parsed, None)`` for a text column holding JSON, else ``(None, why)``."""
    if not isinstance(value, str):
        return None, f"{what} is {_kind(value)}, not text"
    try:
        return js_json_parse(value), None
    except JSONParseError as exc:
        return None, f"{what} is not JSON ({exc})"


class SessionDb:
    """A session DB opened read-only. Use as a context manager."""

    def __init__(self, path: str | os.PathLike[str]):
        p = os.fspath(path)
        try:
            require_regular_file(p, "session DB")  # a FIFO would block SQLite's open forever
        except InputFileError as exc:
            raise SessionDbError(str(exc)) from None
        self.path = p
        #: A private folder holding the copy read (a ``-wal`` without ``-shm``), else ``None``.
        self._copy_dir: str | None = None
        target, flags = p, readonly_flags(p)
        if read_mode_for(p) == "copy":
            # a killed writer left a -wal without -shm: read a private copy with the WAL replayed
            try:
                self._copy_dir, target = private_copy(p)
            except StoreError as exc:
                raise SessionDbError(str(exc)) from exc
            flags = "mode=ro&immutable=1"
        try:
            self.conn = sql.connect(f"file:{quote(os.path.abspath(target))}?{flags}", read_only=True, uri=True)
            tables = {r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        except sql.Error as exc:
            self._remove_copy()
            raise SessionDbError(f"{p} is not a readable SQLite database: {exc}") from exc
        missing = [t for t in REQUIRED_TABLES if t not in tables]
        if missing:
            self.conn.close()
            self._remove_copy()
            raise SessionDbError(f"{p} is not a context-mode session DB: missing table(s) {', '.join(missing)}")
        self.has_tool_calls = "tool_calls" in tables
        #: Rows the last :meth:`ctx_search_calls` left out, and why.
        self.skipped: list[SkippedRow] = []
        #: Event rows the last :meth:`search_events` left out (a column not text).
        self.skipped_events: list[SkippedRow] = []

    def close(self) -> None:
        self.conn.close()
        self._remove_copy()

    def _remove_copy(self) -> None:
        if self._copy_dir is not None:
            shutil.rmtree(self._copy_dir, ignore_errors=True)
            self._copy_dir = None

    def max_event_id(self) -> int:
        """The largest ``session_events.id`` (0 for none, or a non-integer id)."""
        rows = self._q("SELECT MAX(id) FROM session_events")
        value = rows[0][0] if rows else None
        return value if isinstance(value, int) else 0

    def __enter__(self) -> "SessionDb":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _q(self, statement: str, args: tuple[object, ...] = ()) -> list[tuple[Any, ...]]:
        try:
            return self.conn.execute(statement, args).fetchall()
        except sql.Error as exc:
            raise SessionDbError(f"cannot read session DB {self.path}: {exc}") from exc

    # ── counts ──────────────────────────────────────────────────────────

    def counts(self) -> dict[str, int]:
        """``{"sessions": n, "events": n, "ctx_search_calls": n}``."""
        try:
            return session_db_counts(self.conn)
        except sql.Error as exc:
            raise SessionDbError(f"cannot read session DB {self.path}: {exc}") from exc

    def sessions(self) -> list[dict[str, Any]]:
        """``session_meta`` rows in ``started_at`` order, with their event counts."""
        rows = self._q(
            "SELECT m.session_id, m.project_dir, m.started_at, m.last_event_at, "
            "(SELECT COUNT(*) FROM session_events e WHERE e.session_id = m.session_id) "
            "FROM session_meta m ORDER BY m.started_at, m.session_id"
        )
        keys = ("session_id", "project_dir", "started_at", "last_event_at", "events")
        return [dict(zip(keys, r)) for r in rows]

    def project_dirs(self) -> list[str]:
        """Distinct non-empty ``project_dir`` values of the events, most used first."""
        rows = self._q(
            "SELECT project_dir, COUNT(*) FROM session_events WHERE project_dir != '' GROUP BY 1 ORDER BY 2 DESC, 1"
        )
        return [r[0] for r in rows if isinstance(r[0], str)]

    def projects_of_session(self, session_id: str) -> list[str]:
        """The non-empty ``project_dir`` values of a session's events, most used first."""
        rows = self._q(
            "SELECT project_dir, COUNT(*) FROM session_events WHERE session_id = ? AND project_dir != '' "
            "GROUP BY 1 ORDER BY 2 DESC, 1",
            (session_id,),
        )
        return [r[0] for r in rows if isinstance(r[0], str)]

    def latest_session_id(self) -> str | None:
        """``getLatestSessionId``: the session with the newest ``started_at``."""
        rows = self._q("SELECT session_id FROM session_meta ORDER BY started_at DESC LIMIT 1")
        return rows[0][0] if rows and isinstance(rows[0][0], str) else None

    # ── what ctx_search reads ───────────────────────────────────────────

    def session_ids_for_project(self, project_dir: str) -> tuple[str, ...]:
        """``getSessionIdsForProject(projectDir)``: the plugin's allow-set."""
        rows = self._q(
            "SELECT DISTINCT session_id FROM session_events WHERE RTRIM(REPLACE(project_dir, '\\', '/'), '/') = ?",
            (normalise_project_dir(project_dir),),
        )
        # a session id that is not text (a BLOB) never equals a chunk's: it admits nothing
        return tuple(r[0] for r in rows if isinstance(r[0], str))

    def search_events(
        self, query: str, limit: float, project_dir: str | None, source: str | None = None, before_id: int | None = None
    ) -> list[EventRow]:
        """``searchEvents(query, limit, projectDir, source)``.

        Args:
            project_dir: bound as is (``None`` binds NULL, so only rows with
                ``project_dir = ''`` match).
            limit: bound as a double, as Node binds a JavaScript number:
                SQLite reads a whole one as an integer (a negative one as no
                limit) and refuses a fraction or an infinity (a
                :class:`SessionDbError` caused by SQLite's "datatype mismatch").
            source: an exact ``category``, or ``None`` for any.
            before_id: only rows with a smaller id (the DB as it was when a
                recorded call ran; not a server parameter).
        """
        q = _escape_like(query)
        extra, args = ("AND id < ? ", (before_id,)) if before_id is not None else ("", ())
        rows = self._q(
            "SELECT id, session_id, category, type, data, created_at FROM session_events "
            "WHERE (project_dir = ? OR project_dir = '') "
            "AND (data LIKE '%' || ? || '%' ESCAPE '\\' OR category LIKE '%' || ? || '%' ESCAPE '\\') "
            "AND (? IS NULL OR category = ?) " + extra + "ORDER BY id ASC LIMIT ?",
            (project_dir, q, q, source, source) + args + (float(limit),),
        )
        # a row whose columns are not text cannot be formatted: left out (see skipped_events)
        good = [r for r in rows if all(isinstance(v, str) for v in r[1:]) and isinstance(r[0], int)]
        self.skipped_events = [
            SkippedRow(r[0] if isinstance(r[0], int) else None, "a column of the event is not text")
            for r in rows
            if r not in good
        ]
        return [EventRow(*r) for r in good]

    # ── the agent's recorded searches ───────────────────────────────────

    def _call_rows(self, after_id: int | None) -> list[tuple[Any, ...]]:
        """``(id, session_id, created_at, project_dir, data)`` of every
        ``mcp_tool_call`` row, in id order, read as they are (any type)."""
        extra, args = ("AND id > ? ", (after_id,)) if after_id is not None else ("", ())
        return self._q(
            "SELECT id, session_id, created_at, project_dir, data FROM session_events "
            "WHERE type = 'mcp_tool_call' AND category = 'mcp_tool_call' " + extra + "ORDER BY id",
            args,
        )

    def ctx_search_calls(self, project_dir: str | None = None, after_id: int | None = None) -> list[RecordedCall]:
        """Every recorded ``ctx_search`` call, in id order. Rows that cannot be
        read as the hooks write them are left out and listed in
        :attr:`skipped` (one :class:`SkippedRow` each); this never raises for
        a row's content.

        Args:
            project_dir: only calls attributed to this project (compared
                after ``normalizeWorktreePath``).
            after_id: only rows with a larger ``id`` (follow mode).

        Raises:
            SessionDbError: the file cannot be read at all.
        """
        out: list[RecordedCall] = []
        self.skipped = []
        want = normalise_project_dir(project_dir) if project_dir else None
        for row in self._call_rows(after_id):
            call = self._recorded_call(row)
            if isinstance(call, SkippedRow):
                self.skipped.append(call)
            elif call is not None and (want is None or normalise_project_dir(call.project_dir) == want):
                out.append(call)
        return out

    def _recorded_call(self, row: tuple[Any, ...]) -> RecordedCall | SkippedRow | None:
        """One ``mcp_tool_call`` row as a call, a :class:`SkippedRow` when it
        is malformed, or ``None`` when it records another tool."""
        event_id, session_id, created_at, pdir, raw = row
        if not isinstance(event_id, int):
            return SkippedRow(None, f"id is {_kind(event_id)}")
        data, why = _read_json(raw, "data")
        if why is not None:
            return SkippedRow(event_id, why + "; cannot tell which tool it records")
        if not isinstance(data, dict):
            return SkippedRow(event_id, "data is not a JSON object; cannot tell which tool it records")
        tool = data.get("tool_name")
        if not isinstance(tool, str):
            return SkippedRow(event_id, "tool_name is missing or not a string")
        if not tool.endswith("ctx_search"):
            return None
        if not isinstance(session_id, str):
            return SkippedRow(event_id, f"session_id is {_kind(session_id)}, not text")
        if parse_created_at(created_at) is None:
            return SkippedRow(event_id, f"created_at {_shown(created_at)} is not a UTC time YYYY-MM-DD HH:MM:SS")
        if pdir is not None and not isinstance(pdir, str):
            return SkippedRow(event_id, f"project_dir is {_kind(pdir)}, not text")
        truncated = data.get("truncated") is True
        params = data.get("params") if not truncated else None
        raw_params = data.get("params_raw") if truncated else None
        if not truncated and not isinstance(params, dict):
            return SkippedRow(event_id, f"params is {'missing' if params is None else 'not a JSON object'}")
        if truncated and not isinstance(raw_params, str):
            return SkippedRow(event_id, "a truncated row without its params_raw text")
        answer, answer_id, note = self._answer_for(event_id, session_id)
        return RecordedCall(
            event_id,
            session_id,
            created_at,
            pdir or "",
            tool,
            params,
            raw_params,
            answer,
            answer_id,
            note,
            self._footer_count(event_id, session_id),
        )

    def _answer_for(self, event_id: int, session_id: str) -> tuple[str | None, int | None, str | None]:
        """The answer text from the ``mcp`` row the same hook call wrote
        (the latest ``mcp`` row of the session before the call row)."""
        rows = self._q(
            "SELECT id, type, data FROM session_events WHERE session_id = ? AND id < ? ORDER BY id DESC LIMIT 3",
            (session_id, event_id),
        )
        row = next((r for r in rows if r[1] == "mcp"), None)
        if row is None or row[0] != event_id - 1:
            return None, None, "no mcp row written by the same hook call (deduplicated or not recorded)"
        data = row[2]
        if not isinstance(data, str):
            return None, row[0], f"the mcp row's data is {_kind(data)}, not text"
        head, sep, body = data.partition("\nresponse: ")
        if not sep or not head.startswith("ctx_search"):
            return None, row[0], "the mcp row is not a ctx_search response"
        try:
            content = js_json_parse(body)
        except JSONParseError as exc:
            why = f"nested {exc}" if exc.too_deep is not None else "not complete JSON (cut)"
            return None, row[0], f"the recorded response is {why}"
        if not isinstance(content, list):
            return None, row[0], "the recorded response is not a content array"
        texts = [c.get("text") for c in content if isinstance(c, dict) and c.get("type") == "text"]
        if not texts or not isinstance(texts[0], str):
            return None, row[0], "the recorded response has no text item"
        return texts[0], row[0], None

    def _footer_count(self, event_id: int, session_id: str) -> int | None:
        rows = self._q(
            "SELECT data FROM session_events WHERE session_id = ? AND id > ? AND id <= ? + 3 "
            "AND type = 'external_ref' ORDER BY id LIMIT 1",
            (session_id, event_id, event_id),
        )
        ref = rows[0][0] if rows else None
        if isinstance(ref, str) and ref.startswith("#") and ref[1:].isascii() and ref[1:].isdigit() and len(ref) < 12:
            return int(ref[1:])
        return None
