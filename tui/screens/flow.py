"""The rank flow (F5, palette "Rank flow"): one table, a row per candidate
and a column per stage, for the pass that answered (and the other pass when
the fuzzy fallback re-ran). Rows and texts come from :mod:`engine.flow` and
:mod:`tui.flowtext`, the same the CLI's ``rankscope search --flow`` prints.

Narrow screens get the compact cells (short headers, ``4↑3``, ``→57``) and
the table scrolls sideways; from 120 columns every column fits in full. The
row under the cursor shows its fate, its journey and its text with the
matched words below the table. Esc or F5 closes it.
"""

from __future__ import annotations

from typing import Mapping

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import DataTable, Footer, Static

from engine.flow import Flow, FlowRow, Fate, row_fate, trace_flows
from engine.model import Trace
from engine.terms import trace_spans

from .. import safe
from ..judging import BADGE_CELLS, badge, grade_words
from ..flowtext import LEGEND, PIN_MARK, cell_style, cell_text, fate_text, fits, flow_title, header, middle_cut
from ..widgets.preview import spans_text

_CLOSE = Binding.Group("Close ", compact=True)
#: Title column width in the table.
TITLE_CELLS = 28
#: Preview characters shown under the table.
PREVIEW_CHARS = 600


class FlowScreen(ModalScreen[None]):
    """The rank flow of one trace.

    Args:
        trace: the search shown in the browser.
        pinned: the pinned chunk's row id (its row is marked), or ``None``.
        absent: a flow row for the pinned chunk when no retriever returned
            it (:class:`engine.flow.Absent`), or ``None``.
        grades: the current query's judgments, row id → grade 0-3: a graded
            chunk's title starts with its badge (``★3``), as in every pane.
    """

    BINDINGS = [
        Binding(
            "escape",
            "close",
            "Close",
            group=_CLOSE,
            id="flow.close",
            tooltip="Close the rank flow; focus returns where it was",
        ),
        Binding("f5", "close", "Close", show=False, id="flow.close-f5"),
    ]

    def __init__(
        self, trace: Trace, pinned: int | None = None, absent=None, *, grades: Mapping[int, int] | None = None
    ) -> None:
        super().__init__()
        self.trace = trace
        self.pinned = pinned
        self.grades: Mapping[int, int] = grades or {}
        self.flows: tuple[Flow, ...] = trace_flows(trace, [absent] if absent is not None else [])
        self._rows: dict[str, list[FlowRow]] = {}
        self.compact = False

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
            with VerticalScroll(id="flow-detail-scroll"):
                yield Static(id="flow-detail")
            yield Static("↑↓ rows · ←→ scroll · Tab next table · Esc/F5 closes", classes="hint")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.compact = not all(fits(f, self.app.size.width - 4) for f in self.flows)
        for i, flow in enumerate(self.flows):
            self._fill(self.query_one(f"#flow-table-{i}", DataTable), flow, str(i))
        self.query_one("#flow-legend", Static).update(LEGEND if self.compact else "")
        self.query_one("#flow-legend", Static).display = self.compact
        first = self.query_one("#flow-table-0", DataTable)
        first.focus()
        if self.flows[0].rows:
            self._show(self.flows[0], self.flows[0].rows[0])
        else:
            self.query_one("#flow-detail", Static).update("No candidate entered this pass.")

    def _fill(self, table: DataTable, flow: Flow, key: str) -> None:
        compact = self.compact
        table.add_column("row", key="row")
        table.add_column("title", key="title", width=TITLE_CELLS if not compact else 16)
        for sid in flow.stages:
            table.add_column(header(sid, compact), key=sid)
        self._rows[key] = list(flow.rows)
        width = TITLE_CELLS if not compact else 16
        graded = any(row.rowid in self.grades for row in flow.rows)
        for n, row in enumerate(flow.rows):
            mark = PIN_MARK if row.rowid == self.pinned else ""
            cells = [Text(cell_text(c, compact), style=cell_style(c)) for c in row.cells]
            title = Text(middle_cut(safe.line(row.title), width - (BADGE_CELLS if graded else 0)))
            title.stylize("bold" if mark else "")
            table.add_row(
                Text(mark + str(row.rowid), justify="right", style="bold" if mark else ""),
                badge(self.grades.get(row.rowid)) + title if graded else title,
                *cells,
                key=f"{key}:{n}",
            )
        if not flow.rows:
            table.add_row("", Text("(no candidate entered this pass)", style="italic"), *[""] * len(flow.stages))
        table.styles.height = 1 + max(len(flow.rows), 1)

    def _show(self, flow: Flow, row: FlowRow) -> None:
        """The row's fate, its path in words and its text with the matches."""
        fate = row_fate([f for f in self.flows if not f.shadow], row.rowid) if not flow.shadow else None
        if fate is None:
            fate = Fate(row.rowid, row.final if flow.answering else None, row.exit, flow.pass_name)
        t = Text()
        t.append(f"row {row.rowid} ", style="bold")
        t.append(safe.line(row.title), style="bold")
        t.append(f" · {safe.line(row.source)}\n")
        t.append(fate_text(fate) + "\n")
        if row.rowid in self.grades:
            t.append(f"graded {grade_words(self.grades[row.rowid])} for this query\n")
        steps = [f"{header(c.stage)} {cell_text(c)}" for c in row.cells if c.state in ("at", "left")]
        t.append(" → ".join(steps) + "\n\n", style="")
        spans = trace_spans(self.trace, row.rowid)
        if spans is not None:
            t.append("reverse: Porter token match · underline: trigram substring match\n", style="dim")
            t.append_text(spans_text(spans)[:PREVIEW_CHARS])
        self.query_one("#flow-detail", Static).update(t)

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
            self._show(self.flows[int(table_key)], rows[idx])

    def action_close(self) -> None:
        """Close the flow view."""
        self.dismiss(None)
