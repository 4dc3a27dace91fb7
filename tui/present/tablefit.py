"""The one table model (:class:`Column`, :class:`Table`) and tables of
numbers that fit the terminal without cutting a number (:class:`Fitted`).

A :class:`Table` is data: a title, columns and rows of cells (the
descriptions of :mod:`tui.present.describe` hold tables of
:data:`~tui.present.describe.Line` cells; the CLI's tables hold Rich cells).

Rich shrinks a table that is wider than the console by cutting its cells
(``0.617 → 0.6…``, ``porter-stemmi…``) or folding them mid-word
(``partition-ke`` / ``y example``). The CLI's tables of numbers are built
here instead, from columns of three kinds:

* ``key``: what identifies a row (a query id, a stage id, a measure): never
  cut or wrapped, and repeated in every part of a split table;
* ``value``: a number or a short code (a layer): never cut or wrapped;
* ``free``: free text (a query text, a title): gets the room the others
  leave (at most ``max_width``), wraps at spaces, and a word too long for it
  ends in ``…``. Several free columns share that room by their ``share``
  (a column that wants less gives the rest to the others); when one would
  get less than its ``min_width``, the one with the smallest share (the
  rightmost of equals) is left out and the others share again. Free text
  is shown in the first part of a split table only.

When the keys and values together are wider than the console, the value
columns are split over several tables, each with the keys (``… (continued)``
in the title). When no free column has its ``min_width`` beside the first
part's values, fewer values go in the first part (the rest in the next
parts): free text is left out altogether only when even the keys and one
value column leave less than that (the key still names the row). Widths
are terminal cells (Rich's ``cell_len``); the table's borders and padding
are measured by Rich itself. Rich only, no Textual.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Generic, Literal, Protocol, Sequence, TypeVar

from rich import box as rich_box
from rich.box import Box
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.measure import Measurement
from rich.table import Table as RichTable
from rich.text import Text


class Shaped(Protocol):
    """A cell that lays itself out (a path that wraps at its slashes:
    :class:`tui.present.render.PathText`; a :class:`Stack`): a Rich renderable that
    says its text and its narrowest width."""

    @property
    def plain(self) -> str:
        """Its text, a line per ``\\n`` (its natural width is the widest line)."""
        ...

    @property
    def narrowest(self) -> int:
        """Its widest piece that is never broken (cells): a free column
        gets that much when it can, as it gets a text's longest word."""
        ...

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult: ...


#: A cell: plain text, styled Rich text (one line or several) or a :class:`Shaped` cell.
Cell = str | Text | Shaped


def _plain(cell: Cell) -> str:
    return cell if isinstance(cell, str) else cell.plain


def _narrowest(cell: Cell) -> int:
    """A cell's widest unbreakable piece: a text's longest word (text between spaces)."""
    if isinstance(cell, (str, Text)):
        return max((cell_len(w) for w in _plain(cell).split()), default=0)
    return cell.narrowest


class Stack:
    """Cells one under the other in one cell (a title over its source, for a
    narrow table): the widest line's width, at narrowest its widest part's
    narrowest; each part wraps on its own."""

    def __init__(self, *cells: Cell) -> None:
        self.cells = cells

    @property
    def plain(self) -> str:
        return "\n".join(_plain(c) for c in self.cells)

    @property
    def narrowest(self) -> int:
        return max((_narrowest(c) for c in self.cells), default=0)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement.get(console, options, Group(*self.cells))

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield from self.cells


@dataclass(frozen=True)
class Column:
    """A table column: what it holds and how it is laid out.

    Attributes:
        name: the header text.
        kind: ``key`` (names the row), ``value`` (a number or a short code)
            or ``free`` (free text: titles, keys, paths); see the module docstring.
        justify: ``left`` or ``right`` (numbers).
        min_width: narrowest a ``free`` column is shown at (cells).
        max_width: widest a ``free`` column gets (cells), or ``None``.
        share: a ``free`` column's weight when several share too little room
            (1 or more).
        detail: extra numbers a narrow screen may leave out (the browser's
            compare table; a fitted table splits instead).
        path: a source label: wraps at its slashes, never inside a name
            (:class:`tui.present.render.PathText`).
    """

    name: str
    kind: Literal["key", "value", "free"] = "value"
    justify: Literal["left", "right"] = "left"
    min_width: int = 10
    max_width: int | None = None
    share: int = 1
    detail: bool = False
    path: bool = False

    @property
    def numeric(self) -> bool:
        """Right-aligned (a number)."""
        return self.justify == "right"

    @property
    def wide(self) -> bool:
        """Free text (may wrap, or be cut)."""
        return self.kind == "free"


CellT = TypeVar("CellT")


@dataclass(frozen=True)
class Table(Generic[CellT]):
    """A titled table: ``columns`` over ``rows`` of one cell per column.

    Attributes:
        name: what the rows are (``"Fusion-key collisions"``), a styled
            title, or ``None`` (the caller prints its own).
        columns: the columns.
        rows: every row (front-ends may show the first few and say so).
        gloss: a short explanation after the count, or ``""``.
        more_hint: where to see every row when only the first few are shown.
        unit: what one row is, for the count (``"chunk"``: ``(4 chunks)``);
            ``""``: the bare number (the name says what is counted).
    """

    name: str | Text | None
    columns: Sequence[Column]
    rows: Sequence[Sequence[CellT]]
    gloss: str = ""
    more_hint: str = ""
    unit: str = ""


#: Measures tables (never printed to).
_MEASURE = Console(file=io.StringIO(), width=100_000, color_system=None)


def _cell_width(cell: Cell) -> int:
    return max((cell_len(line) for line in _plain(cell).splitlines()), default=0)


def _longest_word(col: Column, rows: Sequence[Sequence[Cell]], i: int) -> int:
    """The widest word (text between spaces; a :class:`Shaped` cell's
    narrowest piece) of column ``i``, its header included, in cells."""
    return max([_narrowest(col.name)] + [_narrowest(r[i]) for r in rows])


def _natural(cols: Sequence[Column], rows: Sequence[Sequence[Cell]]) -> list[int]:
    """Each column's widest cell (its header included), in cells."""
    return [max([cell_len(c.name)] + [_cell_width(r[i]) for r in rows]) for i, c in enumerate(cols)]


def _fill(cols: Sequence[Column], base: dict[int, int], want: dict[int, int], room: int) -> dict[int, int]:
    """``base`` widths plus what is left of ``room`` shared by the columns'
    ``share``, none above what it wants (``want``): a column that wants less
    than its part leaves the rest to the others (cells left by the rounding
    go to the leftmost)."""
    widths = dict(base)
    extra = room - sum(widths.values())
    left = [i for i in want if widths[i] < want[i]]
    while left and extra > 0:
        shares = sum(max(cols[i].share, 1) for i in left)
        fair = {i: extra * max(cols[i].share, 1) // shares for i in left}
        if not any(fair.values()):
            fair = {i: 1 if n < extra else 0 for n, i in enumerate(left)}
        for i in left:
            add = min(fair[i], want[i] - widths[i])
            widths[i] += add
            extra -= add
        left = [i for i in left if widths[i] < want[i]]
    return widths


def _share_room(
    cols: Sequence[Column], want: dict[int, int], words: dict[int, int], room: int
) -> dict[int, int] | None:
    """Widths (cells) for the free columns of ``want`` (index → widest it
    wants) in ``room`` cells: each what it wants when all fit; else first
    each its longest word (``words``: no word of it is cut) or, when those
    do not all fit, as much of it as an even cut of the room allows (the
    columns with shorter words keep them whole, the widest words are cut),
    then the rest of the room shared by ``share`` (:func:`_fill`). ``None``
    when a column would get less than its ``min_width`` (or, wanting less,
    than what it wants)."""
    floor = {i: min(want[i], words[i]) for i in want}
    if sum(floor.values()) > room:
        cap, left, n = 0, max(room, 0), len(floor)
        for k, f in enumerate(sorted(floor.values())):
            if f * (n - k) > left:
                cap = left // (n - k)
                break
            left -= f
        floor = {i: min(f, cap) for i, f in floor.items()}
    widths = _fill(cols, floor, want, room)
    if any(widths[i] < min(cols[i].min_width, want[i]) for i in want):
        return None
    return widths


def fit_tables(
    table: Table[Cell],
    width: int,
    *,
    box: Box | None = rich_box.SIMPLE_HEAD,
    sections: Sequence[int] = (),
    **table_options: object,
) -> list[RenderableType]:
    """``table`` as one Rich table, or several (the value columns split
    between them) when one would be wider than ``width`` cells: a title
    line (none for the first part when the table's ``name`` is ``None``:
    the caller printed its own; ``(continued)`` over the others), then the
    table, per part. ``sections``: indices of rows a rule goes above (a
    totals row). ``table_options`` go to :class:`rich.table.Table`
    (``pad_edge``, ``header_style``, ...).

    Raises:
        ValueError: a row whose length is not the number of columns.
    """
    return _fit(table, width, box, sections, table_options)[0]


def _fit(
    table: Table[Cell],
    width: int,
    box: Box | None,
    sections: Sequence[int],
    table_options: dict[str, object],
) -> tuple[list[RenderableType], bool]:
    """:func:`fit_tables`' parts, and whether they are one table with every column."""
    title, cols, rows = table.name, table.columns, table.rows
    if any(len(r) != len(cols) for r in rows):
        raise ValueError("every row needs one cell per column")
    natural = _natural(cols, rows)
    keys = [i for i, c in enumerate(cols) if c.kind == "key"]
    values = [i for i, c in enumerate(cols) if c.kind == "value"]
    frees = [i for i, c in enumerate(cols) if c.kind == "free"]
    longest_word = {i: _longest_word(cols[i], rows, i) for i in frees}

    def build(shown: list[int], free_widths: dict[int, int] | None = None) -> RichTable:
        t = RichTable(box=box, expand=False, **table_options)  # type: ignore[arg-type]
        for i in sorted(shown):
            c = cols[i]
            if i in frees:
                t.add_column(c.name, justify=c.justify, width=(free_widths or {}).get(i), overflow="ellipsis")
            else:
                t.add_column(c.name, justify=c.justify, width=natural[i], no_wrap=True)
        for n, row in enumerate(rows):
            if n in sections and n:
                t.add_section()
            t.add_row(*[row[i] for i in sorted(shown)])
        return t

    def needs(shown: list[int], free_widths: dict[int, int] | None = None) -> int:
        return Measurement.get(_MEASURE, _MEASURE.options, build(shown, free_widths)).maximum

    want = {i: min(natural[i], cols[i].max_width or natural[i]) for i in frees}

    def grouped(vals: list[int]) -> list[list[int]]:
        """``vals`` in parts that each fit beside the keys (at least one a part)."""
        groups: list[list[int]] = []
        current: list[int] = []
        for v in vals:
            if current and needs(keys + current + [v]) > width:
                groups.append(current)
                current = []
            current.append(v)
        return groups + [current] if current or not groups else groups

    def free_layout(group: list[int]) -> tuple[list[int], dict[int, int] | None]:
        """The free columns shown beside ``keys + group`` and their widths:
        all that get their ``min_width``, leaving out the smallest share
        (the rightmost of equals) until they do; ``[]`` when none does."""
        active = list(frees)
        while active:
            # the room: measured with each free column 1 cell wide
            room = width - needs(keys + group + active, dict.fromkeys(active, 1)) + len(active)
            widths = _share_room(cols, {i: want[i] for i in active}, longest_word, room)
            if widths is not None:
                return active, widths
            active.remove(min(active, key=lambda i: (cols[i].share, -i)))
        return [], None

    groups = grouped(values)
    first = free_layout(groups[0])
    if frees and not first[0]:
        # No free text fits beside the first part's values: fewer values
        # there (the rest go on in the next parts) when that makes room, so
        # that free text is left out only when even one value column leaves
        # too little for it.
        for k in range(len(groups[0]) - 1, 0, -1):
            layout = free_layout(values[:k])
            if layout[0]:
                groups, first = [values[:k]] + grouped(values[k:]), layout
                break
    if len(groups) > 1:  # as many parts, with the columns shared out evenly when that fits too
        size = -(-len(values) // len(groups))
        even = [values[i : i + size] for i in range(0, len(values), size)]
        if len(even) == len(groups) and all(needs(keys + g) <= width for g in even[1:]):
            layout = free_layout(even[0])
            if needs(keys + even[0]) <= width and len(layout[0]) >= len(first[0]):
                groups, first = even, layout

    if title is None:
        head = None
        continued = Text("(continued)", style="table.title")
    else:
        head = title if isinstance(title, Text) else Text(title, style="table.title")
        continued = head + Text(" (continued)", style=head.style)
    parts: list[RenderableType] = []
    for n, group in enumerate(groups):
        shown, free_widths = keys + group, None
        if n == 0 and first[0]:
            shown, free_widths = shown + first[0], first[1]
        if n:
            parts.append(continued)
        elif head is not None:
            parts.append(head)
        parts.append(build(shown, free_widths))
    return parts, len(groups) == 1 and len(first[0]) == len(frees)


class Fitted:
    """:func:`fit_tables` for the width the renderable is printed at (the
    console's, under 80 when output is redirected): pass what
    :func:`fit_tables` takes, less ``width``. ``instead``: what to print
    when this table does not fit whole (one table, every column shown):
    the same rows with fewer columns (a title stacked over its source)."""

    def __init__(self, table: Table[Cell], *, instead: Fitted | None = None, **options: object) -> None:
        self.table, self.instead, self.options = table, instead, options

    def parts(self, width: int) -> list[RenderableType]:
        """The title lines and tables for ``width`` cells."""
        options = dict(self.options)
        box = options.pop("box", rich_box.SIMPLE_HEAD)
        sections = options.pop("sections", ())
        parts, whole = _fit(self.table, width, box, sections, options)  # type: ignore[arg-type]
        if not whole and self.instead is not None:
            return self.instead.parts(width)
        return parts

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement.get(console, options, Group(*self.parts(options.max_width)))

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield from self.parts(options.max_width)
