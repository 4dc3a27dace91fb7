"""What changed between stages: one-line stage summaries and a candidate's journey.

Pure functions over a :class:`~engine.pipeline.trace.Trace`, shared by the CLI and the
browser so both tell the same story. Positions are 1-based.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.pipeline.candidates import Exit
from engine.pipeline.hooks import Stage
from engine.pipeline.params import SearchParams
from engine.pipeline.passes import Run
from engine.pipeline.paths import sentence
from engine.pipeline.run import pass_plan, variant_skips
from engine.pipeline.stages import fuzzy, refresh
from engine.pipeline.stages.retrieve import unretrieved
from engine.pipeline.table import BY_ID, pass_ended_by, stage, title
from engine.pipeline.trace import Trace
from engine.pipeline.words import SUMMARY_TEXT_MAX, abbreviate, plural

__all__ = [
    "JourneyStep",
    "StageSummary",
    "SUMMARY_TEXT_MAX",
    "abbreviate",
    "journey",
    "plural",
    "run_summaries",
    "stage_summaries",
]


@dataclass(frozen=True)
class StageSummary:
    """One stage in words.

    Attributes:
        stage: stage id from :data:`engine.pipeline.table.STAGES` (a fuzzy
            re-run's stages are prefixed ``fuzzy:``).
        title: display title (from the table).
        headline: what the stage did, with the numbers.
        elapsed_ms: time spent, when measured.
    """

    stage: str
    title: str
    headline: str
    elapsed_ms: float | None = None


@dataclass(frozen=True)
class JourneyStep:
    """Where one chunk stood at one stage.

    Attributes:
        stage: stage id (as in :class:`StageSummary`).
        position: 1-based position at that stage, or ``None`` if absent.
        note: what happened to it there, in words (generated from the path).
        exit: set on the step where it left the pass (the path's
            :class:`~engine.pipeline.candidates.Exit`; ``not-retrieved`` when no retriever
            of that pass returned it); ``None`` elsewhere.
    """

    stage: str
    position: int | None
    note: str
    exit: Exit | None = None


def run_summaries(run: Run, limit: int, prefix: str = "", params: SearchParams | None = None) -> list[StageSummary]:
    """Summaries for the pass stages of one pass, in the order they ran
    (stages that did not run say why); with ``params``, the retriever lines
    name the source / content-type filters they ran with."""
    params = params if params is not None else SearchParams(run.query, limit=limit)
    prefix = prefix or run.prefix
    skips = variant_skips(params)
    shown = [s.id for s in pass_plan(params)] + list(skips)
    ended = pass_ended_by(run)
    out = []
    for sid in shown:
        spec = BY_ID[sid]
        record = run.record(sid)
        if record is not None:
            head = spec.headline_of(record, params) or ""
            out.append(StageSummary(prefix + sid, spec.title, head, spec.elapsed_of(record)))
        elif sid in skips:
            out.append(StageSummary(prefix + sid, spec.title, f"did not run: variant {skips[sid]}"))
        else:
            after = f": {ended.emptied}" if ended is not None else ""
            out.append(StageSummary(prefix + sid, spec.title, f"did not run{after}"))
    return out


def _trace_summary(trace: Trace, spec: Stage) -> list[StageSummary]:
    record = trace.record(spec.id)
    head = None if record is None else spec.headline_of(record, trace.params)
    return [] if head is None else [StageSummary(spec.id, spec.title, head, spec.elapsed_of(record))]


def stage_summaries(trace: Trace) -> list[StageSummary]:
    """Every stage of the trace in pipeline order, including a fuzzy re-run."""
    out = _trace_summary(trace, refresh.STAGE)
    out += run_summaries(trace.first, trace.params.limit, params=trace.params)
    out += _trace_summary(trace, fuzzy.STAGE)
    if trace.fuzzy.rerun is not None:
        out += run_summaries(trace.fuzzy.rerun, trace.params.limit, prefix="fuzzy:", params=trace.params)
    if trace.final:
        out.append(StageSummary("final", title("final"), f"{plural(len(trace.final), 'result')}, layer {trace.layer}"))
    else:
        out.append(StageSummary("final", title("final"), f"no results (layer none): {trace.empty_reason}"))
    return out


def _run_journey(run: Run, key: str, rowid: int | None) -> tuple[list[JourneyStep], bool]:
    prefix = run.prefix
    if rowid is not None:
        path = run.path(rowid)
    else:
        path = next((p for p in run.paths if p.key == key and p.position(prefix + "fusion") is not None), None)
    steps: list[JourneyStep] = []
    retrievers = {r.name: r for r in (run.porter, run.trigram)}
    if path is None:
        for name, r in retrievers.items():
            steps.append(JourneyStep(prefix + name, None, "skipped" if r.skipped else "not retrieved"))
        gone = unretrieved(prefix)
        steps.append(JourneyStep(gone.stage, None, sentence(gone), gone))
        return steps, False
    for sid, pos in path.steps:
        spec = stage(sid)
        if spec.kind == "answer":
            break  # the trace's final step follows (see journey)
        if path.exit is not None and path.exit.stage == sid:
            steps.append(JourneyStep(sid, None, sentence(path.exit), path.exit))
            return steps, False
        record = run.record(sid)
        if pos is not None and record is not None:
            note = spec.note_of(record, pos)
        else:
            rr = retrievers.get(spec.id)
            note = "skipped" if rr is not None and rr.skipped else "not retrieved"
        steps.append(JourneyStep(sid, pos, note))
    return steps, path.exit is None


def journey(trace: Trace, key: str, rowid: int | None = None) -> list[JourneyStep]:
    """Where the candidate with fusion ``key`` (or the chunk ``rowid``) stood
    at each stage, ending where it left the pipeline or at its final position.

    Read from the passes' paths (:attr:`engine.pipeline.passes.Run.paths`): the first
    pass, then the fuzzy re-run when it answered, then the trace's answer."""
    steps, alive = _run_journey(trace.first, key, rowid)
    answered_first = trace.layer == "rrf"
    if trace.fuzzy.rerun is not None and not answered_first:
        more, alive = _run_journey(trace.fuzzy.rerun, key, rowid)
        steps += more
    final = next((r for r in trace.final if r.candidate.key == key), None)
    if final is not None and rowid is not None and final.candidate.rowid != rowid:
        steps.append(
            JourneyStep("final", None, f"not in the answer: its key is answered by row {final.candidate.rowid}")
        )
    elif final is not None:
        steps.append(JourneyStep("final", final.position, f"#{final.position} ({trace.layer})"))
    else:
        steps.append(JourneyStep("final", None, "not in the answer"))
    return steps
