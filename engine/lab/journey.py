"""What changed between stages: one-line stage summaries and a candidate's journey.

Pure functions over a :class:`~engine.pipeline.trace.Trace`, shared by the CLI and the
browser so both tell the same story. Positions are 1-based.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.pipeline.trace import Exit, Run, SearchParams, Trace
from engine.pipeline.paths import sentence
from engine.pipeline.run import pass_plan, variant_skips
from engine.pipeline.table import BY_ID, PASS_STAGES, stage, title
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
            :class:`~engine.pipeline.trace.Exit`; ``not-retrieved`` when no retriever
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
    plan = [s.id for s in pass_plan(params)]
    shown = plan + [s.id for s in PASS_STAGES if s.id not in plan]
    skips = variant_skips(params)
    gate = next((sid for sid in run.order if BY_ID[sid].ends_pass_when_empty), None)
    out = []
    for sid in shown:
        spec = BY_ID[sid]
        record = run.record(sid)
        if record is not None:
            assert spec.hooks is not None
            out.append(StageSummary(prefix + sid, spec.title, spec.hooks.headline(record, params), record.elapsed_ms))  # type: ignore[attr-defined]
        elif sid in skips:
            out.append(StageSummary(prefix + sid, spec.title, f"did not run: variant {skips[sid]}"))
        else:
            after = f": nothing survived the {title(gate).lower()}" if gate else ""
            out.append(StageSummary(prefix + sid, spec.title, f"did not run{after}"))
    return out


def stage_summaries(trace: Trace) -> list[StageSummary]:
    """Every stage of the trace in pipeline order, including a fuzzy re-run."""
    out = []
    if trace.refresh.checked:
        verb = "re-indexed" if trace.refresh.refreshed else "would refresh (read-only: not done)"
        head = f"{trace.refresh.checked} file-backed sources checked; {len(trace.refresh.stale)} stale"
        if trace.refresh.stale:
            head += f", {verb}: " + ", ".join(trace.refresh.stale)
        out.append(StageSummary("refresh", title("refresh"), head, trace.refresh.elapsed_ms))
    out += run_summaries(trace.first, trace.params.limit, params=trace.params)
    fz = trace.fuzzy
    if not fz.ran:
        out.append(StageSummary("fuzzy", title("fuzzy"), f"skipped: {fz.reason}"))
    else:
        fixes = [f"{c.word} → {c.corrected}" for c in fz.corrections if c.corrected]
        head = ("corrected " + abbreviate(", ".join(fixes))) if fixes else "no correction found"
        if fz.shadow:
            head = "shadow run: " + head
        out.append(StageSummary("fuzzy", title("fuzzy"), head, fz.elapsed_ms))
        if fz.rerun is not None:
            out += run_summaries(fz.rerun, trace.params.limit, prefix="fuzzy:", params=trace.params)
    if trace.final:
        out.append(StageSummary("final", title("final"), f"{plural(len(trace.final), 'result')}, layer {trace.layer}"))
    else:
        out.append(StageSummary("final", title("final"), f"no results (layer none): {trace.empty_reason}"))
    return out


def _step_note(run: Run, sid: str, pos: int) -> str:
    """What happened to a candidate that holds position ``pos`` at ``sid``."""
    base = stage(sid).id
    if stage(sid).kind == "retriever":
        return f"rank {pos}"
    if base == "fusion":
        cand = run.fusion.candidates[pos - 1]
        return f"score {cand.score:.6f}"
    if base == "pool":
        return "in the pool"
    if base == "filter":
        return "passed"
    if base == "trim":
        return "kept"
    if base == "rerank" and run.rerank is not None:
        e = run.rerank.entries[pos - 1]
        arrow = "↑" if e.moved > 0 else "↓" if e.moved < 0 else "="
        return f"{e.old_position} → {e.new_position} {arrow} (boost {e.boost:.4f})"
    return f"#{pos}"


def _run_journey(run: Run, key: str, rowid: int | None) -> tuple[list[JourneyStep], bool]:
    prefix = run.prefix
    if rowid is not None:
        path = run.path(rowid)
    else:
        path = next((p for p in run.paths if p.key == key and p.position(prefix + "fusion") is not None), None)
    steps: list[JourneyStep] = []
    if path is None:
        for sid in run.order:
            if stage(sid).kind == "retriever":
                r = run.record(sid)
                steps.append(JourneyStep(prefix + sid, None, "skipped" if r.skipped else "not retrieved"))  # type: ignore[attr-defined]
        gone = Exit(prefix + "retrieve", "not-retrieved")
        steps.append(JourneyStep(prefix + "retrieve", None, sentence(gone), gone))
        return steps, False
    for sid, pos in path.steps:
        spec = stage(sid)
        if spec.kind == "answer":
            break  # the trace's final step follows (see journey)
        if spec.kind == "retriever":
            r = run.record(sid)
            note = f"rank {pos}" if pos else ("skipped" if r.skipped else "not retrieved")  # type: ignore[attr-defined]
            steps.append(JourneyStep(sid, pos, note))
            continue
        if path.exit is not None and path.exit.stage == sid:
            steps.append(JourneyStep(sid, None, sentence(path.exit), path.exit))
            return steps, False
        steps.append(JourneyStep(sid, pos, _step_note(run, sid, pos)))  # type: ignore[arg-type]
    return steps, path.exit is None


def journey(trace: Trace, key: str, rowid: int | None = None) -> list[JourneyStep]:
    """Where the candidate with fusion ``key`` (or the chunk ``rowid``) stood
    at each stage, ending where it left the pipeline or at its final position.

    Read from the passes' paths (:attr:`engine.pipeline.trace.Run.paths`): the first
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
