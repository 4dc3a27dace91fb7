"""Every candidate's path through a pass, as data.

For every chunk a retriever returned in a pass, :func:`run_paths` records
its 1-based position at each stage (in that stage's ranked list,
:func:`engine.stages.ranked`) and where it left: an
:class:`~engine.model.Exit` with the stage id, a reason code and the numbers
behind it. The pipeline computes the paths once per pass and attaches them
to :attr:`engine.model.Run.paths`; the journey, why-not, the inspector, the
CLI and the JSON trace read them. :func:`sentence` puts an exit in words
(one function per code, declared by the stage that gives it); nothing parses
a sentence back.

Rules (checked by ``tests/engine/test_paths.py``):

* the retriever stages are parallel entries: a chunk holds its rank in each
  retriever that returned it, ``None`` in the other;
* from the first chain stage on (``fusion`` …), a chunk holds its position
  at each stage until it leaves; ``exit.stage`` is the first chain stage
  where its position is ``None``, and every later position is ``None`` too;
* a chunk in the pass's final list has ``exit`` ``None``.

Reason codes (:data:`REASONS`, a closed set: the union of the codes the
table's stages declare), in pipeline order:

=======================  ==========  ==========================================
reason                   stage       data
=======================  ==========  ==========================================
``source-filter``        retrieve    source, filter, source_match
``content-type-filter``  retrieve    content_type, filter
``no-term``              retrieve    porter_terms, trigram_terms
``retriever-skipped``    retrieve    retrievers (the ones that ran)
``beyond-fts-limit``     retrieve    rank (best uncapped bm25 rank), fts_limit
``not-retrieved``        retrieve    (none): no retriever returned it; why-not
                                     tells which of the above it is
``merged``               fusion      into_rowid, into_position, key
``beyond-pool``          pool        position (fused), pool_size
``session-filter``       filter      position (in the pool), session_id,
                                     allow_set
``trimmed``              trim        position (in the received list), limit
``fuzzy-not-attempted``  fuzzy       corrected_query, first_pass_results, shadow
=======================  ==========  ==========================================

The paths themselves only give ``merged``, ``beyond-pool``,
``session-filter`` and ``trimmed`` (a path exists only for a retrieved
chunk); the ``retrieve`` and ``fuzzy`` codes are given by
:func:`engine.why.why_not`, which looks beyond the trace. Positions are
1-based throughout.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .model import CandidatePath, Exit, Run
from .stages import STAGES, stage

if TYPE_CHECKING:
    from .model import Trace


def _reasons() -> dict[str, str]:
    out: dict[str, str] = {}
    for s in STAGES:
        for code in s.exit_sentences:
            if code in out:
                raise AssertionError(f"reason code {code!r} declared by stages {out[code]!r} and {s.id!r}")
            out[code] = s.id
    return out


#: Every exit reason code → the (unprefixed) stage that gives it, in pipeline order.
REASONS: dict[str, str] = _reasons()


def sentence(exit: Exit) -> str:
    """The exit in words, e.g. ``"beyond the pool (fused #7, pool 3)"``.

    Raises:
        KeyError: a reason code no stage declares.
    """
    return stage(REASONS[exit.reason]).exit_sentences[exit.reason](exit)


def data_names(reason: str) -> tuple[str, ...]:
    """The names in the data of an exit with ``reason``."""
    return tuple(stage(REASONS[reason]).exit_data_names.get(reason, ()))


def run_paths(run: Run) -> tuple[CandidatePath, ...]:
    """The path of every chunk a retriever returned in ``run``.

    Returns:
        One :class:`~engine.model.CandidatePath` per row id, deepest first:
        the final list in order, then those that left at the last stage (by
        their position there), and so on; merged rows last, in the order the
        retrievers returned them (Porter first).
    """
    prefix = run.prefix
    entered: dict[int, object] = {}  # rowid -> first Hit seen
    steps: dict[int, list[tuple[str, int | None]]] = {}
    exits: dict[int, Exit] = {}
    chain: list[tuple[str, tuple]] = []
    for sid, record in run.records:
        spec = stage(sid)
        assert spec.hooks is not None
        items = tuple(spec.hooks.ranked(record))
        if spec.kind == "retriever":
            for h in items:
                entered.setdefault(h.rowid, h)
        chain.append((sid, items))
    for rowid in entered:
        steps[rowid] = []
    previous: tuple | None = None
    alive = set(entered)
    reached: dict[int, tuple[int, int]] = {}  # rowid -> (stage index, position) of the deepest position
    for index, (sid, items) in enumerate(chain):
        spec = stage(sid)
        where = {item.rowid: i for i, item in enumerate(items, 1)}
        if spec.kind == "retriever":
            for rowid in entered:
                steps[rowid].append((prefix + sid, where.get(rowid)))
            continue
        received = {item.rowid: (i, item) for i, item in enumerate(previous, 1)} if previous is not None else {}
        for rowid in entered:
            pos = where.get(rowid) if rowid in alive else None
            steps[rowid].append((prefix + sid, pos))
            if pos is not None:
                reached[rowid] = (index, pos)
            elif rowid in alive:
                alive.discard(rowid)
                at, item = received.get(rowid, (None, entered[rowid]))
                if spec.hooks is None or spec.hooks.exit is None:
                    raise AssertionError(f"stage {sid!r} dropped row {rowid} but declares no exit")
                reason, data = spec.hooks.exit(run.record(sid), item, at)
                exits[rowid] = Exit(prefix + sid, reason, tuple(data))
        previous = items
    final = {c.rowid: i for i, c in enumerate(run.results, 1)}
    last = len(chain)
    for rowid in entered:
        pos = final.get(rowid) if rowid in alive else None
        steps[rowid].append((prefix + "final", pos))
        if pos is not None:
            reached[rowid] = (last, pos)
        elif rowid in alive:  # cannot happen: the results are the last stage's list
            raise AssertionError(f"row {rowid} survived every stage but is not in the results")
    order = {rowid: i for i, rowid in enumerate(entered)}

    def deepest_first(rowid: int) -> tuple[int, int, int]:
        index, pos = reached.get(rowid, (-1, 0))
        return (-index, pos, order[rowid])

    keys: dict[int, str] = {}
    first_list = next((items for sid, items in chain if stage(sid).kind == "list"), ())
    for c in first_list:
        keys[c.rowid] = c.key
        for merged in c.merged_rowids:
            keys[merged] = c.key
    out = []
    for rowid in sorted(entered, key=deepest_first):
        hit = entered[rowid]
        out.append(CandidatePath(
            rowid, hit.source, hit.title, keys.get(rowid, hit.key),  # type: ignore[attr-defined]
            tuple(steps[rowid]), exits.get(rowid),
        ))
    return tuple(out)


def trace_paths(trace: "Trace") -> dict[str, tuple[CandidatePath, ...]]:
    """``{"first": paths, "fuzzy": paths}`` (``"fuzzy"`` only when the fallback re-ran)."""
    out = {"first": trace.first.paths}
    if trace.fuzzy.rerun is not None:
        out["fuzzy"] = trace.fuzzy.rerun.paths
    return out


def path_to_dict(path: CandidatePath) -> dict:
    """The JSON form: ``{"rowid", "source", "title", "positions": {stage id:
    int|null}, "exit": null | {"stage", "reason", ...data}}``."""
    return {
        "rowid": path.rowid,
        "source": path.source,
        "title": path.title,
        "positions": path.positions,
        "exit": None if path.exit is None else path.exit.to_dict(),
    }
