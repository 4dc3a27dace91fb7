"""Reading the small input files a user names (query files, sessions maps)
without hanging, exhausting memory or overflowing the stack.

A path given as a query file can be anything: a FIFO (reading blocks until a
writer appears, possibly forever), a link to ``/dev/zero`` (reads without
end), a 10 GB log, or JSON nested 100,000 levels deep (Python's parser then
raises ``RecursionError``). :func:`read_input_text` reads only regular
files, up to a size cap; :func:`load_json_input` parses with the nesting
depth bounded. Every failure is an :class:`InputFileError` (a
``ValueError``) whose message names the file and says what is wrong, in one
line. Pure Python.
"""

from __future__ import annotations

import json
import os
import stat as _stat

#: Largest input file read (bytes): query files and sessions maps are small;
#: a sessions map for 100,000 files is about 10 MB.
MAX_INPUT_BYTES = 64 * 1024 * 1024
#: Deepest JSON nesting accepted (arrays and objects); a query file needs 3.
MAX_JSON_DEPTH = 64


class InputFileError(ValueError):
    """An input file cannot be used; the message names it and the reason."""


def read_input_text(path: str | os.PathLike[str], what: str, max_bytes: int = MAX_INPUT_BYTES) -> str:
    """The text of the regular file at ``path``, decoded as UTF-8 (a leading
    BOM is dropped).

    The file is opened without blocking and checked with ``fstat`` on the
    open descriptor (so a swap between check and read cannot slip a FIFO or
    a device in): FIFOs, sockets, devices and folders are refused before any
    byte is read, and at most ``max_bytes + 1`` bytes are read.

    Args:
        path: the file (symbolic links are followed to what they name).
        what: the file's role in messages, e.g. ``"query file"``.
        max_bytes: size cap in bytes.

    Raises:
        InputFileError: missing, unreadable, not a regular file, larger than
            ``max_bytes``, or not valid UTF-8.
    """
    name = os.fspath(path)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    try:
        before = os.stat(name)
        if not _stat.S_ISREG(before.st_mode):
            raise InputFileError(f"cannot read {what} {name}: {_kind(before.st_mode)}, not a regular file")
        fd = os.open(name, flags)
    except OSError as exc:
        raise InputFileError(f"cannot read {what} {name}: {exc.strerror or exc}") from exc
    try:
        st = os.fstat(fd)
        if not _stat.S_ISREG(st.st_mode):
            raise InputFileError(f"cannot read {what} {name}: {_kind(st.st_mode)}, not a regular file")
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
        raise InputFileError(f"cannot read {what} {name}: {exc.strerror or exc}") from exc
    finally:
        os.close(fd)
    if total > max_bytes:
        raise InputFileError(f"cannot read {what} {name}: it grew past the {max_bytes}-byte limit while read")
    data = b"".join(chunks)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputFileError(f"cannot read {what} {name}: not UTF-8 (invalid byte at offset {exc.start})") from exc


def _kind(mode: int) -> str:
    if _stat.S_ISDIR(mode):
        return "a folder"
    if _stat.S_ISFIFO(mode):
        return "a FIFO"
    if _stat.S_ISSOCK(mode):
        return "a socket"
    if _stat.S_ISCHR(mode) or _stat.S_ISBLK(mode):
        return "a device"
    return "a special file"


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


def load_json_input(
    path: str | os.PathLike[str],
    what: str,
    max_bytes: int = MAX_INPUT_BYTES,
    max_depth: int = MAX_JSON_DEPTH,
) -> object:
    """Parse the JSON file at ``path`` (read with :func:`read_input_text`).

    Raises:
        InputFileError: the file cannot be read, is not JSON, or nests
            arrays/objects more than ``max_depth`` levels deep (caught
            whether Python's parser hits its recursion limit or not).
    """
    text = read_input_text(path, what, max_bytes)
    name = os.fspath(path)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputFileError(f"cannot read {what} {name}: not JSON ({exc})") from exc
    except RecursionError:
        raise InputFileError(f"cannot read {what} {name}: JSON nested more than {max_depth} levels deep") from None
    if json_depth_exceeds(data, max_depth):
        raise InputFileError(f"cannot read {what} {name}: JSON nested more than {max_depth} levels deep")
    return data
