"""JavaScript value semantics the ``ctx_search`` layer depends on, beyond
numbers (:mod:`engine.js.numbers`) and JSON text (:mod:`engine.js.json`):

* :func:`parsed_type` is zod's name for a value's type (schema messages);
* :func:`js_json` is ``JSON.stringify`` (lone surrogates escaped as
  ``\\udXXX``, non-ASCII kept), :func:`js_json_parse` ``JSON.parse``;
* :func:`locale_key` orders ASCII text like V8's ``localeCompare`` with ICU's
  root collation, which timeline mode uses to sort timestamps.
"""

from __future__ import annotations

import math

from engine.js.json import json_parse, json_stringify

#: Deepest nesting of a JSON text the agent layer parses (``--params-json``, a
#: ``queries`` JSON-array string): deeper text is refused, never recursed into.
MAX_JSON_DEPTH = 64


def parsed_type(value: object) -> str:
    """zod's ``getParsedType`` name for a JSON value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "nan" if isinstance(value, float) and math.isnan(value) else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def js_json(value: object, indent: int | None = None) -> str:
    """``JSON.stringify(value, null, indent)`` (:func:`engine.js.json.json_stringify`)."""
    return json_stringify(value, indent)


def js_json_parse(text: str, max_depth: int | None = MAX_JSON_DEPTH) -> object:
    """``JSON.parse(text)``, numbers as doubles.

    Raises:
        engine.js.json.JSONParseError: where JavaScript throws, and for text
            nested deeper than ``max_depth`` (its ``too_deep`` set).
    """
    return json_parse(text, max_depth)


# ICU root collation, ASCII only: whitespace and punctuation sort before
# symbols, symbols before digits, digits before letters; letters compare
# case-insensitively first (lower before upper only to break a tie).
_PUNCT_ORDER = "_-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$"


def _primary(ch: str) -> tuple[int, int]:
    if ch in " \t\n\r\x0b\x0c":
        return (0, ord(ch))
    if ch in _PUNCT_ORDER:
        return (1, _PUNCT_ORDER.index(ch))
    if ch.isdigit() and ch.isascii():
        return (2, ord(ch))
    if ch.isascii() and ch.isalpha():
        return (3, ord(ch.lower()))
    return (4, ord(ch))


def locale_key(text: str) -> tuple[tuple[tuple[int, int], ...], tuple[int, ...]]:
    """Sort key approximating ``a.localeCompare(b)`` (ICU root collation) for
    ASCII text such as ISO timestamps; other characters sort after ASCII by
    code point. Ties in primary strength fall back to lower-before-upper."""
    return (tuple(_primary(c) for c in text), tuple(0 if c.islower() else 1 for c in text))
