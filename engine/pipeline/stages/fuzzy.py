"""The typo fallback (reference ``fuzzyCorrect``), a trace-level stage.

For each word (3+ UTF-16 code units): the allowed Levenshtein distance is 1
for length <= 4, 2 for <= 12, else 3 (length in UTF-16 code units, as
JavaScript counts). Candidates are vocabulary words whose SQLite
``length()`` (code points) lies within that distance of the word's length,
scanned in rowid order (the order words were first inserted). An exact
match means no correction; otherwise the *first* candidate with the
strictly smallest distance within the allowance wins. Edit distance is
Levenshtein (1966) over UTF-16 code units (``rapidfuzz``); the candidate
order and tie rule are ours.

Why the fallback ran (or not) is data on :class:`FuzzyStage` (a code of
:data:`FUZZY_CODES`, a trigger of :data:`FUZZY_TRIGGERS` and the numbers);
this module words them.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import Callable

from engine.js.strings import js_to_lower, js_trim, utf16_len, utf16_units
from engine.pipeline.candidates import ChunkRef
from engine.pipeline.hooks import Asking, Explanation, Records, RecordStage
from engine.pipeline.params import SearchParams
from engine.pipeline.passes import Run
from engine.pipeline.query import fuzzy_words
from engine.pipeline.stages import session_filter
from engine.pipeline.stages.retrieve import RETRIEVERS, full_ranks_words, not_retrieved
from engine.pipeline.words import abbreviate, plural
from engine.store import sql
from engine.store.cache import noted_version
from engine.store.clock import elapsed_ms
from engine.store.store import Store


@dataclass(frozen=True)
class Correction:
    """Fuzzy correction of one word.

    Attributes:
        word: the lower-cased query word.
        corrected: the replacement, or ``None`` when kept (exact vocabulary
            hit, or nothing within ``max_distance``).
        max_distance: allowed Levenshtein distance (1 / 2 / 3 by UTF-16 length).
        candidates_within: vocabulary words within the allowance (the word itself included).
        distance: edit distance of the chosen correction, else ``None``.
        exact: the word itself is in the vocabulary.
        candidates_scanned: vocabulary rows read (length window).
        cached: served from the store's correction cache (the reference caches corrections too).
    """

    word: str
    corrected: str | None
    max_distance: int
    candidates_within: int
    distance: int | None = None
    exact: bool = False
    candidates_scanned: int = 0
    cached: bool = False


@dataclass(frozen=True)
class FuzzyStage:
    """The record of the typo fallback.

    Attributes:
        ran: whether corrections were computed.
        code: a key of :data:`FUZZY_CODES`: why it was skipped, or what it found.
        trigger: when it ran, why (a key of :data:`FUZZY_TRIGGERS`); else ``None``.
        words: the words tried; corrections: one per word.
        corrected_query: the corrected words joined by spaces, or ``None``.
        rerun: the second pass with the corrected query, or ``None`` (nothing changed).
        shadow: it ran only as a what-if (fuzzy policy ``always`` with a
            non-empty first pass): its rerun is not the answer.
        first_pass_results: candidates that survived the first pass's session filter.
        pool_size: the first pass's pool size.
    """

    ran: bool
    code: str
    trigger: str | None = None
    words: tuple[str, ...] = ()
    corrections: tuple[Correction, ...] = ()
    corrected_query: str | None = None
    rerun: Run | None = None
    shadow: bool = False
    elapsed_ms: float = 0.0
    first_pass_results: int = 0
    pool_size: int = 0

    @property
    def reason(self) -> str:
        """Why it ran or was skipped, and what it found, in words: ``"fusion
        found nothing; corrected zebar → zebra"``, ``"shadow run (fuzzy
        policy 'always'): corrected ..."``, or the skip sentence."""
        outcome = FUZZY_CODES[self.code](self)
        if not self.ran or self.trigger is None:
            return outcome
        if self.trigger == "shadow":
            return f"shadow run (fuzzy policy 'always'): {outcome}"
        return f"{FUZZY_TRIGGERS[self.trigger](self)}; {outcome}"

    @property
    def trigger_sentence(self) -> str | None:
        """Why it ran, in words (``None`` when it did not run)."""
        return FUZZY_TRIGGERS[self.trigger](self) if self.trigger is not None else None

    @property
    def reruns(self) -> bool:
        """It corrected a word: the pipeline re-runs with :attr:`corrected_query`."""
        return self.code == "corrected"


#: ``FuzzyStage.code``: skip codes (``ran`` false) and outcome codes (``ran`` true), each with its sentence.
FUZZY_CODES: dict[str, Callable[[FuzzyStage], str]] = {
    "policy-never": lambda f: "fuzzy policy is 'never': typo correction disabled",
    "first-pass-found": lambda f: (
        f"fusion returned {f.first_pass_results} {'result' if f.first_pass_results == 1 else 'results'} "
        "after the session filter: typo correction not attempted"
    ),
    "no-vocabulary": lambda f: "this store has no vocabulary table: typo correction is unavailable",
    "no-word": lambda f: "no query word of 3+ characters outside the stopword list to correct",
    "no-correction": lambda f: "no word needed or found a correction in the vocabulary",
    "corrected": lambda f: "corrected " + ", ".join(f"{c.word} → {c.corrected}" for c in f.corrections if c.corrected),
}


def empty_words(code: str, corrected_query: str, f: FuzzyStage) -> str:
    """What the fallback did (its ``code``), as a clause of an empty answer's
    reason (``f``: the trace's fuzzy stage, for a skip sentence)."""
    if code == "no-correction":
        return "fuzzy found no correction"
    if code == "no-word":
        return "fuzzy had no word to correct"
    if code == "corrected":
        return f"the corrected query {corrected_query!r} matched nothing that passed the filters"
    return FUZZY_CODES[code](f)


#: ``FuzzyStage.trigger``: why the fallback ran, each with its sentence.
FUZZY_TRIGGERS: dict[str, Callable[[FuzzyStage], str]] = {
    "shadow": lambda f: (
        f"shadow run (fuzzy policy 'always'): the first pass found {plural(f.first_pass_results, 'result')}"
    ),
    "fusion-empty": lambda f: "fusion found nothing",
    "pool-empty": lambda f: f"the candidate pool is empty (pool size {f.pool_size})",
    "all-removed": lambda f: "every candidate was removed by the session filter",
}


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
    from rapidfuzz.distance import Levenshtein  # here: a search that corrects nothing never loads it

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


def correct_word_cached(store: Store, conn: sql.Connection, word: str) -> Correction:
    """:func:`correct_word`, answered from ``store.corrections`` when this
    word was corrected before at the same store data version (the version
    ``conn``'s read transaction noted: :meth:`engine.store.store.Store.begin_read`;
    outside one, nothing is cached). The reference caches corrections too
    (256 words, least recently used first out); a hit is marked ``cached``."""
    version = noted_version(conn)
    key = js_trim(js_to_lower(word))
    hit: Correction | None = store.corrections.get(version, key)
    if hit is not None:
        return dataclasses.replace(hit, cached=True)
    fresh = correct_word(conn, word)
    store.corrections.put(version, key, fresh)
    return fresh


# ─── as a stage ──────────────────────────────────────────────────────────


def step(store: Store, params: SearchParams, first: Run, correct: Callable[[str], Correction]) -> FuzzyStage:
    """Decide whether the fallback runs after ``first`` and correct the words
    with ``correct``; the pipeline makes the re-run (:attr:`FuzzyStage.reruns`)."""
    policy = params.variant.fuzzy
    found = len(first.filter.kept)
    if policy == "never":
        return FuzzyStage(False, "policy-never")
    if found and policy == "fallback":
        return FuzzyStage(False, "first-pass-found", first_pass_results=found)
    if not store.schema.has_vocabulary:
        return FuzzyStage(False, "no-vocabulary")
    start = time.perf_counter()
    words = fuzzy_words(params.query)
    corrections = tuple(correct(w) for w in words)
    corrected_query = " ".join(c.corrected or c.word for c in corrections)
    ms = elapsed_ms(start)
    code = "no-word" if not words else "no-correction" if corrected_query == " ".join(words) else "corrected"
    if found:
        trigger = "shadow"
    elif not first.fusion.candidates:
        trigger = "fusion-empty"
    elif not first.pool.kept:
        trigger = "pool-empty"
    else:
        trigger = "all-removed"
    return FuzzyStage(
        True,
        code,
        trigger,
        tuple(words),
        corrections,
        corrected_query,
        None,
        bool(found),
        ms,
        first_pass_results=found,
        pool_size=first.pool.pool_size,
    )


def _headline(fz: FuzzyStage, params: SearchParams) -> str:
    if not fz.ran:
        return f"skipped: {fz.reason}"
    fixes = [f"{c.word} → {c.corrected}" for c in fz.corrections if c.corrected]
    head = ("corrected " + abbreviate(", ".join(fixes))) if fixes else "no correction found"
    return "shadow run: " + head if fz.shadow else head


def _to_json(trace: Records) -> dict[str, object]:
    """``fuzzy`` {ran, reason, reason_code, trigger, shadow, words, corrections
    [{word, corrected, max_distance, candidates_within, distance}], corrected_query}."""
    fz = STAGE.get(trace)
    corrections = [
        {
            "word": c.word,
            "corrected": c.corrected,
            "max_distance": c.max_distance,
            "candidates_within": c.candidates_within,
            "distance": c.distance,
        }
        for c in fz.corrections
    ]
    return {
        "fuzzy": {
            "ran": fz.ran,
            "reason": fz.reason,
            "reason_code": fz.code,
            "trigger": fz.trigger,
            "shadow": fz.shadow,
            "words": list(fz.words),
            "corrections": corrections,
            "corrected_query": fz.corrected_query,
        }
    }


def _absent(ask: Asking, chunk: ChunkRef, so_far: Explanation | None) -> Explanation | None:
    """``fuzzy-not-attempted``: no query term is indexed in the chunk, but the
    typo-corrected query would match it, and the fallback did not run for the answer."""
    fz = STAGE.get(ask)
    first = ask.first
    if so_far is None or (fz.ran and not fz.shadow):
        return None
    if any(info and "rank" in info for info in ask.full_ranks(first.query, chunk.rowid).values()):
        return None  # a query term is indexed in it: not a typo's doing
    words = list(fz.words) if fz.ran else fuzzy_words(ask.params.query)
    if fz.ran:
        corrected, corrections = fz.corrected_query, fz.corrections
    else:
        if not ask.store.schema.has_vocabulary or not words:
            return None
        corrections = tuple(correct_word(ask.conn, w) for w in words)
        corrected = " ".join(c.corrected or c.word for c in corrections)
    if not words or not corrected or corrected == " ".join(words):
        return None
    full = ask.full_ranks(corrected, chunk.rowid)
    if not any(info and "rank" in info for info in full.values()):
        return None
    fixes = ", ".join(f"{c.word} → {c.corrected}" for c in corrections if c.corrected)
    found = len(session_filter.STAGE.get(first).kept)
    if ask.params.variant.fuzzy == "never":
        why = "the variant sets fuzzy=never, so typo correction is disabled"
    elif fz.shadow:
        why = (
            f"it ran only as a shadow (variant fuzzy=always): the first pass found {plural(found, 'result')}, "
            "so the answer stays the first pass's"
        )
    else:
        why = (
            f"the first pass already found {plural(found, 'result')} and the fallback only runs when it finds "
            "nothing (a weak first match blocks typo correction)"
        )
    details = dict(so_far.details)
    details.update(
        {
            "corrected_query": corrected,
            "corrections": fixes,
            "corrected_ranks": full,
            "first_pass_results": found,
            "shadow": fz.shadow,
        }
    )
    return Explanation(
        chunk,
        "fuzzy",
        "fuzzy-not-attempted",
        f"No query term is indexed in it, but the typo correction {fixes} gives {corrected!r}, which matches it "
        f"({full_ranks_words(full, RETRIEVERS)}). Fuzzy never ran for the answer: {why}.",
        "first",
        None,
        details,
    )


STAGE = RecordStage(
    id="fuzzy",
    title="Fuzzy",
    about=(
        "Only when nothing survived the filter: each word is corrected against the vocabulary",
        "(1-3 edits by length) and, if anything changed, the whole pipeline re-runs (layer rrf-fuzzy).",
    ),
    scope="trace",
    kind="trace",
    record=FuzzyStage,
    headline=_headline,
    elapsed=lambda fz: fz.elapsed_ms if fz.ran else None,
    reasons={
        "fuzzy-not-attempted": not_retrieved(
            lambda e: (
                f"the corrected query {e.get('corrected_query')!r} would match it, "
                "but the fuzzy fallback did not run for the answer"
            ),
            ("corrected_query", "first_pass_results", "shadow"),
        )
    },
    to_json=_to_json,
    absent=_absent,
)
