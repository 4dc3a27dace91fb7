"""``rankscope stores`` and ``rankscope sessions``: find context-mode's
content stores and look inside them, read-only.

Imported by :mod:`tui.cli`, which registers every subcommand module.
"""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path
from typing import Optional

import typer
from rich import box
from rich.table import Table
from rich.text import Text

from engine.discovery import content_dirs, find_stores

from . import safe
from .cli import app, console, open_store, write_json
from .render import plain


def _human_bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "kB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    return f"{n} B"  # pragma: no cover


def _short(path: str) -> str:
    home = str(Path.home())
    return "~" + path[len(home):] if home not in ("", "/") and path.startswith(home + os.sep) else path


def _schema_short(schema: Optional[str]) -> str:
    if not schema:
        return "–"
    return "8 cols" if schema.startswith("8") else "4 cols (old)" if schema.startswith("4") else schema


def _count(value: Optional[int]) -> str:
    return "–" if value is None else str(value)


@app.command("stores")
def stores_cmd(
    project: Optional[Path] = typer.Option(
        None, "--project", help="Only the store of this project directory (named by the hash of its path)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON list instead of a table."),
) -> None:
    """List context-mode content stores ($CONTEXT_MODE_DIR, then each client's folder), read-only."""
    infos = find_stores(project)
    if as_json:
        write_json([i.to_dict() for i in infos])
        return
    if not infos:
        where = "a project store for " + str(project) if project is not None else "context-mode content stores"
        console.print(f"No {where} found. Looked in:", markup=False, highlight=False)
        for loc in content_dirs(project, include_temp=project is None):
            suffix = "" if loc.pattern == "*.db" else f" ({loc.pattern})"
            console.print(safe.line(f"  {_short(str(loc.path))}{suffix}  [{loc.name}]"), markup=False, highlight=False)
        return
    names = {str(loc.path): loc.name for loc in content_dirs(project)}
    groups: dict[str, list] = {}
    for i in infos:
        groups.setdefault(i.location, []).append(i)
    console.print(f"{len(infos)} context-mode content store(s), opened read-only", highlight=False)
    for location, members in groups.items():
        console.print()
        console.print(Text.assemble((safe.line(_short(location)), "bold"),
                                    safe.line(f"  ({names.get(location, members[0].client)})")))
        table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
        for col, kw in (
            ("store", {"no_wrap": True, "min_width": 19}), ("size", {"justify": "right"}),
            ("sources", {"justify": "right"}), ("chunks", {"justify": "right"}), ("code", {"justify": "right"}),
            ("sessions", {"justify": "right"}), ("last indexed (UTC)", {}), ("FTS", {}), ("status", {}),
        ):
            table.add_column(col, **kw)
        for i in members:
            size = _human_bytes(i.size_bytes) + (f" +{_human_bytes(i.wal_bytes)} wal" if i.wal_bytes else "")
            if i.error:
                status = Text("unreadable", style="red")
            elif i.live:
                status = Text("live: -wal present", style="yellow")
            else:
                status = Text("ok")
            table.add_row(
                plain(os.path.basename(i.path)), size, _count(i.sources), _count(i.chunks), _count(i.code_chunks),
                _count(i.sessions), plain(i.last_indexed_at or "–"), plain(_schema_short(i.schema)), status,
            )
        console.print(table)
        for i in members:
            if i.error:
                console.print(plain(f"{os.path.basename(i.path)}: {i.error.replace(i.path, 'the file')}", style="red"))
    newest = max((i.modified or 0 for i in infos), default=0)
    if newest:
        stamp = datetime.fromtimestamp(newest).strftime("%Y-%m-%d %H:%M")
        console.print(f"newest file modified {stamp}. Open one with: rankscope PATH", highlight=False)


@app.command("sessions")
def sessions_cmd(
    db: Path = typer.Option(..., "--db", help="Store to read (opened read-only)."),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON list of {session_id, chunks}."),
) -> None:
    """Session ids in a store with their chunk counts ('' = unattributed)."""
    with open_store(db) as store:
        counts = store.session_counts()
        legacy = not store.schema.has_session
    if as_json:
        write_json([{"session_id": s, "chunks": n} for s, n in counts], indent=None)
        return
    if not counts:
        console.print(safe.line(f"{db} holds no chunks."), markup=False, highlight=False)
        return
    console.print(safe.line(f"sessions in {db}"), markup=False, highlight=False)
    table = Table()
    table.add_column("session id", overflow="fold")
    table.add_column("chunks", justify="right")
    for session, n in counts:
        table.add_row(plain(session) if session else Text("(unattributed)", style="dim"), str(n))
    console.print(table)
    if legacy:
        console.print("older 4-column store: no session column, every chunk reads as unattributed", highlight=False)

