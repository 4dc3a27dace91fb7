"""``extractSnippet``: what part of a chunk the agent is shown.

Source: context-mode 1.0.169 ``extractSnippet(content, query, maxLen, highlighted)``
(``src/server.ts``), verified against the 61 recorded answers of
``shared/agent-view`` (its README lists the rules). Every length and offset
here is in **UTF-16 code units** (JavaScript string semantics), 0-based,
end-exclusive:

1. ``content.length <= 1500``: the whole content (mode ``"whole"``).
2. Otherwise positions come from the FTS5 ``highlighted`` text: at each
   ``\\x02`` the current offset in the marker-free text is recorded
   (``"highlight"``).
3. None: the fallback lower-cases the *query* (``toLowerCase``), splits it on
   JS ``\\s+``, keeps terms longer than 2 units and records every
   ``indexOf`` hit in ``content.toLowerCase()``, stepping by 1 so overlaps
   count (``"indexOf"``).
4. Still none: ``content.slice(0, 1500) + "\\n…"`` (mode ``"prefix"``).
5. Otherwise windows ``[max(0, p-300), min(len, p+300)]`` over the sorted
   positions; a window whose start is ``<=`` the previous end merges into it.
   Windows are taken while ``total < 1500``, each cut to
   ``start + 1500 - total``; ``…`` is prefixed when ``start > 0`` and
   suffixed when the window's (uncut) ``end < len``; parts are joined with
   ``\\n\\n`` (mode ``"windows"``).

Cuts are UTF-16 offsets, so a snippet can hold a lone surrogate, exactly as
the agent receives it.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.js.strings import js_split_ws, js_to_lower, utf16_len, utf16_units

#: ``extractSnippet``'s ``maxLen`` as ``ctx_search`` calls it (UTF-16 units).
SNIPPET_MAX = 1500
#: Half-width of a window around a position (UTF-16 units).
WINDOW = 300
MARK_OPEN = "\x02"
MARK_CLOSE = "\x03"
ELLIPSIS = "…"


@dataclass(frozen=True)
class SnippetTrace:
    """How one result's snippet was cut.

    Attributes:
        text: the snippet exactly as sent (may hold lone surrogates).
        content_units: ``content.length`` (UTF-16 units).
        mode: ``"whole"`` (content fits), ``"windows"``, or ``"prefix"`` (no
            position found: the first 1500 units and ``"\\n…"``).
        source_of_positions: ``"highlight"`` (FTS5 markers), ``"indexOf"``
            (fallback on the original query) or ``"none"`` (whole content,
            or nothing found).
        positions: the positions used, sorted (UTF-16 offsets in content).
        marker_spans: ``(start, end)`` of every highlighted match in the
            content, whether or not it was used (empty without markers).
        terms: the fallback's query terms (only when it ran).
        windows: the merged ``(start, end)`` windows, before the budget.
        slices: ``(start, end)`` actually shown, after the 1500-unit budget
            (the text between the ``…`` marks), in order.
        fallback_ran: the ``indexOf`` fallback ran (no highlight marker).
    """

    text: str
    content_units: int
    mode: str
    source_of_positions: str
    positions: tuple[int, ...] = ()
    marker_spans: tuple[tuple[int, int], ...] = ()
    terms: tuple[str, ...] = ()
    windows: tuple[tuple[int, int], ...] = ()
    slices: tuple[tuple[int, int], ...] = ()
    fallback_ran: bool = False

    @property
    def shown(self) -> tuple[tuple[int, int], ...]:
        """Content ranges the agent sees: the slices, or the whole content /
        the prefix."""
        if self.mode == "whole":
            return ((0, self.content_units),)
        if self.mode == "prefix":
            return ((0, min(SNIPPET_MAX, self.content_units)),)
        return self.slices

    @property
    def unseen_matches(self) -> tuple[tuple[int, int], ...]:
        """Highlighted matches not wholly inside a shown range: passages that
        matched but that the agent never saw."""
        shown = self.shown
        return tuple((s, e) for s, e in self.marker_spans if not any(a <= s and e <= b for a, b in shown))


def marker_spans(highlighted: str) -> tuple[tuple[int, int], ...]:
    """``(start, end)`` UTF-16 offsets, in the marker-free text, of every
    ``\\x02 … \\x03`` match of an FTS5 ``highlight()`` value. The start is
    the position ``extractSnippet`` records."""
    units = utf16_units(highlighted)
    spans: list[tuple[int, int]] = []
    offset = 0
    start: int | None = None
    for ch in units:
        if ch == MARK_OPEN:
            start = offset
        elif ch == MARK_CLOSE:
            if start is not None:
                spans.append((start, offset))
                start = None
        else:
            offset += 1
    if start is not None:
        spans.append((start, offset))
    return tuple(spans)


def fallback_terms(query: str) -> tuple[str, ...]:
    """``query.toLowerCase().split(/\\s+/).filter(t => t.length > 2)``."""
    return tuple(t for t in js_split_ws(js_to_lower(query)) if utf16_len(t) > 2)


def index_of_positions(content: str, terms: tuple[str, ...]) -> list[int]:
    """Every ``indexOf`` hit of each term in ``content.toLowerCase()``,
    term by term, stepping ``idx + 1`` (overlaps count); UTF-16 offsets."""
    lower = utf16_units(js_to_lower(content))
    out: list[int] = []
    for term in terms:
        t = utf16_units(term)
        idx = lower.find(t)
        while idx != -1:
            out.append(idx)
            idx = lower.find(t, idx + 1)
    return out


def extract_snippet(
    content: str, query: str, highlighted: str | None = None, max_len: int = SNIPPET_MAX
) -> SnippetTrace:
    """Cut ``content`` the way ``extractSnippet`` does and record how.

    Args:
        content: the chunk text.
        query: the query as the agent typed it (the fallback's terms come
            from it, even for an ``rrf-fuzzy`` row).
        highlighted: FTS5 ``highlight()`` of the content, or ``None``
            (session-event rows have none).
        max_len: the budget in UTF-16 units.

    Returns:
        A :class:`SnippetTrace` whose ``text`` is byte for byte the snippet.
    """
    units = utf16_units(content)
    n = len(units)
    spans = marker_spans(highlighted) if highlighted else ()
    if n <= max_len:
        return SnippetTrace(content, n, "whole", "none", marker_spans=spans)
    positions = [s for s, _ in spans]
    source = "highlight"
    terms: tuple[str, ...] = ()
    fallback = False
    if not positions:
        fallback = True
        terms = fallback_terms(query)
        positions = index_of_positions(content, terms)
        source = "indexOf"
    if not positions:
        text = _from_units(units[:max_len]) + "\n" + ELLIPSIS
        return SnippetTrace(text, n, "prefix", "none", (), spans, terms, (), (), fallback)
    positions.sort()
    windows: list[list[int]] = []
    for pos in positions:
        start, end = max(0, pos - WINDOW), min(n, pos + WINDOW)
        if windows and start <= windows[-1][1]:
            windows[-1][1] = end
        else:
            windows.append([start, end])
    parts: list[str] = []
    slices: list[tuple[int, int]] = []
    total = 0
    for start, end in windows:
        if total >= max_len:
            break
        cut = min(end, start + (max_len - total))
        piece = units[start:cut]
        parts.append((ELLIPSIS if start > 0 else "") + _from_units(piece) + (ELLIPSIS if end < n else ""))
        slices.append((start, cut))
        total += len(piece)
    return SnippetTrace(
        "\n\n".join(parts),
        n,
        "windows",
        source,
        tuple(positions),
        spans,
        terms,
        tuple((s, e) for s, e in windows),
        tuple(slices),
        fallback,
    )


def _from_units(units: str) -> str:
    """Join UTF-16 code units (one Python char each) back into a string:
    surrogate pairs become one character, lone surrogates stay lone."""
    if not any("\ud800" <= ch <= "\udfff" for ch in units):
        return units
    return units.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
