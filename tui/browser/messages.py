"""App-wide messages (a widget's own messages are nested classes on it)."""

from __future__ import annotations

from textual.message import Message
from textual.message_pump import MessagePump

from engine import Store
from engine.pipeline.trace import Trace


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
        skipped: the files its indexing skipped (a ``tui.browser.corpus_cache.SkipList``),
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
        comparison: an :class:`engine.lab.compare.Comparison`.
    """

    def __init__(self, seq: int, comparison) -> None:
        self.seq = seq
        self.comparison = comparison
        super().__init__()


class WhyFinished(Message):
    """A why-not worker finished.

    Attributes:
        seq: the request's sequence number (older results are dropped).
        explanations: :class:`engine.lab.why.Explanation` list, or empty with ``error``.
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
        chunks: :class:`tui.browser.screens.why.ChunkEntry` tuples in row id order.
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


class StoresFound(Message):
    """Store discovery finished.

    Attributes:
        infos: ``engine.store.discovery.StoreInfo``-like objects, in list order.
        looked_in: the folders searched (``engine.store.discovery.StoreLocation``),
            when the finder tells (``engine.store.discovery.StoreFinder``), else ``()``.
    """

    def __init__(self, infos: list, looked_in: tuple = ()) -> None:
        self.infos = infos
        self.looked_in = looked_in
        super().__init__()


class DoctorFinished(Message):
    """The store diagnosis is ready.

    Attributes:
        report: an :class:`engine.lab.doctor.DoctorReport`.
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


# ── requests: a screen asks the app to do something ──────────────────────
#
# Screens never call the app's methods or read its attributes; they post one
# of these to the app (``self.app.post_message``) and the app's ``on_...``
# handler does the work (mostly in a thread worker) and posts the answer
# (``SearchFinished``, ``CompareFinished``, ...) back to ``requester``.


class Request(Message):
    """A request from a screen to the app.

    Attributes:
        requester: the screen that asked; the answer is posted to it.
    """

    def __init__(self, requester: MessagePump) -> None:
        self.requester = requester
        super().__init__()


class RunSearch(Request):
    """Search ``params`` in ``store``; answered with :class:`SearchFinished` or :class:`SearchFailed`.

    Attributes:
        store: the store the requesting browser shows.
        params: an :class:`engine.SearchParams`.
        seq: the request's sequence number (echoed in the answer).
    """

    def __init__(self, requester: MessagePump, store: Store, params, seq: int) -> None:
        super().__init__(requester)
        self.store = store
        self.params = params
        self.seq = seq


class RunCompare(Request):
    """Search ``params_a`` and ``params_b`` and compare; answered with :class:`CompareFinished`.

    Attributes:
        params_a, params_b: :class:`engine.SearchParams` of runs A and B.
        seq: the request's sequence number (echoed in the answer).
    """

    def __init__(self, requester: MessagePump, params_a, params_b, seq: int) -> None:
        super().__init__(requester)
        self.params_a = params_a
        self.params_b = params_b
        self.seq = seq


class ExplainChunk(Request):
    """Explain why chunk ``rowid`` is (not) in the answer to ``params``;
    answered with :class:`WhyFinished`.

    Attributes:
        params: an :class:`engine.SearchParams`.
        rowid: the chunk's row id.
        seq: the request's sequence number (echoed in the answer).
        trace: the trace of ``params`` if already at hand (saves a search), or ``None``.
    """

    def __init__(self, requester: MessagePump, params, rowid: int, seq: int, trace: Trace | None = None) -> None:
        super().__init__(requester)
        self.params = params
        self.rowid = rowid
        self.seq = seq
        self.trace = trace


class LoadChunks(Request):
    """The store's chunk list for the finder; answered with :class:`ChunksLoaded`
    (at once when the app already holds it)."""


class FindChunks(Request):
    """Fuzzy-match ``text`` against the chunk list; answered with :class:`ChunkMatches`.

    Attributes:
        text: what the finder holds.
        seq: the request's sequence number (echoed in the answer).
    """

    def __init__(self, requester: MessagePump, text: str, seq: int) -> None:
        super().__init__(requester)
        self.text = text
        self.seq = seq


class Diagnose(Request):
    """Diagnose the open store (read-only); answered with :class:`DoctorFinished`."""


class IndexFolder(Request):
    """Index a folder into the cache; progress goes to ``requester``, then the
    app posts :class:`StoreReady` to itself.

    Attributes:
        entry: the ``tui.browser.corpus_cache.CacheEntry`` to build.
        label: how to name the store once it is ready.
    """

    def __init__(self, requester: MessagePump, entry, label: str) -> None:
        super().__init__(requester)
        self.entry = entry
        self.label = label


class DiscoverStores(Request):
    """Find content stores with ``finder`` (it may walk folders); answered
    with :class:`StoresFound`.

    Attributes:
        finder: a callable returning ``StoreInfo``-like objects.
    """

    def __init__(self, requester: MessagePump, finder) -> None:
        super().__init__(requester)
        self.finder = finder


class ApplyParams(Message):
    """Change the browser's search parameters and search again (from the
    parameters and session dialogs); invalid values are reported and change
    nothing (``BrowserScreen.update_params``).

    Attributes:
        changes: field name → new value (``limit``, ``source``,
            ``source_match``, ``content_type``, ``sessions``).
    """

    def __init__(self, **changes) -> None:
        self.changes = changes
        super().__init__()


class PinChunk(Message):
    """Pin chunk ``rowid`` in the browser (from the why-not finder or the
    rank flow): the line under the query box then follows its fate
    (``BrowserScreen.pin``).

    Attributes:
        rowid: the chunk's row id in the browser's store; ``None`` unpins.
    """

    def __init__(self, rowid: int | None) -> None:
        self.rowid = rowid
        super().__init__()


class VariantsChosen(Message):
    """The compare screen's variants changed: the app keeps them for its next opening.

    Attributes:
        variant_a, variant_b: :class:`engine.pipeline.trace.Variant` of A and B.
    """

    def __init__(self, variant_a, variant_b) -> None:
        self.variant_a = variant_a
        self.variant_b = variant_b
        super().__init__()


class RunAgentView(Request):
    """Answer an agent-view request with :func:`engine.agent.ctx_search`;
    answered with :class:`AgentViewFinished`.

    Attributes:
        request: a :class:`tui.browser.screens.agent.AgentRequest` (arguments,
            server context, call number).
        seq: the request's sequence number (echoed in the answer).
    """

    def __init__(self, requester: MessagePump, request, seq: int) -> None:
        super().__init__(requester)
        self.request = request
        self.seq = seq


class LoadAgentLog(Request):
    """Read the ``ctx_search`` calls recorded in ``session_db`` and replay
    them on the open store; answered with :class:`AgentLogLoaded`.

    Attributes:
        session_db: path of the context-mode session DB (opened read-only).
    """

    def __init__(self, requester: MessagePump, session_db: str) -> None:
        super().__init__(requester)
        self.session_db = session_db


class OpenRecordedCall(Message):
    """Open a recorded ``ctx_search`` call (from the agent log): the browser
    searches its first query with the call's limit, filters and allow-set,
    and the agent view answers the call's own arguments at its throttle
    position.

    Attributes:
        replay: an :class:`engine.agent.log.Replay` whose call has params.
    """

    def __init__(self, replay) -> None:
        self.replay = replay
        super().__init__()


class RunPin(Request):
    """Follow the pinned chunk ``rowid`` in ``trace``: its fate and the
    smallest single change that returns it; answered with :class:`PinFinished`.

    Attributes:
        store: the store the requesting browser shows.
        trace: the search shown.
        rowid: the pinned chunk.
        seq: the request's sequence number (echoed in the answer).
    """

    def __init__(self, requester: MessagePump, store: Store, trace: Trace, rowid: int, seq: int) -> None:
        super().__init__(requester)
        self.store = store
        self.trace = trace
        self.rowid = rowid
        self.seq = seq


class PinFinished(Message):
    """A pin worker finished.

    Attributes:
        seq: the request's sequence number (older answers are dropped).
        outcome: a :class:`tui.present.pinning.PinOutcome`, or ``None`` with ``error``.
        error: why it could not be followed (the chunk is gone), or ``None``.
    """

    def __init__(self, seq: int, outcome=None, error: str | None = None) -> None:
        self.seq = seq
        self.outcome = outcome
        self.error = error
        super().__init__()


class GradeChunk(Request):
    """Grade chunk ``rowid`` for the browser's query (from the rank flow),
    through the browser's own grading: the browser follows the chunk (its
    journey shows it) and grades it as its grade keys do
    (``BrowserScreen.action_grade``: judgments saved, badges and metrics
    refreshed). Answered with :class:`ChunkGraded`.

    Attributes:
        trace: the search the requester shows; refused (with a notice) when
            the browser shows another one by now.
        pass_name: the pass of the row graded (``"first"`` or ``"fuzzy"``),
            where the chunk is looked up.
        rowid: the chunk's row id.
        grade: 0-3, or -1 to remove the grade.
    """

    def __init__(self, requester: MessagePump, trace: Trace, pass_name: str, rowid: int, grade: int) -> None:
        super().__init__(requester)
        self.trace = trace
        self.pass_name = pass_name
        self.rowid = rowid
        self.grade = grade


class ChunkGraded(Message):
    """The answer to :class:`GradeChunk`: chunk ``rowid``'s grade for the
    query as recorded now (unchanged when grading failed: the browser has
    said why).

    Attributes:
        rowid: the chunk's row id.
        grade: its grade 0-3, or ``None`` (not graded).
    """

    def __init__(self, rowid: int, grade: int | None) -> None:
        self.rowid = rowid
        self.grade = grade
        super().__init__()
