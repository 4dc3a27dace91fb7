"""JavaScript value semantics the ``ctx_search`` layer depends on.

* :func:`js_number` is ``Number(value)`` for a JSON value (``z.coerce.number``
  calls it on ``limit``; ``readPositiveEnv`` on the throttle variables);
* :func:`js_number_text` is ``String(number)`` (the footer prints numbers);
* :func:`js_round` is ``Math.round`` (half rounds up, unlike Python's ``round``);
* :func:`locale_key` orders ASCII text like V8's ``localeCompare`` with ICU's
  root collation, which timeline mode uses to sort timestamps;
* :func:`js_json` is ``JSON.stringify`` (lone surrogates escaped as
  ``\\udXXX``, non-ASCII kept).
"""

from __future__ import annotations

import json
import math
import re

from engine.store.chunking import _js_string_of as js_to_string  # String(value): one implementation
from engine.store.chunking import js_number as js_number_text  # noqa: F401  # re-exported: String(number), exact for large integers
from engine.js.strings import JS_WS

_TRIM = re.compile(f"^[{JS_WS}]+|[{JS_WS}]+$")
_DECIMAL = re.compile(r"[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|Infinity)")
_RADIX = {"0x": 16, "0X": 16, "0o": 8, "0O": 8, "0b": 2, "0B": 2}
_LONE = re.compile("[\ud800-\udfff]")


def js_string_to_number(text: str) -> float:
    """``Number(text)`` (ECMAScript StringToNumber): whitespace trimmed,
    empty → 0, decimal / ``Infinity`` / ``0x`` ``0o`` ``0b`` literals, else NaN."""
    s = _TRIM.sub("", text)
    if s == "":
        return 0.0
    prefix = s[:2]
    if prefix in _RADIX:
        digits = s[2:]
        try:
            if digits and not digits.startswith(("+", "-", "_")) and "_" not in digits:
                return float(int(digits, _RADIX[prefix]))
        except ValueError:
            pass
        return math.nan
    if not _DECIMAL.fullmatch(s):
        return math.nan
    if s.endswith("Infinity"):
        return -math.inf if s.startswith("-") else math.inf
    return float(s)


def js_number(value: object) -> float:
    """``Number(value)`` for a JSON value (``None`` stands for ``null``)."""
    if value is None or value is False:
        return 0.0
    if value is True:
        return 1.0
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        return js_string_to_number(value)
    if isinstance(value, list):
        return js_string_to_number(js_to_string(value))
    return math.nan


def js_round(x: float) -> int:
    """``Math.round(x)``: halves round towards +∞."""
    return math.floor(x + 0.5)


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
    """``JSON.stringify(value, null, indent)``: non-ASCII kept, lone
    surrogates escaped, integral floats without ``.0``."""

    def norm(v):
        if isinstance(v, float) and v == int(v) and abs(v) < 1e21:
            return int(v)
        if isinstance(v, list):
            return [norm(x) for x in v]
        if isinstance(v, dict):
            return {k: norm(x) for k, x in v.items()}
        return v

    text = json.dumps(norm(value), ensure_ascii=False, indent=indent)
    return _LONE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def js_json_parse(text: str) -> object:
    """``JSON.parse(text)``; raises ``ValueError`` where JavaScript throws
    (Python's extensions ``NaN`` / ``Infinity`` are refused)."""

    def refuse(name: str):
        raise ValueError(f"not JSON: {name}")

    return json.loads(text, parse_constant=refuse)


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


def locale_key(text: str) -> tuple:
    """Sort key approximating ``a.localeCompare(b)`` (ICU root collation) for
    ASCII text such as ISO timestamps; other characters sort after ASCII by
    code point. Ties in primary strength fall back to lower-before-upper."""
    return (tuple(_primary(c) for c in text), tuple(0 if c.islower() else 1 for c in text))
