"""The result list: the pipeline's final answer, or why there is none."""

from __future__ import annotations

from dataclasses import dataclass

from rich.cells import cell_len
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import DataTable, Static

from engine.pipeline import table as stages
from engine.pipeline.trace import Trace

from tui.present.cut import end_cut, middle_cut
from tui.present import safe
from tui.browser.facts import is_damage, is_store_error, problem_headline
from tui.browser.subject import Subject

#: Single-line columns (wide panes) and their fixed widths; source and title share the rest
#: (the source at most 2/5 of it, the title the remainder). ``move``: fused → final position
#: and the move (``4→1 ↑3``); ``row``: the chunk's row id.
COLUMNS = ("#", "move", "row", "title", "source", "type", "layer", "rrf", "boost")
FIXED = {"#": 2, "move": 8, "row": 5, "type": 5, "layer": 9, "rrf": 6, "boost": 6}
#: Two-line columns for narrow panes: title over source, move over row id, type over layer, rrf over boost.
COMPACT_COLUMNS = ("#", "title / source", "move/row", "type/layer", "rrf/boost")
COMPACT_FIXED = {"#": 2, "move/row": 8, "type/layer": 10, "rrf/boost": 9}
#: Below this many cells the table uses two-line rows.
WIDE_MIN = 100


def title_cell(title: str, width: int) -> Text:
    """A chunk title in ``width`` cells, cut in the middle so its last
    heading stays (:func:`tui.present.cut.middle_cut`)."""
    return Text(middle_cut(safe.line(title), width), no_wrap=True)


def empty_explanation(trace: Trace) -> Text:
    """Why ``trace`` has no results, in words, with what to try next."""
    reason = safe.line(trace.empty_reason or "no results")
    t = Text("No results.\n", style="bold")
    t.append(reason[0].upper() + reason[1:] + ".\n\n")
    hints = []
    if not trace.params.query.strip():
        hints.append("Type a word or two to search.")
    else:
        if trace.first.filter.allow_set is not None and trace.first.filter.removed:
            hints.append("F3 widens the session allow-set: the removed candidates are listed in Stages.")
        if trace.params.source or trace.params.content_type:
            hints.append("F2 clears the source / content-type filter.")
        if trace.params.limit == 0:
            hints.append("F2 raises the limit above 0.")
        if not trace.first.fusion.candidates and not hints:
            hints.append("Neither index has these words; the Fuzzy stage shows what typo correction tried.")
    t.append("\n".join(hints), style="italic")
    return t


def failure_explanation(error: BaseException) -> Text:
    """Why the search failed (a damaged store, or a bug), with what to try next."""
    t = Text(f"Search failed: {problem_headline(error)}.\n", style="bold")
    t.append(safe.line(str(error) or type(error).__name__) + "\n\n")
    if is_damage(error):
        t.append(
            "Other queries may still work: the damage can be limited to part of the index. rankscope never "
            "writes to the store; rebuild it from its files (rankscope index)",
            style="italic",
        )
        if getattr(error, "check_command", None) is None:  # the message does not name the check
            t.append(
                ", or check it with rankscope doctor --db STORE (SQLite's and FTS5's integrity checks)", style="italic"
            )
        t.append(".", style="italic")
    elif is_store_error(error):
        t.append("The store may be locked, moved or changed on disk; try again, or reopen it.", style="italic")
    else:
        t.append("This is a rankscope bug: please report it with the query and the store.", style="italic")
    return t


class ResultsNote(Static):
    """The welcome text, or why there are no results. It takes focus (↓ from
    the query box lands here before the first search), so keys typed next
    reach the browser, not the query; ↑ ↓ PgUp PgDn Home End scroll it
    (:class:`NoteScroll`) when it is taller than the pane."""

    can_focus = True


class NoteScroll(VerticalScroll):
    """Scrolls the :class:`ResultsNote` inside it when the note is taller than
    the pane (the welcome text at 60x18): its scroll keys (Textual's
    ``ScrollableContainer`` bindings) act on the keys the focused note does
    not handle, and pass them on when there is nothing to scroll. Not
    focusable itself: Tab and ↓ still land on the note."""

    can_focus = False


class ResultsPane(Vertical):
    """The final results as a table (position, fused → final movement, row
    id, title cut in the middle keeping its last heading, source, content
    type, match layer, RRF score, rerank boost), or an explanation when empty.

    Posts :class:`ResultsPane.Picked` when a row is highlighted while the
    table has focus, or chosen with Enter.
    """

    @dataclass
    class Picked(Message):
        """A result row was highlighted (``chosen=False``) or chosen with Enter."""

        subject: Subject
        chosen: bool

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.trace: Trace | None = None
        self.border_title = "Results"
        self._widths: tuple[bool, int, int] = (False, 0, 0)
        #: ``{rowid: grade}`` of the current query's judged chunks (a badge before the title).
        self.grades: dict[int, int] = {}
        #: ``{rowid: "4→1 ↑3"}``: each result's fused → final movement (from the rank flow).
        self.moves: dict[int, str] = {}

    def compose(self) -> ComposeResult:
        table: DataTable = DataTable(id="results-table", cursor_type="row", zebra_stripes=False)
        table.display = False
        yield table
        with NoteScroll(id="results-note"):
            yield ResultsNote(id="results-empty")

    @property
    def table(self) -> DataTable:
        """The result table."""
        return self.query_one("#results-table", DataTable)

    @property
    def message(self) -> ResultsNote:
        """The empty-state / welcome text."""
        return self.query_one("#results-empty", ResultsNote)

    @property
    def note_scroll(self) -> NoteScroll:
        """The scrolling box around :attr:`message`."""
        return self.query_one("#results-note", NoteScroll)

    def _show_note(self) -> None:
        """The note instead of the table, scrolled to its top; the focus moves
        along when the table had it."""
        had_focus = self.table.has_focus
        self.table.display = False
        self.message.display = self.note_scroll.display = True
        self.note_scroll.scroll_home(animate=False, immediate=True)
        if had_focus:
            self.screen.set_focus(self.message)

    def _show_table(self) -> None:
        """The table instead of the note; the focus moves along when the note had it."""
        had_focus = self.message.has_focus
        self.message.display = self.note_scroll.display = False
        self.table.display = True
        if had_focus:
            self.screen.set_focus(self.table)

    #: The note shows the welcome text (not a search's failure or empty answer).
    welcome_shown = False

    def show_welcome(self, text: Text) -> None:
        """Show the start-up text (nothing searched yet)."""
        self.trace = None
        self.welcome_shown = True
        self.border_subtitle = ""
        self.message.update(text)
        self._show_note()

    def show_trace(self, trace: Trace) -> None:
        """Show the final results of ``trace`` (or why there are none)."""
        self.trace = trace
        self.welcome_shown = False
        n = len(trace.final)
        self.border_subtitle = f"{n} result{'s' if n != 1 else ''} · layer {trace.layer}"
        if not trace.final:
            self.message.update(empty_explanation(trace))
            self._show_note()
            return
        from engine.lab.flow import trace_flows

        from tui.present.flowtext import movement

        answering = trace_flows(trace)[0]
        self.moves = {r.rowid: movement(r) for r in answering.rows if r.final is not None}
        self._show_table()
        self._fill(keep_cursor=False)

    def show_failure(self, error: BaseException) -> None:
        """Say that the search failed, and why (no results are shown)."""
        self.trace = None
        self.welcome_shown = False
        self.border_subtitle = "search failed"
        self.message.update(failure_explanation(error))
        self._show_note()

    def _layout(self) -> tuple[bool, int, int]:
        """``(wide, title width, source width)`` for the current pane width."""
        width = self.scrollable_content_region.width or self.size.width or 80
        wide = width >= WIDE_MIN
        fixed, cols = (FIXED, COLUMNS) if wide else (COMPACT_FIXED, COMPACT_COLUMNS)
        # cell padding, scrollbar; a narrow pane gives the title what is left, so the numbers stay whole
        room = max(width - sum(fixed.values()) - 2 * len(cols) - 2, 8)
        if not wide:
            return False, room, room
        longest = (
            max((cell_len(safe.line(r.candidate.source)) for r in self.trace.final), default=8)
            if self.trace is not None
            else 8
        )
        source = max(min(longest, room * 2 // 5), 8)
        return True, max(room - source, 12), source

    def _fill(self, keep_cursor: bool) -> None:
        trace = self.trace
        if trace is None or not trace.final:
            return
        table = self.table
        row = table.cursor_row if keep_cursor else 0
        table.clear(columns=True)
        wide, tw, sw = self._widths = self._layout()
        if wide:
            widths = {**FIXED, "title": tw, "source": sw}
            for col in COLUMNS:
                table.add_column(col, key=col, width=widths[col])
        else:
            widths = {**COMPACT_FIXED, "title / source": tw}
            for col in COMPACT_COLUMNS:
                table.add_column(col, key=col, width=widths[col])
        for r in trace.final:
            c = r.candidate
            pos = Text(str(r.position), justify="right")
            boost = "—" if r.boost is None else f"{r.boost:.3f}"
            move = self.moves.get(c.rowid, "")
            if wide:
                table.add_row(
                    pos,
                    move,
                    Text(str(c.rowid), justify="right"),
                    title_cell(c.title, tw),
                    end_cut(c.source, sw),
                    safe.line(c.content_type),
                    r.layer,
                    Text(f"{c.score:.4f}", justify="right"),
                    Text(boost, justify="right"),
                    key=str(r.position),
                )
            else:
                table.add_row(
                    pos,
                    title_cell(c.title, tw) + Text("\n") + end_cut(c.source, tw, style="dim"),
                    Text(f"{move}\n{c.rowid}"),
                    Text(f"{safe.line(c.content_type)}\n{r.layer}"),
                    Text(f"{c.score:.4f}\n{boost}", justify="right"),
                    key=str(r.position),
                    height=2,
                )
        # The height from the rows, not ``height: auto``: auto is measured before
        # the table sizes its rows (on idle), which left it 0 lines high now and then.
        table.styles.height = (1 if table.show_header else 0) + len(trace.final) * (1 if wide else 2)
        self._apply_grades()
        table.move_cursor(row=min(row, len(trace.final) - 1), animate=False)

    def show_grades(self, grades: dict[int, int]) -> None:
        """Mark the judged chunks (``{rowid: grade}``) with their grade badge."""
        old, self.grades = self.grades, dict(grades)
        if self.trace is not None and self.trace.final and self.table.display and (old or grades):
            self._apply_grades(changed=set(old) | set(grades))

    def _apply_grades(self, changed: set[int] | None = None) -> None:
        """Rewrite the title cells of graded rows (and of ``changed`` rows) with a badge."""
        from tui.browser.judging import BADGE_CELLS, badge

        trace = self.trace
        if trace is None or not (self.grades or changed):
            return
        wide, tw, sw = self._widths
        for r in trace.final:
            c = r.candidate
            if c.rowid not in self.grades and c.rowid not in (changed or ()):
                continue
            mark = badge(self.grades.get(c.rowid))
            if wide:
                self.table.update_cell(str(r.position), "title", mark + title_cell(c.title, tw - BADGE_CELLS))
            else:
                cell = mark + title_cell(c.title, tw - BADGE_CELLS) + Text("\n" + " " * BADGE_CELLS)
                self.table.update_cell(
                    str(r.position), "title / source", cell + end_cut(c.source, tw - BADGE_CELLS, style="dim")
                )

    def on_resize(self) -> None:
        if self.trace is not None and self.trace.final and self._layout() != self._widths:
            self._fill(keep_cursor=True)

    def subject_at(self, row: int) -> Subject | None:
        """The subject of result row ``row`` (0-based)."""
        if self.trace is None or not 0 <= row < len(self.trace.final):
            return None
        return Subject.from_candidate(self.trace.final[row].candidate, stages.title("final"))

    @on(DataTable.RowHighlighted)
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        subject = self.subject_at(event.cursor_row)
        if subject is not None and self.table.has_focus:
            self.post_message(self.Picked(subject, chosen=False))

    @on(DataTable.RowSelected)
    def _selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        subject = self.subject_at(event.cursor_row)
        if subject is not None:
            self.post_message(self.Picked(subject, chosen=True))
