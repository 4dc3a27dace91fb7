"""context-mode's per-project **session DB**, read-only.

Source: context-mode 1.0.169 ``src/session/db.ts`` (``SessionDB``) and the
fixture ``shared/fixtures/session-1.0.169.db`` with its ``.md`` (path rules,
schema, how a ``ctx_search`` call is stored). rankscope never writes to it:
the file is opened with ``mode=ro`` (``immutable=1`` when no ``-wal`` exists).

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

import json
import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from engine.store import sql
from engine.store.discovery import (
    CTX_SEARCH_CALL_WHERE,
    normalise_project_dir,
    session_db_counts,
    session_dbs_for_store,
)
from engine.store.errors import StoreError
from engine.store.opening import readonly_flags

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
    params: dict | None
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


class SessionDb:
    """A session DB opened read-only. Use as a context manager."""

    def __init__(self, path: str | os.PathLike[str]):
        p = os.fspath(path)
        if not os.path.isfile(p):
            raise SessionDbError(f"no session DB at {p}")
        self.path = p
        try:
            self.conn = sql.connect(f"file:{quote(os.path.abspath(p))}?{readonly_flags(p)}", read_only=True, uri=True)
            tables = {r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        except sql.Error as exc:
            raise SessionDbError(f"{p} is not a readable SQLite database: {exc}") from exc
        missing = [t for t in REQUIRED_TABLES if t not in tables]
        if missing:
            self.conn.close()
            raise SessionDbError(f"{p} is not a context-mode session DB: missing table(s) {', '.join(missing)}")
        self.has_tool_calls = "tool_calls" in tables

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> "SessionDb":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _q(self, statement: str, args: tuple = ()) -> list[tuple]:
        try:
            return self.conn.execute(statement, args).fetchall()
        except sql.Error as exc:
            raise SessionDbError(f"cannot read session DB {self.path}: {exc}") from exc

    # ── counts ──────────────────────────────────────────────────────────

    def counts(self) -> dict:
        """``{"sessions": n, "events": n, "ctx_search_calls": n}``."""
        try:
            return session_db_counts(self.conn)
        except sql.Error as exc:
            raise SessionDbError(f"cannot read session DB {self.path}: {exc}") from exc

    def sessions(self) -> list[dict]:
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
        return [r[0] for r in rows]

    def latest_session_id(self) -> str | None:
        """``getLatestSessionId``: the session with the newest ``started_at``."""
        rows = self._q("SELECT session_id FROM session_meta ORDER BY started_at DESC LIMIT 1")
        return rows[0][0] if rows else None

    # ── what ctx_search reads ───────────────────────────────────────────

    def session_ids_for_project(self, project_dir: str) -> tuple[str, ...]:
        """``getSessionIdsForProject(projectDir)``: the plugin's allow-set."""
        rows = self._q(
            "SELECT DISTINCT session_id FROM session_events WHERE RTRIM(REPLACE(project_dir, '\\', '/'), '/') = ?",
            (normalise_project_dir(project_dir),),
        )
        return tuple(r[0] for r in rows)

    def search_events(
        self, query: str, limit: int, project_dir: str | None, source: str | None = None, before_id: int | None = None
    ) -> list[EventRow]:
        """``searchEvents(query, limit, projectDir, source)``.

        Args:
            project_dir: bound as is (``None`` binds NULL, so only rows with
                ``project_dir = ''`` match).
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
            (project_dir, q, q, source, source) + args + (limit,),
        )
        return [EventRow(*r) for r in rows]

    # ── the agent's recorded searches ───────────────────────────────────

    def _call_rows(self) -> list[tuple]:
        rows = self._q(
            f"SELECT id, session_id, created_at, project_dir, data FROM session_events WHERE {CTX_SEARCH_CALL_WHERE} "
            "ORDER BY id"
        )
        out = []
        for r in rows:
            try:
                data = json.loads(r[4])
            except ValueError:
                continue
            if isinstance(data, dict):
                out.append((r[0], r[1], r[2], r[3], data))
        return out

    def ctx_search_calls(self, project_dir: str | None = None) -> list[RecordedCall]:
        """Every recorded ``ctx_search`` call, in id order.

        Args:
            project_dir: only calls attributed to this project (compared
                after ``normalizeWorktreePath``).
        """
        out: list[RecordedCall] = []
        want = normalise_project_dir(project_dir) if project_dir else None
        for event_id, session_id, created_at, pdir, data in self._call_rows():
            if want is not None and normalise_project_dir(pdir or "") != want:
                continue
            params = data.get("params") if not data.get("truncated") else None
            raw = data.get("params_raw") if data.get("truncated") else None
            if params is not None and not isinstance(params, dict):
                params = None
            answer, answer_id, note = self._answer_for(event_id, session_id)
            out.append(
                RecordedCall(
                    event_id,
                    session_id,
                    created_at,
                    pdir,
                    str(data.get("tool_name")),
                    params,
                    raw,
                    answer,
                    answer_id,
                    note,
                    self._footer_count(event_id, session_id),
                )
            )
        return out

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
        head, sep, body = data.partition("\nresponse: ")
        if not sep or not head.startswith("ctx_search"):
            return None, row[0], "the mcp row is not a ctx_search response"
        try:
            content = json.loads(body)
            texts = [c.get("text") for c in content if isinstance(c, dict) and c.get("type") == "text"]
        except (ValueError, AttributeError, TypeError):
            return None, row[0], "the recorded response is not complete JSON (cut)"
        if not texts or not isinstance(texts[0], str):
            return None, row[0], "the recorded response has no text item"
        return texts[0], row[0], None

    def _footer_count(self, event_id: int, session_id: str) -> int | None:
        rows = self._q(
            "SELECT data FROM session_events WHERE session_id = ? AND id > ? AND id <= ? + 3 "
            "AND type = 'external_ref' ORDER BY id LIMIT 1",
            (session_id, event_id, event_id),
        )
        if rows and rows[0][0].startswith("#") and rows[0][0][1:].isdigit():
            return int(rows[0][0][1:])
        return None
