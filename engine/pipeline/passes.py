"""One pass of the pass stages: their records in execution order, the
pass's answer and every candidate's path (:class:`Run`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

from engine.pipeline.candidates import FUZZY_PREFIX, Candidate, CandidatePath
from engine.pipeline.stages.fusion import STAGE as FUSION
from engine.pipeline.stages.fusion import FusionStage
from engine.pipeline.stages.pool import STAGE as POOL
from engine.pipeline.stages.pool import PoolStage
from engine.pipeline.stages.rerank import STAGE as RERANK
from engine.pipeline.stages.rerank import RerankStage
from engine.pipeline.stages.retrieve import PORTER, TRIGRAM, RetrieverRun
from engine.pipeline.stages.session_filter import STAGE as FILTER
from engine.pipeline.stages.session_filter import FilterStage
from engine.pipeline.stages.trim import STAGE as TRIM
from engine.pipeline.stages.trim import TrimStage


@dataclass(frozen=True)
class Run:
    """One pass (:data:`engine.pipeline.table.STAGES`, scope ``pass``).

    Attributes:
        query: the text searched (the raw query, or the corrected one).
        records: ``(stage id, record)`` for every stage that ran, in execution
            order; ids are unprefixed, also in the fuzzy re-run.
        results: this pass's answer in order (empty when nothing survived).
        pass_name: ``"first"`` (raw query) or ``"fuzzy"`` (the re-run).
        path_finder: what computes :attr:`paths` from the run
            (:func:`engine.pipeline.paths.run_paths`), or ``None`` for a run
            whose paths stay empty.
    """

    query: str
    records: tuple[tuple[str, object], ...]
    results: tuple[Candidate, ...]
    pass_name: str = "first"
    path_finder: Callable[[Run], tuple[CandidatePath, ...]] | None = field(default=None, repr=False, compare=False)

    @cached_property
    def paths(self) -> tuple[CandidatePath, ...]:
        """One :class:`CandidatePath` per chunk a retriever returned, deepest
        first; computed on first use (a search that nobody inspects never
        builds them), the same every time."""
        return () if self.path_finder is None else self.path_finder(self)

    @property
    def prefix(self) -> str:
        """``""`` for the first pass, ``"fuzzy:"`` for the re-run."""
        return FUZZY_PREFIX if self.pass_name == "fuzzy" else ""

    @property
    def order(self) -> tuple[str, ...]:
        """Unprefixed ids of the stages that ran, in execution order."""
        return tuple(sid for sid, _ in self.records)

    def record(self, stage: str) -> object | None:
        """The record of ``stage`` (``"trim"`` or ``"fuzzy:trim"``), ``None`` when it did not run."""
        base = stage[len(FUZZY_PREFIX) :] if stage.startswith(FUZZY_PREFIX) else stage
        return next((rec for sid, rec in self.records if sid == base), None)

    def path(self, rowid: int) -> CandidatePath | None:
        """The path of chunk ``rowid``, or ``None`` if no retriever returned it."""
        return next((p for p in self.paths if p.rowid == rowid), None)

    # The reference stages' records (another stage's: ``module.STAGE.of(run)``).

    @property
    def porter(self) -> RetrieverRun:
        return PORTER.get(self)

    @property
    def trigram(self) -> RetrieverRun:
        return TRIGRAM.get(self)

    @property
    def fusion(self) -> FusionStage:
        return FUSION.get(self)

    @property
    def pool(self) -> PoolStage:
        return POOL.get(self)

    @property
    def filter(self) -> FilterStage:
        return FILTER.get(self)

    @property
    def trim(self) -> TrimStage | None:
        """``None`` when nothing survived the filter (the pass then ends)."""
        return TRIM.of(self)

    @property
    def rerank(self) -> RerankStage | None:
        """``None`` when it did not run."""
        return RERANK.of(self)
