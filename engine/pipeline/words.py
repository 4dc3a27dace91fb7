"""Small wording helpers shared by the engine's sentence generators."""

from __future__ import annotations

#: Characters of a query text, term list or correction list a one-line
#: summary quotes before cutting it (see :func:`abbreviate`).
SUMMARY_TEXT_MAX = 120


def abbreviate(text: str, width: int = SUMMARY_TEXT_MAX) -> str:
    """``text`` cut to its first ``width`` characters followed by ``… (+N
    characters)``, N the characters cut away; ``text`` whole when that cut
    would not be shorter than it (the marker is longer than a few
    characters it saves). Characters are Unicode code points (Python
    ``str`` length), not bytes, UTF-16 units or terminal cells."""
    if len(text) <= width:
        return text
    cut = f"{text[:width]}… (+{len(text) - width:,} characters)"
    return cut if len(cut) < len(text) else text


def plural(n: int, word: str) -> str:
    """``"1 hit"`` / ``"3 hits"``: ``n`` and ``word``, with an ``s`` unless ``n`` is 1."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def filter_words(source: str | None, source_match: str, content_type: str | None) -> str:
    """The SQL filters both retrievers apply, in words (``""`` when none):
    ``source LIKE '%docs%'`` (``source_match`` ``"like"``) or ``source =
    'a.md'`` (``"exact"``), ``content_type = 'code'``, joined by `` and ``.
    An empty or ``None`` source or content type is no filter."""
    parts = []
    if source:
        parts.append(f"source = '{source}'" if source_match == "exact" else f"source LIKE '%{source}%'")
    if content_type:
        parts.append(f"content_type = '{content_type}'")
    return " and ".join(parts)


def number(x: float) -> str:
    """Up to 6 decimals without trailing zeros (``0.032787``, ``1``, ``0``)."""
    return f"{x:.6f}".rstrip("0").rstrip(".") if x else "0"
