"""``JSON.parse`` and ``JSON.stringify`` as V8 runs them.

* :func:`json_parse`: numbers become doubles (``-0`` stays ``-0``; a
  400-digit integer or ``1e400`` is ±Infinity, never an ``OverflowError``),
  ``NaN``/``Infinity`` literals are refused, objects keep V8's property order
  (array-index keys first, ascending), a repeated key keeps its first place
  and last value. An optional nesting limit refuses deep text before Python's
  recursive parser sees it (so no ``RecursionError``, whatever the depth).
* :func:`json_stringify`: numbers through ``String()``
  (:func:`engine.js.numbers.number_to_string`; NaN and ±Infinity as
  ``null``), non-ASCII kept, lone surrogates escaped as ``\\udXXX``, control
  characters as ``\\n``/``\\u001b``; ``indent=None`` is the compact form
  (no spaces), an integer the pretty one. Iterative: any depth.

Pure Python; imports nothing of rankscope's but :mod:`engine.js.numbers`.
"""

from __future__ import annotations

import json
import math
import re

from engine.js.numbers import int_to_number, literal_text, number_to_string

__all__ = ["JSONParseError", "json_depth", "json_parse", "json_stringify"]


class JSONParseError(ValueError):
    """The text is not JSON as ``JSON.parse`` reads it, or nests deeper than
    allowed (``too_deep`` is then the depth limit, else ``None``)."""

    def __init__(self, message: str, too_deep: int | None = None):
        super().__init__(message)
        self.too_deep = too_deep


def _reject_constant(name: str) -> float:
    raise JSONParseError(f"not JSON: {name}")


_ARRAY_INDEX = re.compile(r"0|[1-9][0-9]*\Z")


def _js_object(pairs: list[tuple[str, object]]) -> dict[str, object]:
    """Build an object with V8's property order: array-index keys (canonical
    integers below 2**32 - 1) first in ascending numeric order, then the other
    keys in first-insertion order; a repeated key keeps its first position and
    its last value, as ``JSON.parse`` does."""
    merged: dict[str, object] = {}
    for key, value in pairs:
        merged[key] = value
    index_keys = [k for k in merged if _ARRAY_INDEX.fullmatch(k) and int(k) < 4294967295]
    if not index_keys:
        return merged
    index_set = set(index_keys)
    ordered = {k: merged[k] for k in sorted(index_keys, key=int)}
    ordered.update((k, v) for k, v in merged.items() if k not in index_set)
    return ordered


_STRUCTURE = re.compile(r'"(?:[^"\\]|\\.)*"?|[\[\]{}]', re.S)


def json_depth(text: str) -> int:
    """The deepest nesting of arrays/objects in ``text`` (brackets inside
    strings do not count); a linear scan that needs no valid JSON."""
    depth = deepest = 0
    for m in _STRUCTURE.finditer(text):
        ch = m.group()
        if ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


def json_parse(text: str, max_depth: int | None = None) -> object:
    """``JSON.parse(text)``.

    Args:
        max_depth: refuse text nesting arrays/objects deeper than this.

    Raises:
        JSONParseError: for anything ``JSON.parse`` would reject, and for
            text deeper than ``max_depth`` (``too_deep`` set).
    """
    if max_depth is not None and json_depth(text) > max_depth:
        raise JSONParseError(f"nested more than {max_depth} levels deep", too_deep=max_depth)
    try:
        return json.loads(
            text,
            parse_int=float,
            parse_float=float,
            parse_constant=_reject_constant,
            object_pairs_hook=_js_object,
        )
    except JSONParseError:
        raise
    except json.JSONDecodeError as exc:
        raise JSONParseError(f"{exc.msg} at character {exc.pos + 1}") from exc
    except (ValueError, RecursionError) as exc:
        raise JSONParseError(str(exc) or type(exc).__name__) from exc


_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_NEEDS_ESCAPE = re.compile('["\\\\\x00-\x1f\ud800-\udfff]')


def _quote(text: str) -> str:
    def repl(m: re.Match[str]) -> str:
        ch = m.group(0)
        return _ESCAPES.get(ch) or f"\\u{ord(ch):04x}"

    return '"' + _NEEDS_ESCAPE.sub(repl, text) + '"'


def _scalar(v: object) -> str | None:
    """The text of a non-container value, or ``None`` for a container."""
    literal = literal_text(v)
    if literal is not None:
        return literal
    if isinstance(v, float):
        return number_to_string(v) if math.isfinite(v) else "null"
    if isinstance(v, int):
        n = int_to_number(v)
        return number_to_string(n) if math.isfinite(n) else "null"
    if isinstance(v, str):
        return _quote(v)
    if isinstance(v, (list, tuple, dict)):
        return None
    raise TypeError(f"cannot serialise {type(v).__name__}")


def json_stringify(value: object, indent: int | None = None, *, spaced: bool = False) -> str:
    """``JSON.stringify(value, null, indent)`` for JSON-like Python values
    (``tuple`` as an array; keys must be strings). ``spaced`` puts a space
    after each ``,`` and ``:`` of the compact form (Python's ``json.dumps``
    layout, for text meant to wrap at spaces); JavaScript has no such form.

    Raises:
        TypeError: a value of another type.
    """
    out: list[str] = []
    colon = ": " if indent or spaced else ":"
    comma = ", " if spaced and not indent else ","
    # a stack of pending pieces: ("v", value, depth) to emit, or ("s", text) to append
    stack: list[tuple[str, object, int]] = [("v", value, 0)]
    while stack:
        kind, item, depth = stack.pop()
        if kind == "s":
            out.append(item)  # type: ignore[arg-type]
            continue
        text = _scalar(item)
        if text is not None:
            out.append(text)
            continue
        is_dict = isinstance(item, dict)
        if isinstance(item, dict):
            entries: list[tuple[object, object]] = list(item.items())
        else:
            assert isinstance(item, (list, tuple))  # _scalar returned None: a container
            entries = list(enumerate(item))
        open_, close = ("{", "}") if is_dict else ("[", "]")
        if not entries:
            out.append(open_ + close)
            continue
        pad = "\n" + " " * (indent * (depth + 1)) if indent else ""
        end = "\n" + " " * (indent * depth) if indent else ""
        pieces: list[tuple[str, object, int]] = []
        for i, (key, child) in enumerate(entries):
            head = (open_ if i == 0 else comma) + pad
            if is_dict:
                head += _quote(str(key)) + colon
            pieces.append(("s", head, 0))
            pieces.append(("v", child, depth + 1))
        pieces.append(("s", end + close, 0))
        stack.extend(reversed(pieces))
    return "".join(out)
