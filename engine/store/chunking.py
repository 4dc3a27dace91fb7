"""The reference chunkers: markdown, plain text and JSON, with a byte cap.

Each function returns a list of :class:`ChunkDraft` in emission order. Sizes
are UTF-8 **bytes** (``max_chunk_bytes``, default 4096); title cuts are UTF-16
**code units** (80), as in the reference (context-mode ``src/store.ts``:
``#chunkMarkdown``, ``#chunkPlainText``, ``#walkJSON``). Regexes use the
JavaScript classes from :mod:`engine.js.strings` so CRLF files, BOMs and
non-breaking spaces behave as in V8 (see ``../shared/parity/README.md``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from engine.js.strings import JS_DOT, JS_WS, js_trim, utf16_len, utf16_slice, utf8_len
from engine.js.json import JSONParseError, json_parse, json_stringify
from engine.js.numbers import to_string

#: Chunks above this many UTF-8 bytes are split (reference ``MAX_CHUNK_BYTES``).
MAX_CHUNK_BYTES = 4096
#: Plain text: blank-line sectioning needs at least this many sections ...
MIN_BLANK_LINE_SECTIONS = 3
#: ... at most this many ...
MAX_BLANK_LINE_SECTIONS = 200
#: ... and every section strictly under this many bytes.
BLANK_SECTION_STRATEGY_MAX_BYTES = 5000
#: Titles taken from a first line keep this many UTF-16 code units.
CHUNK_TITLE_MAX_CHARS = 80
#: Window size and overlap for line-windowed plain text.
LINES_PER_CHUNK = 20
LINE_OVERLAP = 2
#: A long line is broken at whitespace only past this fraction of the piece.
WHITESPACE_BREAK_RATIO = 0.5


@dataclass(frozen=True)
class ChunkDraft:
    """A chunk before it is stored.

    Attributes:
        title: heading path, JSON key path or first-line title.
        content: the chunk text (may hold a lone surrogate only in ``title``).
        has_code: stored as content type ``code`` when true, else ``prose``.
    """

    title: str
    content: str
    has_code: bool

    @property
    def content_type(self) -> str:
        """``"code"`` or ``"prose"``."""
        return "code" if self.has_code else "prose"


# ─── markdown ──────────────────────────────────────────────────────────────

_HR = re.compile(f"[-_*]{{3,}}[{JS_WS}]*\\Z")
_HEADING = re.compile(f"(#{{1,4}})[{JS_WS}]+({JS_DOT}+)\\Z")
_FENCE_OPEN = re.compile(f"(`{{3,}})({JS_DOT}*)\\Z")
_FENCE_START = re.compile("`{3,}")
_PARA_SPLIT = re.compile("\n\n+")


def _build_title(stack: list[tuple[int, str]]) -> str:
    return " > ".join(text for _, text in stack) if stack else "Untitled"


def chunk_markdown(text: str, max_chunk_bytes: int = MAX_CHUNK_BYTES) -> list[ChunkDraft]:
    """Split markdown by headings (H1-H4) and rules, keeping backtick fences whole.

    Args:
        text: the document (``\\r`` is kept: a CRLF line is never a heading,
            because JavaScript's ``.`` does not match ``\\r``).
        max_chunk_bytes: UTF-8 byte cap; larger chunks split on blank lines.

    Returns:
        Chunks in document order; whitespace-only chunks are dropped.
    """
    chunks: list[ChunkDraft] = []
    lines = text.split("\n")
    stack: list[tuple[int, str]] = []
    current: list[str] = []

    def flush() -> None:
        joined = js_trim("\n".join(current))
        if not joined:
            current.clear()
            return
        title = _build_title(stack)
        has_code = any(_FENCE_START.match(line) for line in current)
        current.clear()
        if utf8_len(joined) <= max_chunk_bytes:
            chunks.append(ChunkDraft(title, joined, has_code))
            return
        paragraphs = _PARA_SPLIT.split(joined)
        numbered = len(paragraphs) > 1
        part_index = 1
        acc: list[str] = []

        def flush_acc() -> None:
            nonlocal part_index
            if not acc:
                return
            part = js_trim("\n\n".join(acc))
            if not part:
                return
            part_title = f"{title} ({part_index})" if numbered else title
            part_index += 1
            chunks.append(ChunkDraft(part_title, part, "```" in part))

        for para in paragraphs:
            acc.append(para)
            if len(acc) > 1 and utf8_len("\n\n".join(acc)) > max_chunk_bytes:
                acc.pop()
                flush_acc()
                acc[:] = [para]
        flush_acc()

    i = 0
    n = len(lines)
    while i < n:
        line = lines[i]
        if _HR.match(line):
            flush()
            i += 1
            continue
        heading = _HEADING.match(line)
        if heading:
            flush()
            level = len(heading.group(1))
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, js_trim(heading.group(2))))
            current.append(line)
            i += 1
            continue
        fence = _FENCE_OPEN.match(line)
        if fence:
            marker = fence.group(1)
            current.append(line)
            i += 1
            while i < n:
                current.append(lines[i])
                if lines[i].startswith(marker) and js_trim(lines[i]) == marker:
                    i += 1
                    break
                i += 1
            continue
        current.append(line)
        i += 1
    flush()
    return chunks


# ─── plain text ────────────────────────────────────────────────────────────

_BLANK_SPLIT = re.compile(f"\n[{JS_WS}]*\n")


def _byte_capped_end(text: str, start: int, max_bytes: int) -> int:
    """End index of the longest slice ``text[start:end]`` of whole code
    points within ``max_bytes`` UTF-8 bytes (a lone surrogate counts 3, as
    Node's U+FFFD); at least one code point. Looks at no more than
    ``max_bytes`` code points past ``start`` (each is 1 byte or more), so
    cutting a long line piece by piece costs time linear in its length."""
    window = text[start : start + max(max_bytes, 1)]
    if window.isascii():
        end = start + min(len(window), max_bytes)
        return end if end > start else min(start + 1, len(text))
    total = 0
    for index, ch in enumerate(window):
        size = 1 if ch < "\x80" else 2 if ch < "\u0800" else 4 if ch > "\uffff" else 3
        if total + size > max_bytes:
            return start + (index or 1)
        total += size
    return start + len(window)


def _split_oversized(lines: list[str], title: str, max_chunk_bytes: int) -> list[tuple[str, str]]:
    """Pack whole lines under the cap; cut a single oversized line into pieces."""
    out: list[tuple[str, str]] = []
    acc: list[str] = []
    part_index = 1

    def flush_acc() -> None:
        nonlocal part_index
        if not acc:
            return
        out.append((title if part_index == 1 else f"{title} ({part_index})", "\n".join(acc)))
        part_index += 1
        acc.clear()

    for line in lines:
        if utf8_len(line) > max_chunk_bytes:
            flush_acc()
            # Reference: repeatedly take the byte-capped prefix of the rest,
            # back off to its last space/newline when that keeps over half of
            # it, and slice the rest. Here the rest is a position in ``line``
            # and each step looks only at the next piece: linear in the line.
            pos, n = 0, len(line)
            line_part = 1
            while pos < n:
                end = _byte_capped_end(line, pos, max_chunk_bytes)
                piece = line[pos:end]
                if end < n:
                    # lastIndexOf and slice.length are UTF-16 in the reference;
                    # the ratio test is scale-free only for BMP text, so use
                    # code-unit lengths explicitly.
                    brk = max(piece.rfind(" "), piece.rfind("\n"))
                    if brk >= 0 and utf16_len(piece[:brk]) > utf16_len(piece) * WHITESPACE_BREAK_RATIO:
                        piece = piece[:brk]
                part_title = title if (part_index == 1 and line_part == 1) else f"{title} ({part_index}.{line_part})"
                out.append((part_title, piece))
                pos += len(piece)
                line_part += 1
                part_index += 1
            continue
        candidate = ("\n".join(acc) + "\n" + line) if acc else line
        if acc and utf8_len(candidate) > max_chunk_bytes:
            flush_acc()
        acc.append(line)
    flush_acc()
    return out


def chunk_plain_text(
    text: str,
    lines_per_chunk: int = LINES_PER_CHUNK,
    max_chunk_bytes: int = MAX_CHUNK_BYTES,
) -> list[ChunkDraft]:
    """Chunk logs and tool output (reference ``#chunkPlainText``); all ``prose``.

    Blank-line sections when there are 3-200 of them, each under 5000 bytes;
    otherwise one ``Output`` chunk for 20 lines or fewer, else 20-line windows
    overlapping by 2. Empty or whitespace-only text gives no chunks.
    """
    if not text or not js_trim(text):
        return []
    sections = _BLANK_SPLIT.split(text)
    pieces: list[tuple[str, str]] = []
    if MIN_BLANK_LINE_SECTIONS <= len(sections) <= MAX_BLANK_LINE_SECTIONS and all(
        utf8_len(s) < BLANK_SECTION_STRATEGY_MAX_BYTES for s in sections
    ):
        for i, section in enumerate(sections):
            trimmed = js_trim(section)
            if not trimmed:
                continue
            title = utf16_slice(trimmed.split("\n")[0], 0, CHUNK_TITLE_MAX_CHARS) or f"Section {i + 1}"
            if utf8_len(trimmed) <= max_chunk_bytes:
                pieces.append((title, trimmed))
            else:
                pieces.extend(_split_oversized(trimmed.split("\n"), title, max_chunk_bytes))
        return [ChunkDraft(t, c, False) for t, c in pieces]

    lines = text.split("\n")
    if len(lines) <= lines_per_chunk:
        if utf8_len(text) <= max_chunk_bytes:
            pieces.append(("Output", text))
        else:
            pieces.extend(_split_oversized(lines, "Output", max_chunk_bytes))
        return [ChunkDraft(t, c, False) for t, c in pieces]

    step = max(lines_per_chunk - LINE_OVERLAP, 1)
    for i in range(0, len(lines), step):
        window = lines[i : i + lines_per_chunk]
        if not window:
            break
        start_line, end_line = i + 1, min(i + len(window), len(lines))
        first = utf16_slice(js_trim(window[0]), 0, CHUNK_TITLE_MAX_CHARS)
        title = first or f"Lines {start_line}-{end_line}"
        joined = "\n".join(window)
        if utf8_len(joined) <= max_chunk_bytes:
            pieces.append((title, joined))
        else:
            pieces.extend(_split_oversized(window, title, max_chunk_bytes))
    return [ChunkDraft(t, c, False) for t, c in pieces]


# ─── JSON ──────────────────────────────────────────────────────────────────


_IDENTITY_FIELDS = ("id", "name", "title", "path", "slug", "key", "label")


def _identity_field(arr: list[object]) -> str | None:
    if not arr or not isinstance(arr[0], dict):
        return None
    first = arr[0]
    for field in _IDENTITY_FIELDS:
        if field in first and isinstance(first[field], (str, float, int)) and not isinstance(first[field], bool):
            return field
    return None


def _item_identity(item: object, field: str) -> str:
    if item is None:
        # The reference reads a property of null here and throws.
        raise TypeError(f"Cannot read properties of null (reading '{field}')")
    if isinstance(item, dict):
        return to_string(item[field]) if field in item else "undefined"
    return "undefined"


def _batch_title(prefix: str, start: int, end: int, batch: list[object], field: str | None) -> str:
    sep = f"{prefix} > " if prefix else ""
    if field is None:
        return f"{sep}[{start}]" if start == end else f"{sep}[{start}-{end}]"
    if len(batch) == 1:
        return sep + _item_identity(batch[0], field)
    if len(batch) <= 3:
        return sep + ", ".join(_item_identity(x, field) for x in batch)
    return f"{sep}{_item_identity(batch[0], field)}\u2026{_item_identity(batch[-1], field)}"


def _walk_json(value: object, path: list[str], out: list[ChunkDraft], cap: int) -> None:
    title = " > ".join(path) if path else "(root)"
    serialized = json_stringify(value, 2)
    if utf8_len(serialized) <= cap:
        nested = isinstance(value, dict) and any(isinstance(v, (dict, list)) for v in value.values())
        if not nested:
            out.append(ChunkDraft(title, serialized, True))
            return
    if isinstance(value, dict):
        if value:
            for key, item in value.items():
                _walk_json(item, [*path, key], out, cap)
            return
        out.append(ChunkDraft(title, serialized, True))
        return
    if isinstance(value, list):
        prefix = title
        field = _identity_field(value)
        batch: list[object] = []
        start = 0
        for i, item in enumerate(value):
            batch.append(item)
            if len(batch) > 1 and utf8_len(json_stringify(batch, 2)) > cap:
                batch.pop()
                out.append(ChunkDraft(_batch_title(prefix, start, i - 1, batch, field), json_stringify(batch, 2), True))
                batch = [item]
                start = i
        if batch:
            out.append(
                ChunkDraft(
                    _batch_title(prefix, start, start + len(batch) - 1, batch, field), json_stringify(batch, 2), True
                )
            )
        return
    out.append(ChunkDraft(title, serialized, False))


def chunk_json(text: str, max_chunk_bytes: int = MAX_CHUNK_BYTES) -> tuple[list[ChunkDraft], str]:
    """Chunk JSON by key path (reference ``indexJSON``).

    Returns:
        ``(chunks, kind)`` where ``kind`` is ``"json"``, or ``"plain"`` when
        the text was empty, not valid JSON, or produced no chunks and was
        chunked as plain text instead.
    """
    if not text or not js_trim(text):
        return [], "plain"
    try:
        parsed = json_parse(text)
    except JSONParseError:
        return chunk_plain_text(text, max_chunk_bytes=max_chunk_bytes), "plain"
    chunks: list[ChunkDraft] = []
    _walk_json(parsed, [], chunks, max_chunk_bytes)
    if not chunks:
        return chunk_plain_text(text, max_chunk_bytes=max_chunk_bytes), "plain"
    return chunks, "json"
