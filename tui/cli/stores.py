"""``rankscope stores`` and ``rankscope sessions``: find context-mode's
content stores and look inside them, read-only.

Imported by :mod:`tui.cli`, which registers every subcommand module.
"""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich import box
from rich.table import Table
from rich.text import Text

from engine.store.discovery import content_dirs, find_stores

from tui.present import safe
from .base import NAMES_FOLDER, StorePath, console, open_store, write_json
from tui.present.fmt import human_bytes, looked_in, pack, session_db_summary, short_path
from tui.present.render import plain


def _schema_short(schema: Optional[str]) -> str:
    if not schema:
        return "–"
    return "8 cols" if schema.startswith("8") else "4 cols (old)" if schema.startswith("4") else schema


def _count(value: Optional[int]) -> str:
    return "–" if value is None else str(value)


def _counted(value: Optional[int], noun: str) -> str:
    return f"{_count(value)} {noun}" + ("" if value == 1 else "s")


def stores_cmd(
    project: Annotated[Optional[Path], NAMES_FOLDER] = typer.Option(
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
        where = (
            f"context-mode content store for project {project}"
            if project is not None
            else "context-mode content stores"
        )
        console.print(safe.line(f"No {where} found. Looked in:"), markup=False, highlight=False)
        for line in looked_in(content_dirs(project, include_temp=project is None)):
            console.print(safe.line(f"  {line}"), markup=False, highlight=False)
        return
    names = {str(loc.path): loc.name for loc in content_dirs(project)}
    groups: dict[str, list] = {}
    for i in infos:
        groups.setdefault(i.location, []).append(i)
    console.print(f"{len(infos)} context-mode content store(s), opened read-only", highlight=False)
    tables = {location: _store_table(members) for location, members in groups.items()}
    # The table needs ~120 columns; on a narrower terminal each store is a
    # block (name and status, then its numbers packed into lines that fit).
    unbounded = console.options.update(max_width=10_000)
    fits = all(console.measure(t, options=unbounded).maximum <= console.width for t in tables.values())
    for location, members in groups.items():
        console.print()
        console.print(
            Text.assemble(
                (safe.line(short_path(location)), "bold"), safe.line(f"  ({names.get(location, members[0].client)})")
            )
        )
        if fits:
            console.print(tables[location])
            for i in members:
                if i.error:
                    console.print(plain(f"{os.path.basename(i.path)}: {_error_text(i)}", style="red"))
        else:
            for i in members:
                _print_store_block(i)
    if not fits:
        console.print()
    paired = [i for i in infos if i.session_db]
    if paired:
        if fits:
            console.print()
        console.print("session DBs (same name in ../sessions/), read-only:", highlight=False)
        for i in paired:
            assert i.session_db is not None  # paired holds the stores that have one
            calls = (
                ""
                if i.session_db_searches is None
                else f", {_counted(i.session_db_searches, 'recorded ctx_search call')}"
            )
            console.print(
                safe.line(
                    f"  {os.path.basename(i.path)} → {short_path(i.session_db)}"
                    f" ({i.session_db_error or session_db_summary(i)}{calls})"
                ),
                markup=False,
                highlight=False,
                soft_wrap=True,
            )
        console.print(
            "rankscope agent-log --sessions-db PATH lists the agent's searches; "
            "rankscope ctx-search ... --sessions-db PATH runs as the plugin does.",
            highlight=False,
        )
    newest = max((i.modified or 0 for i in infos), default=0)
    if newest:
        stamp = datetime.fromtimestamp(newest).strftime("%Y-%m-%d %H:%M")
        console.print(f"newest file modified {stamp}. Open one with: rankscope PATH", highlight=False)


def _size(i) -> str:
    return human_bytes(i.size_bytes) + (f" +{human_bytes(i.wal_bytes)} wal" if i.wal_bytes else "")


def _status(i) -> Text:
    if i.error:
        return Text("unreadable", style="red")
    if i.live:
        return Text("live: -wal present", style="yellow")
    return Text("ok")


def _error_text(i) -> str:
    return (i.error or "").replace(i.path, "the file", 1)


def _store_table(members: list) -> Table:
    """One row per store of a folder: the wide layout."""
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    for col, kw in (
        ("store", {"no_wrap": True, "min_width": 19}),
        ("size", {"justify": "right", "no_wrap": True}),
        ("sources", {"justify": "right", "no_wrap": True}),
        ("chunks", {"justify": "right", "no_wrap": True}),
        ("code", {"justify": "right", "no_wrap": True}),
        ("sessions", {"justify": "right", "no_wrap": True}),
        ("last indexed (UTC)", {"no_wrap": True}),
        ("FTS", {"no_wrap": True}),
        ("session DB", {"no_wrap": True}),
        ("status", {"no_wrap": True}),
    ):
        table.add_column(col, **kw)
    for i in members:
        table.add_row(
            plain(os.path.basename(i.path)),
            _size(i),
            _count(i.sources),
            _count(i.chunks),
            _count(i.code_chunks),
            _count(i.sessions),
            plain(i.last_indexed_at or "–"),
            plain(_schema_short(i.schema)),
            _session_db_cell(i),
            _status(i),
        )
    return table


def _session_db_cell(i) -> Text:
    text = session_db_summary(i)
    return Text(text, style="red" if text == "unreadable" else "dim" if text == "–" else "")


def _print_store_block(i) -> None:
    """The narrow layout: ``name  status``, then ``size · sources · chunks
    (code) · sessions · last indexed · schema`` packed to the console width."""
    status = _status(i)
    head = Text.assemble("  ", (safe.line(short_path(i.path)), "bold"))
    if status.plain != "ok":
        head.append("  ")
        head.append(status)
    console.print(head, overflow="fold")
    if i.error:
        fields = [_size(i), safe.line(_error_text(i))]
    else:
        fields = [
            _size(i),
            _counted(i.sources, "source"),
            f"{_counted(i.chunks, 'chunk')} ({_count(i.code_chunks)} code)",
            _counted(i.sessions, "session"),
            f"indexed {i.last_indexed_at} UTC" if i.last_indexed_at else "never indexed",
            f"FTS {_schema_short(i.schema)}",
        ]
        if i.session_db:
            fields.append(f"session DB: {session_db_summary(i)}")
    for line in pack([safe.line(f) for f in fields], max(console.width - 4, 20)):
        console.print(Text("    " + line, style="red" if i.error else ""), overflow="fold")


def sessions_cmd(
    db: StorePath = typer.Option(..., "--db", help="Store to read (opened read-only)."),
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
    table.add_column("session id", no_wrap=True)  # an id: never cut or wrapped
    table.add_column("chunks", justify="right", no_wrap=True)
    for session, n in counts:
        table.add_row(plain(session) if session else Text("(unattributed)", style="dim"), str(n))
    console.print(table)
    if legacy:
        console.print("older 4-column store: no session column, every chunk reads as unattributed", highlight=False)
