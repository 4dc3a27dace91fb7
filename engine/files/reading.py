"""The one input reader: every file rankscope reads goes through here (query
files, qrels, snapshots, sessions maps, the data folder's ``history.json`` /
``cases.json`` / ``qrels.json``, the cache's fingerprints, ``.gitignore``
files), and so do the paths of the stores and session DBs it opens. (The
``--params-json`` text is JavaScript's JSON, parsed by :mod:`engine.js.json`.)

A path a user names can be anything: a FIFO (reading blocks until a writer
appears, possibly forever), a link to ``/dev/zero`` (reads without end), a
folder, a 10 GB log, JSON nested 100,000 levels deep (Python's parser then
raises ``RecursionError``), JSON of the wrong shape, a UTF-8 BOM. So:

* :func:`read_input_bytes` / :func:`read_input_text` read regular files
  only (checked with ``fstat`` on the descriptor opened without blocking:
  FIFOs, sockets, devices and folders are refused before any byte is read),
  at most :data:`MAX_INPUT_BYTES`; text is strict UTF-8, one leading BOM
  dropped (every input, the same way).
* :func:`require_regular_file` is the same kind check for a file another
  library opens (SQLite): a store, a session DB.
* :func:`parse_json_text` parses with the nesting depth bounded
  (:data:`MAX_JSON_DEPTH`) and numbers read strictly (ASCII digits only, as
  JSON says; ``NaN`` / ``Infinity`` refused, a float finite, an integer at
  most :data:`MAX_INT_DIGITS` digits); :func:`check_shape` validates the result against a declared
  shape (a ``TypedDict`` or a type such as ``dict[str, str]``, checked by
  pydantic in strict mode: no coercion, ``true`` is not an integer).

Every failure is an :class:`InputFileError` (a ``ValueError``) whose message
is one line naming the file (or option) and what is wrong.
"""

from __future__ import annotations

import functools
import json
import math
import re
import os
import stat as _stat
from typing import Any, Callable, TypeVar

#: Largest input file read (bytes): query files, qrels and sessions maps are
#: small; a sessions map for 100,000 files is about 10 MB.
MAX_INPUT_BYTES = 64 * 1024 * 1024
#: Deepest JSON nesting accepted (arrays and objects); a snapshot needs 4.
MAX_JSON_DEPTH = 64
#: Most digits of a JSON integer read with ``strict_numbers`` (a 64-bit
#: integer has at most 20).
MAX_INT_DIGITS = 100

T = TypeVar("T")


class InputFileError(ValueError):
    """An input file cannot be used; the message names it and the reason."""


#: Each file type's test on ``st_mode`` and its words in messages.
_FILE_KINDS: tuple[tuple[Callable[[int], bool], str], ...] = (
    (_stat.S_ISREG, "a regular file"),
    (_stat.S_ISDIR, "a folder"),
    (_stat.S_ISFIFO, "a FIFO"),
    (_stat.S_ISSOCK, "a socket"),
    (_stat.S_ISCHR, "a character device"),
    (_stat.S_ISBLK, "a block device"),
)


def file_kind(mode: int) -> str:
    """What a file of ``st_mode`` ``mode`` is, for messages: ``"a folder"``,
    ``"a FIFO"``, ``"a socket"``, ``"a character device"``, ``"a block
    device"``, ``"a regular file"`` or ``"a special file"``."""
    return next((words for test, words in _FILE_KINDS if test(mode)), "a special file")


def _os_reason(exc: OSError) -> str:
    return exc.strerror or str(exc) or type(exc).__name__


def require_regular_file(path: str | os.PathLike[str], what: str) -> os.stat_result:
    """The ``stat`` of ``path`` (symbolic links followed) when it is a
    regular file; nothing is opened.

    Raises:
        InputFileError: ``cannot read {what} {path}: No such file or
            directory`` (or another ``stat`` error), or ``...: a FIFO, not a
            regular file`` (a folder, socket, device).
    """
    name = os.fspath(path)
    try:
        st = os.stat(name)
    except OSError as exc:
        raise InputFileError(f"cannot read {what} {name}: {_os_reason(exc)}") from exc
    if not _stat.S_ISREG(st.st_mode):
        raise InputFileError(f"cannot read {what} {name}: {file_kind(st.st_mode)}, not a regular file")
    return st


def peek(path: str | os.PathLike[str], size: int) -> bytes:
    """The first ``size`` bytes of ``path`` when it is a regular file (opened
    without blocking, checked on the descriptor), else ``b""`` (a file
    that cannot be read included): a database's header, a file's magic."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return b""
    try:
        if not _stat.S_ISREG(os.fstat(fd).st_mode):
            return b""
        return os.read(fd, size)
    except OSError:
        return b""
    finally:
        os.close(fd)


def read_input_bytes(path: str | os.PathLike[str], what: str, max_bytes: int = MAX_INPUT_BYTES) -> bytes:
    """The bytes of the regular file at ``path``, at most ``max_bytes``.

    The file is opened without blocking and checked with ``fstat`` on the
    open descriptor (a swap between check and read cannot slip a FIFO or a
    device in); at most ``max_bytes + 1`` bytes are ever read.

    Raises:
        InputFileError: missing, unreadable, not a regular file, or larger
            than ``max_bytes`` (also when it grows past it while read).
    """
    name = os.fspath(path)
    require_regular_file(name, what)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(name, flags)
    except OSError as exc:
        raise InputFileError(f"cannot read {what} {name}: {_os_reason(exc)}") from exc
    try:
        st = os.fstat(fd)
        if not _stat.S_ISREG(st.st_mode):
            raise InputFileError(f"cannot read {what} {name}: {file_kind(st.st_mode)}, not a regular file")
        if st.st_size > max_bytes:
            raise InputFileError(f"cannot read {what} {name}: {st.st_size} bytes is over the {max_bytes}-byte limit")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        chunks: list[bytes] = []
        total = 0
        while total <= max_bytes:
            block = os.read(fd, min(1 << 20, max_bytes + 1 - total))
            if not block:
                break
            chunks.append(block)
            total += len(block)
    except OSError as exc:
        raise InputFileError(f"cannot read {what} {name}: {_os_reason(exc)}") from exc
    finally:
        os.close(fd)
    if total > max_bytes:
        raise InputFileError(f"cannot read {what} {name}: it grew past the {max_bytes}-byte limit while read")
    return b"".join(chunks)


def decode_text(data: bytes, where: str) -> str:
    """``data`` decoded as strict UTF-8, one leading BOM dropped.

    Raises:
        InputFileError: ``{where}: not UTF-8 (invalid byte at offset N)``.
    """
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputFileError(f"{where}: not UTF-8 (invalid byte at offset {exc.start})") from exc


def read_input_text(path: str | os.PathLike[str], what: str, max_bytes: int = MAX_INPUT_BYTES) -> str:
    """The text of the regular file at ``path`` (:func:`read_input_bytes`,
    then :func:`decode_text`: strict UTF-8, a leading BOM dropped).

    Raises:
        InputFileError: as :func:`read_input_bytes`, or not valid UTF-8.
    """
    data = read_input_bytes(path, what, max_bytes)
    return decode_text(data, f"cannot read {what} {os.fspath(path)}")


def json_depth_exceeds(value: object, limit: int) -> bool:
    """True when ``value`` (parsed JSON) nests arrays/objects more than
    ``limit`` levels deep. Iterative: no recursion, whatever the depth."""
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (list, dict)):
            if depth > limit:
                return True
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children if isinstance(child, (list, dict)))
    return False


class _NumberError(ValueError):
    """A JSON number refused by the strict number rules (raised from a
    parse hook, so :func:`json.loads` passes it through unchanged)."""


def _refuse_constant(name: str) -> object:
    raise _NumberError(f"{name} is not JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NumberError(f"number {text[:40]} is out of range")
    return value


def _bounded_int(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > MAX_INT_DIGITS:
        raise _NumberError(f"an integer of {digits} digits (at most {MAX_INT_DIGITS} are read)")
    return int(text)


class _RepeatedKey(ValueError):
    pass


#: Characters of a key a message quotes before cutting it.
KEY_SHOWN = 80


def _quoted_key(key: str) -> str:
    """``key`` as a JSON string (control characters escaped), cut after :data:`KEY_SHOWN` characters."""
    cut = key[:KEY_SHOWN]
    return json.dumps(cut, ensure_ascii=False) + (f" (cut; {len(key):,} characters)" if len(key) > KEY_SHOWN else "")


def _unique_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    out: dict[str, object] = {}
    for key, value in pairs:
        if key in out:
            raise _RepeatedKey(key)
        out[key] = value
    return out


def parse_json_text(
    text: str,
    where: str,
    max_depth: int = MAX_JSON_DEPTH,
    max_chars: int = MAX_INPUT_BYTES,
) -> object:
    """Parse JSON ``text`` (a file rankscope reads: JavaScript's own JSON,
    the agent's arguments, is :mod:`engine.js.json`'s); ``where`` starts
    every message (``"cannot read query file q.json"``).

    Numbers are read strictly: the digits are ASCII (JSON's grammar; Python's
    parser agrees); ``NaN``, ``Infinity`` and ``-Infinity`` are refused (not
    JSON); a float must be finite (``1e400`` is refused, not read as
    infinity) and an integer at most :data:`MAX_INT_DIGITS` digits long.
    An object naming a key twice is refused (JSON leaves which one counts
    open; Python keeps the last, silently: a judgment given twice would
    lose one).

    Raises:
        InputFileError: longer than ``max_chars``, not JSON, a refused
            number, a repeated key, or arrays/objects nested more than
            ``max_depth`` levels (caught whether Python's parser hits its
            recursion limit or not).
    """
    if len(text) > max_chars:
        raise InputFileError(f"{where}: {len(text)} characters is over the {max_chars}-character limit")
    try:
        data = json.loads(
            text,
            parse_constant=_refuse_constant,
            parse_float=_finite_float,
            parse_int=_bounded_int,
            object_pairs_hook=_unique_keys,
        )
    except _RepeatedKey as exc:
        raise InputFileError(
            f"{where}: an object names the key {_quoted_key(str(exc.args[0]))} twice (which one counts would be a guess)"
        ) from None
    except json.JSONDecodeError as exc:
        raise InputFileError(f"{where}: not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from exc
    except RecursionError:
        raise InputFileError(f"{where}: JSON nested more than {max_depth} levels deep") from None
    except _NumberError as exc:
        raise InputFileError(f"{where}: not JSON ({exc})") from None
    except ValueError as exc:  # Python's own limits, e.g. an integer over 4,300 digits
        raise InputFileError(f"{where}: not JSON ({str(exc).split(';')[0]})") from None
    if json_depth_exceeds(data, max_depth):
        raise InputFileError(f"{where}: JSON nested more than {max_depth} levels deep")
    found = lone_surrogate_at(data)
    if found is not None:
        path, char = found
        raise InputFileError(
            f"{where}: the string at {path} holds a lone surrogate (\\u{ord(char):04x}): JSON allows the escape, "
            "but it is no Unicode character (an id or text cut in the middle of a pair?)"
        )
    return data


_SURROGATE = re.compile("[\ud800-\udfff]")


def lone_surrogate_at(data: object) -> tuple[str, str] | None:
    """The first string of parsed JSON ``data`` (an object's keys included)
    holding a lone surrogate, as ``(JSON path, the surrogate)``: JSON's
    ``\\ud800`` parses to one, which no UTF-8 encoder (nor trec_eval's C++)
    accepts; ``None`` when there is none. Walks without recursion."""
    stack: list[tuple[object, str]] = [(data, "$")]
    while stack:
        item, path = stack.pop()
        if isinstance(item, str):
            hit = _SURROGATE.search(item)
            if hit:
                return path, hit.group()
        elif isinstance(item, dict):
            for key, value in item.items():
                hit = _SURROGATE.search(key)
                if hit:
                    return f"{path} (a key)", hit.group()
                stack.append((value, f"{path}.{key}"))
        elif isinstance(item, list):
            stack.extend((value, f"{path}[{i}]") for i, value in enumerate(item))
    return None


# ── shapes ───────────────────────────────────────────────────────────────

#: JSON's name for each Python type :func:`json.loads` returns.
_JSON_TYPES: dict[type, str] = {
    dict: "an object",
    list: "a list",
    str: "a string",
    bool: "a boolean",
    int: "an integer",
    float: "a number",
    type(None): "null",
}
#: What pydantic's error types ask for, in JSON's words.
_WANTED: dict[str, str] = {
    "dict_type": "must be an object",
    "typed_dict_type": "must be an object",
    "model_type": "must be an object",
    "list_type": "must be a list",
    "string_type": "must be a string",
    "int_type": "must be an integer",
    "float_type": "must be a number",
    "bool_type": "must be true or false",
    "none_required": "must be null",
    "missing": "is missing",
    "extra_forbidden": "is not a known field",
}


def json_shape(extra: str = "forbid") -> Callable[[T], T]:
    """Declare a ``typing_extensions.TypedDict`` as a JSON shape for
    :func:`check_shape`: strict (nothing converted), and ``extra`` says what
    a key the shape does not name does: ``"forbid"`` (an error naming it),
    ``"ignore"`` (dropped) or ``"allow"`` (kept). Sets pydantic's
    ``__pydantic_config__`` without importing pydantic (it is imported only
    when a file is checked). Use as a class decorator."""

    def declare(cls: T) -> T:
        cls.__pydantic_config__ = {"strict": True, "extra": extra}  # type: ignore[attr-defined]
        return cls

    return declare


def dataclass_shape(cls: type, extra: str = "ignore") -> Any:
    """The JSON shape of a dataclass's fields (for :func:`check_shape`): a
    ``TypedDict`` with each field's type, required when the field has no
    default; declared with :func:`json_shape` (strict; ``extra`` as there).
    The dataclass stays the one declaration of its fields."""
    import dataclasses
    import typing

    from typing_extensions import NotRequired, TypedDict

    hints = typing.get_type_hints(cls)
    fields: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        fields[f.name] = hints[f.name] if required else NotRequired[hints[f.name]]
    return json_shape(extra)(TypedDict(f"{cls.__name__}Shape", fields))  # type: ignore[operator]


@functools.lru_cache(maxsize=None)
def _adapter(shape: Any) -> Any:
    from pydantic import ConfigDict, TypeAdapter

    config = None if hasattr(shape, "__pydantic_config__") else ConfigDict(strict=True)
    return TypeAdapter(shape, config=config)


def _path_text(loc: tuple[Any, ...]) -> str:
    """A pydantic location as a JSON path: ``cases[0].judgments``,
    ``["a b"]`` for a key that is not a plain name; ``(the top level)``."""
    out = ""
    for part in loc:
        if part == "[key]":
            out += " (the key)"
        elif isinstance(part, int):
            out += f"[{part}]"
        elif isinstance(part, str) and part.isidentifier():
            out += f".{part}" if out else part
        else:
            out += f"[{json.dumps(part, ensure_ascii=False)}]"
    return out or "the top level"


def _found(value: object) -> str:
    kind = _JSON_TYPES.get(type(value), type(value).__name__)
    if isinstance(value, (dict, list)) and value:
        return kind
    shown = (
        json.dumps(value, ensure_ascii=False) if not isinstance(value, float) or math.isfinite(value) else str(value)
    )
    return f"{kind} {shown[:40]}{'…' if len(shown) > 40 else ''}"


def check_shape(data: object, shape: Any, where: str, at: tuple[str | int, ...] = ()) -> Any:
    """``data`` (parsed JSON) when it has the declared ``shape``: a
    ``typing_extensions.TypedDict`` (its own pydantic config, e.g.
    ``extra="forbid"``, is used; strict unless it says otherwise) or a type
    such as ``list[str]`` or ``dict[str, int]`` (strict). Strict: nothing is
    converted (``"3"`` is no integer, ``true`` no number, ``1.0`` no integer).

    Args:
        at: where ``data`` sits in its file (``("cases", 0)``), put before
            the field named in a message.

    Raises:
        InputFileError: ``{where}: cases[0].judgments must be an object; got
            a list`` (the first problem, and how many more there are).
    """
    from pydantic import ValidationError

    try:
        return _adapter(shape).validate_python(data)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        first = errors[0]
        wanted = _WANTED.get(first["type"])
        if wanted is None:
            msg = str(first["msg"])
            wanted = "must be " + msg[len("Input should be ") :] if msg.startswith("Input should be ") else msg.lower()
        got = "" if first["type"] in ("missing", "extra_forbidden") else f"; got {_found(first.get('input'))}"
        more = f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})" if len(errors) > 1 else ""
        raise InputFileError(f"{where}: {_path_text(at + tuple(first['loc']))} {wanted}{got}{more}") from None


def load_json_input(
    path: str | os.PathLike[str],
    what: str,
    shape: Any = None,
    max_bytes: int = MAX_INPUT_BYTES,
    max_depth: int = MAX_JSON_DEPTH,
) -> Any:
    """Read the JSON file at ``path`` (:func:`read_input_text`), parse it
    (:func:`parse_json_text`, strict numbers) and, when ``shape`` is given,
    validate it (:func:`check_shape`).

    Raises:
        InputFileError: the file cannot be read, is not JSON, nests too
            deep, or does not have the shape (the message names the field).
    """
    text = read_input_text(path, what, max_bytes)
    where = f"cannot read {what} {os.fspath(path)}"
    data = parse_json_text(text, where, max_depth)
    return data if shape is None else check_shape(data, shape, where)
