"""Tables of numbers that fit the terminal without cutting a number.

Rich shrinks a table that is wider than the console by cutting its cells
(``0.617 → 0.6…``, ``porter-stemmi…``) or folding them mid-word
(``partition-ke`` / ``y example``). The CLI's tables of numbers are built
here instead, from columns of three kinds:

* ``key``: what identifies a row (a query id, a stage id, a measure): never
  cut or wrapped, and repeated in every part of a split table;
* ``value``: a number or a short code (a layer): never cut or wrapped;
* ``free``: free text (a query text, a title): gets the room the others
  leave (at most ``max_width``), wraps at spaces, and a word too long for it
  ends in ``…``; left out when less than ``min_width`` cells remain (the key
  still names the row).

When the keys and values together are wider than the console, the value
columns are split over several tables, each with the keys (``… (continued)``
in the title). Widths are terminal cells (Rich's ``cell_len``); the table's
borders and padding are measured by Rich itself. Rich only, no Textual.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Literal, Sequence

from rich import box as rich_box
from rich.box import Box
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

#: A cell: plain text or styled Rich text (one line or several).
Cell = str | Text


@dataclass(frozen=True)
class Col:
    """A column of :func:`fit_tables`.

    Attributes:
        header: the header text.
        kind: ``key``, ``value`` or ``free`` (see the module docstring).
        justify: ``left`` or ``right`` (numbers).
        min_width: narrowest a ``free`` column is shown at (cells).
        max_width: widest a ``free`` column gets (cells), or ``None``.
    """

    header: str
    kind: Literal["key", "value", "free"] = "value"
    justify: Literal["left", "right"] = "left"
    min_width: int = 10
    max_width: int | None = None


#: Measures tables (never printed to).
_MEASURE = Console(file=io.StringIO(), width=100_000, color_system=None)


def _cell_width(cell: Cell) -> int:
    text = cell.plain if isinstance(cell, Text) else cell
    return max((cell_len(line) for line in text.splitlines()), default=0)


def _natural(cols: Sequence[Col], rows: Sequence[Sequence[Cell]]) -> list[int]:
    """Each column's widest cell (its header included), in cells."""
    return [max([cell_len(c.header)] + [_cell_width(r[i]) for r in rows]) for i, c in enumerate(cols)]


def fit_tables(
    title: str | Text,
    cols: Sequence[Col],
    rows: Sequence[Sequence[Cell]],
    width: int,
    *,
    box: Box | None = rich_box.SIMPLE_HEAD,
    sections: Sequence[int] = (),
    **table_options: object,
) -> list[RenderableType]:
    """``rows`` under ``cols`` as one table, or several (the value columns
    split between them) when one would be wider than ``width`` cells: a
    title line, then the table, per part. ``sections``: indices of rows a
    rule goes above (a totals row). ``table_options`` go to
    :class:`rich.table.Table` (``pad_edge``, ``header_style``, ...).

    Raises:
        ValueError: more than one ``free`` column, or a row whose length is
            not the number of columns.
    """
    if sum(c.kind == "free" for c in cols) > 1:
        raise ValueError("fit_tables takes at most one free column")
    if any(len(r) != len(cols) for r in rows):
        raise ValueError("every row needs one cell per column")
    natural = _natural(cols, rows)
    keys = [i for i, c in enumerate(cols) if c.kind == "key"]
    values = [i for i, c in enumerate(cols) if c.kind == "value"]
    free = next((i for i, c in enumerate(cols) if c.kind == "free"), None)

    def build(shown: list[int], free_width: int | None = None) -> Table:
        t = Table(box=box, expand=False, **table_options)  # type: ignore[arg-type]
        for i in sorted(shown):
            c = cols[i]
            if i == free:
                t.add_column(c.header, justify=c.justify, width=free_width, overflow="ellipsis")
            else:
                t.add_column(c.header, justify=c.justify, width=natural[i], no_wrap=True)
        for n, row in enumerate(rows):
            if n in sections and n:
                t.add_section()
            t.add_row(*[row[i] for i in sorted(shown)])
        return t

    def needs(shown: list[int], free_width: int | None = None) -> int:
        return Measurement.get(_MEASURE, _MEASURE.options, build(shown, free_width)).maximum

    groups: list[list[int]] = []
    current: list[int] = []
    for v in values:
        if current and needs(keys + current + [v]) > width:
            groups.append(current)
            current = []
        current.append(v)
    groups.append(current)
    if len(groups) > 1:  # as many parts, with the columns shared out evenly when that fits too
        size = -(-len(values) // len(groups))
        even = [values[i : i + size] for i in range(0, len(values), size)]
        if len(even) == len(groups) and all(needs(keys + g) <= width for g in even):
            groups = even

    head = title if isinstance(title, Text) else Text(title, style="table.title")
    parts: list[RenderableType] = []
    for n, group in enumerate(groups):
        shown = keys + group
        free_width = None
        if free is not None and n == 0:
            c = cols[free]
            room = width - needs(shown + [free], 1) + 1  # measured with the free column 1 cell wide
            want = min(natural[free], c.max_width or natural[free])
            if room >= min(c.min_width, want):
                free_width = min(want, room)
                shown = shown + [free]
        parts.append(head if n == 0 else head + Text(" (continued)", style=head.style))
        parts.append(build(shown, free_width))
    return parts


class Fitted:
    """:func:`fit_tables` for the width the renderable is printed at (the
    console's, under 80 when output is redirected): pass what
    :func:`fit_tables` takes, less ``width``."""

    def __init__(self, title: str | Text, cols: Sequence[Col], rows: Sequence[Sequence[Cell]], **options: object):
        self.title, self.cols, self.rows, self.options = title, cols, rows, options

    def parts(self, width: int) -> list[RenderableType]:
        """The title lines and tables for ``width`` cells."""
        return fit_tables(self.title, self.cols, self.rows, width, **self.options)  # type: ignore[arg-type]

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement.get(console, options, Group(*self.parts(options.max_width)))

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield from self.parts(options.max_width)
