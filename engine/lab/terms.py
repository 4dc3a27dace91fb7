"""Which words matched: each query word's Porter stems and a chunk's match spans.

Both come from SQLite itself, never from a re-implementation:

* :func:`porter_stems` runs each word of the Porter query
  (:func:`engine.pipeline.query.porter_words`) through the tokenizer of the store's
  ``chunks`` table (``porter unicode61`` in context-mode's schema, read from
  its ``CREATE VIRTUAL TABLE`` statement) in a private in-memory FTS5 table,
  and reads the tokens back through ``fts5vocab`` (``instance``). A word can
  give several tokens (``write-quorum`` → ``write``, ``quorum``) or none
  (punctuation only).
* :func:`trace_spans` reads where the query matched a chunk off the
  trace: each retriever's ``highlight()`` of the row (the Porter spans are
  whole tokens whose stem matched, the trigram spans substrings: ``quorum``
  inside ``writeQuorum``).

Offsets are 0-based Python string indexes (Unicode code points) into the
chunk's content, end exclusive. The user's store is only read; the
tokenizer runs in a connection of its own. Pure Python; no Textual.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from engine.store import sql
from engine.pipeline.query import porter_words
from engine.pipeline.stages.retrieve import RetrieverRun
from engine.store.errors import sqlite_errors

if TYPE_CHECKING:
    from engine.pipeline.trace import Trace
    from engine.store.store import Store

#: The tokenizer when the table's statement names none (FTS5's default is unicode61).
DEFAULT_TOKENIZER = "porter unicode61"
_TOKENIZE = re.compile(r"""tokenize\s*=\s*(?:'((?:[^']|'')*)'|"((?:[^"]|"")*)")""", re.IGNORECASE)
_OPEN, _CLOSE = "\x02", "\x03"


@dataclass(frozen=True)
class Stems:
    """One query word and the tokens the Porter tokenizer makes of it.

    Attributes:
        word: the word as the Porter query has it (case kept).
        stems: its tokens, in order (lower-cased, stemmed, diacritics
            folded as the tokenizer does); ``()`` when it has none.
    """

    word: str
    stems: tuple[str, ...]

    @property
    def changed(self) -> bool:
        """True when the tokens differ from the lower-cased word (worth showing ``word → stem``)."""
        return self.stems != (self.word.lower(),)

    def to_dict(self) -> dict[str, object]:
        """``{"word", "stems"}``."""
        return {"word": self.word, "stems": list(self.stems)}


def tokenizer_of(store: "Store", conn: sql.Connection | None = None) -> str:
    """The ``tokenize`` option of the store's ``chunks`` table (e.g.
    ``"porter unicode61"``); :data:`DEFAULT_TOKENIZER` when it names none."""
    with store.using(conn) as c:
        row = c.execute("SELECT sql FROM sqlite_master WHERE name = 'chunks'").fetchone()
    m = _TOKENIZE.search(row[0] if row and row[0] else "")
    if not m:
        return DEFAULT_TOKENIZER
    return m.group(1).replace("''", "'") if m.group(1) is not None else m.group(2).replace('""', '"')


def tokenize(words: list[str], tokenizer: str = DEFAULT_TOKENIZER) -> list[tuple[str, ...]]:
    """The tokens SQLite's FTS5 ``tokenizer`` makes of each word, in order.

    Raises:
        sql.Error: SQLite does not know the tokenizer.
    """
    conn = sql.connect(":memory:")
    try:
        spec = tokenizer.replace("'", "''")
        conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(x, tokenize='{spec}')")
        conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
        conn.executemany("INSERT INTO t(rowid, x) VALUES (?, ?)", list(enumerate(words, 1)))
        out: list[list[str]] = [[] for _ in words]
        for doc, term in conn.execute("SELECT doc, term FROM v ORDER BY doc, offset"):
            out[doc - 1].append(term)
        return [tuple(t) for t in out]
    finally:
        conn.close()


def porter_stems(store: "Store", query: str, conn: sql.Connection | None = None) -> tuple[Stems, ...]:
    """Each word of the Porter query for ``query`` with its tokens
    (``throttling`` → ``throttl``), from the store's own tokenizer.

    Raises:
        StoreError: the store cannot be read.
    """
    words = porter_words(query)
    if not words:
        return ()
    with sqlite_errors(store.path):
        spec = tokenizer_of(store, conn)
    return tuple(Stems(w, s) for w, s in zip(words, tokenize(words, spec)))


@dataclass(frozen=True)
class MatchSpans:
    """Where the query matched one chunk's content.

    Attributes:
        rowid: the chunk.
        content: its content.
        porter: ``(start, end)`` of each token the Porter query matched.
        trigram: ``(start, end)`` of each substring the trigram query matched.
    """

    rowid: int
    content: str
    porter: tuple[tuple[int, int], ...]
    trigram: tuple[tuple[int, int], ...]

    def segments(self) -> tuple[tuple[str, str | None], ...]:
        """The content cut at every span edge: ``(text, kind)`` with kind
        ``"porter"``, ``"trigram"``, ``"both"`` or ``None`` (no match)."""
        edges = {0, len(self.content)}
        for s, e in self.porter + self.trigram:
            edges.update((s, e))
        cuts = sorted(edges)
        out: list[tuple[str, str | None]] = []
        for s, e in zip(cuts, cuts[1:]):
            p = any(a <= s and e <= b for a, b in self.porter)
            t = any(a <= s and e <= b for a, b in self.trigram)
            kind = "both" if p and t else "porter" if p else "trigram" if t else None
            if out and out[-1][1] == kind:
                out[-1] = (out[-1][0] + self.content[s:e], kind)
            else:
                out.append((self.content[s:e], kind))
        return tuple(out)


def marked_spans(marked: str, content: str) -> tuple[tuple[int, int], ...]:
    """The spans of ``highlight(…, char(2), char(3))`` output, as offsets
    into ``content``; ``()`` when the marks do not strip back to ``content``
    (the content holds those control characters itself)."""
    spans: list[tuple[int, int]] = []
    plain: list[str] = []
    at = 0
    start = None
    for ch in marked:
        if ch == _OPEN and start is None:
            start = at
        elif ch == _CLOSE and start is not None:
            if at > start:
                spans.append((start, at))
            start = None
        else:
            plain.append(ch)
            at += 1
    if "".join(plain) != content:
        return ()
    return tuple(spans)


def trace_spans(trace: "Trace", rowid: int) -> MatchSpans | None:
    """:class:`MatchSpans` of chunk ``rowid`` read from the trace itself (no
    store access): each retriever's ``highlight()`` of the row, when that
    retriever returned it (the answering pass first, then the other).
    ``None`` when no retriever returned it."""
    runs = [trace.answering_run] if trace.answering_run is not None else []
    runs += [r for r in (trace.first, trace.fuzzy.rerun) if r is not None and r not in runs]
    marked: dict[str, str] = {}
    content = None
    for run in runs:
        for name in ("porter", "trigram"):
            rec = run.record(name)
            hit = next((h for h in rec.hits if h.rowid == rowid), None) if isinstance(rec, RetrieverRun) else None
            if hit is not None:
                marked.setdefault(name, hit.highlighted)
                content = hit.content if content is None else content
    if content is None:
        return None
    return MatchSpans(
        rowid,
        content,
        marked_spans(marked.get("porter", content), content),
        marked_spans(marked.get("trigram", content), content),
    )
