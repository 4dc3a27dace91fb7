"""FTS5's ``highlight(t, 1, char(2), char(3))`` of one row's content,
computed here when it is first asked for.

FTS5 builds a highlight by appending to its output with
``sqlite3_mprintf("%z%.*s", ...)``, which copies the whole output so far at
every append: a row with many matches costs time quadratic in its length
(a 4 MB chunk with "quorum relay" on every line: 13.6 s in ``chunks``,
11.5 s in ``chunks_trigram``). The retriever statements therefore ask FTS5
only for contents of at most :data:`SQL_MAX_BYTES` (a few microseconds
each); a longer one gets a :class:`Marks`, which computes the same bytes in
linear time, once, when a view shows the row (the agent's snippet, the
browser's preview), and never for a row nobody looks at (``rankscope
search`` shows no highlight at all).

The emulation (``fts5HighlightFunction`` and ``fts5CInstIterNext`` in
SQLite's ``ext/fts5/fts5_aux.c``): the row's phrase instances, sorted by
position then phrase, are merged into ranges of overlapping token
positions; each range is wrapped in the markers, from its first token's
start byte to its last token's end byte; a range whose first token starts
before the previous range's last token ends (trigram tokens overlap) joins
the open highlight instead of opening another. Instances come from the
table's own tokenizer (through ``apsw``), each phrase matched at
consecutive token positions, as FTS5's ``detail=full`` index does.
"""

from __future__ import annotations

import threading
from typing import Any, Protocol

import apsw

from engine.pipeline.stages.bm25 import count_instances, phrase_tokens, tokens
from engine.store import sql

#: Contents of at most this many UTF-8 bytes are highlighted by FTS5 inside
#: the retriever statement (0.05 ms at 4 KiB, 0.15-1 ms at 16 KiB, 2 ms at
#: 64 KiB with a match on every line); longer ones by :class:`Marks` when
#: shown. The chunker cuts at 4,096 bytes, so only oversized paragraphs and
#: lines are longer.
SQL_MAX_BYTES = 8_192

OPEN = b"\x02"
CLOSE = b"\x03"


class Highlight(Protocol):
    """A highlight computed on demand (:class:`Marks`)."""

    def text(self) -> str:
        """The highlighted content (``\\x02`` … ``\\x03`` around matches)."""
        ...


_local = threading.local()


def tokenizer(spec: tuple[str, ...]) -> apsw.FTS5Tokenizer:
    """The FTS5 tokenizer ``spec`` (a ``tokenize=`` option's words, e.g.
    ``("porter", "unicode61")``) on a private in-memory connection of this
    thread, so that a highlight can be computed after the search's own
    connection went back to its store (or the store was closed).

    Raises:
        apsw.Error: SQLite has no such tokenizer (only built-in ones load here).
    """
    cache: dict[tuple[str, ...], apsw.FTS5Tokenizer] | None = getattr(_local, "tokenizers", None)
    if cache is None:
        _local.conn = sql.connect(":memory:")
        cache = _local.tokenizers = {}
    tok = cache.get(spec)
    if tok is None:
        tok = cache[spec] = _local.conn.fts5_tokenizer(spec[0], list(spec[1:]))
    return tok


def loadable(spec: tuple[str, ...]) -> bool:
    """True when :func:`tokenizer` can load ``spec``."""
    try:
        tokenizer(spec)
    except apsw.Error:
        return False
    return True


def instances(words: list[str], phrases: list[tuple[str, ...]]) -> list[tuple[int, int]]:
    """``(position, size)`` of every phrase instance in the token list
    ``words`` (0-based positions, sizes in tokens), sorted by position then
    phrase: FTS5's instance order (:func:`engine.pipeline.stages.bm25.count_instances`)."""
    found: list[tuple[int, int, int]] = []
    for i, phrase in enumerate(phrases):
        starts: list[int] = []
        count_instances(words, phrase, starts)
        found.extend((p, i, len(phrase)) for p in starts)
    found.sort()
    return [(p, n) for p, _, n in found]


def highlight(
    tok: apsw.FTS5Tokenizer,
    text: bytes,
    found: list[tuple[int, int]],
    open_: bytes = OPEN,
    close: bytes = CLOSE,
    offsets: list[Any] | None = None,
) -> bytes:
    """FTS5's ``highlight()`` of one column (see the module docstring).

    Args:
        tok: the table's tokenizer.
        text: the column's text, UTF-8 bytes.
        found: ``(start, size)`` of every phrase instance in the column
            (token positions, 0-based; ``size`` in tokens), in FTS5's
            instance order (position, then phrase).
        open_, close: the markers.
        offsets: ``text``'s tokens (:func:`tokens`) when already at hand.

    Returns:
        The text with each run of overlapping instances wrapped in markers.
    """
    if not found:
        return text
    toks = offsets if offsets is not None else tokens(tok, text, apsw.FTS5_TOKENIZE_DOCUMENT)
    ranges: list[list[int]] = []
    for start, size in found:  # fts5CInstIterNext: merge instances whose positions overlap
        end = start - 1 + size
        if ranges and start <= ranges[-1][1]:
            ranges[-1][1] = max(ranges[-1][1], end)
        else:
            ranges.append([start, end])
    out: list[bytes] = []
    off = 0
    is_open = False
    n = len(toks)
    for start, end in ranges:
        if start >= n:
            break
        s_off = toks[start][0]
        if is_open and s_off > off:
            out.append(close)
            is_open = False
        if not is_open:
            out.append(text[off:s_off])
            out.append(open_)
            off = s_off
            is_open = True
        if end < n:
            e_off = toks[end][1]
            out.append(text[off:e_off])
            off = e_off
        else:  # the range runs past the last token: FTS5 never reaches its end
            break
    if is_open:
        out.append(close)
    out.append(text[off:])
    return b"".join(out)


class Marks:
    """A row's content highlight, computed once, on first use, from its
    content and the query's phrases (or the phrase instances already found,
    as :mod:`engine.pipeline.stages.topk` finds them while scoring).
    Thread-safe; equal to another highlight with the same text.

    Args:
        spec: the table's tokenizer (:func:`tokenizer`).
        content: the row's content, UTF-8 bytes.
        phrases: the query's phrase texts (a sanitised OR query's), used
            when ``found`` is not given.
        found: ``(position, size)`` of the instances, FTS5's order.
    """

    __slots__ = ("spec", "content", "phrases", "found", "_bytes", "_lock")

    def __init__(
        self,
        spec: tuple[str, ...],
        content: bytes,
        phrases: tuple[str, ...] = (),
        found: list[tuple[int, int]] | None = None,
    ) -> None:
        self.spec = spec
        self.content = content
        self.phrases = phrases
        self.found = found
        self._bytes: bytes | None = None
        self._lock = threading.Lock()

    @property
    def computed(self) -> bool:
        """True once the highlight has been computed."""
        return self._bytes is not None

    def bytes(self) -> bytes:
        """``highlight(t, 1, char(2), char(3))`` as UTF-8 bytes."""
        if self._bytes is None:
            with self._lock:
                if self._bytes is None:
                    tok = tokenizer(self.spec)
                    offsets = tokens(tok, self.content, apsw.FTS5_TOKENIZE_DOCUMENT)
                    found = self.found
                    if found is None:
                        found = instances([t[2] for t in offsets], [phrase_tokens(tok, p) for p in self.phrases])
                    self._bytes = highlight(tok, self.content, found, offsets=offsets)
        return self._bytes

    def text(self) -> str:
        """The highlight decoded as the retrievers decode text (:func:`engine.store.sql.decode`)."""
        return sql.decode(self.bytes()) or ""

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Marks):
            return self.bytes() == other.bytes()
        if isinstance(other, str):
            return self.text() == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.text())

    def __repr__(self) -> str:
        state = f"{len(self._bytes)} bytes" if self._bytes is not None else "not computed"
        return f"Marks({self.spec!r}, {len(self.content)}-byte content, {state})"


def text_of(marked: "str | Highlight") -> str:
    """The highlight text of a trace's ``marked`` value (a string, or a
    :class:`Highlight` computed now)."""
    return marked if isinstance(marked, str) else marked.text()
