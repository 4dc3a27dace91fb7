"""Every candidate's path through a pass, as data.

For every chunk a retriever returned in a pass, :func:`run_paths` records
its 1-based position at each stage (in that stage's ranked list,
:func:`engine.pipeline.table.ranked`) and where it left: an
:class:`~engine.pipeline.trace.Exit` with the stage id, a reason code and the numbers
behind it. The pipeline computes the paths once per pass and attaches them
to :attr:`engine.pipeline.trace.Run.paths`; the journey, why-not, the inspector, the
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
:func:`engine.lab.why.why_not`, which looks beyond the trace. Positions are
1-based throughout.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.pipeline.trace import CandidatePath, Exit, Run
from engine.pipeline.table import STAGES, stage

if TYPE_CHECKING:
    from engine.pipeline.trace import Trace


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
        One :class:`~engine.pipeline.trace.CandidatePath` per row id, deepest first:
        the final list in order, then those that left at the last stage (by
        their position there), and so on; merged rows last, in the order the
        retrievers returned them (Porter first).
    """
    prefix = run.prefix
    # Items are duck-typed: a retriever's Hit or a chain stage's Candidate
    # (both carry rowid, source, title and key).
    entered: dict[int, Any] = {}  # rowid -> first Hit seen
    ids: list[str] = []  # full stage ids, in execution order
    chain: list[tuple[str, object, tuple]] = []  # (id, record, ranked list) of the chain stages
    entry_ranks: list[dict[int, int]] = []  # per retriever: rowid -> rank
    for sid, record in run.records:
        spec = stage(sid)
        assert spec.hooks is not None
        items = tuple(spec.hooks.ranked(record))
        ids.append(prefix + sid)
        if spec.kind == "retriever":
            assert not chain, "the retriever stages come before the chain"
            for h in items:
                entered.setdefault(h.rowid, h)
            entry_ranks.append({h.rowid: i for i, h in enumerate(items, 1)})
        else:
            chain.append((sid, record, items))
    ids.append(prefix + "final")
    # positions along the chain, for the rows still in it; a row's list stops where it left
    chain_pos: dict[int, list[int]] = {rowid: [] for rowid in entered}
    exits: dict[int, Exit] = {}
    alive: dict[int, Any] = dict(entered)  # rowid -> the item as the next stage receives it
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
            if spec.hooks is None or spec.hooks.exit is None:
                raise AssertionError(f"stage {sid!r} dropped row {rowid} but declares no exit")
            reason, data = spec.hooks.exit(record, alive.pop(rowid), received_at[rowid])
            exits[rowid] = Exit(prefix + sid, reason, tuple(data))
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
    first_list = chain[0][2] if chain else ()
    for c in first_list:
        keys[c.rowid] = c.key
        for merged in c.merged_rowids:
            keys[merged] = c.key
    out = []
    for rowid in sorted(entered, key=deepest_first):
        hit = entered[rowid]
        out.append(
            CandidatePath(
                rowid,
                hit.source,
                hit.title,
                keys.get(rowid, hit.key),
                steps[rowid],
                exits.get(rowid),
            )
        )
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
