"""Every candidate's path through a pass, as data.

For every chunk a retriever returned in a pass, :func:`run_paths` records
its 1-based position at each stage (in that stage's ranked list,
:func:`engine.pipeline.table.ranked`) and where it left: an
:class:`~engine.pipeline.candidates.Exit` with the stage id, a reason code and the numbers
behind it. The pipeline computes the paths once per pass and attaches them
to :attr:`engine.pipeline.passes.Run.paths`; the journey, why-not, the inspector, the
CLI and the JSON trace read them. :func:`sentence` and :func:`marker` put an
exit in words (as its stage declares it); nothing parses a sentence back.

Rules (checked by ``tests/engine/test_paths.py``):

* the retriever stages are parallel entries: a chunk holds its rank in each
  retriever that returned it, ``None`` in the other;
* from the first chain stage on (``fusion`` …), a chunk holds its position
  at each stage until it leaves; ``exit.stage`` is the first chain stage
  where its position is ``None``, and every later position is ``None`` too;
* a chunk in the pass's final list has ``exit`` ``None``.

Reason codes (:data:`REASONS`) are the closed set the table's stages
declare, each worded once by its stage. The paths themselves give only the
chain stages' codes (a path exists only for a retrieved chunk); the
``retrieve`` and ``fuzzy`` codes come from why-not, which looks beyond the
trace. :func:`fate` is the one answer to "where did chunk X go" in a trace
(why-not's :func:`engine.lab.why.fate` adds the chunks no retriever returned).
Positions are 1-based throughout.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from engine.pipeline.candidates import FUZZY_PREFIX, Candidate, CandidatePath, Exit, Hit
from engine.pipeline.hooks import Item, Reason
from engine.pipeline.passes import Run
from engine.pipeline.table import STAGES, depth, stage
from engine.pipeline.trace import Trace

#: Every exit reason code → the (unprefixed) stage that gives it, in pipeline order.
REASONS: dict[str, str] = {code: s.id for s in STAGES for code in s.reasons}


def reason(exit: Exit) -> Reason:
    """The declaration of ``exit``'s code.

    Raises:
        KeyError: a code no stage declares.
    """
    return stage(REASONS[exit.reason]).reasons[exit.reason]


def sentence(exit: Exit) -> str:
    """The exit in words, e.g. ``"beyond the pool (fused #7, pool 3)"``.

    Raises:
        KeyError: a reason code no stage declares.
    """
    return reason(exit).sentence(exit)


def marker(exit: Exit, compact: bool = False, cut: Callable[[str], str] = str) -> str:
    """The exit in a flow cell: ``merged→57``, ``cut @3``, ``not retrieved``
    (compact: ``→57``, ``cut@3``, ``none``; ``cut`` shortens an id to fit);
    a code without a marker: the code itself."""
    r = reason(exit) if exit.reason in REASONS else None
    if r is None:
        return exit.reason
    if compact and r.compact is not None:
        return r.compact(exit, cut)
    return r.marker(exit) if r.marker is not None else exit.reason


def data_names(code: str) -> tuple[str, ...]:
    """The names in the data of an exit with reason ``code``."""
    return stage(REASONS[code]).reasons[code].data


def run_paths(run: Run) -> tuple[CandidatePath, ...]:
    """The path of every chunk a retriever returned in ``run``.

    Returns:
        One :class:`~engine.pipeline.candidates.CandidatePath` per row id, deepest first:
        the final list in order, then those that left at the last stage (by
        their position there), and so on; merged rows last, in the order the
        retrievers returned them (Porter first).
    """
    prefix = run.prefix
    entered: dict[int, Hit] = {}  # rowid -> first Hit seen
    ids: list[str] = []  # full stage ids, in execution order
    chain: list[tuple[str, object, tuple[Item, ...]]] = []  # (id, record, ranked list) of the chain stages
    entry_ranks: list[dict[int, int]] = []  # per retriever: rowid -> rank
    for sid, record in run.records:
        spec = stage(sid)
        items = spec.ranked_of(record)
        ids.append(prefix + sid)
        if spec.kind == "retriever":
            assert not chain, "the retriever stages come before the chain"
            for h in items:
                if isinstance(h, Hit):
                    entered.setdefault(h.rowid, h)
            entry_ranks.append({h.rowid: i for i, h in enumerate(items, 1)})
        else:
            chain.append((sid, record, items))
    ids.append(prefix + "final")
    # positions along the chain, for the rows still in it; a row's list stops where it left
    chain_pos: dict[int, list[int]] = {rowid: [] for rowid in entered}
    exits: dict[int, Exit] = {}
    alive: dict[int, Item] = dict(entered)  # rowid -> the item as the next stage receives it
    received_at: dict[int, int | None] = dict.fromkeys(entered)  # rowid -> position in that list
    for sid, record, items in chain:
        spec = stage(sid)
        placed = {item.rowid: (i, item) for i, item in enumerate(items, 1)}
        for rowid in list(alive):
            hit = placed.get(rowid)
            if hit is not None:
                chain_pos[rowid].append(hit[0])
                alive[rowid], received_at[rowid] = hit[1], hit[0]
                continue
            exits[rowid] = spec.exit_of(record, alive.pop(rowid), received_at[rowid], prefix)
    final = {c.rowid: i for i, c in enumerate(run.results, 1)}
    for rowid in alive:
        if rowid not in final:  # cannot happen: the results are the last stage's list
            raise AssertionError(f"row {rowid} survived every stage but is not in the results")
        chain_pos[rowid].append(final[rowid])
    n_chain = len(chain) + 1  # the chain stages and final
    steps: dict[int, tuple[tuple[str, int | None], ...]] = {}
    reached: dict[int, tuple[int, int]] = {}  # rowid -> (how many chain positions, the last one)
    for rowid in entered:
        held = chain_pos[rowid]
        positions = [ranks.get(rowid) for ranks in entry_ranks] + held + [None] * (n_chain - len(held))
        steps[rowid] = tuple(zip(ids, positions))
        if held:
            reached[rowid] = (len(held), held[-1])
    order = {rowid: i for i, rowid in enumerate(entered)}

    def deepest_first(rowid: int) -> tuple[int, int, int]:
        depth, pos = reached.get(rowid, (0, 0))
        return (-depth, pos, order[rowid])

    keys: dict[int, str] = {}
    for c in chain[0][2] if chain else ():
        keys[c.rowid] = c.key
        for merged in c.merged_rowids if isinstance(c, Candidate) else ():
            keys[merged] = c.key
    return tuple(
        CandidatePath(
            rowid,
            entered[rowid].source,
            entered[rowid].title,
            keys.get(rowid, entered[rowid].key),
            steps[rowid],
            exits.get(rowid),
        )
        for rowid in sorted(entered, key=deepest_first)
    )


def path_to_dict(path: CandidatePath) -> dict[str, object]:
    """The JSON form: ``{"rowid", "source", "title", "positions": {stage id:
    int|null}, "exit": null | {"stage", "reason", ...data}}``."""
    return {
        "rowid": path.rowid,
        "source": path.source,
        "title": path.title,
        "positions": path.positions,
        "exit": None if path.exit is None else path.exit.to_dict(),
    }


@dataclass(frozen=True)
class Fate:
    """Where one chunk ended up in a search.

    Attributes:
        rowid: the chunk.
        position: its 1-based final position, or ``None``.
        exit: where it left (``None`` when returned).
        pass_name: the pass the story is in (``"first"``/``"fuzzy"``).
    """

    rowid: int
    position: int | None
    exit: Exit | None
    pass_name: str

    @property
    def stage(self) -> str:
        """The stage id of the fate: the exit's, or ``final`` (``fuzzy:final``)."""
        if self.exit is not None:
            return self.exit.stage
        return (FUZZY_PREFIX if self.pass_name == "fuzzy" else "") + "final"

    def to_dict(self) -> dict[str, object]:
        """``{"rowid", "position", "stage", "pass", "exit"}``."""
        return {
            "rowid": self.rowid,
            "position": self.position,
            "stage": self.stage,
            "pass": self.pass_name,
            "exit": None if self.exit is None else self.exit.to_dict(),
        }


def passes(trace: Trace) -> tuple[Run, ...]:
    """The passes a chunk's fate is read from, the answering one first: the
    first pass and the re-run, unless the re-run is a shadow (a what-if)."""
    rerun = trace.fuzzy.rerun if not trace.fuzzy.shadow else None
    if rerun is None:
        return (trace.first,)
    return (rerun, trace.first) if trace.layer == "rrf-fuzzy" else (trace.first, rerun)


def fate(trace: Trace, rowid: int) -> Fate | None:
    """Where chunk ``rowid`` went, read from the paths: its final position in
    the answering pass, or the deepest exit among :func:`passes` (the first
    of equal depth). ``None`` when no retriever of those passes returned it."""
    best: Fate | None = None
    answering = trace.answering_run
    for run in passes(trace):
        path = run.path(rowid)
        if path is None:
            continue
        if path.exit is None:
            if run is answering:
                return Fate(rowid, path.position(run.prefix + "final"), None, run.pass_name)
            continue  # survived a pass that did not answer (cannot happen outside a shadow)
        found = Fate(rowid, None, path.exit, run.pass_name)
        if best is None or depth(found.stage) > depth(best.stage):
            best = found
    return best
