"""App-wide messages (a widget's own messages are nested classes on it)."""

from __future__ import annotations

from textual.message import Message

from engine import Store
from engine.model import Trace


class SearchFinished(Message):
    """A search worker finished.

    Attributes:
        seq: the request's sequence number; a result older than the newest
            one shown is stale and is dropped.
        trace: what the pipeline did.
    """

    def __init__(self, seq: int, trace: Trace) -> None:
        self.seq = seq
        self.trace = trace
        super().__init__()


class StoreReady(Message):
    """A store is open and can be browsed (after indexing or picking one).

    Attributes:
        store: the open store (the app owns it from now on).
        label: how to name it in the interface.
    """

    def __init__(self, store: Store, label: str) -> None:
        self.store = store
        self.label = label
        super().__init__()
