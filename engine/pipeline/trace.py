"""A search's record: every stage, in pipeline order (:class:`Trace`).

``elapsed_ms`` values are wall-clock milliseconds; positions are 1-based.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.pipeline.candidates import FinalResult
from engine.pipeline.empty_reasons import EmptyPart, empty_sentence
from engine.pipeline.params import SearchParams
from engine.pipeline.passes import Run
from engine.pipeline.stages.fuzzy import FuzzyStage
from engine.store.freshness import RefreshReport


@dataclass(frozen=True)
class Trace:
    """Everything one search did.

    Attributes:
        params: the search parameters (with the variant).
        pool_size: fusion limit (``limit`` or ``max(8 * limit, 40)``).
        fts_limit: rows fetched per retriever.
        refresh: the stale-source check.
        first: the first pass (raw query).
        fuzzy: the fallback stage (its ``rerun``: the second pass).
        layer: ``"rrf"``, ``"rrf-fuzzy"`` or ``"none"``.
        final: the answer.
        empty: when ``final`` is empty, why (:mod:`engine.pipeline.empty_reasons`), else ``()``.
        timings_ms: stage id → elapsed milliseconds, in execution order.
    """

    params: SearchParams
    pool_size: int
    fts_limit: int
    refresh: RefreshReport
    first: Run
    fuzzy: FuzzyStage
    layer: str
    final: tuple[FinalResult, ...]
    empty: tuple[EmptyPart, ...]
    timings_ms: tuple[tuple[str, float], ...]

    def record(self, stage: str) -> object | None:
        """The record of a trace-level stage (``refresh``, ``fuzzy``), else ``None``."""
        return self.refresh if stage == "refresh" else self.fuzzy if stage == "fuzzy" else None

    @property
    def empty_reason(self) -> str | None:
        """:attr:`empty` in words (``"; "``-joined); ``None`` when there are results."""
        return empty_sentence(self.empty, self.fuzzy)

    @property
    def answering_run(self) -> Run | None:
        """The pass whose results are the answer (``None`` for layer none)."""
        if self.layer == "rrf":
            return self.first
        if self.layer == "rrf-fuzzy":
            return self.fuzzy.rerun
        return None

    @property
    def runs(self) -> tuple[Run, ...]:
        """The first pass, then the fuzzy re-run when there is one."""
        return (self.first,) if self.fuzzy.rerun is None else (self.first, self.fuzzy.rerun)

    @property
    def total_ms(self) -> float:
        """Sum of the stage timings."""
        return sum(ms for _, ms in self.timings_ms)
