"""Vocabulary typo correction (reference ``fuzzyCorrect``).

For each word (3+ UTF-16 code units): the allowed Levenshtein distance is 1
for length <= 4, 2 for <= 12, else 3 (length in UTF-16 code units, as
JavaScript counts). Candidates are vocabulary words whose SQLite
``length()`` (code points) lies within that distance of the word's length,
scanned in rowid order (the order words were first inserted). An exact
match means no correction; otherwise the *first* candidate with the
strictly smallest distance within the allowance wins.

Edit distance is Levenshtein (1966) over UTF-16 code units, computed with
``rapidfuzz``; the candidate order and tie rule are ours, as above.

Why the fallback ran or not is data on :class:`~engine.model.FuzzyStage`
(``code``, ``trigger`` and the numbers); :func:`reason_sentence` puts it in
words, one function per code.
"""

from __future__ import annotations

import sqlite3

from rapidfuzz.distance import Levenshtein

from .jsstr import js_to_lower, js_trim, utf16_len, utf16_units
from typing import TYPE_CHECKING, Callable

from .model import Correction, Exit
from .words import plural

if TYPE_CHECKING:
    from .model import FuzzyStage

VOCAB_SQL = "SELECT word FROM vocabulary WHERE length(word) BETWEEN ? AND ? ORDER BY rowid"


def max_edit_distance(length: int) -> int:
    """Allowed distance for a word of ``length`` UTF-16 code units."""
    if length <= 4:
        return 1
    if length <= 12:
        return 2
    return 3


def correct_word(conn: sqlite3.Connection, word: str) -> Correction:
    """Correct one word against ``vocabulary``.

    Returns:
        A :class:`Correction`; ``corrected`` is ``None`` when the word is in
        the vocabulary, shorter than 3 units, or has no candidate within the
        allowance. ``candidates_within`` counts every scanned word within the
        allowance, the word itself included.
    """
    w = js_trim(js_to_lower(word))
    length = utf16_len(w)
    if length < 3:
        return Correction(w, None, 0, 0)
    allowed = max_edit_distance(length)
    rows = conn.execute(VOCAB_SQL, (length - allowed, length + allowed)).fetchall()
    units = utf16_units(w)
    best_word: str | None = None
    best = allowed + 1
    exact = False
    within = 0
    for (candidate,) in rows:
        if candidate == w:
            exact = True
            within += 1
            continue
        d = Levenshtein.distance(units, utf16_units(candidate), score_cutoff=allowed)
        if d <= allowed:
            within += 1
        if not exact and d < best:
            best, best_word = d, candidate
    if exact:
        return Correction(w, None, allowed, within, None, True, len(rows))
    if best <= allowed and best_word is not None:
        return Correction(w, best_word, allowed, within, best, False, len(rows))
    return Correction(w, None, allowed, within, None, False, len(rows))


# ─── why the fallback ran (or not), in words ─────────────────────────────


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


def _fuzzy_not_attempted(e: Exit) -> str:
    return (f"the corrected query {e.get('corrected_query')!r} would match it, "
            "but the fuzzy fallback did not run for the answer")


#: Exit codes of the ``fuzzy`` stage (a chunk only the corrected query finds).
FUZZY_EXIT_SENTENCES = {"fuzzy-not-attempted": _fuzzy_not_attempted}
#: The names in each code's exit data.
FUZZY_EXIT_DATA = {"fuzzy-not-attempted": ("corrected_query", "first_pass_results", "shadow")}
