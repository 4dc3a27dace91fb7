"""What the journey pane is showing: one chunk picked from a stage.

A :class:`Subject` is built from a fused :class:`~engine.pipeline.trace.Candidate`
(followed by its fusion key) or from a retriever :class:`~engine.pipeline.trace.Hit`
(followed by its row, so a row swallowed by a key collision shows where it
was merged). No Textual here.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.lab.journey import JourneyStep, journey
from engine.pipeline.marks import Highlight, text_of
from engine.pipeline.trace import Candidate, FusionStage, Hit, RetrieverRun, Run, Trace


@dataclass(frozen=True)
class Subject:
    """A chunk selected somewhere in the browser.

    Attributes:
        key: its fusion key (``source::title``).
        rowid: the chunk row; follow the row (not just the key) in the
            journey when ``by_row`` is true.
        by_row: true for a retriever row, false for a fused candidate.
        title, source, content_type, session_id, content: the chunk.
        marked: the content with FTS5 ``\\x02``/``\\x03`` match markers, or
            what computes it when the preview shows it (read :attr:`highlighted`).
        origin: where it was picked (a stage title from
            :data:`engine.pipeline.table.STAGES`), for the pane header.
    """

    key: str
    rowid: int
    by_row: bool
    title: str
    source: str
    content_type: str
    session_id: str
    content: str
    marked: str | Highlight
    origin: str

    @property
    def highlighted(self) -> str:
        """The content with FTS5 ``\\x02``/``\\x03`` match markers."""
        return text_of(self.marked)

    @classmethod
    def from_candidate(cls, c: Candidate, origin: str) -> "Subject":
        """Follow a fused candidate by its key."""
        return cls(c.key, c.rowid, False, c.title, c.source, c.content_type, c.session_id, c.content, c.marked, origin)

    @classmethod
    def from_hit(cls, h: Hit, origin: str) -> "Subject":
        """Follow one retriever row."""
        return cls(h.key, h.rowid, True, h.title, h.source, h.content_type, h.session_id, h.content, h.marked, origin)

    def journey(self, trace: Trace) -> list[JourneyStep]:
        """Its position at every stage of ``trace`` (see :func:`engine.lab.journey.journey`)."""
        return journey(trace, self.key, self.rowid if self.by_row else None)


def row_subject(run: Run, rowid: int, origin: str) -> Subject | None:
    """Chunk ``rowid`` of one pass as a :class:`Subject`: its fused
    candidate (followed by its key) when it is one, else its retriever row
    (followed by the row: a row merged into another one's key); ``None``
    when no retriever of the pass returned it."""
    fusion = run.record("fusion")
    if isinstance(fusion, FusionStage):
        for c in fusion.candidates:
            if c.rowid == rowid:
                return Subject.from_candidate(c, origin)
    for retriever in ("porter", "trigram"):
        rec = run.record(retriever)
        if isinstance(rec, RetrieverRun):
            for h in rec.hits:
                if h.rowid == rowid:
                    return Subject.from_hit(h, origin)
    return None


def exit_step(steps: list[JourneyStep]) -> JourneyStep | None:
    """The step where the chunk left the pipeline, or ``None`` if it reached
    the answer. A row merged into another never reaches the answer itself,
    so its merge is where it left; otherwise the first step carrying an exit
    (the path's :class:`~engine.pipeline.trace.Exit`), or the final step when the
    answer does not hold it."""
    merged = next((s for s in steps if s.exit is not None and s.exit.reason == "merged"), None)
    if merged is not None:
        return merged
    if steps and steps[-1].position is not None:
        return None
    left = next((s for s in steps if s.exit is not None), None)
    if left is not None:
        return left
    return steps[-1] if steps else None
