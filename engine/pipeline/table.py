"""Every stage, declared once, in pipeline order.

:data:`STAGES` lists the stage modules' declarations (:class:`~engine.pipeline.hooks.Stage`):
the pipeline runs the pass stages in this order (:func:`engine.pipeline.run.pass_plan`
applies the variant), and the paths, summaries, journey, why-not, flow,
inspector, F1 help, JSON export, CLI and benchmark read ids, titles, order
and reasons from here and nowhere else.

Stage ids (a contract between front-ends): ``refresh``, ``porter``,
``trigram``, ``retrieve``, ``fusion``, ``pool``, ``filter``, ``trim``,
``rerank``, ``fuzzy``, ``final``, ``agent``. Pass stages run in the first
pass and again in the fuzzy re-run, where their ids are prefixed ``fuzzy:``.

Kinds: ``trace`` (once per search, no list: ``refresh``, ``fuzzy``);
``retriever`` (a pass's parallel entries, lists of retriever rows);
``group`` (the retrievers together, where a chunk no retriever returned
left: ``retrieve``); ``list`` (a chain stage with a ranked candidate list);
``answer`` (a pass's final list); ``view`` (computed on demand by a
front-end from a search: ``agent``, what context-mode's ``ctx_search``
hands a coding agent, :func:`engine.agent.ctx_search`).
"""

from __future__ import annotations

from engine.pipeline.candidates import FUZZY_PREFIX, Candidate, Hit
from engine.pipeline.hooks import Stage
from engine.pipeline.passes import Run
from engine.pipeline.stages import final, fusion, fuzzy, pool, refresh, rerank, retrieve, session_filter, trim
from engine.pipeline.trace import Trace

KINDS = ("trace", "retriever", "group", "list", "answer", "view")

#: The table, in pipeline order.
STAGES: tuple[Stage, ...] = (
    refresh.STAGE,
    retrieve.PORTER,
    retrieve.TRIGRAM,
    retrieve.RETRIEVE,
    fusion.STAGE,
    pool.STAGE,
    session_filter.STAGE,
    trim.STAGE,
    rerank.STAGE,
    fuzzy.STAGE,
    final.STAGE,
    Stage(
        id="agent",
        title="Agent view",
        about=(
            "What ctx_search hands the agent: at most 2 results per query (1 after call #3), each cut",
            "to 1,500-unit windows around the matches, a 40 KiB cap and a throttle footer",
        ),
        scope="trace",
        kind="view",
    ),
)

BY_ID: dict[str, Stage] = {s.id: s for s in STAGES}
#: The stages a pass runs (retrievers, then the chain), in table order.
PASS_STAGES: tuple[Stage, ...] = tuple(s for s in STAGES if s.scope == "pass" and s.kind in ("retriever", "list"))
#: The retriever stage ids, in table order (Porter first: fusion's order).
RETRIEVERS: tuple[str, ...] = tuple(s.id for s in STAGES if s.kind == "retriever")
_PASS_LISTS = tuple(s.id for s in STAGES if s.scope == "pass" and s.kind in ("retriever", "list", "answer"))
#: Every stage id that can have a ranked list, in table order: the first
#: pass's (``porter`` … ``final``), then the re-run's (``fuzzy:porter`` … ``fuzzy:final``).
RANKED_IDS: tuple[str, ...] = _PASS_LISTS + tuple(FUZZY_PREFIX + sid for sid in _PASS_LISTS)
_DEPTH = {s.id: i for i, s in enumerate(STAGES)}


def _check_table() -> None:
    assert len(BY_ID) == len(STAGES), "duplicate stage id"
    codes = [c for s in STAGES for c in (*s.reasons, *s.answers)]
    assert len(set(codes)) == len(codes), "a reason code declared twice"
    for s in STAGES:
        assert s.kind in KINDS and s.scope in ("trace", "pass"), s.id
        assert s.has_record == (s.kind in ("trace", "retriever", "list")), s.id


_check_table()


def base_id(stage_id: str) -> str:
    """``"fuzzy:trim"`` → ``"trim"``; an unprefixed id is returned as is."""
    return stage_id[len(FUZZY_PREFIX) :] if stage_id.startswith(FUZZY_PREFIX) else stage_id


def in_rerun(stage_id: str) -> bool:
    """True for a fuzzy re-run stage id (``fuzzy:…``)."""
    return stage_id.startswith(FUZZY_PREFIX)


def stage(stage_id: str) -> Stage:
    """The table row of ``stage_id`` (prefixed or not).

    Raises:
        KeyError: no such stage (the message lists the ids).
    """
    try:
        return BY_ID[base_id(stage_id)]
    except KeyError:
        raise KeyError(f"unknown stage {stage_id!r}; stages are {', '.join(BY_ID)}") from None


def title(stage_id: str) -> str:
    """The display title of ``stage_id`` (prefix ignored; front-ends mark the re-run)."""
    return stage(stage_id).title


def depth(stage_id: str) -> int:
    """How far into the pipeline ``stage_id`` is (its 0-based place in the table)."""
    return _DEPTH[stage(stage_id).id]


def ranked(run: Run, stage_id: str) -> tuple[Hit | Candidate, ...]:
    """The ranked list of ``stage_id`` in ``run``, best first: retriever rows,
    chain candidates, or (``final``) the pass's results; ``()`` for a stage
    that did not run. Positions in these lists are what the paths record.

    Raises:
        KeyError: unknown id.
        ValueError: a stage without a list, or a ``fuzzy:`` id given with the first pass.
    """
    s = stage(stage_id)
    if in_rerun(stage_id) and run.pass_name != "fuzzy":
        raise ValueError(f"{stage_id!r} names a fuzzy re-run stage, but this run is the first pass")
    if s.kind == "answer":
        return run.results
    if s not in PASS_STAGES:
        raise ValueError(f"stage {s.id!r} has no ranked list")
    record = run.record(s.id)
    return () if record is None else s.ranked_of(record)


def pass_ended_by(run: Run) -> Stage | None:
    """The stage whose empty output ended ``run`` early (its ``emptied`` says
    why the rest did not run), or ``None`` when the pass did not end early:
    the earliest empty stage (the retrievers as their group, ``retrieve``,
    empty when every retriever that ran returned nothing) up to the stage
    that ended the pass (``ends_pass_when_empty``, empty and last to run)."""
    if not run.order or not stage(run.order[-1]).ends_pass_when_empty or ranked(run, run.order[-1]):
        return None
    if all(not ranked(run, sid) for sid in run.order if sid in RETRIEVERS):
        return BY_ID["retrieve"]
    gate = stage(run.order[-1])
    return next((s for s in PASS_STAGES if s.emptied and s.id in run.order and not ranked(run, s.id)), gate)


def run_stage_ids(run: Run) -> tuple[str, ...]:
    """Full ids of the stages that ran in ``run``, in execution order, then its ``final``."""
    return tuple(run.prefix + sid for sid in run.order) + (run.prefix + "final",)


def stage_lists(trace: Trace) -> dict[str, tuple[Hit | Candidate, ...]]:
    """``{stage id: ranked list}`` for every list stage that ran, first pass
    then re-run, in execution order (``final``: each pass's own results)."""
    return {sid: ranked(run, sid) for run in trace.runs for sid in run_stage_ids(run)}


def ranked_lists(trace: Trace) -> dict[str, tuple[Hit | Candidate, ...]]:
    """What the evaluation scores: :func:`stage_lists` in table order
    (:data:`RANKED_IDS`), except that ``final`` is the trace's answer
    (``trace.final``: the re-run's when it answered). Stages that did not run are absent."""
    lists = stage_lists(trace)
    lists["final"] = tuple(r.candidate for r in trace.final)
    return {sid: lists[sid] for sid in RANKED_IDS if sid in lists}
