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

Why the fallback ran or not is data on :class:`~engine.pipeline.trace.FuzzyStage`
(``code``, ``trigger`` and the numbers); :mod:`engine.pipeline.stages.fuzzy_reasons` puts it
in words, one function per code.
"""

from __future__ import annotations

import dataclasses
import typing

from rapidfuzz.distance import Levenshtein

from engine.store import sql
from engine.js.strings import js_to_lower, js_trim, utf16_len, utf16_units
from engine.pipeline.trace import Correction, Exit

if typing.TYPE_CHECKING:
    from engine.store.store import Store

VOCAB_SQL = "SELECT word FROM vocabulary WHERE length(word) BETWEEN ? AND ? ORDER BY rowid"


def max_edit_distance(length: int) -> int:
    """Allowed distance for a word of ``length`` UTF-16 code units."""
    if length <= 4:
        return 1
    if length <= 12:
        return 2
    return 3


def correct_word(conn: sql.Connection, word: str) -> Correction:
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


def _fuzzy_not_attempted(e: Exit) -> str:
    return (
        f"the corrected query {e.get('corrected_query')!r} would match it, "
        "but the fuzzy fallback did not run for the answer"
    )


#: Exit codes of the ``fuzzy`` stage (a chunk only the corrected query finds).
FUZZY_EXIT_SENTENCES = {"fuzzy-not-attempted": _fuzzy_not_attempted}
#: The names in each code's exit data.
FUZZY_EXIT_DATA = {"fuzzy-not-attempted": ("corrected_query", "first_pass_results", "shadow")}


def correct_word_cached(store: Store, conn: sql.Connection, word: str) -> Correction:
    """:func:`correct_word`, answered from ``store.corrections`` when this
    word was corrected before at the same store data version (the version
    ``conn``'s read transaction noted: :meth:`engine.store.store.Store.begin_read`;
    outside one, nothing is cached). The reference caches corrections too
    (256 words, least recently used first out); a hit is marked ``cached``."""
    version = getattr(conn, "read_version", None) if conn.in_transaction else None
    key = js_trim(js_to_lower(word))
    hit = store.corrections.get(version, key)
    if hit is not None:
        return dataclasses.replace(hit, cached=True)
    fresh = correct_word(conn, word)
    store.corrections.put(version, key, fresh)
    return fresh
