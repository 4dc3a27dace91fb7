"""JavaScript string semantics, reproduced in Python.

The reference pipeline (context-mode's ``ContentStore``) runs on V8. Several of
its decisions depend on how JavaScript treats strings, and a naive Python port
gets them wrong. Every helper here names the JavaScript behaviour it copies:

* ``String.prototype.length`` counts UTF-16 code units, so a character outside
  the Basic Multilingual Plane (an emoji, say) has length 2. Python's ``len``
  counts code points. :func:`utf16_len` gives the JavaScript value.
* ``slice``/``indexOf`` offsets are UTF-16 code units. :func:`utf16_units`
  turns a string into a Python ``str`` holding one character per UTF-16 code
  unit (astral characters become a surrogate pair of two lone-surrogate
  characters), so ordinary ``str.find``/slicing then yields JavaScript
  offsets. :func:`utf16_slice` cuts a string at a code-unit offset and may
  therefore leave a lone surrogate, exactly as JavaScript does.
* The regex class ``\\s`` and ``String.prototype.trim`` use the ECMAScript
  WhiteSpace + LineTerminator set, which differs from Python's ``str.isspace``
  (JavaScript includes U+FEFF, the BOM; Python includes U+001C-U+001F and
  U+0085, which JavaScript does not). :data:`JS_WS` is that class.
* The regex ``.`` matches anything but the line terminators ``\\n``, ``\\r``,
  U+2028 and U+2029 (Python's ``.`` excludes only ``\\n``). :data:`JS_DOT` is
  that class.
* ``toLowerCase`` follows the Unicode version of V8's ICU (17.0 for the
  reference); ``str.lower`` follows the interpreter's (3.11: 14.0) and leaves
  newer capitals such as U+A7CB unchanged. :func:`js_to_lower` is the one
  lower-casing used wherever the reference lowers (query, titles, content,
  vocabulary), backed by the generated :mod:`engine.js._lower_table`.
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_right

from engine.js._lower_table import CASE_IGNORABLE, CASED, LOWER

#: ECMAScript ``\s``: WhiteSpace and LineTerminator code points (a regex class body).
JS_WS = "\\t\\n\\x0b\\x0c\\r \\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff"
#: ECMAScript ``.`` without the ``s`` flag: any code point but a line terminator.
JS_DOT = "[^\\n\\r\\u2028\\u2029]"

_WS_SPLIT = re.compile(f"[{JS_WS}]+")
_TRIM = re.compile(f"^[{JS_WS}]+|[{JS_WS}]+$")
_TRIM_END = re.compile(f"[{JS_WS}]+$")


def js_trim(text: str) -> str:
    """``text.trim()``: strip ECMAScript whitespace (BOM included) at both ends."""
    if not text:
        return text
    return _TRIM.sub("", text)


def js_split_ws(text: str) -> list[str]:
    """``text.split(/\\s+/)``: may return empty strings at either end, as JavaScript does."""
    return _WS_SPLIT.split(text)


def _is_bmp(text: str) -> bool:
    # isascii() is a fast C scan; max() builds a character object per code point.
    return not text or text.isascii() or max(text) < "\U00010000"


def utf16_len(text: str) -> int:
    """``text.length`` in JavaScript: the number of UTF-16 code units."""
    if _is_bmp(text):
        return len(text)
    return len(text) + sum(1 for ch in text if ch > "\uffff")


def utf16_units(text: str) -> str:
    """Return ``text`` with one Python character per UTF-16 code unit.

    BMP text comes back unchanged; an astral character becomes its high and
    low surrogates as two (lone-surrogate) characters. Offsets and lengths
    computed on the result are JavaScript offsets and lengths.
    """
    if _is_bmp(text):
        return text
    units = array("H")
    units.frombytes(text.encode("utf-16-le", "surrogatepass"))
    return "".join(map(chr, units))


def utf16_slice(text: str, start: int, end: int | None = None) -> str:
    """``text.slice(start, end)`` with code-unit offsets (both non-negative).

    A cut through a surrogate pair leaves a lone surrogate in the result,
    exactly as in JavaScript; :func:`to_storage_bytes` writes it the way the
    reference's SQLite binding does.
    """
    if _is_bmp(text):
        return text[start:end]
    raw = text.encode("utf-16-le", "surrogatepass")
    piece = raw[2 * start :] if end is None else raw[2 * start : 2 * end]
    return piece.decode("utf-16-le", "surrogatepass")


def to_storage_bytes(text: str) -> bytes:
    """UTF-8 bytes as the reference stores them; a lone surrogate becomes its
    3-byte generalised UTF-8 form (``ED xx xx``), which SQLite later reads back
    as three U+FFFD characters."""
    return text.encode("utf-8", "surrogatepass")


def utf8_len(text: str) -> int:
    """``Buffer.byteLength(text)``: UTF-8 length in bytes (a lone surrogate
    counts 3, as Node encodes it as U+FFFD)."""
    try:
        return len(text.encode("utf-8"))
    except UnicodeEncodeError:
        return len(text.encode("utf-8", "replace")) + 2 * sum(1 for ch in text if "\ud800" <= ch <= "\udfff")


def decode_utf8_like_node(data: bytes) -> str:
    """``buffer.toString('utf-8')``: invalid sequences become U+FFFD (maximal
    subparts), a leading BOM is kept (``trim`` removes it later)."""
    return data.decode("utf-8", "replace")


def _in_ranges(starts: tuple[int, ...], ends: tuple[int, ...], cp: int) -> bool:
    i = bisect_right(starts, cp) - 1
    return i >= 0 and cp <= ends[i]


_CASED_STARTS, _CASED_ENDS = (tuple(r[0] for r in CASED), tuple(r[1] for r in CASED))
_IGNORABLE_STARTS, _IGNORABLE_ENDS = (tuple(r[0] for r in CASE_IGNORABLE), tuple(r[1] for r in CASE_IGNORABLE))


def _blocks(code_points: list[int], gap: int = 32) -> str:
    """A regex class covering ``code_points`` with few ranges (neighbours
    at most ``gap`` apart share one): a fast superset test."""
    runs: list[list[int]] = []
    for cp in sorted(code_points):
        if runs and cp - runs[-1][1] <= gap:
            runs[-1][1] = cp
        else:
            runs.append([cp, cp])
    return "[" + "".join(f"\\U{a:08x}-\\U{b:08x}" for a, b in runs) + "]"


#: Characters :func:`js_to_lower` looks at itself: the table's and U+03A3
#: (sigma), plus their unassigned or unchanged neighbours (``str.lower`` is
#: right for those).
_LOWER_OWN = re.compile(_blocks([*LOWER, 0x03A3]))


def _sigma(text: str, i: int) -> str:
    """Lowercase of the U+03A3 at ``text[i]``: final ``ς`` when preceded by a
    cased letter and not followed by one, case-ignorable characters skipped
    both ways (SpecialCasing.txt ``Final_Sigma``), else ``σ``."""
    j = i - 1
    while j >= 0 and _in_ranges(_IGNORABLE_STARTS, _IGNORABLE_ENDS, ord(text[j])):
        j -= 1
    if j < 0 or not _in_ranges(_CASED_STARTS, _CASED_ENDS, ord(text[j])):
        return "\u03c3"
    j = i + 1
    while j < len(text) and _in_ranges(_IGNORABLE_STARTS, _IGNORABLE_ENDS, ord(text[j])):
        j += 1
    if j < len(text) and _in_ranges(_CASED_STARTS, _CASED_ENDS, ord(text[j])):
        return "\u03c3"
    return "\u03c2"


def js_to_lower(text: str) -> str:
    """``text.toLowerCase()`` as the reference's V8 computes it: ICU's
    root-locale full lowercase mapping over Unicode 17.0.

    Python's ``str.lower`` runs the same algorithm (full mappings from
    SpecialCasing.txt such as U+0130 -> ``i̇``, and the Final_Sigma context)
    over its own, older Unicode tables (3.11: 14.0), so it leaves letters
    added since unchanged (U+A7CB stays instead of becoming U+0264 ``ɤ``).
    The generated :mod:`engine.js._lower_table` (``tests/tools/gen_lower_table.py``)
    lists every mapping that differs between Unicode 13.0 and 17.0; those
    characters, and U+03A3 (whose context uses Unicode 17.0's ``Cased`` and
    ``Case_Ignorable``), are mapped here, the rest by ``str.lower`` (context
    free for every other character). The result is the same on every
    supported Python. Lengths are in code points in and out; the result may
    be longer than ``text`` (U+0130 becomes two characters).
    """
    if text.isascii():
        return text.lower()
    out: list[str] = []
    last = 0
    for m in _LOWER_OWN.finditer(text):
        i = m.start()
        ch = text[i]
        out.append(text[last:i].lower())
        out.append(_sigma(text, i) if ch == "\u03a3" else LOWER.get(ord(ch)) or ch.lower())
        last = i + 1
    if not out:
        return text.lower()
    out.append(text[last:].lower())
    return "".join(out)


#: A lone surrogate: what Python makes of undecodable argv bytes
#: (surrogateescape) or a JSON ``"\ud800"``; it cannot be encoded for SQLite.
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def undecodable(text: str) -> str | None:
    """Why ``text`` cannot be stored or matched as UTF-8, or ``None`` when it
    can: ``"contains an undecodable character U+DCFF at position 3"`` for the
    first lone surrogate (position: 0-based, in code points)."""
    bad = _LONE_SURROGATE.search(text)
    if bad is None:
        return None
    return f"contains an undecodable character U+{ord(bad.group()):04X} at position {bad.start()}"
