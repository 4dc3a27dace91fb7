"""The answer: a pass's final list (``final``; the trace's answer is the
answering pass's, with its layer). Why-not says ``returned`` of a chunk in it."""

from __future__ import annotations

from engine.pipeline.candidates import ChunkRef
from engine.pipeline.hooks import Asking, Explanation, PassView, Stage, answer_facts
from engine.pipeline.words import number


def _kept(ask: Asking, run: PassView, chunk: ChunkRef, position: int) -> Explanation | None:
    result = ask.result(chunk.rowid)
    if result is None:
        return None
    boost = "" if result.boost is None else f", rerank boost {number(result.boost)}"
    return Explanation(
        chunk,
        run.prefix + "final",
        "returned",
        f"{ask.returned_words(position)}: RRF score {number(result.candidate.score)}{boost}.",
        run.pass_name,
        position,
        answer_facts(result),
        returned=True,
    )


STAGE = Stage(
    id="final",
    title="Final",
    compact="Fin",
    about=(
        "The answer and its layer: rrf (first pass), rrf-fuzzy (typo re-run) or none,",
        "with the reason when it is empty.",
    ),
    scope="pass",
    kind="answer",
    answers=("returned",),
    kept=_kept,
)
