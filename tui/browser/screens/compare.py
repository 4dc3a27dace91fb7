"""Compare: the browser's query under two pipeline variants, A and B.

A is the reference unless its spec is edited; B is chosen field by field
(fusion key, rerank, fuzzy policy, retrievers, rrf_k, fts_limit and the two
pool sizes). One table lines the two final lists up chunk by chunk: the
position in A and in B and a move marker in words and symbols (↑n, ↓n, =,
new, gone), then the counts. Enter (or F8) on a row asks "why?" for that
chunk under the run that lacks it.

F6 turns the table to the queries of the store's query file (the one
``rankscope qrels query-file`` named for this store), each compared under A and B,
the most changed first: lowest rank-biased overlap of the two final lists,
then lowest Jaccard@k (:meth:`engine.lab.compare.SetComparison.most_changed_first`).
Enter on a query shows its chunks; F6 goes back and forth.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from rich.cells import cell_len
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.timer import Timer
from textual.worker import get_current_worker
from textual.widgets import DataTable, Input, Label, Select, Static

from engine import SearchParams
from engine.lab.compare import ChunkComparison, CompareCounts, Comparison, SetComparison, compare_set, compare_traces
from engine.pipeline.trace import Trace
from engine.pipeline.variants import BY_KEY, SETTINGS, Variant, parse_variant, variant_spec

from tui.present import safe
from tui.browser.actions import close_keys
from tui.browser.cmdline import append_params
from tui.present.describe import COMPARE_COLUMNS, ComparisonDescription, counts_line, describe_comparison, line_text
from tui.present.cut import end_cut, middle_cut
from tui.browser.link import BrowserLink
from tui.browser.screens.browser import BrowserScreen
from tui.browser.screens.work import WorkScreen
from tui.browser.widgets.footer import KeyFooter


#: B's form fields, from the variant table: (spec key, Variant field, choices) of
#: each choice, then (spec key, Variant field) of each number.
SELECT_FIELDS = tuple((s.key, s.name, s.choices) for s in SETTINGS if s.choices)
INT_FIELDS = tuple((s.key, s.name) for s in SETTINGS if not s.choices)
#: Seconds after the last keystroke in a number field before comparing.
DEBOUNCE_S = 0.2
#: The detail columns, in the order they are added while the titles keep
#: :data:`TEXT_MIN` cells: the fused scores, then the rerank boosts (both
#: fit at 120 columns).
DETAIL_PAIRS = (("rrf A", "rrf B"), ("boost A", "boost B"))
#: The least room title and source keep together before a detail pair is left out.
TEXT_MIN = 50
#: Title and source are cut in the middle: a title keeps its last heading
#: (``ferryctl … > publish > Example``), a path its file name.
CUT_AT = {"title": " > ", "source": "/"}
#: Cells between two columns (the table's cell padding, both sides).
GAP = 2
#: What the queries view says when the store names no query file.
NO_QUERY_FILE = (
    "No query file for this store: `rankscope qrels query-file QUERIES.json --db STORE` names one "
    "(its queries are then compared here, most changed first)."
)


class _Cancelled(Exception):
    """A newer request replaced the running query-file comparison."""


def counts_text(counts: CompareCounts, overlap: float | None = None) -> Text:
    """``improved 0 · worsened 2 · unchanged 1 · only in A 2 · only in B 2 · overlap 0.20``
    (:func:`tui.present.describe.counts_line`)."""
    return line_text(counts_line(counts, overlap))


def variant_from_form(selects: dict[str, str], numbers: dict[str, str]) -> Variant:
    """B's variant from the form values (spec key → text). An empty number
    field means the reference (``default`` for the sizes).

    Raises:
        ValueError: a number is not allowed (the message names the field).
    """
    parts = [f"{key}={value}" for key, value in selects.items()]
    for key, value in numbers.items():
        value = value.strip()
        if not value:
            if not BY_KEY[key].optional:
                continue
            value = "default"
        parts.append(f"{key}={value}")
    return parse_variant(",".join(parts))


class CompareScreen(WorkScreen[None]):
    """Run the browser's query under variants A and B and line the answers up
    (both searches in this screen's worker).

    It opens on the table (Enter on a row asks why), which is shown once the
    first comparison arrives; when neither run returns anything the focus
    goes to B's first field instead. Tab moves to the form."""

    BROWSER_KEYS = False
    WORK = {"compare": "Compare", "compare-queries": "Comparing the query file"}

    @dataclass
    class Compared(Message):
        """A comparison is ready; ``seq``: the request's number (older ones are dropped)."""

        seq: int
        comparison: Comparison

    @dataclass
    class VariantsChosen(Message):
        """The variants changed (the app keeps them for the next opening)."""

        variant_a: Variant
        variant_b: Variant

    @dataclass
    class QueriesCompared(Message):
        """The query file compared (most changed first), or why it was not:
        ``problem``. ``seq``: the request's number (older ones are dropped)."""

        seq: int
        queries: SetComparison | None
        problem: str = ""
        source: str = ""

    #: Nothing is focused on mount (the table is not shown yet): see :meth:`show_comparison`.
    AUTO_FOCUS = ""

    BINDINGS = [
        *close_keys("compare", "the comparison", toggle="f7"),
        Binding(
            "f8",
            "why_row",
            "Why this row?",
            id="compare.why",
            tooltip="Explain the highlighted chunk under the run that lacks it (B, or A for a new one)",
        ),
        Binding(
            "f6",
            "toggle_queries",
            "Queries",
            id="compare.queries",
            tooltip="The store's query file under A and B, most changed first (RBO, Jaccard@10); Enter opens one",
        ),
    ]

    def __init__(
        self,
        link: BrowserLink,
        params: SearchParams,
        variant_a: Variant | None = None,
        variant_b: Variant | None = None,
    ) -> None:
        super().__init__()
        self.link = link
        self.params = params
        self.cursor_blink = link.cursor_blink
        self.variant_a = variant_a or Variant()
        self.variant_b = variant_b or Variant(fusion_key="rowid")
        self.comparison: Comparison | None = None
        self.description: ComparisonDescription | None = None
        self._seq = 0
        self._shown_seq = 0
        self._requested: tuple[SearchParams, SearchParams] | None = None
        self._timer: Timer | None = None
        self._widths: dict[str, int] = {}
        self._ready = False
        #: ``"chunks"`` (this query, chunk by chunk) or ``"queries"`` (the query file, most changed first).
        self.view = "chunks"
        self.query_set: SetComparison | None = None
        self.query_file = ""
        self._qseq = 0
        self._qshown = 0
        self._q_requested: tuple[Variant, Variant] | None = None

    # ── layout ─────────────────────────────────────────────────────────

    def compose(self) -> ComposeResult:
        b = self.variant_b
        yield Static(id="compare-title", classes="lab-title")
        with Vertical(id="compare-form"):
            with Horizontal(classes="lab-row"):
                yield Label("B", classes="lab-side")
                for key, name, choices in SELECT_FIELDS[:3]:
                    yield from self._choice(key, choices, getattr(b, name))
            with Horizontal(classes="lab-row"):
                yield Label("", classes="lab-side")
                for key, name, choices in SELECT_FIELDS[3:]:
                    yield from self._choice(key, choices, getattr(b, name))
                for key, name in INT_FIELDS[:2]:
                    yield from self._number(key, getattr(b, name))
            with Horizontal(classes="lab-row"):
                yield Label("", classes="lab-side")
                for key, name in INT_FIELDS[2:]:
                    yield from self._number(key, getattr(b, name))
                yield Label("A", classes="lab-label lab-a")
                yield Input(
                    variant_spec(self.variant_a),
                    id="a-spec",
                    compact=True,
                    placeholder="reference",
                    tooltip="Variant A as a spec, e.g. reference or key=rowid,rrf_k=10 (Enter applies)",
                )
        yield Static("", id="compare-error", classes="error")
        yield Static("", id="compare-counts")
        with Vertical(id="compare-box"):
            yield DataTable(id="compare-table", cursor_type="row", zebra_stripes=False)
            yield DataTable(id="compare-queries", cursor_type="row", zebra_stripes=False)
            yield Static("", id="compare-empty")
        yield Static("", id="compare-notes", classes="hint")
        yield KeyFooter(compact=True)

    def _choice(self, key: str, choices: Sequence[str], value: str) -> ComposeResult:
        yield Label(key, classes="lab-label")
        yield Select(
            [(c, c) for c in choices],
            value=value,
            allow_blank=False,
            compact=True,
            id=f"b-{key}",
            classes=f"lab-select lab-{key}",
        )

    def _number(self, key: str, value: int | None) -> ComposeResult:
        yield Label(key, classes="lab-label")
        yield Input(
            "" if value is None else str(value),
            id=f"b-{key}",
            compact=True,
            type="integer",
            placeholder="auto",
            classes="lab-number",
            tooltip=f"{key}: a whole number" + ("; empty = the reference formula" if BY_KEY[key].optional else ""),
        )

    def on_mount(self) -> None:
        for field in self.query(Input):
            field.cursor_blink = self.cursor_blink
        self.query_one("#compare-error", Static).display = False
        self.table.display = False
        self.queries_table.display = False
        self.query_one("#compare-empty", Static).update(Text("comparing…", style="italic"))
        self._show_title()
        self._ready = True
        self.run_compare(force=True)

    @property
    def table(self) -> DataTable[Text]:
        """The A-vs-B table."""
        return self.query_one("#compare-table", DataTable)

    @property
    def queries_table(self) -> DataTable[Text]:
        """The query file's queries, most changed first (F6)."""
        return self.query_one("#compare-queries", DataTable)

    def _show_title(self) -> None:
        p = self.params
        t = Text("Compare ", style="bold")
        t.append("A ", style="bold")
        t.append(variant_spec(self.variant_a))
        t.append("  vs  ", style="dim")
        t.append("B ", style="bold")
        t.append(variant_spec(self.variant_b), style="bold underline")
        t.append(f" · {safe.line(p.query)!r}" if p.query else " · (empty query)")
        append_params(t, p)
        self.query_one("#compare-title", Static).update(t)

    # ── the form ───────────────────────────────────────────────────────

    def form_variant_b(self) -> Variant:
        """B's variant from the form. Raises ValueError on a bad number."""
        selects = {key: str(self.query_one(f"#b-{key}", Select).value) for key, _, _ in SELECT_FIELDS}
        numbers = {key: self.query_one(f"#b-{key}", Input).value for key, _ in INT_FIELDS}
        return variant_from_form(selects, numbers)

    def form_variant_a(self) -> Variant:
        """A's variant from its spec. Raises ValueError on a bad spec."""
        return parse_variant(self.query_one("#a-spec", Input).value)

    def _read_form(self) -> bool:
        error = self.query_one("#compare-error", Static)
        try:
            side = "A"
            a = self.form_variant_a()
            side = "B"
            b = self.form_variant_b()
        except ValueError as exc:
            error.update(Text(f"✗ {side} not applied: {safe.line(str(exc))}", style="bold"))
            error.display = True
            return False
        error.update("")
        error.display = False
        self.variant_a, self.variant_b = a, b
        self.post_message(self.VariantsChosen(a, b))  # the app keeps them for the next opening
        self._show_title()
        return True

    @on(Select.Changed)
    def _select_changed(self, event: Select.Changed) -> None:
        event.stop()
        if self._ready and self._read_form():
            self.run_compare()
            self._rerun_queries()

    @on(Input.Changed)
    def _input_changed(self, event: Input.Changed) -> None:
        event.stop()
        if not self._ready:
            return
        if self._timer is not None:
            self._timer.stop()
        self._timer = self.set_timer(DEBOUNCE_S, self._debounced)

    def _debounced(self) -> None:
        self._timer = None
        if self._read_form():
            self.run_compare()
            self._rerun_queries()

    @on(Input.Submitted)
    def _input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        if self._read_form():
            self.run_compare(force=True)
            self._rerun_queries()
            table = self.queries_table if self.view == "queries" else self.table
            if table.display:
                table.focus()

    # ── comparing ──────────────────────────────────────────────────────

    def run_compare(self, force: bool = False) -> None:
        """Compare the browser's query under A and B (in a thread worker)."""
        pa = replace(self.params, variant=self.variant_a)
        pb = replace(self.params, variant=self.variant_b)
        if not force and self._requested == (pa, pb):
            return
        self._requested = (pa, pb)
        self._seq += 1
        self.query_one("#compare-box").border_subtitle = "comparing…"
        self._compare(pa, pb, self._seq)

    @work(thread=True, exclusive=True, exit_on_error=False, group="compare")
    def _compare(self, params_a: SearchParams, params_b: SearchParams, seq: int) -> None:
        """Search ``params_a`` and ``params_b`` on one connection; post :class:`Compared`."""
        worker = get_current_worker()
        store, search = self.link.store, self.link.search_fn
        with store.thread_connection() as conn:
            trace_a = search(store, params_a, conn=conn)
            if worker.is_cancelled:
                return
            trace_b = search(store, params_b, conn=conn)
        if not worker.is_cancelled:
            self.post_message(self.Compared(seq, compare_traces(trace_a, trace_b)))

    @on(BrowserScreen.ParamsChanged)
    def _params_changed(self, event: BrowserScreen.ParamsChanged) -> None:
        self.params = replace(event.params, variant=self.params.variant)
        self._show_title()
        self.run_compare()

    @on(Compared)
    def _finished(self, event: Compared) -> None:
        if event.seq <= self._shown_seq:
            return
        self._shown_seq = event.seq
        self.show_comparison(event.comparison)

    def show_comparison(self, cmp: Comparison) -> None:
        """Show ``cmp``: the table (or why it is empty), the counts and notes
        (in the queries view: kept for when the view turns back)."""
        self.comparison = cmp
        if self.view != "chunks":
            return
        box = self.query_one("#compare-box")
        box.border_title = "A vs B"
        box.border_subtitle = f"{len(cmp.rows)} chunk{'s' if len(cmp.rows) != 1 else ''} · Enter: why?"
        self.description = desc = describe_comparison(cmp)
        self.query_one("#compare-counts", Static).update(line_text(desc.counts))
        notes = desc.notes[:2] + (f"overlap {desc.overlap:.2f}",) + desc.notes[2:]
        self.query_one("#compare-notes", Static).update(Text(safe.line(" · ".join(notes))))
        empty = self.query_one("#compare-empty", Static)
        if not cmp.rows:
            self.table.display = False
            empty.update(Text("\n").join(line_text(ln) for ln in desc.empty))
            empty.display = True
            box.border_subtitle = ""
            self._focus_form_if_nothing_is()
            return
        empty.display = False
        refocus = self.table.has_focus or self.focused is None
        self.table.display = True
        self._fill(keep_cursor=False)
        if refocus:
            self.table.focus()

    # ── the query file, most changed first ──────────────────────────────

    def action_toggle_queries(self) -> None:
        """F6: the query file's queries under A and B (most changed first), or back to this query's chunks."""
        if self.view == "chunks":
            self.view = "queries"
            self.table.display = False
            self.query_one("#compare-empty", Static).display = False
            if self.query_set is not None:
                self._show_queries()
            else:
                self._say_in_queries(Text("comparing the query file…", style="italic"))
            self.run_queries()
        else:
            self.view = "chunks"
            self.queries_table.display = False
            if self.comparison is not None:
                self.show_comparison(self.comparison)
            else:
                self.query_one("#compare-box").border_title = "A vs B"
                self.query_one("#compare-empty", Static).update(Text("comparing…", style="italic"))

    def _rerun_queries(self) -> None:
        if self.view == "queries":
            self.run_queries()

    def run_queries(self, force: bool = False) -> None:
        """Compare the store's query file under A and B (in a thread worker)."""
        key = (self.variant_a, self.variant_b)
        if not force and self._q_requested == key:
            return
        self._q_requested = key
        self._qseq += 1
        self.query_one("#compare-box").border_subtitle = "comparing the query file…"
        self._compare_queries(self.variant_a, self.variant_b, self._qseq)

    @work(thread=True, exclusive=True, exit_on_error=False, group="compare-queries")
    def _compare_queries(self, variant_a: Variant, variant_b: Variant, seq: int) -> None:
        """Read the store's query file and compare its queries (one connection);
        post :class:`QueriesCompared`. A missing or bad file is a result (its problem)."""
        from engine.files.reading import load_json_input
        from engine.store.userdata import query_file_of

        worker = get_current_worker()
        store, search = self.link.store, self.link.search_fn
        path = query_file_of(store.path)
        if path is None:
            self.post_message(self.QueriesCompared(seq, None, NO_QUERY_FILE))
            return
        try:
            entries = load_json_input(path, "query file")
            if not isinstance(entries, list):
                raise ValueError(f"query file {path}: expected a JSON list of queries")
            with store.thread_connection() as conn:

                def run(params: SearchParams) -> Trace:
                    if worker.is_cancelled:
                        raise _Cancelled
                    return search(store, params, conn=conn)

                sc = compare_set(store, entries, variant_a, variant_b, run=run)
        except _Cancelled:
            return
        except ValueError as exc:  # the file cannot be read, or an entry is bad: say which
            self.post_message(self.QueriesCompared(seq, None, f"The store's query file: {exc}"))
            return
        if not worker.is_cancelled:
            self.post_message(self.QueriesCompared(seq, sc.most_changed_first(), source=str(path)))

    @on(QueriesCompared)
    def _queries_compared(self, event: QueriesCompared) -> None:
        if event.seq <= self._qshown:
            return
        self._qshown = event.seq
        self.query_set, self.query_file = event.queries, event.source
        if self.view != "queries":
            return
        if event.queries is None:
            self._say_in_queries(Text(safe.line(event.problem)))
            self.query_one("#compare-box").border_subtitle = ""
            return
        self._show_queries()

    def _say_in_queries(self, text: Text) -> None:
        self.queries_table.display = False
        empty = self.query_one("#compare-empty", Static)
        empty.update(text)
        empty.display = True
        self.query_one("#compare-box").border_title = "Queries, most changed first"

    def _show_queries(self) -> None:
        """The query file's rows (most changed first), the counts and the legend."""
        sc = self.query_set
        assert sc is not None
        box = self.query_one("#compare-box")
        box.border_title = "Queries, most changed first"
        n = len(sc.queries)
        box.border_subtitle = f"{n} quer{'y' if n == 1 else 'ies'} · Enter: its chunks · F6: back"
        self.query_one("#compare-counts", Static).update(
            Text(f"{sc.changed_queries} of {n} queries changed ({sc.layer_changes} changed layer)")
        )
        self.query_one("#compare-notes", Static).update(
            Text(
                safe.line(
                    f"{self.query_file} · RBO: rank-biased overlap of the final lists (p = {sc.p:g}); "
                    f"J@{sc.k}: Jaccard of their top {sc.k}; 1.00 = the same list"
                ),
                style="dim",
            )
        )
        if not sc.queries:
            self._say_in_queries(Text("The store's query file has no queries."))
            return
        self.query_one("#compare-empty", Static).display = False
        table = self.queries_table
        refocus = table.has_focus or self.table.has_focus or self.focused is None
        row = table.cursor_row if table.row_count else 0
        table.clear(columns=True)
        box_width = box.scrollable_content_region.width or box.size.width or 78
        fixed = {"A": 3, "B": 3, "RBO": 4, f"J@{sc.k}": 4}
        id_width = min(max((cell_len(q.id) for q in sc.queries), default=2), 24)
        query_width = max(box_width - id_width - sum(fixed.values()) - GAP * (len(fixed) + 2) - 1, 8)
        table.add_column("id", key="id", width=id_width)
        table.add_column("query", key="query", width=query_width)
        for name, width in fixed.items():
            table.add_column(name, key=name, width=width)
        for i, q in enumerate(sc.queries):
            style = "" if q.divergence.rbo == 1 else "yellow"
            table.add_row(
                end_cut(Text(safe.line(q.id)), id_width),
                end_cut(Text(safe.line(q.query)), query_width),
                Text(str(q.size_a), justify="right"),
                Text(str(q.size_b), justify="right"),
                Text(f"{q.divergence.rbo:.2f}", style=style, justify="right"),
                Text(f"{q.divergence.jaccard:.2f}", style=style, justify="right"),
                key=str(i),
            )
        table.styles.height = len(sc.queries) + (1 if table.show_header else 0)
        table.move_cursor(row=min(row, len(sc.queries) - 1), animate=False)
        table.display = True
        if refocus:
            table.focus()

    def open_query(self, index: int) -> None:
        """Show query ``index`` of the queries view (most changed first) chunk by chunk."""
        sc = self.query_set
        if sc is None or not 0 <= index < len(sc.queries):
            return
        cmp = sc.queries[index].comparison
        self.params = replace(cmp.params_a, variant=self.params.variant)
        self._requested = (cmp.params_a, cmp.params_b)
        self._seq += 1
        self._shown_seq = self._seq
        self._show_title()
        self.view = "chunks"
        self.queries_table.display = False
        self.show_comparison(cmp)
        if self.table.display:
            self.table.focus()

    @on(DataTable.RowSelected, "#compare-queries")
    def _query_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.open_query(event.cursor_row)

    def _focus_form_if_nothing_is(self) -> None:
        if self.focused is None:
            self.query_one("#b-key", Select).focus()

    def _layout(self) -> dict[str, int]:
        """The columns that fit, in order, with their widths in cells. A
        narrow column (numbers, the move) is as wide as its header or its
        widest value; the detail pairs (:data:`DETAIL_PAIRS`) are added while
        title and source keep :data:`TEXT_MIN` cells together; the source is
        as wide as its longest value up to 2/5 of that room, the title takes
        the rest."""
        box = self.query_one("#compare-box")
        width = box.scrollable_content_region.width or box.size.width or 78
        rows = self.description.table.rows if self.description is not None else ()

        def widest(i: int) -> int:
            return max((cell_len("".join(s.text for s in row[i])) for row in rows), default=0)

        narrow = {c.name: max(cell_len(c.name), widest(i)) for i, c in enumerate(COMPARE_COLUMNS) if not c.wide}

        def room(names: list[str]) -> int:
            return width - sum(narrow.get(c, 0) for c in names) - GAP * len(names) - 1

        details: set[str] = set()
        for pair in DETAIL_PAIRS:
            names = [c.name for c in COMPARE_COLUMNS if not c.detail or c.name in details | set(pair)]
            if room(names) < TEXT_MIN:
                break
            details |= set(pair)
        cols = [c.name for c in COMPARE_COLUMNS if not c.detail or c.name in details]
        left = max(room(cols), 20)
        source = max(min(widest([c.name for c in COMPARE_COLUMNS].index("source")), left * 2 // 5), 8)
        return {c: {"title": left - source, "source": source}.get(c, narrow.get(c, 0)) for c in cols}

    def _fill(self, keep_cursor: bool) -> None:
        cmp, desc = self.comparison, self.description
        if cmp is None or desc is None or not cmp.rows:
            return
        table = self.table
        row = table.cursor_row if keep_cursor else 0
        table.clear(columns=True)
        widths = self._widths = self._layout()
        cols = list(widths)
        index = {c.name: i for i, c in enumerate(COMPARE_COLUMNS)}
        for col in cols:
            table.add_column(col, key=col, width=widths[col])
        for i, cells in enumerate(desc.table.rows):
            out = []
            for col in cols:
                spec = COMPARE_COLUMNS[index[col]]
                cell = cells[index[col]]
                if col in CUT_AT and len(cell) == 1:
                    cell = (replace(cell[0], text=middle_cut(cell[0].text, widths[col], CUT_AT[col])),)
                t = line_text(cell, no_wrap=True, overflow="ellipsis", justify="right" if spec.numeric else "left")
                out.append(end_cut(t, widths[col]))
            table.add_row(*out, key=str(i))
        # The height in lines (one per row, plus the header), set here rather than left to
        # ``height: auto``: the table measures its rows only when idle, and a layout pass that
        # comes first would keep it at height 0 (an empty box) until the next resize.
        table.styles.height = len(cmp.rows) + (1 if table.show_header else 0)
        table.move_cursor(row=min(row, len(cmp.rows) - 1), animate=False)

    def on_resize(self) -> None:
        if self.view == "queries":
            if self.query_set is not None and self.query_set.queries:
                self._show_queries()
            return
        if self.comparison is not None and self.comparison.rows and self._layout() != self._widths:
            self._fill(keep_cursor=True)

    # ── why? ───────────────────────────────────────────────────────────

    def why_params(self, row: ChunkComparison) -> tuple[SearchParams, int]:
        """The run to ask about ``row`` and the chunk's row id: A for a chunk
        only B returned, otherwise B."""
        assert self.comparison is not None
        if row.marker == "new":
            assert row.rowid_b is not None  # a new chunk is in B's answer
            return self.comparison.params_a, row.rowid_b
        if row.marker == "gone":
            assert row.rowid_a is not None  # a gone chunk is in A's answer
            return self.comparison.params_b, row.rowid_a
        return self.comparison.params_b, row.rowid

    def action_why_row(self, index: int | None = None) -> None:
        """Open "why?" for the highlighted row (or row ``index``)."""
        cmp = self.comparison
        if self.view == "queries":
            self.open_query(self.queries_table.cursor_row)
            return
        if cmp is None or not cmp.rows or not self.table.display:
            self.app.notify("Nothing to explain yet: no chunk in either answer.", severity="warning")
            return
        i = self.table.cursor_row if index is None else index
        if not 0 <= i < len(cmp.rows):
            return
        params, rowid = self.why_params(cmp.rows[i])
        from tui.browser.screens.why import WhyScreen

        trace = cmp.trace_a if params == cmp.params_a else cmp.trace_b
        self.app.push_screen(WhyScreen(self.link, params, rowid=rowid, trace=trace), callback=self._back_here)

    def _back_here(self, _result: object = None) -> None:
        self.call_after_refresh(self.table.focus)

    @on(DataTable.RowSelected, "#compare-table")
    def _row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_why_row(event.cursor_row)

    def worker_failed(self, group: str, error: BaseException) -> None:
        """A compare worker failed (notified already): say so in place."""
        self.query_one("#compare-box").border_subtitle = "compare failed"
        if group == "compare-queries":
            if self.view == "queries":
                self._say_in_queries(Text(f"Compare failed: {safe.line(str(error))}", style="bold"))
            return
        if self.comparison is None:
            self.query_one("#compare-empty", Static).update(
                Text(f"Compare failed: {safe.line(str(error))}", style="bold")
            )
        self._focus_form_if_nothing_is()

    def action_close(self) -> None:
        """Close the comparison."""
        self.dismiss(None)
