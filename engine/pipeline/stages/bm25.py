"""FTS5's ``bm25()``, piece by piece, bit for bit.

The retrievers rank by ``bm25(t, 5.0, 1.0)`` (:mod:`engine.pipeline.stages.retrieve`).
This module computes the same value from its parts, with the same double
operations in the same order as ``fts5Bm25Function`` and
``fts5Bm25GetData`` in SQLite's ``ext/fts5/fts5_aux.c``, so a Python float
gives the same bits::

    idf(i)  = log((N - n(i) + 0.5) / (n(i) + 0.5)), or 1e-6 when <= 0
    f(i, r) = sum over phrase i's instances in row r of the column's weight
            = 5.0 * (instances in the title) + 1.0 * (instances in the content)
    part(i) = idf(i) * (f(i, r) * (k1 + 1.0)) / (f(i, r) + k1 * (1 - b + b * D(r) / avgdl))
    score   = ((0.0 + part(1)) + part(2)) + ...      (query order)
    bm25    = -1.0 * score                           (k1 = 1.2, b = 0.75)

``N`` is the table's row count and ``avgdl`` its total token count over its
row count (FTS5's averages record, ``%_data`` id 1: :func:`table_totals`);
``n(i)`` the number of rows phrase ``i`` matches (``count(*)`` of a
``MATCH`` on the phrase alone, what ``xQueryPhrase`` counts:
:func:`phrase_rows`); ``D(r)`` the row's token count in all columns (its
``%_docsize`` record: :func:`row_size`). Instances are found by tokenizing
the row's text with the table's own tokenizer (SQLite's C tokenizer, through
``apsw``: :func:`tokenizer_for`) and matching each phrase's tokens at
consecutive positions, as FTS5's ``detail=full`` index does
(:func:`column_hits`).

Two readers: :mod:`engine.pipeline.stages.topk` ranks with it (scoring only
the rows that can reach the limit) and :mod:`engine.lab.explain` shows a
row's parts. Only the MATCH strings :mod:`engine.pipeline.query` writes (an
``OR`` of double-quoted phrases, :func:`phrases_of`) on tables whose options
keep FTS5's matching plain are supported; anything else raises
:class:`Unsupported` with a code.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import apsw

from engine.store import sql
from engine.store.cache import noted_version

if TYPE_CHECKING:
    from engine.store.cache import VersionedLRU

#: FTS5's bm25 constants (``fts5Bm25Function``).
K1 = 1.2
B = 0.75
#: Column weights of every retriever statement: ``bm25(t, 5.0, 1.0)`` (title, content).
WEIGHTS = (5.0, 1.0)
#: The floor FTS5 puts under an idf that is 0 or negative (a phrase in half the rows or more).
IDF_FLOOR = 1e-6

_PHRASE = re.compile(r'"((?:[^"]|"")*)"')
_OR_QUERY = re.compile(r'^"(?:[^"]|"")*"(?: OR "(?:[^"]|"")*")*$')
_TOKENIZE = re.compile(r"tokenize\s*=\s*(['\"])(.*?)\1", re.IGNORECASE | re.DOTALL)
#: FTS5 options that change what an instance or a row's text is: ``detail``
#: other than full (no positions: phrases match differently), ``locale``
#: (per-row tokenizer locale), ``tokendata``, ``contentless_delete``.
_OPTION = re.compile(r"\b(detail|locale|tokendata|contentless_delete)\s*=\s*['\"]?(\w+)", re.IGNORECASE)


class Unsupported(Exception):
    """The table cannot be scored here; ``code`` says why: ``tokenizer``
    (its tokenizer cannot be read or loaded), ``table-options`` (options
    that change matching), ``no-docsize`` (no averages record or per-row
    sizes)."""

    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


def varints(blob: bytes) -> list[int]:
    """SQLite varints (big-endian 7-bit groups; the 9th byte carries 8 bits)
    read one after another from ``blob``."""
    out: list[int] = []
    i, n = 0, len(blob)
    while i < n:
        v = 0
        for j in range(9):
            c = blob[i]
            i += 1
            if j == 8:
                v = (v << 8) | c
                break
            v = (v << 7) | (c & 0x7F)
            if c < 0x80:
                break
        out.append(v)
    return out


def phrases_of(match: str) -> list[str] | None:
    """The phrase texts of ``"a" OR "b" ...`` (``""`` unescaped to ``"``),
    or ``None`` when ``match`` is anything else."""
    if not _OR_QUERY.match(match):
        return None
    return [m.group(1).replace('""', '"') for m in _PHRASE.finditer(match)]


def match_phrase(text: str) -> str:
    """``text`` as one double-quoted FTS5 phrase."""
    return '"' + text.replace('"', '""') + '"'


def tokenizer_spec(conn: sql.Connection, table: str) -> tuple[str, ...]:
    """The words of the table's ``tokenize=`` option (``("unicode61",)`` by
    default), once they are known to load on ``conn`` (the answer, a refusal
    included, is cached per connection and table).

    Raises:
        Unsupported: ``tokenizer`` when the option cannot be read or loaded;
            ``table-options`` for options that change matching (``detail``
            other than ``full``, ``locale=1``, ``tokendata=1``, ...).
    """
    cache: dict[str, tuple[tuple[str, ...], apsw.FTS5Tokenizer] | Unsupported] = conn.__dict__.setdefault(
        "_rankscope_tokenizers", {}
    )
    found = cache.get(table)
    if isinstance(found, Unsupported):
        raise Unsupported(found.code)
    if found is not None:
        return found[0]
    try:
        spec = _spec(conn, table)
        tok = conn.fts5_tokenizer(spec[0], list(spec[1:]))
    except apsw.Error:
        cache[table] = Unsupported("tokenizer")
        raise Unsupported("tokenizer") from None
    except Unsupported as unsupported:
        cache[table] = unsupported
        raise
    cache[table] = (spec, tok)
    return spec


def _spec(conn: sql.Connection, table: str) -> tuple[str, ...]:
    row = conn.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)).fetchone()
    if row is None:
        raise Unsupported("tokenizer")
    for name, value in _OPTION.findall(row[0]):
        if not (name.lower() == "detail" and value.lower() == "full") and value not in ("0",):
            raise Unsupported("table-options")
    m = _TOKENIZE.search(row[0])
    words = m.group(2).split() if m else ["unicode61"]
    if not words or any(not re.fullmatch(r"[A-Za-z0-9_]+", w) for w in words):
        raise Unsupported("tokenizer")
    return tuple(words)


def tokenizer_for(conn: sql.Connection, table: str) -> apsw.FTS5Tokenizer:
    """The table's tokenizer (:func:`tokenizer_spec`) as an ``apsw`` callable on ``conn``.

    Raises:
        Unsupported: as :func:`tokenizer_spec`.
    """
    tokenizer_spec(conn, table)
    tok: apsw.FTS5Tokenizer = conn.__dict__["_rankscope_tokenizers"][table][1]
    return tok


def tokens(tok: apsw.FTS5Tokenizer, text: bytes, mode: int) -> list[Any]:
    """``[(start, end, token), ...]``: byte offsets into ``text`` (UTF-8) and
    the token, colocated tokens left out; ``mode`` is an ``FTS5_TOKENIZE_*``."""
    return list(tok(text, mode, None, include_offsets=True, include_colocated=False))


def phrase_tokens(tok: apsw.FTS5Tokenizer, phrase: str) -> tuple[str, ...]:
    """The tokens of one phrase as FTS5 reads a query (``FTS5_TOKENIZE_QUERY``);
    ``()`` for a phrase with none (``"--"``), which matches no row."""
    return tuple(t[2] for t in tokens(tok, phrase.encode("utf-8"), apsw.FTS5_TOKENIZE_QUERY))


def document_tokens(tok: apsw.FTS5Tokenizer, text: bytes) -> list[str]:
    """The tokens of one column's text as FTS5 indexes it (``FTS5_TOKENIZE_DOCUMENT``)."""
    return [t[2] for t in tokens(tok, text, apsw.FTS5_TOKENIZE_DOCUMENT)] if text else []


def count_instances(toks: list[str], phrase: tuple[str, ...], found: list[int] | None = None) -> int:
    """Instances of ``phrase`` (its tokens at consecutive positions, overlaps
    counted) in ``toks``; their 0-based start positions go into ``found``
    when given."""
    if not phrase:
        return 0
    first = phrase[0]
    n = len(phrase)
    count = 0
    start = 0
    try:
        while True:
            p = toks.index(first, start)
            if n == 1 or tuple(toks[p : p + n]) == phrase:
                count += 1
                if found is not None:
                    found.append(p)
            start = p + 1
    except ValueError:
        return count


def table_totals(conn: sql.Connection, table: str) -> tuple[int, int]:
    """``(N, total tokens)`` from FTS5's averages record (``%_data`` id 1):
    what ``xRowCount`` and ``xColumnTotalSize(-1)`` return.

    Raises:
        Unsupported: ``no-docsize`` when the record is missing.
    """
    row = conn.execute(f'SELECT block FROM "{table}_data" WHERE id = 1').fetchone()
    if row is None or not row[0]:
        raise Unsupported("no-docsize")
    values = varints(bytes(row[0]))
    return values[0], sum(values[1:])


def has_docsize(conn: sql.Connection, table: str) -> bool:
    """Whether ``table`` keeps per-row token counts (a ``%_docsize`` table)."""
    return sql.table_exists(conn, f"{table}_docsize")


def row_size(conn: sql.Connection, table: str, rowid: int) -> int | None:
    """``D(r)``: the row's tokens in all columns, from its ``%_docsize``
    record (what ``xColumnSize(-1)`` returns); ``None`` when it has none."""
    row = conn.execute(f'SELECT sz FROM "{table}_docsize" WHERE id = ?', (rowid,)).fetchone()
    return None if row is None or row[0] is None else sum(varints(bytes(row[0])))


def phrase_rows(
    conn: sql.Connection,
    table: str,
    texts: list[str],
    phrase_toks: list[tuple[str, ...]],
    counts: "VersionedLRU[int] | None" = None,
) -> list[int]:
    """``n(i)`` for each phrase in ``texts`` (query order): the rows it
    matches alone, ``count(*)`` of a ``MATCH`` on it (0 without a query;
    a phrase without tokens matches nothing).

    Args:
        counts: a cache keyed ``(table, phrase)``
            (:attr:`engine.store.store.Store.phrase_rows`), read and filled
            under the data version ``conn``'s read transaction noted
            (``conn.read_version``; none noted, or no transaction: not used).
    """
    version = noted_version(conn) if counts is not None else None
    out: list[int] = []
    for text, toks in zip(texts, phrase_toks):
        n = counts.get(version, (table, text)) if counts is not None else None
        if n is None:
            n = 0
            if toks:
                n = int(
                    conn.execute(
                        f'SELECT count(*) FROM "{table}" WHERE "{table}" MATCH ?', (match_phrase(text),)
                    ).fetchone()[0]
                )
            if counts is not None:
                counts.put(version, (table, text), n)
        out.append(n)
    return out


def idf(n_row: int, n_hit: int) -> float:
    """``log((N - n + 0.5) / (n + 0.5))``, or :data:`IDF_FLOOR` when that is
    0 or less (``fts5Bm25GetData``)."""
    v = math.log((n_row - n_hit + 0.5) / (n_hit + 0.5))
    return v if v > 0.0 else IDF_FLOOR


def weighted_frequency(title_hits: int, content_hits: int) -> float:
    """``f``: 5.0 per instance in the title plus 1.0 per instance in the
    content. FTS5 adds each instance's column weight in turn; with these
    weights every partial sum is a small integer, exact in a double, so the
    order does not matter."""
    freq = 0.0
    freq += WEIGHTS[0] * title_hits
    freq += WEIGHTS[1] * content_hits
    return freq


def part(idf_value: float, freq: float, size: float, avgdl: float) -> float:
    """One phrase's part of the score (positive; ``0.0`` when ``freq`` is 0):
    ``idf * (f * (k1 + 1.0)) / (f + k1 * (1 - b + b * D / avgdl))``, the
    operations in ``fts5Bm25Function``'s order."""
    return idf_value * ((freq * (K1 + 1.0)) / (freq + K1 * (1 - B + B * size / avgdl)))


def total(parts: list[float]) -> float:
    """The parts added in query order from ``0.0``, one double addition at
    a time, as FTS5 adds them (not :func:`math.fsum`). ``bm25 = -1.0 * total``."""
    score = 0.0
    for p in parts:
        score += p
    return score


@dataclass(frozen=True)
class RowHits:
    """A row's text against a query's phrases.

    Attributes:
        title_tokens: tokens in the title column.
        content_tokens: tokens in the content column.
        title: instances of each phrase in the title (query order).
        content: 0-based token positions where each phrase starts in the
            content (query order); their count is its instances there.
    """

    title_tokens: int
    content_tokens: int
    title: tuple[int, ...]
    content: tuple[tuple[int, ...], ...]


def column_hits(tok: apsw.FTS5Tokenizer, title: bytes, content: bytes, phrases: list[tuple[str, ...]]) -> RowHits:
    """Each phrase's instances in a row's title and content (UTF-8 bytes)."""
    title_toks = document_tokens(tok, title)
    content_toks = document_tokens(tok, content)
    in_title: list[int] = []
    in_content: list[tuple[int, ...]] = []
    for phrase in phrases:
        in_title.append(count_instances(title_toks, phrase))
        found: list[int] = []
        count_instances(content_toks, phrase, found)
        in_content.append(tuple(found))
    return RowHits(len(title_toks), len(content_toks), tuple(in_title), tuple(in_content))
