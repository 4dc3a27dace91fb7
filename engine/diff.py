"""What changed between stages: one-line stage summaries and a candidate's journey.

Pure functions over a :class:`~engine.model.Trace`, shared by the CLI and the
browser so both tell the same story. Positions are 1-based.
"""

from __future__ import annotations

from dataclasses import dataclass

from .model import Run, SearchParams, Trace


@dataclass(frozen=True)
class StageSummary:
    """One stage in words.

    Attributes:
        stage: stable id (``porter``, ``trigram``, ``fusion``, ``pool``,
            ``filter``, ``trim``, ``rerank``, ``fuzzy``, ``final``; a fuzzy
            re-run's stages are prefixed ``fuzzy:``).
        title: display name.
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
        note: what happened to it there.
    """

    stage: str
    position: int | None
    note: str


#: Longest query text, term list or correction list a one-line summary
#: quotes in full; longer ones are cut (see :func:`abbreviate`).
SUMMARY_TEXT_MAX = 120


def abbreviate(text: str, width: int = SUMMARY_TEXT_MAX) -> str:
    """``text`` when it has at most ``width`` characters, else its first
    ``width`` and ``… (+N characters)``."""
    if len(text) <= width:
        return text
    return f"{text[:width]}… (+{len(text) - width:,} characters)"


def plural(n: int, word: str) -> str:
    """``"1 hit"`` / ``"3 hits"``: ``n`` and ``word``, with an ``s`` unless ``n`` is 1."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def run_summaries(run: Run, limit: int, prefix: str = "", params: SearchParams | None = None) -> list[StageSummary]:
    """Summaries for the stages of one pass; with ``params``, the retriever
    lines name the source / content-type filters they ran with."""
    out = []
    filters = params.filter_text if params is not None else ""
    for r in (run.porter, run.trigram):
        name = "Porter" if r.name == "porter" else "Trigram"
        if r.skipped:
            head = f"skipped: {r.skipped}"
        elif r.error:
            head = f"error: {r.error}"
        else:
            head = f"{plural(len(r.hits), 'hit')} for {abbreviate(r.query)} (limit {r.fts_limit})"
            if filters:
                head += f" with {filters}"
        out.append(StageSummary(prefix + r.name, name, head, r.elapsed_ms))
    f = run.fusion
    merged = [c for c in f.candidates if c.merged_rowids]
    both = sum(1 for c in f.candidates if c.porter_rank and c.trigram_rank)
    head = f"{plural(len(f.candidates), 'key')} fused (k={f.rrf_k}); {both} found by both retrievers"
    if merged:
        swallowed = sum(len(c.merged_rowids) for c in merged)
        head += f"; {plural(swallowed, 'chunk')} merged away by source::title collisions"
    out.append(StageSummary(prefix + "fusion", "Fusion (RRF)", head, f.elapsed_ms))
    beyond = len(f.beyond_pool)
    out.append(
        StageSummary(
            prefix + "pool",
            "Candidate pool",
            f"first {min(f.pool_size, len(f.candidates))} of {len(f.candidates)} kept (pool size {f.pool_size})"
            + (f"; {beyond} beyond the pool" if beyond else ""),
        )
    )
    flt = run.filter
    if flt.allow_set is None:
        head = "no session allow-set: everything passes"
    else:
        allowed = ", ".join(flt.allow_set) or "(only unattributed)"
        head = f"allow {allowed}: kept {len(flt.kept)}, removed {len(flt.removed)}"
        if flt.note:
            head += f" ({flt.note})"
    out.append(StageSummary(prefix + "filter", "Session filter", head, flt.elapsed_ms))
    if run.trim is None:
        out.append(StageSummary(prefix + "trim", "Trim", "did not run: nothing survived the filter"))
    else:
        out.append(
            StageSummary(
                prefix + "trim", "Trim",
                f"kept {len(run.trim.kept)} (limit {run.trim.limit}), cut {len(run.trim.cut)}", run.trim.elapsed_ms,
            )
        )
    if run.rerank is None:
        out.append(StageSummary(prefix + "rerank", "Rerank", "did not run"))
    else:
        moved = sum(1 for e in run.rerank.entries if e.moved)
        terms = abbreviate(" ".join(run.rerank.terms)) or "(none)"
        out.append(
            StageSummary(
                prefix + "rerank", "Rerank",
                f"terms [{terms}]: {plural(moved, 'result')} moved", run.rerank.elapsed_ms,
            )
        )
    return out


def stage_summaries(trace: Trace) -> list[StageSummary]:
    """Every stage of the trace in pipeline order, including a fuzzy re-run."""
    out = []
    if trace.refresh.checked:
        verb = "re-indexed" if trace.refresh.refreshed else "would refresh (read-only: not done)"
        head = f"{trace.refresh.checked} file-backed sources checked; {len(trace.refresh.stale)} stale"
        if trace.refresh.stale:
            head += f", {verb}: " + ", ".join(trace.refresh.stale)
        out.append(StageSummary("refresh", "Stale refresh", head, trace.refresh.elapsed_ms))
    out += run_summaries(trace.first, trace.params.limit, params=trace.params)
    fz = trace.fuzzy
    if not fz.ran:
        out.append(StageSummary("fuzzy", "Fuzzy", f"skipped: {fz.reason}"))
    else:
        fixes = [f"{c.word} → {c.corrected}" for c in fz.corrections if c.corrected]
        head = ("corrected " + abbreviate(", ".join(fixes))) if fixes else "no correction found"
        if fz.shadow:
            head = "shadow run: " + head
        out.append(StageSummary("fuzzy", "Fuzzy", head, fz.elapsed_ms))
        if fz.rerun is not None:
            out += run_summaries(fz.rerun, trace.params.limit, prefix="fuzzy:", params=trace.params)
    if trace.final:
        out.append(StageSummary("final", "Final", f"{plural(len(trace.final), 'result')}, layer {trace.layer}"))
    else:
        out.append(StageSummary("final", "Final", f"no results (layer none): {trace.empty_reason}"))
    return out


def _index_of(cands, key: str) -> int | None:
    for i, c in enumerate(cands):
        if c.key == key:
            return i + 1
    return None


def _run_journey(run: Run, key: str, rowid: int | None, prefix: str) -> tuple[list[JourneyStep], bool]:
    steps: list[JourneyStep] = []
    for r in (run.porter, run.trigram):
        pos = next((h.rank for h in r.hits if (rowid is not None and h.rowid == rowid) or (rowid is None and h.key == key)), None)
        note = f"rank {pos}" if pos else ("skipped" if r.skipped else "not retrieved")
        steps.append(JourneyStep(prefix + r.name, pos, note))
    pos = _index_of(run.fusion.candidates, key)
    if pos is None:
        steps.append(JourneyStep(prefix + "fusion", None, "not fused: neither retriever returned it"))
        return steps, False
    cand = run.fusion.candidates[pos - 1]
    if rowid is not None and cand.rowid != rowid:
        steps.append(JourneyStep(prefix + "fusion", pos, f"merged into row {cand.rowid} (same source::title)"))
        return steps, False
    steps.append(JourneyStep(prefix + "fusion", pos, f"score {cand.score:.6f}"))
    pool_pos = _index_of(run.fusion.pool, key)
    if pool_pos is None:
        steps.append(JourneyStep(prefix + "pool", None, f"beyond the pool (fused #{pos}, pool {run.fusion.pool_size})"))
        return steps, False
    steps.append(JourneyStep(prefix + "pool", pool_pos, "in the pool"))
    f_pos = _index_of(run.filter.kept, key)
    if f_pos is None:
        steps.append(JourneyStep(prefix + "filter", None, f"removed by the session filter (session {cand.session_id!r})"))
        return steps, False
    steps.append(JourneyStep(prefix + "filter", f_pos, "passed"))
    if run.trim is not None:
        t_pos = _index_of(run.trim.kept, key)
        if t_pos is None:
            steps.append(JourneyStep(prefix + "trim", None, f"cut by the trim (#{f_pos} > limit {run.trim.limit})"))
            return steps, False
        steps.append(JourneyStep(prefix + "trim", t_pos, "kept"))
    if run.rerank is not None:
        for e in run.rerank.entries:
            if e.candidate.key == key:
                arrow = "↑" if e.moved > 0 else "↓" if e.moved < 0 else "="
                steps.append(
                    JourneyStep(prefix + "rerank", e.new_position, f"{e.old_position} → {e.new_position} {arrow} (boost {e.boost:.4f})")
                )
    return steps, True


def journey(trace: Trace, key: str, rowid: int | None = None) -> list[JourneyStep]:
    """Where the candidate with fusion ``key`` (or the chunk ``rowid``) stood
    at each stage, ending where it left the pipeline or at its final position."""
    steps, alive = _run_journey(trace.first, key, rowid, "")
    answered_first = trace.layer == "rrf"
    if trace.fuzzy.rerun is not None and not answered_first:
        more, alive = _run_journey(trace.fuzzy.rerun, key, rowid, "fuzzy:")
        steps += more
    final = next((r for r in trace.final if r.candidate.key == key), None)
    if final is not None and rowid is not None and final.candidate.rowid != rowid:
        steps.append(JourneyStep("final", None, f"not in the answer: its key is answered by row {final.candidate.rowid}"))
    elif final is not None:
        steps.append(JourneyStep("final", final.position, f"#{final.position} ({trace.layer})"))
    else:
        steps.append(JourneyStep("final", None, "not in the answer"))
    return steps
