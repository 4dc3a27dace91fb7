"""The rank flow: every candidate's position at every stage, as table rows.

One :class:`Flow` per pass shown (the answering pass, and the other one
when the fuzzy fallback re-ran). Its columns are the stages in the order
the pass ran them (:func:`engine.pipeline.run.pass_plan`, then ``final``;
``fuzzy:``-prefixed in the re-run); its rows (:class:`FlowRow`) are the
chunks a retriever returned in the pass, read from the paths (nothing is
re-ranked), plus on request chunks that never entered it (:class:`Absent`).

A cell (:class:`FlowCell`) holds the 1-based ``position``; the ``move``
against the previous stage (positive = up; fusion is compared with the best
retriever rank, Porter on a tie; retriever cells have none); a ``state``
(``at``, ``absent``: a retriever that did not return it, ``left``: the
``exit`` says why, ``gone``: a later stage, ``not-run``); a chunk no
retriever returned leaves on the first column with why-not's exit.

Rows are sorted by final position, then by how far they got, then by fused
position, then in the order the retrievers returned them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

from engine.pipeline.candidates import FUZZY_PREFIX, CandidatePath, Exit
from engine.pipeline.params import SearchParams
from engine.pipeline.passes import Run
from engine.pipeline.run import pass_plan
from engine.pipeline.table import stage
from engine.pipeline.trace import Trace

#: Cell states (see the module docstring).
STATES = ("at", "absent", "left", "gone", "not-run")


@dataclass(frozen=True)
class FlowCell:
    """One row's cell at one stage.

    Attributes:
        stage: the full stage id (``"pool"``, ``"fuzzy:trim"``).
        state: one of :data:`STATES`.
        position: 1-based position in the stage's list, or ``None``.
        move: positions gained against ``against`` (``prev - position``:
            positive = up), or ``None`` (no position, or a retriever cell).
        against: the stage id ``move`` compares with, or ``None``.
        exit: why it left, on the ``"left"`` cell only.
    """

    stage: str
    state: str
    position: int | None = None
    move: int | None = None
    against: str | None = None
    exit: Exit | None = None

    @property
    def direction(self) -> str | None:
        """``"up"``, ``"down"``, ``"same"`` or ``None`` (no move)."""
        if self.move is None:
            return None
        return "up" if self.move > 0 else "down" if self.move < 0 else "same"

    def to_dict(self) -> dict[str, object]:
        """``{"stage", "state", "position", "move", "against", "exit"}``."""
        return {
            "stage": self.stage,
            "state": self.state,
            "position": self.position,
            "move": self.move,
            "against": self.against,
            "exit": None if self.exit is None else self.exit.to_dict(),
        }


@dataclass(frozen=True)
class FlowRow:
    """One chunk across the stages of one pass.

    Attributes:
        rowid, source, title: the chunk.
        key: its fusion key in this pass (a merged row: the key it was merged into).
        cells: one per column of the flow, in column order.
        exit: where it left the pass (``None``: in the pass's final list).
        final: 1-based position in the pass's final list, or ``None``.
        fused: 1-based position in the fused list, or ``None`` (merged, or
            never entered).
        reached: how many chain stages (fusion … final) gave it a position.
        entered: whether a retriever returned it (``False`` for an
            :class:`Absent` row).
    """

    rowid: int
    source: str
    title: str
    key: str
    cells: tuple[FlowCell, ...]
    exit: Exit | None
    final: int | None
    fused: int | None
    reached: int
    entered: bool = True

    @property
    def moved(self) -> int | None:
        """Positions gained from fused to final (``fused - final``), or ``None``."""
        return None if self.final is None or self.fused is None else self.fused - self.final

    def cell(self, stage_id: str) -> FlowCell | None:
        """The cell at ``stage_id`` (full id), or ``None`` when not a column."""
        return next((c for c in self.cells if c.stage == stage_id), None)

    def to_dict(self) -> dict[str, object]:
        """JSON form: ``rowid, source, title, key, final, fused, moved,
        reached, entered, exit, cells``."""
        return {
            "rowid": self.rowid,
            "source": self.source,
            "title": self.title,
            "key": self.key,
            "final": self.final,
            "fused": self.fused,
            "moved": self.moved,
            "reached": self.reached,
            "entered": self.entered,
            "exit": None if self.exit is None else self.exit.to_dict(),
            "cells": [c.to_dict() for c in self.cells],
        }


@dataclass(frozen=True)
class Flow:
    """The rank flow of one pass.

    Attributes:
        pass_name: ``"first"`` or ``"fuzzy"``.
        query: the text this pass searched (raw, or the corrected query).
        answering: this pass's final list is the answer.
        shadow: a fuzzy re-run made only as a what-if (variant ``fuzzy=always``).
        stages: the column stage ids (full ids), in execution order, ending
            with ``final`` (``fuzzy:final``).
        rows: sorted as the module docstring says.
        layer: the search's layer (``rrf``, ``rrf-fuzzy``, ``none``: no
            pass answered), from :func:`trace_flows`; ``""`` for a flow
            made by :func:`run_flow` alone.
    """

    pass_name: str
    query: str
    answering: bool
    shadow: bool
    stages: tuple[str, ...]
    rows: tuple[FlowRow, ...]
    layer: str = ""

    def row(self, rowid: int) -> FlowRow | None:
        """The row of chunk ``rowid``, or ``None``."""
        return next((r for r in self.rows if r.rowid == rowid), None)

    def to_dict(self) -> dict[str, object]:
        """JSON form: ``pass, query, answering, shadow, stages, rows``."""
        return {
            "pass": self.pass_name,
            "query": self.query,
            "answering": self.answering,
            "shadow": self.shadow,
            "stages": list(self.stages),
            "rows": [r.to_dict() for r in self.rows],
        }


@dataclass(frozen=True)
class Absent:
    """A chunk no retriever returned, to be shown as a row (a pinned chunk).

    Attributes:
        rowid, source, title: the chunk.
        exit: why-not's exit for it: stage ``retrieve`` (``fuzzy:retrieve``
            in the re-run) or ``fuzzy``, with a retrieve-stage or fuzzy code.
    """

    rowid: int
    source: str
    title: str
    exit: Exit


def columns(run: Run, params: SearchParams) -> tuple[str, ...]:
    """The column stage ids of ``run``'s flow: :func:`pass_plan` (prefixed)
    and ``final``."""
    return tuple(run.prefix + s.id for s in pass_plan(params)) + (run.prefix + "final",)


def _row(path: CandidatePath, cols: tuple[str, ...], ran: set[str]) -> FlowRow:
    pos = path.positions
    cells: list[FlowCell] = []
    retr_best: tuple[int, str] | None = None
    prev: tuple[int, str] | None = None  # (position, stage) of the previous chain column
    left = False
    reached = 0
    for sid in cols:
        spec = stage(sid)
        if sid not in ran:
            cells.append(FlowCell(sid, "not-run"))
            continue
        p = pos.get(sid)
        if spec.kind == "retriever":
            if p is None:
                cells.append(FlowCell(sid, "absent"))
            else:
                cells.append(FlowCell(sid, "at", p))
                if retr_best is None or p < retr_best[0]:
                    retr_best = (p, sid)
            continue
        if left:
            cells.append(FlowCell(sid, "gone"))
            continue
        if p is None:
            exit = path.exit
            assert exit is not None and exit.stage == sid, (path, sid)
            cells.append(FlowCell(sid, "left", exit=exit))
            left = True
            continue
        ref = prev if prev is not None else retr_best
        move = None if ref is None else ref[0] - p
        cells.append(FlowCell(sid, "at", p, move, None if ref is None else ref[1]))
        prev = (p, sid)
        reached += 1
    prefix = FUZZY_PREFIX if cols[-1].startswith(FUZZY_PREFIX) else ""
    return FlowRow(
        path.rowid,
        path.source,
        path.title,
        path.key,
        tuple(cells),
        path.exit,
        pos.get(prefix + "final"),
        pos.get(prefix + "fusion"),
        reached,
    )


def _absent_row(a: Absent, cols: tuple[str, ...], ran: set[str]) -> FlowRow:
    cells: list[FlowCell] = []
    placed = False
    for sid in cols:
        if sid not in ran:
            cells.append(FlowCell(sid, "not-run"))
        elif not placed:
            cells.append(FlowCell(sid, "left", exit=a.exit))
            placed = True
        else:
            cells.append(FlowCell(sid, "gone"))
    return FlowRow(
        a.rowid, a.source, a.title, f"{a.source}::{a.title}", tuple(cells), a.exit, None, None, 0, entered=False
    )


def run_flow(
    run: Run,
    params: SearchParams,
    *,
    answering: bool,
    shadow: bool = False,
    absent: Iterable[Absent] = (),
    layer: str = "",
) -> Flow:
    """The flow of one pass (``absent``: extra rows for chunks that never
    entered it; ``layer``: the search's layer, see :attr:`Flow.layer`).

    Raises:
        ValueError: an ``absent`` chunk that a retriever of this pass did return.
    """
    cols = columns(run, params)
    ran = {run.prefix + sid for sid in run.order} | {run.prefix + "final"}
    order = {p.rowid: i for i, p in enumerate(run.paths)}
    rows = [_row(p, cols, ran) for p in run.paths]
    for a in absent:
        if a.rowid in order:
            raise ValueError(f"row {a.rowid} entered the {run.pass_name} pass; it has a path there")
        order[a.rowid] = len(order)
        rows.append(_absent_row(a, cols, ran))

    def sort_key(r: FlowRow) -> tuple[bool, int, int, bool, int, int]:
        return (r.final is None, r.final or 0, -r.reached, r.fused is None, r.fused or 0, order[r.rowid])

    return Flow(run.pass_name, run.query, answering, shadow, cols, tuple(sorted(rows, key=sort_key)), layer)


def trace_flows(trace: Trace, absent: Sequence[Absent] = ()) -> tuple[Flow, ...]:
    """The flows to show for ``trace``: the answering pass first (the first
    pass when nothing answered), then the other pass when the fuzzy fallback
    re-ran (a shadow re-run is marked ``shadow``).

    ``absent`` rows go to the flow of their exit's pass: ``fuzzy:retrieve``
    to the re-run, ``retrieve`` and ``fuzzy`` to the first pass.
    """
    rerun = trace.fuzzy.rerun
    runs = (
        [trace.first] if rerun is None else [rerun, trace.first] if trace.layer == "rrf-fuzzy" else [trace.first, rerun]
    )
    out = []
    for run in runs:
        mine = [a for a in absent if (run.pass_name == "fuzzy") == a.exit.stage.startswith(FUZZY_PREFIX)]
        out.append(
            run_flow(
                run,
                trace.params,
                answering=run is trace.answering_run,
                shadow=run is rerun and trace.fuzzy.shadow,
                absent=mine,
                layer=trace.layer,
            )
        )
    return tuple(out)
