"""Why the typo fallback ran (or not), in words.

:class:`~engine.pipeline.trace.FuzzyStage` records it as data (``code``, ``trigger``
and the numbers behind them); this module has one sentence function per
code and per trigger. Kept apart from :mod:`engine.pipeline.stages.fuzzy` so that the model
(:attr:`engine.pipeline.trace.FuzzyStage.reason`) can use it without an import cycle:
it imports nothing of the model at run time. Pure Python.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from engine.pipeline.words import plural

if TYPE_CHECKING:
    from engine.pipeline.trace import FuzzyStage


def _policy_never(f: "FuzzyStage") -> str:
    return "fuzzy policy is 'never': typo correction disabled"


def _first_pass_found(f: "FuzzyStage") -> str:
    noun = "result" if f.first_pass_results == 1 else "results"
    return f"fusion returned {f.first_pass_results} {noun} after the session filter: typo correction not attempted"


def _no_vocabulary(f: "FuzzyStage") -> str:
    return "this store has no vocabulary table: typo correction is unavailable"


def _no_word(f: "FuzzyStage") -> str:
    return "no query word of 3+ characters outside the stopword list to correct"


def _no_correction(f: "FuzzyStage") -> str:
    return "no word needed or found a correction in the vocabulary"


def _corrected(f: "FuzzyStage") -> str:
    return "corrected " + ", ".join(f"{c.word} → {c.corrected}" for c in f.corrections if c.corrected)


#: ``FuzzyStage.code``: skip codes (``ran`` false) and outcome codes (``ran``
#: true), each with its sentence.
FUZZY_CODES: dict[str, Callable[["FuzzyStage"], str]] = {
    "policy-never": _policy_never,
    "first-pass-found": _first_pass_found,
    "no-vocabulary": _no_vocabulary,
    "no-word": _no_word,
    "no-correction": _no_correction,
    "corrected": _corrected,
}


def _trigger_shadow(f: "FuzzyStage") -> str:
    return f"shadow run (fuzzy policy 'always'): the first pass found {plural(f.first_pass_results, 'result')}"


def _trigger_fusion_empty(f: "FuzzyStage") -> str:
    return "fusion found nothing"


def _trigger_pool_empty(f: "FuzzyStage") -> str:
    return f"the candidate pool is empty (pool size {f.pool_size})"


def _trigger_all_removed(f: "FuzzyStage") -> str:
    return "every candidate was removed by the session filter"


#: ``FuzzyStage.trigger``: why the fallback ran, each with its sentence.
FUZZY_TRIGGERS: dict[str, Callable[["FuzzyStage"], str]] = {
    "shadow": _trigger_shadow,
    "fusion-empty": _trigger_fusion_empty,
    "pool-empty": _trigger_pool_empty,
    "all-removed": _trigger_all_removed,
}


def trigger_sentence(f: "FuzzyStage") -> str | None:
    """Why the fallback ran, in words (``None`` when it did not run)."""
    return FUZZY_TRIGGERS[f.trigger](f) if f.trigger is not None else None


def reason_sentence(f: "FuzzyStage") -> str:
    """Why it ran or was skipped, and what it found: ``"fusion found
    nothing; corrected zebar → zebra"``, ``"shadow run (fuzzy policy
    'always'): corrected ..."``, or the skip sentence."""
    outcome = FUZZY_CODES[f.code](f)
    if not f.ran or f.trigger is None:
        return outcome
    if f.trigger == "shadow":
        return f"shadow run (fuzzy policy 'always'): {outcome}"
    return f"{FUZZY_TRIGGERS[f.trigger](f)}; {outcome}"
