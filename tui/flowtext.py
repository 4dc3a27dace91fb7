"""The rank flow and the pinned chunk in words and symbols, for the CLI and the browser.

:mod:`engine.flow` gives the rows as data; this module makes the short texts
both front-ends show, so they read the same. Symbols carry the meaning on
their own (no colour needed, ``NO_COLOR`` reads the same):

* a position with its move against the previous stage: ``#4 ↑3``, ``#2 ↓1``,
  ``#1 =``; a retriever rank: ``#7`` (retrievers are parallel entries: no move);
* where it left, a marker: ``merged→57``, ``session s2``, ``cut @3``,
  ``beyond pool``, ``not retrieved`` (every retrieve-stage and fuzzy code);
* ``·`` a retriever that did not return it, blank after it left, ``–`` a
  stage that did not run in this pass.

Also the results list's movement (``4→1 ↑3``), a title cut in the middle
that keeps its last heading (``ferryctl … > publish > Example``), the
pinned chunk's fate line and the counterfactual. No Textual here (Rich
only measures cell widths).
"""

from __future__ import annotations

from rich.cells import cell_len

from engine.counterfactual import Counterfactual
from engine.counterfactual import sentence as counterfactual_sentence
from engine.flow import Fate, Flow, FlowCell, FlowRow
from engine.model import FUZZY_PREFIX, Exit
from engine.paths import sentence as exit_sentence
from engine.stages import base_id, stage

#: Short column headers by stage id (the table's titles are too long for a cell).
SHORT = {"porter": "Porter", "trigram": "Trigram", "fusion": "Fused", "pool": "Pool", "filter": "Filter",
         "trim": "Trim", "rerank": "Rerank", "final": "Final"}
ABSENT = "·"
NOT_RUN = "–"
ELLIPSIS = "…"


def header(stage_id: str) -> str:
    """A column header: ``Fused``; in the fuzzy re-run ``~Fused``."""
    name = SHORT.get(base_id(stage_id)) or stage(stage_id).title
    return ("~" if stage_id.startswith(FUZZY_PREFIX) else "") + name


def move_text(move: int | None) -> str:
    """``↑3``, ``↓1``, ``=`` or ``""`` (no move)."""
    if move is None:
        return ""
    return f"↑{move}" if move > 0 else f"↓{-move}" if move < 0 else "="


def marker(exit: Exit) -> str:
    """Where and why a chunk left, in a word or two: ``merged→57``,
    ``session s2`` (``session ''``: unattributed), ``cut @3``, ``beyond
    pool``, ``not retrieved``; another code: the code itself."""
    r = exit.reason
    if r == "merged":
        return f"merged→{exit.get('into_rowid')}"
    if r == "session-filter":
        sid = exit.get("session_id")
        return f"session {sid}" if sid else "session ''"
    if r == "trimmed":
        return f"cut @{exit.get('limit')}"
    if r == "beyond-pool":
        return "beyond pool"
    if base_id(exit.stage) in ("retrieve", "fuzzy"):
        return "not retrieved"
    return r


def cell_text(cell: FlowCell) -> str:
    """One cell: ``#4 ↑3``, ``#7`` (a retriever), a :func:`marker`, ``·``,
    ``–`` or ``""``."""
    if cell.state == "at":
        mv = move_text(cell.move)
        return f"#{cell.position}" + (f" {mv}" if mv else "")
    if cell.state == "left":
        assert cell.exit is not None
        return marker(cell.exit)
    if cell.state == "absent":
        return ABSENT
    if cell.state == "not-run":
        return NOT_RUN
    return ""


def row_texts(row: FlowRow) -> list[str]:
    """Every cell of ``row`` as text, in column order."""
    return [cell_text(c) for c in row.cells]


def movement(row: FlowRow | None) -> str:
    """The results list's movement: fused → final position and the move,
    ``4→1 ↑3``, ``2→2 =``; ``""`` without both positions."""
    if row is None or row.fused is None or row.final is None:
        return ""
    return f"{row.fused}→{row.final} {move_text(row.fused - row.final)}"


def middle_cut(title: str, width: int, sep: str = " > ") -> str:
    """``title`` in at most ``width`` terminal cells, cut in the middle so
    the last heading stays: ``ferryctl docs > install > publish > Example``
    at 30 → ``ferryctl … > publish > Example``. As many trailing headings as
    fit are kept whole, then as much of the start as fits. A last heading
    that alone is too long keeps its end (``…tail``)."""
    if width <= 0:
        return ""
    if cell_len(title) <= width:
        return title
    if width == 1:
        return ELLIPSIS
    parts = title.split(sep)
    tail = parts[-1]
    if len(parts) == 1 or cell_len(ELLIPSIS + sep + tail) > width:
        return ELLIPSIS + _end(tail if len(parts) > 1 else title, width - 1)
    kept = [tail]
    for part in reversed(parts[1:-1]):
        if cell_len(ELLIPSIS + sep + sep.join([part] + kept)) + 2 > width:
            break
        kept.insert(0, part)
    rest = sep.join(parts[: len(parts) - len(kept)])
    back = " " + ELLIPSIS + sep + sep.join(kept)
    room = width - cell_len(back)
    if room <= 0:
        return (ELLIPSIS + sep + sep.join(kept))[:width]
    return _start(rest, room).rstrip() + back


def _start(text: str, width: int) -> str:
    out, used = [], 0
    for ch in text:
        w = cell_len(ch)
        if used + w > width:
            break
        out.append(ch)
        used += w
    return "".join(out)


def _end(text: str, width: int) -> str:
    return _start(text[::-1], width)[::-1]


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
    """The counterfactual in words (:func:`engine.counterfactual.sentence`)."""
    return counterfactual_sentence(cf)


def flow_title(flow: Flow) -> str:
    """``first pass "cache" (the answer)``, ``fuzzy re-run "zebra" (the
    answer)``, ``fuzzy re-run "zebra" (shadow: not the answer)``."""
    name = "first pass" if flow.pass_name == "first" else "fuzzy re-run"
    role = "the answer" if flow.answering else "shadow: not the answer" if flow.shadow else "not the answer"
    return f"{name} {flow.query!r} ({role})"
