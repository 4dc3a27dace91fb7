"""What the journey pane is showing: one chunk picked from a stage.

A :class:`Subject` is built from a fused :class:`~engine.pipeline.candidates.Candidate`
(followed by its fusion key) or from a retriever :class:`~engine.pipeline.candidates.Hit`
(followed by its row, so a row swallowed by a key collision shows where it
was merged). No Textual here.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.lab.journey import JourneyStep, journey
from engine.pipeline.marks import Highlight, text_of
from engine.pipeline.paths import Fate, fate
from engine.pipeline.stages.retrieve import unretrieved
from engine.pipeline.candidates import Candidate, Hit
from engine.pipeline.stages.fusion import FusionStage
from engine.pipeline.stages.retrieve import RetrieverRun
from engine.pipeline.passes import Run
from engine.pipeline.trace import Trace


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

    def fate(self, trace: Trace) -> Fate:
        """Where it went (:func:`engine.pipeline.paths.fate`); a fused candidate,
        followed by its key, is in the answer when its key is."""
        if not self.by_row:
            hit = next((r for r in trace.final if r.candidate.key == self.key), None)
            if hit is not None:
                return Fate(hit.candidate.rowid, hit.position, None, "fuzzy" if trace.layer == "rrf-fuzzy" else "first")
        return fate(trace, self.rowid) or Fate(self.rowid, None, unretrieved(), "first")


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
