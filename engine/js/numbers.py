"""JavaScript number semantics: the one place rankscope reproduces them.

context-mode runs on V8, and several of its answers depend on how JavaScript
turns values into numbers and numbers into text: ``z.coerce.number()`` calls
``Number()`` on ``limit``, ``readPositiveEnv`` on the ``CONTEXT_MODE_SEARCH_*``
variables, the handler takes ``Math.min(limit, 2)``, the store cuts lists with
``slice(0, limit)`` and the footer prints numbers with ``String()``. Python's
``float()``, ``int()``, ``round()``, ``min()`` and slicing differ from each of
them (``float("1_000")`` is 1000 where ``Number("1_000")`` is NaN;
``float(10**400)`` raises; ``round(2.5)`` is 2 where ``Math.round(2.5)`` is 3;
``xs[:-0.5]`` raises). Every rule below names the ECMAScript operation it
copies (ECMA-262, 2024), and ``tests/golden/js-numbers/numbers.json`` pins
Node's answers for the hard cases (``tests/tools/gen_js_numbers.mjs``).

A JavaScript number is a Python ``float`` here. A JSON value is ``None``
(null), ``bool``, ``int`` (any size), ``float``, ``str``, ``list`` or
``dict``. Nothing here raises for any such value: huge integers become
±Infinity, as ``JSON.parse`` makes them. Pure Python; imports nothing of
rankscope's.
"""

from __future__ import annotations

import math
import re

from engine.js.strings import JS_WS

__all__ = [
    "MAX_SAFE_INTEGER",
    "int_to_number",
    "math_max",
    "math_min",
    "math_round",
    "number_to_string",
    "parse_int",
    "slice_indices",
    "string_to_number",
    "to_integer_or_infinity",
    "to_length",
    "to_number",
    "to_string",
]

#: ``Number.MAX_SAFE_INTEGER`` (2**53 - 1).
MAX_SAFE_INTEGER = 2**53 - 1

_TRIM = re.compile(f"^[{JS_WS}]+|[{JS_WS}]+$")
_TRIM_START = re.compile(f"^[{JS_WS}]+")
# StrDecimalLiteral (ASCII digits only; no separators "_"), or Infinity.
_DECIMAL = re.compile(r"[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|Infinity)")
# NonDecimalIntegerLiteral without separators; no sign allowed.
_NON_DECIMAL = {
    "0x": (16, re.compile(r"[0-9a-fA-F]+")),
    "0o": (8, re.compile(r"[0-7]+")),
    "0b": (2, re.compile(r"[01]+")),
}
_DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz"


def int_to_number(value: int) -> float:
    """The double nearest to an integer of any size (ties to even), as
    ``JSON.parse`` or ``Number("…")`` produce it; ±Infinity past the largest
    double (never ``OverflowError``)."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def string_to_number(text: str) -> float:
    """``Number(text)`` (ECMA-262 StringToNumber).

    JavaScript whitespace and line terminators are trimmed (U+FEFF and every
    ``Zs`` included, U+0085 and U+180E not); the empty result is 0; then a
    decimal literal (ASCII digits, optional sign, fraction and exponent),
    ``Infinity`` with an optional sign, or an unsigned ``0x``/``0o``/``0b``
    literal (either case of the letter). Anything else is NaN: ``"1_000"``,
    ``"infinity"``, ``"nan"``, ``"١٢"``, ``"12px"``, ``"+0x10"``. Values
    beyond the double range are ±Infinity (``"1e400"``, 400 digits).
    """
    s = _TRIM.sub("", text)
    if s == "":
        return 0.0
    radix = _NON_DECIMAL.get(s[:2].lower())
    if radix is not None:
        base, digits = radix
        if digits.fullmatch(s, 2):
            return _digits_to_number(s[2:], base)
        return math.nan
    if not _DECIMAL.fullmatch(s):
        return math.nan
    if s.endswith("Infinity"):
        return -math.inf if s.startswith("-") else math.inf
    return float(s)  # correctly rounded; overflows to ±inf without raising


def to_number(value: object) -> float:
    """``Number(value)`` (ECMA-262 ToNumber) for a JSON value.

    ``null``/``false`` → 0, ``true`` → 1, numbers as doubles (a huge ``int``
    → ±Infinity), strings by :func:`string_to_number`, arrays through their
    ``String()`` (``[]`` → 0, ``[5]`` → 5, ``[1, 2]`` → NaN), objects NaN.
    """
    if value is None or value is False:
        return 0.0
    if value is True:
        return 1.0
    if isinstance(value, int):
        return int_to_number(value)
    if isinstance(value, float):
        return value
    if isinstance(value, str):
        return string_to_number(value)
    if isinstance(value, list):
        return string_to_number(to_string(value))
    return math.nan


def number_to_string(value: float) -> str:
    """``String(value)`` for a number (ECMA-262 Number::toString, radix 10):
    the shortest digits that round-trip, in plain notation from 1e-7 up to
    below 1e21 and exponent notation (``1e+21``, ``1.5e-7``) outside;
    ``-0`` is ``"0"``; ``NaN``, ``Infinity``, ``-Infinity``."""
    if value != value:
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    text = repr(abs(value))  # shortest round-trip digits, as V8 chooses them
    if "e" in text:
        mantissa, exp_text = text.split("e")
        digits = mantissa.replace(".", "")
        n = 1 + int(exp_text)
    else:
        int_part, _, frac_part = text.partition(".")
        if int_part != "0":
            digits, n = int_part + frac_part, len(int_part)
        else:
            stripped = frac_part.lstrip("0")
            digits, n = stripped, -(len(frac_part) - len(stripped))
    digits = digits.rstrip("0") or "0"
    k = len(digits)
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return sign + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * (-n) + digits
    e = n - 1
    exp_text = f"e+{e}" if e >= 0 else f"e-{-e}"
    if k == 1:
        return sign + digits + exp_text
    return sign + digits[0] + "." + digits[1:] + exp_text


def literal_text(value: object) -> str | None:
    """``"null"``, ``"true"`` or ``"false"`` for ``None``, ``True``,
    ``False`` (the same in ``String()`` and ``JSON.stringify``); ``None``
    for any other value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return None


def to_string(value: object) -> str:
    """``String(value)`` for a JSON value: ``"null"``, ``"true"``, numbers by
    :func:`number_to_string`, arrays joined by ``,`` (``null`` items empty),
    objects ``"[object Object]"``. Iterative: any nesting depth."""
    if isinstance(value, list):
        out: list[str] = []
        # a stack of (list, next index); a separator before every item but the first
        stack: list[tuple[list[object], int]] = [(value, 0)]
        while stack:
            items, i = stack.pop()
            if i >= len(items):
                continue
            stack.append((items, i + 1))
            if i > 0:
                out.append(",")
            item = items[i]
            if isinstance(item, list):
                stack.append((item, 0))
            elif item is not None:
                out.append(to_string(item))
        return "".join(out)
    literal = literal_text(value)
    if literal is not None:
        return literal
    if isinstance(value, int):
        return number_to_string(int_to_number(value))
    if isinstance(value, float):
        return number_to_string(value)
    if isinstance(value, str):
        return value
    return "[object Object]"


def parse_int(text: str, radix: float | None = None) -> float:
    """``parseInt(text, radix)`` (ECMA-262 19.2.5).

    Leading JavaScript whitespace is skipped, then an optional sign; radix 0
    or absent means 10, or 16 after a ``0x``/``0X`` prefix; a radix outside
    2..36 gives NaN. The longest run of valid ASCII digits is read (``"12px"``
    → 12); none is NaN. The value is the double nearest to that integer
    (exact rounding, as V8 does for radix 10 and powers of two), ±Infinity
    past the double range. A ``-0`` result stays ``-0``.
    """
    s = _TRIM_START.sub("", text)
    sign = 1
    if s[:1] in ("+", "-"):
        sign = -1 if s[0] == "-" else 1
        s = s[1:]
    r = 0 if radix is None else int(to_integer_or_infinity(radix)) if math.isfinite(radix) else 0
    # ToInt32(radix): the spec's R; only 0 and 2..36 are usable
    r = ((r + 2**31) % 2**32) - 2**31
    strip_prefix = True
    if r != 0:
        if r < 2 or r > 36:
            return math.nan
        if r != 16:
            strip_prefix = False
    else:
        r = 10
    if strip_prefix and s[:2] in ("0x", "0X"):
        s = s[2:]
        r = 16
    valid = _DIGITS[:r]
    end = 0
    while end < len(s) and s[end].lower() in valid and s[end].isascii():
        end += 1
    if end == 0:
        return math.nan
    number = _digits_to_number(s[:end], r)
    return -number if sign < 0 else number


def _digits_to_number(digits: str, radix: int) -> float:
    """The double nearest to the non-negative integer ``digits`` in ``radix``
    (valid ASCII digits). Python limits ``int(str)`` to 4300 digits in bases
    that are not powers of two; past the double range the value is Infinity
    anyway once leading zeros are gone."""
    if radix == 10:
        return float(digits)  # correctly rounded, no digit limit, inf on overflow
    if radix & (radix - 1):
        digits = digits.lstrip("0") or "0"
        if len(digits) > 1100:  # 3**647 > 2**1024: beyond every double
            return math.inf
    return int_to_number(int(digits, radix))


def to_integer_or_infinity(value: float) -> float:
    """ECMA-262 ToIntegerOrInfinity for a number: NaN → 0, ±Infinity kept,
    else truncated towards zero (``-0.5`` → 0, never ``-0``)."""
    if value != value:
        return 0.0
    if math.isinf(value):
        return value
    return float(math.trunc(value)) + 0.0  # + 0.0 turns -0.0 into 0.0


def to_length(value: float) -> int:
    """ECMA-262 ToLength: :func:`to_integer_or_infinity` clamped to
    ``0 .. 2**53 - 1``."""
    n = to_integer_or_infinity(value)
    if n <= 0:
        return 0
    return MAX_SAFE_INTEGER if n >= MAX_SAFE_INTEGER else int(n)


def math_min(*values: float) -> float:
    """``Math.min(...values)``: NaN if any is NaN, ``-0`` below ``+0``,
    ``Infinity`` for no argument."""
    result = math.inf
    for v in values:
        if v != v:
            return math.nan
        if v < result or (v == 0 and result == 0 and math.copysign(1, v) < 0):
            result = v
    return result


def math_max(*values: float) -> float:
    """``Math.max(...values)``: NaN if any is NaN, ``+0`` above ``-0``,
    ``-Infinity`` for no argument."""
    result = -math.inf
    for v in values:
        if v != v:
            return math.nan
        if v > result or (v == 0 and result == 0 and math.copysign(1, v) > 0):
            result = v
    return result


def math_round(value: float) -> float:
    """``Math.round(value)``: the nearest integer, halves towards +Infinity
    (``2.5`` → 3, ``-2.5`` → -2, ``0.49999999999999994`` → 0); ``-0`` for
    values in ``[-0.5, -0]``; NaN and ±Infinity unchanged."""
    if value != value or math.isinf(value) or value == math.trunc(value):
        return value
    r = float(math.floor(value))
    if value - r >= 0.5:
        r += 1.0
    if r == 0 and value < 0:
        return -0.0
    return r


def _relative_index(length: int, value: float) -> int:
    n = to_integer_or_infinity(value)
    if n == -math.inf:
        return 0
    if n < 0:
        return max(length + int(n), 0)
    if n == math.inf:
        return length
    return min(int(n), length)


def slice_indices(length: int, start: float = 0.0, end: float | None = None) -> tuple[int, int]:
    """``(from, to)`` of ``Array.prototype.slice(start, end)`` on a list of
    ``length`` items (ECMA-262 23.1.3.28): each bound through
    :func:`to_integer_or_infinity`, a negative one counted from the end,
    clamped to ``0..length``; ``end`` absent means ``length``. The slice is
    ``items[from:to]`` (empty when ``to <= from``). ``slice(0, 1.5)`` keeps
    1 item, ``slice(0, -1)`` all but the last, ``slice(0, -0.5)`` none."""
    lo = _relative_index(length, start)
    hi = length if end is None else _relative_index(length, end)
    return lo, max(lo, hi)
