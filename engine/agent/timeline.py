"""``sort: "timeline"``: ``searchAllSources`` of context-mode 1.0.169.

Source: ``src/search/unified.ts`` and calls c26, p04-p06 of
``shared/agent-view``. Rows come from:

1. the content store: ``searchWithFallback(q, limit, source, contentType,
   "like", allowSet)``; origin ``current-session``, timestamp the chunk's
   own (or the search's start time when it has none);
2. the session DB, when one exists: ``searchEvents(q, limit, projectDir,
   source)``; origin ``prior-session``, label ``prior-session``, title
   ``[<category>] <type>``, content the event's ``data`` (no highlight).
   Skipped when ``contentType`` is given (events have no code/prose type);
3. auto-memory files (not reproduced by rankscope; see ``notes``).

Timestamps without a ``T`` (SQLite ``YYYY-MM-DD HH:MM:SS``) become
``YYYY-MM-DDTHH:MM:SSZ``; all rows are sorted with ``localeCompare`` on the
timestamp (a stable sort: store rows first on ties) and cut to ``limit``.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass

from engine.js.numbers import number_to_string, slice_indices
from engine.store import sql

from .jsvalue import locale_key
from .sessiondb import EventRow, SessionDb, SessionDbError

#: SQLite's primary result code SQLITE_MISMATCH ("datatype mismatch").
SQLITE_MISMATCH = 20


@dataclass(frozen=True)
class TimelineRow:
    """One row of ``searchAllSources`` before the cut.

    Attributes:
        origin: ``"current-session"`` or ``"prior-session"``.
        timestamp: normalised ISO timestamp (what is sorted and shown).
        source: the label shown in the header.
        title, content, highlighted: as formatted (``highlighted`` is
            ``None`` for events).
        rowid: chunk rowid (store rows) or ``None``.
        event_id: ``session_events.id`` (event rows) or ``None``.
        kept: inside the ``limit`` cut.
    """

    origin: str
    timestamp: str
    source: str
    title: str
    content: str
    highlighted: str | None
    rowid: int | None = None
    event_id: int | None = None
    kept: bool = True


def normalise_timestamp(ts: str) -> str:
    """``"2026-12-01 02:51:29"`` → ``"2026-12-01T02:51:29Z"``; ISO values unchanged."""
    if ts and "T" not in ts:
        return ts.replace(" ", "T", 1) + "Z"
    return ts


def now_iso() -> str:
    """``new Date().toISOString()``."""
    now = _dt.datetime.now(_dt.timezone.utc)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


def event_rows(
    session_db: SessionDb | None,
    query: str,
    limit: float,
    project_filter: str | None,
    source: str | None,
    content_type: str | None,
    before_id: int | None = None,
) -> tuple[list[EventRow], str | None]:
    """The session-DB half (empty without a DB or with a content type):
    ``(rows, note)``. ``limit`` is the server's JavaScript number, bound to
    SQLite's ``LIMIT ?`` as a double, as Node binds it: a whole number works
    (negative: no limit); a fraction or an infinity is SQLite's "datatype
    mismatch", which ``searchAllSources`` catches: no event rows, and
    ``note`` says so."""
    if session_db is None or content_type:
        return [], None
    try:
        return session_db.search_events(query, limit, project_filter, source, before_id), None
    except SessionDbError as exc:
        if sql.primary_code(exc.__cause__ or exc) != SQLITE_MISMATCH:
            raise
        return [], (
            f"session events: SQLite refuses LIMIT {number_to_string(limit)} (datatype mismatch); "
            "the server's searchAllSources catches the error, so no prior-session row is searched"
        )


def merge_timeline(store_rows: list[TimelineRow], events: list[EventRow], limit: float) -> list[TimelineRow]:
    """Normalise, sort (``localeCompare``, stable) and mark the rows of
    ``slice(0, limit)`` ``kept`` (JavaScript's slice: ``limit`` any number);
    returns every row in sorted order."""
    rows = [
        TimelineRow(r.origin, normalise_timestamp(r.timestamp), r.source, r.title, r.content, r.highlighted, r.rowid)
        for r in store_rows
    ] + [
        TimelineRow(
            "prior-session",
            normalise_timestamp(e.created_at),
            "prior-session",
            f"[{e.category}] {e.type}",
            e.data,
            None,
            None,
            e.id,
        )
        for e in events
    ]
    rows.sort(key=lambda r: locale_key(r.timestamp or ""))
    lo, hi = slice_indices(len(rows), 0.0, limit)
    return [
        TimelineRow(
            r.origin, r.timestamp, r.source, r.title, r.content, r.highlighted, r.rowid, r.event_id, lo <= i < hi
        )
        for i, r in enumerate(rows)
    ]
