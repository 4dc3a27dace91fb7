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


class SearchFailed(Message):
    """A search worker failed (e.g. on a damaged part of the store).

    Attributes:
        seq: the request's sequence number; a failure older than the newest
            result shown is stale and is dropped.
        error: what went wrong.
    """

    def __init__(self, seq: int, error: BaseException) -> None:
        self.seq = seq
        self.error = error
        super().__init__()


class StoreReady(Message):
    """A store is open and can be browsed (after indexing or picking one).

    Attributes:
        store: the open store (the app owns it from now on).
        label: how to name it in the interface.
        skipped: the files its indexing skipped (a ``tui.cache.SkipList``),
            or ``None`` for a store rankscope did not index.
    """

    def __init__(self, store: Store, label: str, skipped=None) -> None:
        self.store = store
        self.label = label
        self.skipped = skipped
        super().__init__()


class ParamsChanged(Message):
    """The browser's search parameters changed (e.g. from the command palette
    while a lab screen is on top); posted to the active screen.

    Attributes:
        params: the new parameters.
    """

    def __init__(self, params) -> None:
        self.params = params
        super().__init__()


class CompareFinished(Message):
    """A compare worker finished.

    Attributes:
        seq: the request's sequence number (older results are dropped).
        comparison: an :class:`engine.compare.Comparison`.
    """

    def __init__(self, seq: int, comparison) -> None:
        self.seq = seq
        self.comparison = comparison
        super().__init__()


class WhyFinished(Message):
    """A why-not worker finished.

    Attributes:
        seq: the request's sequence number (older results are dropped).
        explanations: :class:`engine.why.Explanation` list, or empty with ``error``.
        error: why nothing could be explained (chunk not found), or ``None``.
    """

    def __init__(self, seq: int, explanations: list, error: str | None = None) -> None:
        self.seq = seq
        self.explanations = explanations
        self.error = error
        super().__init__()


class ChunksLoaded(Message):
    """The store's chunk list (for the fuzzy finder) is ready.

    Attributes:
        chunks: :class:`tui.screens.why.ChunkEntry` tuples in row id order.
    """

    def __init__(self, chunks: list) -> None:
        self.chunks = chunks
        super().__init__()


class ChunkMatches(Message):
    """Fuzzy-finder matches for one finder text.

    Attributes:
        seq: the request's sequence number (older results are dropped).
        matches: matching chunk entries, best first.
    """

    def __init__(self, seq: int, matches: list) -> None:
        self.seq = seq
        self.matches = matches
        super().__init__()


class DoctorFinished(Message):
    """The store diagnosis is ready.

    Attributes:
        report: an :class:`engine.doctor.DoctorReport`.
    """

    def __init__(self, report) -> None:
        self.report = report
        super().__init__()


class AgentViewFinished(Message):
    """The agent view's ``ctx_search`` call is answered.

    Attributes:
        seq: the request's sequence number (older answers are dropped).
        trace: the :class:`engine.agent.AgentTrace`, or ``None`` with ``error``
            (a call rankscope cannot reproduce).
        error: why there is no trace.
    """

    def __init__(self, seq: int, trace, error: str | None = None) -> None:
        self.seq = seq
        self.trace = trace
        self.error = error
        super().__init__()


class AgentLogLoaded(Message):
    """The recorded ``ctx_search`` calls of a session DB, replayed.

    Attributes:
        replays: :class:`engine.agent.log.Replay` list in call order.
        error: why the session DB could not be read, or ``None``.
    """

    def __init__(self, replays: list, error: str | None = None) -> None:
        self.replays = replays
        self.error = error
        super().__init__()
