"""Plain-text views of the browser's state: the equivalent ``rankscope
search`` command line, a one-line parameter summary and export file names.

No Textual here, so these are unit-testable and re-usable by the CLI.
"""

from __future__ import annotations

import datetime as _dt
import os
import re
import shlex
from pathlib import Path

from engine import SearchParams
from engine.pipeline.variants import variant_spec


def command_line(params: SearchParams, db: str | None) -> str:
    """The ``rankscope search ...`` command that reproduces ``params`` on ``db``
    (every argument shell-quoted with :func:`shlex.quote`).

    An empty session allow-set (only unattributed chunks pass) is written as
    ``--session ''``, which the CLI turns into the allow-set ``{""}``: the same
    filter. An in-memory store has no path: ``<store.db>`` stands in for it.
    """
    parts = ["rankscope", "search", params.query, "--db", db or "<store.db>"]
    if params.limit != 3:
        parts += ["--limit", str(params.limit)]
    if params.source:
        parts += ["--source", params.source]
        if params.source_match == "exact":
            parts.append("--source-exact")
    if params.content_type:
        parts += ["--content-type", params.content_type]
    if params.sessions is not None:
        for s in params.sessions or ("",):
            parts += ["--session", s]
    if not params.variant.is_reference:
        parts.append(f"# variant: {variant_spec(params.variant)}")
        return " ".join(shlex.quote(p) for p in parts[:-1]) + "  " + parts[-1]
    return " ".join(shlex.quote(p) for p in parts)


def eval_command(queries: Path, qrels: Path, db: str | None) -> str:
    """The ``rankscope eval`` command that judges an exported case file on
    ``db`` (every argument shell-quoted; the two files by name, as they lie in
    the folder they were written to). An in-memory store has no path:
    ``<store.db>`` stands in for it."""
    parts = ["rankscope", "eval", queries.name, "--db", db if db and db != ":memory:" else "<store.db>"]
    return " ".join(shlex.quote(p) for p in [*parts, "--qrels", qrels.name])


def describe_sessions(sessions: tuple[str, ...] | None) -> str:
    """``"off"``, ``"only unattributed"`` or the allowed ids joined by commas."""
    if sessions is None:
        return "off"
    if not sessions:
        return "only unattributed"
    return ",".join(s or "''" for s in sessions)


def describe_params(params: SearchParams) -> str:
    """One line: ``limit 3 · source any · type any · sessions off``."""
    if params.source:
        src = f"{params.source!r} ({'exact' if params.source_match == 'exact' else 'substring'})"
    else:
        src = "any"
    return (
        f"limit {params.limit} · source {src} · type {params.content_type or 'any'}"
        f" · sessions {describe_sessions(params.sessions)}"
    )


def append_params(text, params: SearchParams) -> None:
    """Append `` · limit N`` and the active filters (source, type, sessions),
    dimmed and terminal-safe, to a Rich ``Text`` (screen titles)."""
    from tui.present.safe import line

    text.append(f" · limit {params.limit}", style="dim")
    if params.source:
        text.append(f" · source {line(params.source)}", style="dim")
    if params.content_type:
        text.append(f" · type {params.content_type}", style="dim")
    if params.sessions is not None:
        text.append(f" · sessions {line(describe_sessions(params.sessions))}", style="dim")


def export_name(query: str, now: _dt.datetime | None = None) -> str:
    """The file name of a JSON trace of ``query``:
    ``rankscope-trace-<slug>-<YYYYmmdd-HHMMSS>.json`` (slug: ASCII letters and
    digits, lower case, at most 40 characters)."""
    now = now or _dt.datetime.now()
    slug = re.sub(r"[^A-Za-z0-9]+", "-", query).strip("-").lower()[:40] or "empty"
    return f"rankscope-trace-{slug}-{now:%Y%m%d-%H%M%S}.json"


def export_path(query: str, folder: Path | None = None, now: _dt.datetime | None = None) -> Path:
    """A fresh file name for a JSON trace of ``query`` in ``folder`` (default:
    the current directory): :func:`export_name`, with ``-2``, ``-3`` ...
    appended if that name is taken (by anything, a dangling symbolic link
    included: it is never written through)."""
    folder = folder or Path.cwd()
    name = export_name(query, now)
    stem = name[: -len(".json")]
    path = folder / name
    n = 2
    while os.path.lexists(path):
        path = folder / f"{stem}-{n}.json"
        n += 1
    return path
