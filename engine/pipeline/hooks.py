"""What a pass stage module implements, and what the pipeline gives it.

A *pass stage* (porter, trigram, fusion, pool, filter, trim, rerank) runs in
the first pass and again in the fuzzy re-run. Its module exports one
:class:`StageHooks` value named ``HOOKS``; the table in
:mod:`engine.pipeline.table` points at it. The pipeline (:mod:`engine.pipeline.run`)
calls ``step``; the paths (:mod:`engine.pipeline.paths`), the stage summaries
(:mod:`engine.lab.journey`), the JSON export and the front-ends call the rest.
No stage module imports :mod:`engine.pipeline.table` (the table imports them).

Conventions: positions are **1-based**; a record is the stage's frozen
dataclass (e.g. :class:`~engine.pipeline.trace.PoolStage`) and must have an
``elapsed_ms`` field (the pipeline sets it to the step's wall-clock
milliseconds with :func:`dataclasses.replace`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Mapping

from engine.store import sql
from engine.pipeline.trace import Candidate, Exit, Hit, RetrieverRun, SearchParams

if TYPE_CHECKING:
    from engine.store.store import Store

#: A ranked item: a retriever row (``Hit``) before fusion, a fused ``Candidate`` from fusion on.
Item = Hit | Candidate


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
        records: the records of the stages that already ran in this pass,
            by unprefixed id.
        retrievers: the retriever runs of this pass so far, in table order.
        runs: a :class:`~engine.pipeline.runcache.RunCache` the retriever stages take
            their runs from (``None``: run the SQL every time).
        prefetched: retriever runs already made for this pass, by id
            (:func:`engine.pipeline.stages.retrieve.retrieve_pair` runs both at once).
    """

    conn: sql.Connection
    store: "Store"
    params: SearchParams
    query: str
    pool_size: int
    fts_limit: int
    records: Mapping[str, Any] = field(default_factory=dict)
    retrievers: tuple[RetrieverRun, ...] = ()
    runs: Any = None
    prefetched: Mapping[str, RetrieverRun] = field(default_factory=dict)


#: ``sentence(exit) -> str``: one code's exit put in words (a short phrase,
#: e.g. ``"beyond the pool (fused #7, pool 3)"``).
Sentence = Callable[[Exit], str]


@dataclass(frozen=True)
class StageHooks:
    """A pass stage's behaviour.

    Attributes:
        step: ``step(ctx, items) -> record``: run the stage; ``items`` is the
            previous stage's ranked output (``()`` for the retrievers, which
            read ``ctx``; fusion reads ``ctx.retrievers``).
        ranked: ``ranked(record) -> tuple[Item, ...]``: the stage's output
            list, best first (what the next stage receives).
        headline: ``headline(record, params) -> str``: what the stage did,
            in one line with the numbers.
        exit: ``exit(record, item, position) -> (reason, data)``: why an
            input ``item`` (at 1-based ``position`` in the input; ``None``
            for the first chain stage, whose input is the retrievers' lists)
            is not in the output; ``data`` is a tuple of ``(name, value)`` pairs.
            ``None`` for a stage that never drops anything.
        sentences: every reason code the stage can give, with the function
            putting it in words (the closed set of :data:`engine.pipeline.paths.REASONS`
            is the union over the table).
        data_names: for each code, the names in its ``data`` (documentation
            of the JSON trace's exit objects).
    """

    step: Callable[[PassContext, tuple], Any]
    ranked: Callable[[Any], tuple]
    headline: Callable[[Any, SearchParams], str]
    exit: Callable[[Any, Any, int | None], tuple[str, tuple[tuple[str, object], ...]]] | None = None
    sentences: Mapping[str, Sentence] = field(default_factory=dict)
    data_names: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
