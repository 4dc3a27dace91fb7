"""What a stage module declares about itself, and what the pipeline and why-not give it.

Each stage module exports its :class:`Stage` (a :class:`RecordStage` when it
keeps a record): ids, titles, its hooks and its reason codes with their
words (:class:`Reason`). :mod:`engine.pipeline.table` lists them in pipeline
order; the pipeline, the paths, the summaries, why-not, the JSON export and
the flow's markers read them from there. No stage module imports the table.

Positions are **1-based**. A record is the stage's frozen dataclass with an
``elapsed_ms`` field (the pipeline sets it to the step's wall-clock milliseconds).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Callable, Generic, Mapping, Protocol, TypeVar

from engine.pipeline.candidates import Candidate, ChunkRef, Data, Exit, FinalResult, Hit
from engine.pipeline.params import SearchParams
from engine.store import sql
from engine.store.store import Store

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

R = TypeVar("R", bound="DataclassInstance")
#: A ranked item: a retriever row before fusion, a fused candidate from fusion on.
Item = Hit | Candidate
Items = tuple[Item, ...]


def candidates(items: Items) -> tuple[Candidate, ...]:
    """``items`` as fused candidates (what every chain stage receives).

    Raises:
        TypeError: a retriever row among them.
    """
    out = tuple(c for c in items if isinstance(c, Candidate))
    if len(out) != len(items):
        raise TypeError("a chain stage received retriever rows")
    return out


class Records(Protocol):
    """A holder of stage records by unprefixed id: a pass (:class:`~engine.pipeline.passes.Run`),
    a trace (its trace-level stages), a :class:`PassContext`, why-not's context."""

    def record(self, stage: str) -> object | None: ...


class PassView(Records, Protocol):
    """One pass as a stage's why-not hook sees it."""

    @property
    def query(self) -> str: ...

    @property
    def prefix(self) -> str: ...

    @property
    def pass_name(self) -> str: ...


@dataclass(frozen=True)
class PassContext:
    """What a stage's ``step`` may read.

    Attributes:
        conn: the connection of this search (inside its read transaction).
        store: the store (``store.schema`` says which columns exist).
        params: the search parameters (``params.variant`` included).
        query: the text this pass searches (raw, or the corrected query).
        pool_size: the candidate pool size of this search.
        fts_limit: rows fetched per retriever.
        records: the records of the stages that already ran in this pass, by id, in order.
        ahead: records made ahead for this pass, by id (the retrievers, fetched together).
    """

    conn: sql.Connection
    store: Store
    params: SearchParams
    query: str
    pool_size: int
    fts_limit: int
    records: Mapping[str, object] = field(default_factory=dict)
    ahead: Mapping[str, object] = field(default_factory=dict)

    def record(self, stage: str) -> object | None:
        """The record of ``stage`` if it already ran in this pass."""
        return self.records.get(stage)


@dataclass(frozen=True)
class Reason:
    """One reason code a stage gives, worded once.

    Attributes:
        sentence: the exit in words (``"beyond the pool (fused #7, pool 3)"``).
        data: the names in its exit data, in order.
        marker: a flow cell's word or two (``"cut @3"``); default the code.
        compact: the 80-column form (``"cut@3"``), given a function that cuts
            an id to fit; default :attr:`marker`.
        told: why-not gives it (``False``: a placeholder why-not always refines).
    """

    sentence: Callable[[Exit], str]
    data: tuple[str, ...] = ()
    marker: Callable[[Exit], str] | None = None
    compact: Callable[[Exit, Callable[[str], str]], str] | None = None
    told: bool = True


@dataclass(frozen=True)
class Explanation:
    """Where one chunk left the pipeline, or where it ended up (why-not).

    Attributes:
        chunk: the chunk.
        stage: full stage id (``fuzzy:``-prefixed for a story in the re-run).
        reason: a reason code of that stage (:data:`engine.lab.why.REASONS`).
        message: one or two sentences with the numbers.
        run: the pass explained: ``"first"`` or ``"fuzzy"``.
        position: 1-based position at ``stage`` when it has one, else ``None``.
        details: reason-specific JSON-ready values.
        returned: the chunk is in the answer (a ``kept`` story).
    """

    chunk: ChunkRef
    stage: str
    reason: str
    message: str
    run: str = "first"
    position: int | None = None
    details: dict[str, object] = field(default_factory=dict, compare=False)
    returned: bool = False

    def to_dict(self) -> dict[str, object]:
        """``rowid, source, title, content_type, session_id, stage, reason, message, run, position, details``."""
        c = self.chunk
        return {
            "rowid": c.rowid,
            "source": c.source,
            "title": c.title,
            "content_type": c.content_type,
            "session_id": c.session_id,
            "stage": self.stage,
            "reason": self.reason,
            "message": self.message,
            "run": self.run,
            "position": self.position,
            "details": self.details,
        }


def answer_facts(result: FinalResult) -> dict[str, object]:
    """The details every story of a returned chunk starts with: ``position, layer, score, boost``."""
    return {"position": result.position, "layer": result.layer, "score": result.candidate.score, "boost": result.boost}


class Asking(Records, Protocol):
    """What a stage's why-not hook may ask (:mod:`engine.lab.why` answers):
    ``record`` gives the trace-level records (``fuzzy``, ``refresh``);
    ``pool_size`` and ``fts_limit`` are the search's; ``first`` is the first pass."""

    store: Store
    conn: sql.Connection
    params: SearchParams
    pool_size: int
    fts_limit: int
    first: PassView

    def passes(self) -> tuple[PassView, ...]:
        """The passes a story may come from (no shadow re-run), the answering one first."""

    def full_ranks(self, query: str, rowid: int) -> dict[str, dict[str, object] | None]:
        """Per retriever: ``{rank, bm25, matches}`` of ``rowid`` in its uncapped
        run for ``query``, ``{"skipped": why}``, or ``None`` (no match)."""

    def result(self, rowid: int) -> FinalResult | None:
        """The answer's result for chunk ``rowid``, if returned."""

    def returned_words(self, position: int) -> str:
        """``Returned at #2 of 3 (layer rrf)`` (and the typo correction when the re-run answered)."""

    def follow(self, chunk: ChunkRef, run: PassView) -> Explanation | None:
        """The story of another chunk in ``run`` (a merge's kept row); ``None`` while following one."""


@dataclass(frozen=True, kw_only=True)
class Stage:
    """A stage without a record of its own (the ``retrieve`` group, ``final``,
    a view); :class:`RecordStage` adds the record and its hooks.

    Attributes:
        id: stable id (unprefixed).
        title: display title (``"Fusion (RRF)"``); ``short``, ``compact``:
            column headers (default the title).
        about: two lines explaining it (F1 help, ``rankscope stages``).
        scope: ``"pass"`` (runs in each pass, ids then ``fuzzy:``-prefixed in
            the re-run) or ``"trace"`` (once per search, or on demand for a view).
        kind: ``trace``, ``retriever``, ``group``, ``list``, ``answer`` or
            ``view`` (:mod:`engine.pipeline.table`).
        reasons: every exit reason code it gives, with its words.
        answers: the codes of its why-not stories about a returned chunk (``kept``).
        ends_pass_when_empty: an empty output ends the pass.
        emptied: what an empty output of it means, as the reason the rest of
            the pass did not run (``"nothing was retrieved"``); the earliest
            empty stage of a pass that ended gives it
            (:func:`engine.pipeline.table.pass_ended_by`). ``""``: never the cause.
        to_json: its keys of the JSON trace, read from a pass (pass stages) or the trace.
        explain: why-not's story of a chunk that left here (default: the exit's sentence).
        kept: why-not's story of a returned chunk, when this stage has one.
        absent: why-not's story of a chunk no retriever returned (given the
            story so far; ``None`` keeps it).
    """

    id: str
    title: str
    about: tuple[str, str]
    scope: str
    kind: str
    short: str = ""
    compact: str = ""
    reasons: Mapping[str, Reason] = field(default_factory=dict)
    answers: tuple[str, ...] = ()
    ends_pass_when_empty: bool = False
    emptied: str = ""
    to_json: Callable[[Records], dict[str, object]] | None = None
    explain: Callable[[Asking, PassView, Exit, ChunkRef], Explanation] | None = None
    kept: Callable[[Asking, PassView, ChunkRef, int], Explanation | None] | None = None
    absent: Callable[[Asking, ChunkRef, Explanation | None], Explanation | None] | None = None

    # The record hooks, typed ``object`` so the table can hold every stage:
    # a RecordStage checks the record's class and calls its typed hook.

    @property
    def has_record(self) -> bool:
        return False

    def run_step(self, ctx: PassContext, items: Items) -> object:
        raise ValueError(f"stage {self.id!r} has no step")

    def ranked_of(self, record: object) -> Items:
        raise ValueError(f"stage {self.id!r} has no ranked list")

    def headline_of(self, record: object, params: SearchParams) -> str | None:
        return None

    def exit_of(self, record: object, item: Item, position: int | None, prefix: str = "") -> Exit:
        raise AssertionError(f"stage {self.id!r} dropped row {item.rowid} but declares no exit")

    def note_of(self, record: object, position: int) -> str:
        return f"#{position}"

    def elapsed_of(self, record: object) -> float | None:
        return None

    def timed(self, record: object, ms: float) -> object:
        return record


@dataclass(frozen=True, kw_only=True)
class RecordStage(Stage, Generic[R]):
    """A stage that keeps a record of type ``R``.

    Attributes:
        record: the record's class.
        step: ``step(ctx, items) -> record`` (pass stages): ``items`` is the
            previous stage's ranked list (``()`` for the retrievers).
        ranked: the record's output list, best first.
        headline: what it did, in one line with the numbers (``None``: say nothing).
        exit: why an input item (at its 1-based input position; ``None`` for
            the first chain stage) is not in the output: ``(reason, data)``.
        note: what happened to a candidate at a 1-based output position (a journey step).
        elapsed: its time (default the record's ``elapsed_ms``).
    """

    record: type[R]
    step: Callable[[PassContext, Items], R] | None = None
    ranked: Callable[[R], Items] | None = None
    headline: Callable[[R, SearchParams], str | None] | None = None
    exit: Callable[[R, Item, int | None], tuple[str, Data]] | None = None
    note: Callable[[R, int], str] | None = None
    elapsed: Callable[[R], float | None] | None = None

    def of(self, holder: Records) -> R | None:
        """This stage's record in ``holder``, or ``None`` when it did not run.

        Raises:
            TypeError: the holder keeps another type under this id.
        """
        return self._check(holder.record(self.id))

    def get(self, holder: Records) -> R:
        """:meth:`of`, for a stage that always runs.

        Raises:
            LookupError: it did not run.
        """
        rec = self.of(holder)
        if rec is None:
            raise LookupError(f"stage {self.id!r} did not run")
        return rec

    def _check(self, record: object) -> R | None:
        if record is None or isinstance(record, self.record):
            return record
        raise TypeError(f"stage {self.id!r} keeps {self.record.__name__}, not {type(record).__name__}")

    def _typed(self, record: object) -> R:
        rec = self._check(record)
        if rec is None:
            raise LookupError(f"stage {self.id!r} has no record")
        return rec

    @property
    def has_record(self) -> bool:
        return True

    def run_step(self, ctx: PassContext, items: Items) -> object:
        if self.step is None:
            return super().run_step(ctx, items)
        return self.step(ctx, items)

    def ranked_of(self, record: object) -> Items:
        if self.ranked is None:
            return super().ranked_of(record)
        return self.ranked(self._typed(record))

    def headline_of(self, record: object, params: SearchParams) -> str | None:
        return None if self.headline is None else self.headline(self._typed(record), params)

    def exit_of(self, record: object, item: Item, position: int | None, prefix: str = "") -> Exit:
        if self.exit is None:
            return super().exit_of(record, item, position, prefix)
        reason, data = self.exit(self._typed(record), item, position)
        return Exit(prefix + self.id, reason, data)

    def note_of(self, record: object, position: int) -> str:
        return super().note_of(record, position) if self.note is None else self.note(self._typed(record), position)

    def elapsed_of(self, record: object) -> float | None:
        rec = self._typed(record)
        if self.elapsed is not None:
            return self.elapsed(rec)
        ms = getattr(rec, "elapsed_ms", None)
        return ms if isinstance(ms, float) else None

    def timed(self, record: object, ms: float) -> object:
        return replace(self._typed(record), elapsed_ms=ms)
