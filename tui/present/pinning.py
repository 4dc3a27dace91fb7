"""A pinned chunk: where it ended up in a search, and the smallest single
change that would return it.

The CLI (``rankscope search ... --pin SOURCE::TITLE|ROWID``) and the browser
(the pinned line under the query box, computed in a worker) both call
:func:`pin_outcome`; :func:`pin_lines` puts one in words. No Textual here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from engine.store import sql
from engine.lab.counterfactual import Counterfactual, parse_pin, would_return_with
from engine.lab.flow import Absent
from engine.lab.why import ChunkRef, fate, find_chunks
from engine.pipeline.paths import Fate
from engine.pipeline.paths import fate as path_fate
from engine.pipeline.runcache import RunCache
from engine.pipeline.trace import Trace
from engine.store.store import Store

from tui.present import safe
from tui.present.flowtext import counterfactual_text, fate_text


@dataclass(frozen=True)
class PinOutcome:
    """What a search did with a pinned chunk.

    Attributes:
        chunk: the chunk.
        fate: its final position, or where it left and why.
        counterfactual: the smallest single change that returns it (or why
            there is none; reason ``returned`` when it is in the answer),
            ``None`` when not computed (cancelled before it started).
        absent: a flow row for it when no retriever returned it, else ``None``.
    """

    chunk: ChunkRef
    fate: Fate
    counterfactual: Counterfactual | None
    absent: Absent | None = None

    def to_dict(self) -> dict[str, object]:
        """``{"rowid", "source", "title", "fate", "would_return_with",
        "counterfactual"}`` (``would_return_with``: ``{"param", "value",
        "position"}`` or ``null``)."""
        cf = self.counterfactual
        return {
            "rowid": self.chunk.rowid,
            "source": self.chunk.source,
            "title": self.chunk.title,
            "fate": self.fate.to_dict(),
            "would_return_with": None if cf is None else cf.would_return_with(),
            "counterfactual": None if cf is None else cf.to_dict(),
        }


def resolve_pin(store: Store, text: str, conn: sql.Connection | None = None) -> list[ChunkRef]:
    """The chunks ``text`` names: a row id, or a ``SOURCE::TITLE`` key (every
    chunk sharing it, in row id order).

    Raises:
        ValueError: neither a row id nor a key.
        ChunkNotFoundError: no chunk has it.
    """
    return find_chunks(store, conn=conn, **parse_pin(text))


def pin_outcome(
    store: Store,
    trace: Trace,
    rowid: int,
    *,
    conn: sql.Connection | None = None,
    runs: RunCache | None = None,
    stop: Callable[[], bool] | None = None,
    counterfactual: bool = True,
) -> PinOutcome:
    """The fate of chunk ``rowid`` in ``trace`` and (unless
    ``counterfactual=False``) the smallest change that returns it.

    Raises:
        ChunkNotFoundError: no chunk has that row id.
        CorruptStoreError / StoreError: the store cannot be read.
    """
    [chunk] = find_chunks(store, rowid=rowid, conn=conn)
    f = fate(store, trace, rowid, conn=conn)
    absent = None
    if f.exit is not None and path_fate(trace, rowid) is None:
        absent = Absent(chunk.rowid, chunk.source, chunk.title, f.exit)
    cf = None
    if counterfactual:
        cf = would_return_with(store, trace.params, rowid=rowid, trace=trace, runs=runs, conn=conn, stop=stop)
    return PinOutcome(chunk, f, cf, absent)


def pin_lines(outcome: PinOutcome) -> tuple[str, str]:
    """Two lines: ``pinned row 57 Guide > Example: left at Trim: cut by the
    trim (#5 > limit 3)`` and the counterfactual (``limit 5 would return it at
    #5``; ``""`` when not computed or already returned)."""
    c = outcome.chunk
    first = f"pinned row {c.rowid} {safe.line(c.title)}: {fate_text(outcome.fate)}"
    cf = outcome.counterfactual
    second = "" if cf is None or cf.reason in ("returned", "cancelled") else counterfactual_text(cf)
    return first, second
