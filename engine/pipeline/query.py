"""The two query sanitisers (reference ``sanitizeQuery`` and
``sanitizeTrigramQuery``), plus the word lists used by rerank and fuzzy.

Every function is pure. Lengths are UTF-16 code units (JavaScript
``length``), whitespace is ECMAScript ``\\s`` (see :mod:`engine.js.strings`).
The outputs are always valid FTS5 query strings: every word is wrapped in
double quotes and no word can contain one.
"""

from __future__ import annotations

import re

from engine.js.strings import js_split_ws, js_to_lower, js_trim, utf16_len
from engine.store.stopwords import STOPWORDS

_FTS_OPERATORS = {"AND", "OR", "NOT", "NEAR"}


def _no_nul(query: str) -> str:
    """Deliberate deviation: U+0000 ends an FTS5 query string early, so the
    reference fails with "unterminated string". We read it as a space;
    queries without NUL are unaffected."""
    return query.replace("\x00", " ") if "\x00" in query else query


_PORTER_SPECIALS = re.compile("['\"(){}\\[\\]*:^~]")


def dedupe_tokens(tokens: list[str]) -> list[str]:
    """Drop case-insensitive repeats, keeping the first spelling and order."""
    seen: set[str] = set()
    out: list[str] = []
    for token in tokens:
        key = js_to_lower(token)
        if key not in seen:
            seen.add(key)
            out.append(token)
    return out


def _drop_stopwords(words: list[str]) -> list[str]:
    meaningful = [w for w in words if js_to_lower(w) not in STOPWORDS]
    return meaningful or words


def _join(words: list[str], mode: str) -> str:
    if mode not in ("AND", "OR"):
        raise ValueError(f"mode must be 'AND' or 'OR', got {mode!r}")
    return (" OR " if mode == "OR" else " ").join(f'"{w}"' for w in words)


def porter_words(query: str) -> list[str]:
    """The words of the Porter query, in order, before quoting."""
    words = dedupe_tokens(
        [w for w in js_split_ws(_PORTER_SPECIALS.sub(" ", _no_nul(query))) if w and w.upper() not in _FTS_OPERATORS]
    )
    return _drop_stopwords(words) if words else []


def sanitize_porter(query: str, mode: str = "OR") -> str:
    """Porter (``porter unicode61``) MATCH string for ``query``.

    Replaces each of ``' " ( ) { } [ ] * : ^ ~`` with a space, splits on
    whitespace, drops FTS5 operators and case-insensitive repeats, drops
    stopwords unless none would remain, quotes each word and joins with
    `` OR `` (``mode="OR"``) or a space (``"AND"``). No words gives ``'""'``
    (an empty phrase that matches nothing).

    Raises:
        ValueError: for a mode other than ``"AND"``/``"OR"``.
    """
    words = porter_words(query)
    if not words:
        _join([], mode)
        return '""'
    return _join(words, mode)


def trigram_words(query: str) -> list[str]:
    """The words of the trigram query (empty when it would be skipped)."""
    cleaned = js_trim(_PORTER_SPECIALS.sub("", _no_nul(query)))
    if utf16_len(cleaned) < 3:
        return []
    words = dedupe_tokens([w for w in js_split_ws(cleaned) if utf16_len(w) >= 3])
    return _drop_stopwords(words) if words else []


def sanitize_trigram(query: str, mode: str = "OR") -> str:
    """Trigram MATCH string for ``query``, or ``""`` when the retriever is skipped.

    *Removes* (not replaces) the special characters, trims, needs 3+ UTF-16
    code units overall, keeps words of 3+ code units, de-duplicates, drops
    stopwords unless none would remain. ``AND``/``OR``/``NOT``/``NEAR`` are
    kept (they are quoted, so FTS5 reads them as words).
    """
    words = trigram_words(query)
    return _join(words, mode) if words else ""


def rerank_terms(query: str) -> list[str]:
    """Terms for the proximity rerank: lower-cased whitespace words of 2+
    code units, stopwords dropped unless none remain. Repeats are kept and
    punctuation is not stripped (reference ``#applyProximityReranking``)."""
    all_terms = [w for w in js_split_ws(js_to_lower(query)) if utf16_len(w) >= 2]
    filtered = [w for w in all_terms if w not in STOPWORDS]
    return filtered or all_terms


def fuzzy_words(query: str) -> list[str]:
    """Words the fuzzy fallback tries to correct: lower-cased, trimmed,
    whitespace-split, 3+ code units, stopwords removed (no fallback)."""
    return [w for w in js_split_ws(js_trim(js_to_lower(query))) if utf16_len(w) >= 3 and w not in STOPWORDS]
