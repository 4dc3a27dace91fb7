"""Small formatting helpers shared by the CLI and the browser (no Rich
rendering, no Textual; Rich's cell widths), so both print the same numbers
the same way."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from rich.cells import cell_len

from engine.lab.journey import abbreviate

from tui.present import safe

#: What a cut leaves in place of the text it removed.
ELLIPSIS = "…"

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
    its first ``width`` characters and ``… (N characters)``. (``--json``
    output always keeps the exact text.)"""
    if len(query) <= width:
        return repr(query)
    return f"{query[:width]!r}… ({len(query):,} characters)"


#: ``text`` cut to ``width`` characters plus ``… (+N characters)`` (the
#: engine's summaries cut the same way).
clip = abbreviate


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


def middle_cut(title: str, width: int, sep: str = " > ") -> str:
    """``title`` in at most ``width`` terminal cells, cut in the middle so
    the last heading stays: ``ferryctl docs > install > publish > Example``
    at 30 → ``ferryctl … > publish > Example``. As many trailing headings as
    fit are kept whole, then as much of the start as fits. A last heading
    that alone is too long keeps its end (``…tail``); a title without
    ``sep`` keeps its start and its end (``[heartbeat] coo…registered``). With ``sep="/"`` a
    path keeps its file name: ``docs/plugins/hooks-reference.md`` at 24 →
    ``docs…/hooks-reference.md``."""
    if width <= 0:
        return ""
    if cell_len(title) <= width:
        return title
    if width == 1:
        return ELLIPSIS
    parts = title.split(sep)
    tail = parts[-1]
    if len(parts) == 1:  # no headings: its start and its end
        end = (width - 1) // 2
        return _cells_from_start(title, width - 1 - end).rstrip() + ELLIPSIS + _cells_from_end(title, end).lstrip()
    if cell_len(ELLIPSIS + sep + tail) > width:
        return ELLIPSIS + _cells_from_end(tail, width - 1)
    kept = [tail]
    for part in reversed(parts[1:-1]):
        if cell_len(ELLIPSIS + sep + sep.join([part] + kept)) + 2 > width:
            break
        kept.insert(0, part)
    rest = sep.join(parts[: len(parts) - len(kept)])
    back = (" " if sep.startswith(" ") else "") + ELLIPSIS + sep + sep.join(kept)
    room = width - cell_len(back)
    if room <= 0:
        return (ELLIPSIS + sep + sep.join(kept))[:width]
    return _cells_from_start(rest, room).rstrip() + back


def _cells_from_start(text: str, width: int) -> str:
    out, used = [], 0
    for ch in text:
        w = cell_len(ch)
        if used + w > width:
            break
        out.append(ch)
        used += w
    return "".join(out)


def _cells_from_end(text: str, width: int) -> str:
    return _cells_from_start(text[::-1], width)[::-1]


def short_path(path: str) -> str:
    """``path`` with the home folder written ``~``."""
    home = str(Path.home())
    return "~" + path[len(home) :] if home not in ("", "/") and path.startswith(home + os.sep) else path


def looked_in(locations: list) -> list[str]:
    """Where store discovery looked, one line per folder
    (``engine.store.discovery.StoreLocation``): ``~/.claude/context-mode/content
    [Claude Code]``, with its file pattern when not ``*.db``. What
    ``rankscope stores`` and the store picker say when they found nothing."""
    return [
        f"{short_path(str(loc.path))}{'' if loc.pattern == '*.db' else f' ({loc.pattern})'}  [{loc.name}]"
        for loc in locations
    ]
