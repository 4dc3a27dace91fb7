"""The rank flow (F5, palette "Rank flow"): one table, a row per candidate
and a column per stage, for the pass that answered (and the other pass when
the fuzzy fallback re-ran). Rows and texts come from :mod:`engine.lab.flow` and
:mod:`tui.present.flowtext`, the same the CLI's ``rankscope search --flow`` prints.

Narrow screens get the compact cells (short headers, ``4↑3``, ``→57``) with
the legend under the tables, or, on a screen too short for the legend and
every row (60x18), at the end of the scrolling text; from 120 columns every
column fits in full.
Either way the title column gets the width the other columns leave (cut in
the middle so the last heading stays, :func:`tui.present.cut.middle_cut`); only a
screen too narrow for even the compact table scrolls it sideways.

Under the tables, always in view: the highlighted row's chunk, its fate
(its final position and what holds it there: the stage that put it under
the row above and over the row below, :func:`engine.lab.explain.neighbours`;
or the stage where it left and why) and its grade; below that, in a box
that scrolls, its path in words, the numbers of those decisions and its
text with the matched words. The tables get the rows that leave room for those (each
scrolls its own rows), so at 80x24 the fate line and the key hints show.

``p`` pins the highlighted row's chunk in the browser (again: unpins it),
as the why-not finder does; its row is marked ``▸`` at once. ``0``-``3``
grade the chunk for the query and ``x`` removes its grade, through the
browser's own grading (:meth:`tui.browser.screens.browser.BrowserScreen.grade_row`:
the browser follows the chunk); the badge shows the grade once recorded. Keys come from :mod:`tui.browser.actions`
(owner ``"flow"``). Esc or F5 closes the view.
"""

from __future__ import annotations

from typing import Callable, Mapping

from rich.cells import cell_len
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.events import Resize
from textual.screen import ModalScreen
from textual.widgets import DataTable, Static

from engine.lab.explain import neighbours
from engine.pipeline.paths import Fate, fate
from engine.lab.flow import Absent, Flow, FlowRow, trace_flows
from engine.pipeline.trace import Trace
from engine.lab.terms import trace_spans

from tui.present import safe
from tui.present.anatomy import position_brief, position_words
from tui.browser.actions import bindings, close_keys
from tui.present.flowtext import (
    LEGEND,
    MIN_TITLE,
    PIN_MARK,
    cell_style,
    cell_text,
    fate_text,
    fits,
    flow_title,
    flow_widths,
    header,
)
from tui.present.cut import distinct_cuts, end_cut, middle_cut
from tui.browser.judging import BADGE_CELLS, badge, grade_words
from tui.browser.widgets.preview import spans_text
from tui.browser.widgets.footer import KeyFooter

#: Preview characters shown under the table.
PREVIEW_CHARS = 600
#: Columns the dialog takes around its content (thick border and padding, each side).
CHROME_COLUMNS = 4
#: Rows the screen takes around the dialog's content (its thick border, top
#: and bottom, and the footer).
CHROME_ROWS = 3
#: Most rows a table shows (its header included) when the screen has room
#: for more: the rest of the height goes to the text.
TABLE_MAX_ROWS = 14
#: Fewest rows a table shows (its header and one row).
TABLE_MIN_ROWS = 2
#: Rows (its header included) a table keeps before the legend gives up its
#: place under the tables and moves to the end of the scrolling text.
LEGEND_MIN_TABLE_ROWS = 4
#: Rows kept for the scrolling text (the row's path and its text) before the tables get theirs.
DETAIL_MIN_ROWS = 2
#: Columns a table's vertical scroll bar takes (Textual's default ``scrollbar-size-vertical``).
SCROLLBAR_COLUMNS = 2
#: The title cell of a pass no candidate entered.
NO_CANDIDATE = "(no candidate entered this pass)"
#: The same where the title column is narrower.
NO_CANDIDATE_SHORT = "(no candidate)"
#: The key line under the text (``←→ scroll`` joins it when a table scrolls sideways).
HINTS = "↑↓ rows · Tab next table · p pin/unpin · 0-3 grade, x ungrade · Esc/F5 close"
SIDEWAYS_HINT = "←→ scroll · "

#: Pins a chunk (row id) in the browser; ``None`` unpins.
PinFn = Callable[[int | None], None]
#: Grades through the browser: (trace, pass name, row id, grade 0-3 or -1) →
#: True when the chunk's grade is now that (False: refused, the browser said why).
GradeFn = Callable[[Trace, str, int, int], bool]


def rowid_width(flow: Flow) -> int:
    """The row id column's width in cells: ``row``, or the longest row id
    with room for the pin mark (``▸131``), so pinning never widens it."""
    return max([cell_len("row")] + [len(str(r.rowid)) + cell_len(PIN_MARK) for r in flow.rows])


def title_room(flow: Flow, width: int, compact: bool) -> int:
    """Cells the title column can have when the table is ``width`` cells
    wide: what the row id and stage columns (each with one cell of padding
    either side, as :class:`~textual.widgets.DataTable` draws them) and the
    title's own padding leave. May be below :data:`~tui.present.flowtext.MIN_TITLE`
    or negative (the table then scrolls sideways)."""
    stages = sum(w + 2 for w in flow_widths(flow, compact))
    return width - stages - (rowid_width(flow) + 2) - 2


def title_width(flow: Flow, room: int, graded: bool) -> int:
    """The title column's width: the longest title (with its grade badge
    when the flow has grades) if it fits in ``room``, else ``room``, never
    under :data:`~tui.present.flowtext.MIN_TITLE`."""
    extra = BADGE_CELLS if graded else 0
    titles = [cell_len(safe.line(r.title)) + extra for r in flow.rows] or [cell_len(NO_CANDIDATE)]
    longest = max([cell_len("title")] + titles)
    return max(MIN_TITLE, min(longest, room))


def table_heights(needs: list[int], budget: int) -> list[int]:
    """Each table's height in rows: what it ``needs`` (its header and its
    rows, at most :data:`TABLE_MAX_ROWS`), the tallest cut first while the
    sum is over ``budget``, none under :data:`TABLE_MIN_ROWS` (a budget too
    small for that is overrun)."""
    heights = [max(TABLE_MIN_ROWS, min(n, TABLE_MAX_ROWS)) for n in needs]
    while sum(heights) > budget:
        tallest = max(range(len(heights)), key=lambda i: heights[i])
        if heights[tallest] <= TABLE_MIN_ROWS:
            break
        heights[tallest] -= 1
    return heights


class FlowScreen(ModalScreen[None]):
    """The rank flow of one trace.

    Args:
        trace: the search shown in the browser.
        pinned: the pinned chunk's row id (its row is marked), or ``None``.
        absent: a flow row for the pinned chunk when no retriever returned
            it (:class:`engine.lab.flow.Absent`), or ``None``.
        selected: the chunk selected in the browser (row id): the cursor
            starts on the pinned chunk's row, else on this one, else on the first.
        grades: the current query's judgments, row id → grade 0-3: a graded
            chunk's title starts with its badge (``★3``), as in every pane.
        pin: pins a chunk in the browser (p).
        grade: grades a chunk through the browser (0-3, x).
    """

    BINDINGS = [
        *close_keys("flow", "the rank flow"),
        Binding("f5", "close", "Close", show=False, id="flow.close-f5"),
        *bindings("flow"),  # p: pin (tui.browser.actions)
    ]

    def __init__(
        self,
        trace: Trace,
        pinned: int | None = None,
        absent: Absent | None = None,
        *,
        pin: PinFn,
        grade: GradeFn,
        grades: Mapping[int, int] | None = None,
        selected: int | None = None,
    ) -> None:
        super().__init__()
        self.trace = trace
        self.pin = pin
        self.grade = grade
        self.pinned = pinned
        #: The row the cursor starts on: the pinned chunk, else ``selected`` (the chunk
        #: selected in the browser), else the first row.
        self.start_rowid = pinned if pinned is not None else selected
        #: A copy: grading from the flow updates it.
        self.grades: dict[int, int] = dict(grades or {})
        self.flows: tuple[Flow, ...] = trace_flows(trace, [absent] if absent is not None else [])
        self._rows: dict[str, list[FlowRow]] = {}
        self.compact = False
        #: Per table: the (compact, title width) it was filled with.
        self._shapes: dict[int, tuple[bool, int]] = {}
        #: The row the text below the tables shows: (flow index, row).
        self._shown: tuple[int, FlowRow] | None = None
        #: The legend ends the scrolling text (a screen too short for it under the tables).
        self.legend_inline = False
        #: :meth:`_held_by` per (flow index, row id).
        self._held: dict[tuple[int, int], tuple[str, str]] = {}

    def compose(self) -> ComposeResult:
        with Vertical(id="flow-dialog", classes="dialog"):
            yield Static(
                Text(f"Rank flow · {safe.line(self.trace.params.query)!r} · layer {self.trace.layer}", style="bold"),
                classes="dialog-title",
            )
            for i, flow in enumerate(self.flows):
                yield Static(
                    Text(safe.line(flow_title(flow)), style="bold" if flow.answering else ""), classes="flow-title"
                )
                yield DataTable(id=f"flow-table-{i}", cursor_type="row", zebra_stripes=False, classes="flow-table")
            yield Static(id="flow-legend", classes="hint")
            yield Static(id="flow-detail")
            with VerticalScroll(id="flow-text-scroll"):
                yield Static(id="flow-text")
            yield Static(HINTS, id="flow-hints", classes="hint")
        yield KeyFooter(compact=True)

    def on_mount(self) -> None:
        self._layout()
        table, index, row = 0, 0, None
        for i, flow in enumerate(self.flows):
            n = next((n for n, r in enumerate(flow.rows) if r.rowid == self.start_rowid), None)
            if n is not None:
                table, index, row = i, n, flow.rows[n]
                break
        focus = self.query_one(f"#flow-table-{table}", DataTable)
        focus.focus()
        if row is not None:
            focus.move_cursor(row=index)
            self._show(table, row)
        elif self.flows[0].rows:
            self._show(0, self.flows[0].rows[0])
        else:
            self.query_one("#flow-detail", Static).update("No candidate entered this pass.")

    def on_resize(self, event: Resize) -> None:
        self._layout()

    # ── layout ─────────────────────────────────────────────────────────

    @property
    def content_width(self) -> int:
        """Cells inside the dialog (the screen's width less its border and padding)."""
        return max(self.app.size.width - CHROME_COLUMNS, 1)

    def _graded(self, flow: Flow) -> bool:
        return any(row.rowid in self.grades for row in flow.rows)

    def _fate_rows(self, width: int) -> int:
        """Rows the fate block needs for the row that needs most (so moving
        the cursor never moves the tables): the chunk line, its fate
        wrapped at ``width`` and, when graded, its grade."""
        console = self.app.console
        most = 1
        for i, flow in enumerate(self.flows):
            for row in flow.rows:
                fate = len(Text(self._fate_line(i, row)).wrap(console, width))
                most = max(most, 1 + fate + (1 if row.rowid in self.grades else 0))
        return most

    def _held_by(self, index: int, row: FlowRow) -> tuple[str, str]:
        """What holds the row at its place in its pass's answer: the stage
        that put it under the row above and over the row below, briefly
        and with the numbers (:func:`tui.present.anatomy.position_brief`,
        :func:`tui.present.anatomy.position_words`); ``("", "")`` for a row
        not in that answer."""
        if row.final is None:
            return "", ""
        key = (index, row.rowid)
        if key not in self._held:
            run = self.trace.fuzzy.rerun if self.flows[index].pass_name == "fuzzy" else self.trace.first
            above, below = neighbours(run, row.rowid) if run is not None else (None, None)
            self._held[key] = (
                position_brief(above, below, row.rowid),
                position_words(row.final, above, below, row.rowid),
            )
        return self._held[key]

    def _fate_line(self, index: int, row: FlowRow) -> str:
        """The fate, and for a row in the answer what holds it there."""
        brief, _ = self._held_by(index, row)
        return fate_text(self._fate(index, row)) + (f": {brief}" if brief else "")

    def _layout(self) -> None:
        """Size the tables to the screen: compact cells when the full ones
        do not fit, the title column as wide as the other columns leave,
        and table heights that leave the fate block, the key hints and
        :data:`DETAIL_MIN_ROWS` of text in view. A table whose shape
        changed is filled again (its cursor row kept)."""
        width = self.content_width
        self.compact = compact = not all(fits(f, width) for f in self.flows)
        legend_rows = len(Text(LEGEND).wrap(self.app.console, width)) if compact else 0
        rooms = [title_room(f, width, compact) for f in self.flows]
        sideways = [room < MIN_TITLE for room in rooms]  # a horizontal scroll bar takes a row
        fixed = 1 + len(self.flows) + self._fate_rows(width) + 1  # titles, fate, hints
        budget = self.app.size.height - CHROME_ROWS - fixed - DETAIL_MIN_ROWS
        needs = [1 + max(len(f.rows), 1) for f in self.flows]
        wanted = [min(n, TABLE_MAX_ROWS) + bar for n, bar in zip(needs, sideways)]
        # the legend stands under the tables unless it would leave a table fewer than
        # LEGEND_MIN_TABLE_ROWS rows (a short screen): then it ends the scrolling text
        with_legend = table_heights(wanted, budget - legend_rows)
        legend_inline = bool(legend_rows) and any(
            h < min(w, LEGEND_MIN_TABLE_ROWS) for h, w in zip(with_legend, wanted)
        )
        legend = self.query_one("#flow-legend", Static)
        legend.update(LEGEND if compact and not legend_inline else "")
        legend.display = compact and not legend_inline
        changed = legend_inline != self.legend_inline
        self.legend_inline = legend_inline
        heights = table_heights(wanted, budget - (0 if legend_inline else legend_rows))
        self.query_one("#flow-hints", Static).update(
            HINTS.replace("Tab", SIDEWAYS_HINT + "Tab") if any(sideways) else HINTS
        )
        for i, flow in enumerate(self.flows):
            table = self.query_one(f"#flow-table-{i}", DataTable)
            scrolls = heights[i] - sideways[i] < needs[i]
            shape = (compact, title_width(flow, rooms[i] - (SCROLLBAR_COLUMNS if scrolls else 0), self._graded(flow)))
            if self._shapes.get(i) != shape:
                self._fill(table, flow, i, *shape)
            table.styles.height = heights[i]
        if self._shown is not None:
            self._show(*self._shown)  # the chunk line is cut to the width; the legend may have moved
        elif changed:
            self._show_legend_only()

    def _fill(self, table: DataTable[Text | str], flow: Flow, index: int, compact: bool, title_w: int) -> None:
        """(Re)fill ``table`` with ``flow``'s rows, keeping its cursor row."""
        cursor = table.cursor_row if table.row_count else 0
        table.clear(columns=True)
        self._shapes[index] = (compact, title_w)
        key = str(index)
        table.add_column("row", key="row", width=rowid_width(flow))
        table.add_column("title", key="title", width=title_w)
        for sid in flow.stages:
            table.add_column(header(sid, compact), key=sid)
        self._rows[key] = list(flow.rows)
        graded = self._graded(flow)
        cuts = self._title_cuts(flow, title_w, graded)
        for n, row in enumerate(flow.rows):
            cells = [Text(cell_text(c, compact), style=cell_style(c)) for c in row.cells]
            table.add_row(self._id_cell(row), self._title_cell(row, cuts, graded), *cells, key=f"{key}:{n}")
        if not flow.rows:
            empty = end_cut(
                Text(NO_CANDIDATE if cell_len(NO_CANDIDATE) <= title_w else NO_CANDIDATE_SHORT, style="italic"), title_w
            )
            table.add_row("", empty, *[""] * len(flow.stages))
        if cursor:
            table.move_cursor(row=min(cursor, table.row_count - 1), animate=False)

    def _id_cell(self, row: FlowRow) -> Text:
        mark = PIN_MARK if row.rowid == self.pinned else ""
        return Text(mark + str(row.rowid), justify="right", style="bold" if mark else "")

    @staticmethod
    def _title_cuts(flow: Flow, width: int, graded: bool) -> dict[str, str]:
        """Every title of ``flow`` cut for a title column ``width`` cells wide,
        titles that differ kept different (:func:`tui.present.cut.distinct_cuts`)."""
        titles = [safe.line(r.title) for r in flow.rows]
        return distinct_cuts(titles, width - (BADGE_CELLS if graded else 0))

    def _title_cell(self, row: FlowRow, cuts: dict[str, str], graded: bool) -> Text:
        title = Text(cuts[safe.line(row.title)])
        title.stylize("bold" if row.rowid == self.pinned else "")
        return badge(self.grades.get(row.rowid)) + title if graded else title

    def _remark(self, rowid: int | None) -> None:
        """Redraw the row id and title cells of chunk ``rowid``'s rows (its pin mark)."""
        if rowid is None:
            return
        for i, flow in enumerate(self.flows):
            table = self.query_one(f"#flow-table-{i}", DataTable)
            _, title_w = self._shapes[i]
            graded = self._graded(flow)
            cuts = self._title_cuts(flow, title_w, graded)
            for n, row in enumerate(self._rows.get(str(i), [])):
                if row.rowid == rowid:
                    table.update_cell(f"{i}:{n}", "row", self._id_cell(row))
                    table.update_cell(f"{i}:{n}", "title", self._title_cell(row, cuts, graded))

    # ── the highlighted row ────────────────────────────────────────────

    def _fate(self, index: int, row: FlowRow) -> Fate:
        flow = self.flows[index]
        known = fate(self.trace, row.rowid) if not flow.shadow else None
        return known or Fate(row.rowid, row.final if flow.answering else None, row.exit, flow.pass_name)

    def _show(self, index: int, row: FlowRow) -> None:
        """The row's chunk, fate and grade (always in view), then its path
        in words and its text with the matches (scrolling)."""
        self._shown = (index, row)
        width = self.content_width
        pinned = row.rowid == self.pinned
        head = f"{PIN_MARK} " * pinned + f"row {row.rowid} "
        tail = f" · {safe.line(row.source)}" + " · pinned" * pinned
        title = middle_cut(safe.line(row.title), max(width - cell_len(head) - cell_len(tail), MIN_TITLE))
        detail = Text(head + title, style="bold")
        detail.append(tail)
        detail = end_cut(detail, width)  # one line
        detail.append("\n" + self._fate_line(index, row))
        if row.rowid in self.grades:
            detail.append(f"\ngraded {grade_words(self.grades[row.rowid])} for this query")
        self.query_one("#flow-detail", Static).update(detail)
        t = Text()
        steps = [f"{header(c.stage)} {cell_text(c)}" for c in row.cells if c.state in ("at", "left")]
        t.append(" → ".join(steps) + "\n")
        _, held = self._held_by(index, row)
        if held:
            t.append(held + "\n")
        t.append("\n")
        spans = trace_spans(self.trace, row.rowid)
        if spans is not None:
            t.append("reverse: Porter token match · underline: trigram substring match\n", style="dim")
            t.append_text(spans_text(spans)[:PREVIEW_CHARS])
        if self.legend_inline:
            t.append("\n\nlegend: " + LEGEND, style="dim")
        self.query_one("#flow-text", Static).update(t)

    def _show_legend_only(self) -> None:
        """The scrolling text when no row is shown (a pass without
        candidates): only the legend, when it has moved there."""
        self.query_one("#flow-text", Static).update(
            Text("legend: " + LEGEND, style="dim") if self.legend_inline else ""
        )

    def highlighted(self) -> FlowRow | None:
        """The row under the cursor of the focused table (the first table's
        when none has focus), or ``None`` (a pass without candidates)."""
        focused = self.focused
        table = focused if isinstance(focused, DataTable) else self.query_one("#flow-table-0", DataTable)
        key = (table.id or "").rpartition("-")[2]
        rows = self._rows.get(key, [])
        return rows[table.cursor_row] if rows and 0 <= table.cursor_row < len(rows) else None

    @on(DataTable.RowHighlighted)
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        key = event.row_key.value or ""
        table_key, _, n = key.partition(":")
        if not n:
            return
        rows = self._rows.get(table_key, [])
        idx = int(n)
        if 0 <= idx < len(rows):
            self._show(int(table_key), rows[idx])

    # ── actions ────────────────────────────────────────────────────────

    def action_pin(self) -> None:
        """p: pin the highlighted row's chunk in the browser (on the pinned
        chunk: unpin it); its rows are marked at once."""
        row = self.highlighted()
        if row is None:
            self.app.notify("No row to pin: no candidate entered this pass.", severity="warning")
            return
        before = self.pinned
        self.pinned = None if row.rowid == before else row.rowid
        self.pin(self.pinned)
        self._remark(before)
        self._remark(self.pinned)
        if self._shown is not None:
            self._show(*self._shown)

    def action_grade(self, grade: int) -> None:
        """0-3: grade the highlighted row's chunk for this query (-1, x:
        remove its grade), through the browser's grading; its badge follows."""
        row = self.highlighted()
        if row is None or not row.entered:
            what = "no candidate entered this pass" if row is None else f"no retriever returned row {row.rowid}"
            self.app.notify(f"Nothing to grade here: {what}.", severity="warning")
            return
        focused = self.focused
        index = int(focused.id.rpartition("-")[2]) if isinstance(focused, DataTable) and focused.id else 0
        if not self.grade(self.trace, self.flows[index].pass_name, row.rowid, grade):
            return
        recorded = None if grade < 0 else grade
        if self.grades.get(row.rowid) == recorded:
            return
        if recorded is None:
            self.grades.pop(row.rowid, None)
        else:
            self.grades[row.rowid] = recorded
        self._shapes.clear()  # badges take room in the title column: fill again
        self._layout()

    def action_close(self) -> None:
        """Close the flow view."""
        self.dismiss(None)
