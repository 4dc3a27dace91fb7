"""Small formatting helpers shared by the CLI and the browser (no Rich, no
Textual), so both print the same numbers the same way. Cutting text to fit
is :mod:`tui.present.cut`."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from tui.present import safe

if TYPE_CHECKING:
    from engine.store.discovery import StoreLocation

_UNITS = ("B", "KiB", "MiB", "GiB", "TiB")


def human_bytes(n: int | float) -> str:
    """A size in binary units: ``"5 B"``, ``"596.0 KiB"``, ``"1.2 MiB"``.

    Bytes are shown whole; larger units with one decimal. Negative sizes
    keep their sign.
    """
    sign = "-" if n < 0 else ""
    size = float(abs(n))
    for unit in _UNITS:
        if size < 1024 or unit == _UNITS[-1]:
            return f"{sign}{size:.0f} {unit}" if unit == "B" else f"{sign}{size:.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")  # pragma: no cover


def pack(fields: list[str], width: int, sep: str = " · ") -> list[str]:
    """Join ``fields`` with ``sep`` into as few lines as fit in ``width``
    columns, never splitting a field (a field wider than ``width`` gets a
    line of its own)."""
    lines: list[str] = []
    current = ""
    for f in fields:
        candidate = f if not current else current + sep + f
        if current and len(candidate) > width:
            lines.append(current)
            current = f
        else:
            current = candidate
    if current:
        lines.append(current)
    return lines


#: Characters of a query a heading quotes before cutting it.
QUERY_SHOWN = 80


def query_label(query: str, width: int = QUERY_SHOWN) -> str:
    """A query for a heading: ``repr(query)``, or for a long one the repr of
    its first ``width`` characters (code points) and ``… (N characters)``,
    N its length, when that is shorter than the whole repr. (``--json``
    output always keeps the exact text.)"""
    whole = repr(query)
    if len(query) <= width:
        return whole
    cut = f"{query[:width]!r}… ({len(query):,} characters)"
    return cut if len(cut) < len(whole) else whole


#: Characters ``json.dumps(ensure_ascii=False)`` leaves raw that a terminal
#: acts on: C1 controls (U+009B is a CSI), the bidirectional controls
#: (:data:`tui.present.safe.BIDI_CONTROLS`: they reorder what follows) and
#: the line and paragraph separators.
_JSON_ESCAPED = re.compile("[\u0080-\u009f\u2028\u2029" + "".join(map(chr, safe.BIDI_CONTROLS)) + "]")


def json_text(data: object, indent: int | None = 2) -> str:
    """``data`` as JSON (non-ASCII characters kept) with a final newline:
    what ``--json``, ``batch --out`` and the browser's trace export write.
    C0 controls are escaped by JSON itself; the characters of
    :data:`_JSON_ESCAPED` are escaped too (``\\u202e``): the same JSON
    value, and nothing a terminal would act on."""
    text = json.dumps(data, ensure_ascii=False, indent=indent)
    return _JSON_ESCAPED.sub(lambda m: f"\\u{ord(m.group()):04x}", text) + "\n"


def _counted(value: int | None, noun: str) -> str:
    return f"{'–' if value is None else value} {noun}" + ("" if value == 1 else "s")


def session_db_summary(info: object) -> str:
    """A store's paired session DB in words (a ``StoreInfo``): ``3 sessions,
    75 events``; ``unreadable``; ``–`` when it has none."""
    if not getattr(info, "session_db", None):
        return "–"
    if getattr(info, "session_db_error", None):
        return "unreadable"
    return (
        f"{_counted(getattr(info, 'session_db_sessions', None), 'session')}, "
        f"{_counted(getattr(info, 'session_db_events', None), 'event')}"
    )


def short_path(path: str) -> str:
    """``path`` with the home folder written ``~``."""
    home = str(Path.home())
    return "~" + path[len(home) :] if home not in ("", "/") and path.startswith(home + os.sep) else path


def looked_in(locations: Iterable[StoreLocation]) -> list[str]:
    """Where store discovery looked, one line per folder
    (``engine.store.discovery.StoreLocation``): ``~/.claude/context-mode/content
    [Claude Code]``, with its file pattern when not ``*.db``. What
    ``rankscope stores`` and the store picker say when they found nothing."""
    return [
        f"{short_path(str(loc.path))}{'' if loc.pattern == '*.db' else f' ({loc.pattern})'}  [{loc.name}]"
        for loc in locations
    ]
