"""The trim: the filtered candidates cut to ``limit`` (reference: the
``slice(0, limit)`` after the session filter).

With the reference order the rerank then reorders the trimmed list; with the
variant ``rerank=before-trim`` the trim cuts the reranked list instead. A
candidate below the cut leaves here with reason ``trimmed``.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.pipeline.candidates import Candidate, ChunkRef, Data, Exit
from engine.pipeline.hooks import Asking, Explanation, Item, Items, PassContext, PassView, Reason, Records, RecordStage
from engine.pipeline.hooks import candidates as _candidates
from engine.pipeline.stages import rerank
from engine.pipeline.stages.fusion import score_words
from engine.pipeline.words import number


@dataclass(frozen=True)
class TrimStage:
    """The record: the cut ``limit``, the ``kept`` candidates
    (``received[:limit]``), those ``cut``, and ``elapsed_ms``."""

    limit: int
    kept: tuple[Candidate, ...]
    cut: tuple[Candidate, ...]
    elapsed_ms: float = 0.0


def trim(candidates: tuple[Candidate, ...], limit: int) -> TrimStage:
    """``candidates[:limit]`` and what was cut."""
    return TrimStage(limit, candidates[:limit], candidates[limit:])


def _exit(stage: TrimStage, item: Item, position: int | None) -> tuple[str, Data]:
    return "trimmed", (("position", position), ("limit", stage.limit))


def _explain(ask: Asking, run: PassView, exit: Exit, chunk: ChunkRef) -> Explanation:
    t = STAGE.get(run)
    cand = next(c for c in t.cut if c.rowid == chunk.rowid)
    at, received = exit.get("position"), len(t.kept) + len(t.cut)
    assert at is None or isinstance(at, int), exit
    reranked = rerank.STAGE.of(run)
    if ask.params.variant.rerank == "before-trim" and reranked is not None:
        entry = next(e for e in reranked.entries if e.candidate.rowid == chunk.rowid)
        msg = (
            f"After the rerank (variant rerank=before-trim) it stood at #{at} of {received} with boost "
            f"{number(entry.boost)}, but the trim keeps the first {t.limit} (limit)."
        )
    else:
        msg = (
            f"Passed the session filter at #{at} of {received} ({score_words(cand, ask.params.variant.rrf_k)}), "
            f"but the trim keeps the first {t.limit} (limit)."
        )
    details: dict[str, object] = {"position": at, "limit": t.limit, "score": cand.score, "filtered": received}
    return Explanation(chunk, exit.stage, "trimmed", msg, run.pass_name, at, details)


def _to_json(run: Records) -> dict[str, object]:
    """``trimmed`` and ``cut`` [{source, title}] (empty when the trim did not run)."""
    t = STAGE.of(run)

    def rows(cs: tuple[Candidate, ...]) -> list[dict[str, object]]:
        return [{"source": c.source, "title": c.title} for c in cs]

    return {"trimmed": rows(t.kept) if t else [], "cut": rows(t.cut) if t else []}


def _step(ctx: PassContext, items: Items) -> TrimStage:
    return trim(_candidates(items), ctx.params.limit)


STAGE = RecordStage(
    id="trim",
    title="Trim",
    short="Trim",
    compact="Trim",
    about=(
        "The survivors are cut to the limit; what falls below the cut line is 'cut'",
        "and never reaches the rerank.",
    ),
    scope="pass",
    kind="list",
    record=TrimStage,
    step=_step,
    ranked=lambda s: s.kept,
    headline=lambda s, params: f"kept {len(s.kept)} (limit {s.limit}), cut {len(s.cut)}",
    exit=_exit,
    note=lambda s, pos: "kept",
    reasons={
        "trimmed": Reason(
            lambda e: f"cut by the trim (#{e.get('position')} > limit {e.get('limit')})",
            ("position", "limit"),
            lambda e: f"cut @{e.get('limit')}",
            lambda e, cut: f"cut@{e.get('limit')}",
        )
    },
    to_json=_to_json,
    explain=_explain,
)
