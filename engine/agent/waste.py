"""Waste in what one ``ctx_search`` call delivered (data, for
``ctx-search --json`` and the agent view):

* a chunk delivered more than once across the queries of the call: its
  deliveries and the UTF-16 units / UTF-8 bytes of the repeated result
  blocks (every delivery after the first);
* results whose snippet shows none of the chunk's matched terms although
  its text holds some (FTS5's Porter or trigram marks, from the query's own
  trace, :func:`engine.lab.terms.trace_spans`): the snippet window lies
  outside every match;
* the share of the 40 KB cap used: the result blocks' UTF-16 units (what
  the handler sums) over :data:`~engine.agent.handler.MAX_TOTAL`.

Offsets are UTF-16 units; positions 1-based. Pure Python.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.js.strings import utf8_len, utf16_len
from engine.lab.terms import trace_spans
from .handler import MAX_TOTAL, AgentTrace


@dataclass(frozen=True)
class Repeat:
    """One chunk delivered more than once.

    Attributes:
        rowid, source, title: the chunk.
        deliveries: ``(query position, result position)`` of each delivery.
        repeated_units, repeated_bytes: the result blocks after the first.
    """

    rowid: int
    source: str
    title: str
    deliveries: tuple[tuple[int, int], ...]
    repeated_units: int
    repeated_bytes: int


@dataclass(frozen=True)
class Waste:
    """See the module docstring.

    Attributes:
        repeats: chunks delivered more than once.
        repeated_units, repeated_bytes: their repeated blocks, summed.
        matches_outside: ``(query position, result position, rowid)`` of each
            result whose snippet shows no match of the chunk's text.
        cap_units_used: result blocks' UTF-16 units (the handler's ``totalSize``).
        cap_units: the cap (40960).
        cap_share: ``cap_units_used / cap_units`` (may pass 1: the cap is
            checked before each query).
        queries_capped: queries skipped by the cap.
    """

    repeats: tuple[Repeat, ...]
    repeated_units: int
    repeated_bytes: int
    matches_outside: tuple[tuple[int, int, int], ...]
    cap_units_used: int
    cap_units: int
    cap_share: float
    queries_capped: int

    def to_dict(self) -> dict[str, object]:
        return {
            "repeats": [
                {
                    "rowid": r.rowid,
                    "source": r.source,
                    "title": r.title,
                    "deliveries": [{"query_position": q, "position": p} for q, p in r.deliveries],
                    "repeated_units": r.repeated_units,
                    "repeated_bytes": r.repeated_bytes,
                }
                for r in self.repeats
            ],
            "repeated_units": self.repeated_units,
            "repeated_bytes": self.repeated_bytes,
            "matches_outside_snippet": [
                {"query_position": q, "position": p, "rowid": rid} for q, p, rid in self.matches_outside
            ],
            "cap_units_used": self.cap_units_used,
            "cap_units": self.cap_units,
            "cap_share": round(self.cap_share, 4),
            "queries_capped": self.queries_capped,
        }


def _utf16_offsets(text: str) -> list[int]:
    """UTF-16 offset of each code point of ``text`` (and of its end)."""
    out = [0]
    for ch in text:
        out.append(out[-1] + (2 if ch > "\uffff" else 1))
    return out


def waste(trace: AgentTrace) -> Waste:
    """The waste of one answered call (all zero for an error answer)."""
    seen: dict[int, list[tuple[int, int, str, str, int, int]]] = {}
    outside: list[tuple[int, int, int]] = []
    for q in trace.queries:
        for r in q.results:
            if r.rowid is None:
                continue
            seen.setdefault(r.rowid, []).append(
                (q.position, r.position, r.source, r.title, utf16_len(r.text), utf8_len(r.text))
            )
            if q.search is None or r.snippet.mode == "whole":
                continue
            spans = trace_spans(q.search, r.rowid)
            if spans is None:
                continue
            marks = list(spans.porter) + list(spans.trigram)
            if not marks:
                continue
            offsets = _utf16_offsets(r.content)
            units = [(offsets[a], offsets[b]) for a, b in marks if b < len(offsets)]
            shown = r.snippet.slices if r.snippet.mode == "windows" else ((0, min(1500, r.snippet.content_units)),)
            if units and not any(a < e and b > s for a, b in units for s, e in shown):
                outside.append((q.position, r.position, r.rowid))
    repeats = tuple(
        Repeat(
            rowid,
            items[0][2],
            items[0][3],
            tuple((i[0], i[1]) for i in items),
            sum(i[4] for i in items[1:]),
            sum(i[5] for i in items[1:]),
        )
        for rowid, items in seen.items()
        if len(items) > 1
    )
    used = sum(q.block_units for q in trace.queries)
    return Waste(
        repeats,
        sum(r.repeated_units for r in repeats),
        sum(r.repeated_bytes for r in repeats),
        tuple(outside),
        used,
        MAX_TOTAL,
        used / MAX_TOTAL,
        sum(1 for q in trace.queries if q.capped),
    )
