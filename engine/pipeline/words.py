"""Small wording helpers shared by the engine's sentence generators."""

from __future__ import annotations

#: Longest query text, term list or correction list a one-line summary
#: quotes in full; longer ones are cut (see :func:`abbreviate`).
SUMMARY_TEXT_MAX = 120


def abbreviate(text: str, width: int = SUMMARY_TEXT_MAX) -> str:
    """``text`` when it has at most ``width`` characters, else its first
    ``width`` and ``… (+N characters)``."""
    if len(text) <= width:
        return text
    return f"{text[:width]}… (+{len(text) - width:,} characters)"


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
