"""The rank flow and the pinned chunk in words and symbols, for the CLI and the browser.

:mod:`engine.lab.flow` gives the rows as data; this module makes the short texts
both front-ends show, so they read the same. Symbols carry the meaning on
their own (no colour needed, ``NO_COLOR`` reads the same):

* a position with its move against the previous stage: ``#4 ↑3``, ``#2 ↓1``,
  ``#1 =``; a retriever rank: ``#7`` (retrievers are parallel entries: no move);
* where it left, a marker: ``merged→57``, ``session s2``, ``cut @3``,
  ``beyond pool``, ``not retrieved`` (every retrieve-stage and fuzzy code);
* ``·`` a retriever that did not return it, blank after it left, ``–`` a
  stage that did not run in this pass.

A *compact* form fits 80 columns (the browser scrolls it, the CLI prints
it with :data:`LEGEND`): short headers, positions without ``#`` (``4↑3``),
``→57`` merged into row 57, ``✗s2`` removed (session s2), ``cut@3``,
``beyond`` (the pool), ``none`` (not retrieved). The browser cuts a long
session id in the middle (``✗ses…uild``); the CLI never cuts one, and
splits a table too wide for the terminal (:func:`flow_table`).

Also the results list's movement (``4→1 ↑3``), the pinned chunk's fate
line and the counterfactual (titles are cut by :mod:`tui.present.cut`). No
Textual here (Rich only measures cell widths).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.cells import cell_len

from engine.lab.counterfactual import Counterfactual
from engine.lab.counterfactual import sentence as counterfactual_sentence
from engine.pipeline.paths import Fate
from engine.lab.flow import Flow, FlowCell, FlowRow
from engine.pipeline.candidates import FUZZY_PREFIX, Exit
from engine.pipeline.trace import Trace
from engine.pipeline.paths import marker as exit_marker
from engine.pipeline.paths import sentence as exit_sentence
from engine.pipeline.table import stage
from tui.present.cut import ELLIPSIS

if TYPE_CHECKING:
    from rich.console import RenderableType

    from engine.lab.terms import Stems

#: What the compact symbols mean (printed under a compact table).
LEGEND = (
    "4↑3 position and move · →57 merged into row 57 · ✗s2 removed by the session filter (session s2) · "
    "cut@3 cut at limit 3 · beyond: past the pool size · none: not retrieved · · not returned by this retriever · "
    "– did not run"
)
#: Longest session id shown whole in a compact cell (longer: both ends, ``ses…ops``).
COMPACT_SESSION = 8
ABSENT = "·"
#: Marks a pinned chunk's row.
PIN_MARK = "▸"
NOT_RUN = "–"


def header(stage_id: str, compact: bool = False) -> str:
    """A column header (the stage's ``short`` or ``compact`` title, else its
    title): ``Fused`` (compact ``Fus``); in the fuzzy re-run ``~Fused``."""
    s = stage(stage_id)
    name = (s.compact if compact else s.short) or s.short or s.title
    return ("~" if stage_id.startswith(FUZZY_PREFIX) else "") + name


def move_text(move: int | None) -> str:
    """``↑3``, ``↓1``, ``=`` or ``""`` (no move)."""
    if move is None:
        return ""
    return f"↑{move}" if move > 0 else f"↓{-move}" if move < 0 else "="


def _cut_id(sid: str) -> str:
    """A session id longer than :data:`COMPACT_SESSION`, both ends kept (ids often share a prefix)."""
    return sid[:3] + ELLIPSIS + sid[-(COMPACT_SESSION - 4) :] if len(sid) > COMPACT_SESSION else sid


def marker(exit: Exit, compact: bool = False, whole_ids: bool = False) -> str:
    """Where and why a chunk left, in a word or two, as its stage words it
    (:func:`engine.pipeline.paths.marker`): ``merged→57``, ``session s2``,
    ``cut @3``, ``beyond pool``, ``not retrieved``; compact ``→57``,
    ``✗s2``, ``cut@3``, ``beyond``, ``none``, an id longer than
    :data:`COMPACT_SESSION` cut in the middle unless ``whole_ids`` (the
    CLI, which never cuts an id)."""
    return exit_marker(exit, compact, str if whole_ids else _cut_id)


def cell_text(cell: FlowCell, compact: bool = False, whole_ids: bool = False) -> str:
    """One cell: ``#4 ↑3``, ``#7`` (a retriever), a :func:`marker`, ``·``,
    ``–`` or ``""``; compact: ``4↑3``, ``7``, the compact marker (session
    ids whole with ``whole_ids``)."""
    if cell.state == "at":
        mv = move_text(cell.move)
        if compact:
            return f"{cell.position}{mv}"
        return f"#{cell.position}" + (f" {mv}" if mv else "")
    if cell.state == "left":
        assert cell.exit is not None
        return marker(cell.exit, compact, whole_ids)
    if cell.state == "absent":
        return ABSENT
    if cell.state == "not-run":
        return NOT_RUN
    return ""


def row_texts(row: FlowRow, compact: bool = False) -> list[str]:
    """Every cell of ``row`` as text, in column order."""
    return [cell_text(c, compact) for c in row.cells]


def movement(row: FlowRow | None) -> str:
    """The results list's movement: fused → final position and the move,
    ``4→1 ↑3``, ``2→2 =``; ``""`` without both positions."""
    if row is None or row.fused is None or row.final is None:
        return ""
    return f"{row.fused}→{row.final} {move_text(row.fused - row.final)}"


def fate_text(fate: Fate) -> str:
    """The pinned chunk's fate: ``#2 in the answer`` (``… after typo
    correction``), or the stage where it left and why: ``left at Trim: cut
    by the trim (#5 > limit 3)``."""
    via = " (after typo correction)" if fate.pass_name == "fuzzy" else ""
    if fate.exit is None:
        return f"#{fate.position} in the answer{via}"
    where = stage(fate.exit.stage).title
    rerun = " in the fuzzy re-run" if fate.exit.stage.startswith(FUZZY_PREFIX) else ""
    return f"left at {where}{rerun}: {exit_sentence(fate.exit)}"


def counterfactual_text(cf: Counterfactual) -> str:
    """The counterfactual in words (:func:`engine.lab.counterfactual.sentence`)."""
    return counterfactual_sentence(cf)


#: The role :func:`flow_title` gives a pass when no pass answered.
NO_ANSWER = "no answer: nothing was returned"


def flow_title(flow: Flow) -> str:
    """``first pass 'cache' (the answer)``, ``fuzzy re-run 'zebra' (the
    answer)``, ``fuzzy re-run 'zebra' (shadow: not the answer)``,
    ``first pass 'cahce' (not the answer)`` (the re-run answered) or, when
    no pass answered (layer ``none``), ``first pass 'kafka' (no answer:
    nothing was returned)``."""
    name = "first pass" if flow.pass_name == "first" else "fuzzy re-run"
    if flow.answering:
        role = "the answer"
    elif flow.shadow:
        role = "shadow: not the answer"
    elif flow.layer == "none":
        role = NO_ANSWER
    else:
        role = "not the answer"
    return f"{name} {flow.query!r} ({role})"


# ─── the table (Rich) ────────────────────────────────────────────────────

#: Styles by cell meaning; the text alone says it (NO_COLOR drops these).
CELL_STYLES = {"up": "green", "down": "red", "same": "", "left": "bold yellow", "absent": "dim", "not-run": "dim"}
#: Printed under the headers of a flow without rows.
NO_CANDIDATE = "(no candidate entered this pass)"
#: Narrowest title column.
MIN_TITLE = 12


def cell_style(cell: FlowCell) -> str:
    """A Rich style for ``cell``: bad news (``↓``, a marker) at least as
    visible as good news; dim only for "not there" (``·``, ``–``)."""
    if cell.state == "at":
        return CELL_STYLES.get(cell.direction or "same", "")
    return CELL_STYLES.get(cell.state, "")


def flow_widths(flow: Flow, compact: bool = False) -> list[int]:
    """Each stage column's width in cells: its header or its longest cell."""
    widths = [cell_len(header(s, compact)) for s in flow.stages]
    for row in flow.rows:
        for i, text in enumerate(row_texts(row, compact)):
            widths[i] = max(widths[i], cell_len(text))
    return widths


def fits(flow: Flow, width: int, compact: bool = False) -> bool:
    """Whether the table fits ``width`` cells with a title column of at
    least :data:`MIN_TITLE`."""
    return _title_width(flow, width, compact) >= MIN_TITLE


def _rowid_width(flow: Flow) -> int:
    return max([cell_len("row")] + [len(str(r.rowid)) + 1 for r in flow.rows])


def _title_width(flow: Flow, width: int, compact: bool) -> int:
    fixed = sum(w + 2 for w in flow_widths(flow, compact)) + _rowid_width(flow) + 2 + 2
    return width - fixed


def flow_table(
    flow: Flow, width: int = 120, compact: bool | None = None, pinned: "set[int] | frozenset[int]" = frozenset()
) -> "RenderableType":
    """The flow as Rich tables for the CLI (:mod:`tui.present.tablefit`): the row
    id (``▸57`` for a ``pinned`` row), the title (cut in the middle to what
    the stage columns leave, at least :data:`MIN_TITLE`), then a column per
    stage; its width is the console's (``width`` picks the form).
    ``compact=None`` picks the compact form when the full one does not fit
    (print :data:`LEGEND` with it). No cell is cut: session ids stay whole,
    and a flow too wide even compact is split into parts that repeat the
    row id (the title in the first)."""
    from rich.console import Group
    from rich.text import Text

    from tui.present import safe
    from tui.present.cut import MiddleCut
    from tui.present.tablefit import Cell, Column, Fitted, Table

    if compact is None:
        compact = not fits(flow, width)
    cols = [Column("row", "key", justify="right"), Column("title", "free", min_width=MIN_TITLE)]
    cols += [Column(header(sid, compact)) for sid in flow.stages]
    rows: list[list[Cell]] = []
    for row in flow.rows:
        mark = PIN_MARK if row.rowid in pinned else ""
        style = "bold" if mark else ""
        rows.append(
            [
                Text(mark + str(row.rowid), style=style),
                MiddleCut(safe.line(row.title), style),
                *[Text(cell_text(c, compact, whole_ids=True), style=cell_style(c)) for c in row.cells],
            ]
        )
    table = Fitted(Table(Text(safe.line(flow_title(flow))), cols, rows), box=None, padding=(0, 1), header_style="bold")
    if flow.rows:
        return table
    # under the headers, whole (a cell of the narrow title column would cut it)
    return Group(table, Text(NO_CANDIDATE, style="italic"))


def stems_words(stems: "tuple[Stems, ...]") -> str:
    """``throttling → throttl, write-quorum → write quorum``: the words whose
    tokens differ from the word (``""`` when none does)."""
    return ", ".join(f"{s.word} → {' '.join(s.stems) or '(no token)'}" for s in stems if s.changed)


def stems_text(trace: Trace, stems: "tuple[Stems, ...]") -> str:
    """The sanitised queries with the Porter stems: ``porter "throttling"
    (throttling → throttl) · trigram "throttling"``."""
    from tui.present import safe

    porter, trigram = trace.first.porter, trace.first.trigram
    out = f"porter {safe.line(porter.query) or '(no words)'}"
    words = stems_words(stems)
    if words:
        out += f" ({safe.line(words)})"
    out += f" · trigram {safe.line(trigram.query) or '(skipped)'}"
    if trace.layer == "rrf-fuzzy" and trace.fuzzy.corrected_query:
        out += f" · fuzzy {safe.line(trace.fuzzy.corrected_query)}"
    return out
