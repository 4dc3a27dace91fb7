"""What flows between the stages: retriever rows, fused candidates, their
paths and exits, the answer's results, and a chunk named by the user.

Frozen dataclasses; sequences are tuples. ``rank`` / ``position`` are
**1-based**; ``score`` is higher-is-better; ``bm25`` is SQLite's raw
``bm25(table, 5.0, 1.0)`` (negative, lower is better). A *fusion key* is
``source + "::" + title``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from engine.pipeline.marks import Highlight, text_of

#: Prefix of the fuzzy re-run's stage ids (``fuzzy:trim``).
FUZZY_PREFIX = "fuzzy:"
#: An exit's or a story's numbers: ``(name, value)`` pairs in a fixed order.
Data = tuple[tuple[str, object], ...]


@dataclass(frozen=True)
class Hit:
    """One row a retriever returned.

    Attributes:
        rank: 1-based position in the retriever's run.
        rowid: FTS5 rowid (both tables share rowids).
        source, title, content, content_type: the chunk.
        session_id: attribution session id (``""`` when unattributed).
        bm25: raw ``bm25(table, 5.0, 1.0)``.
        marked: FTS5's ``highlight(table, 1, char(2), char(3))`` of the
            content, or a :class:`engine.pipeline.marks.Highlight` that
            computes it when first asked (a long content, or a top-k row):
            read it as :attr:`highlighted`.
    """

    rank: int
    rowid: int
    source: str
    title: str
    content: str
    content_type: str
    session_id: str
    bm25: float
    marked: str | Highlight

    @property
    def highlighted(self) -> str:
        """The content with matches wrapped in ``\\x02`` ... ``\\x03``."""
        return text_of(self.marked)

    @property
    def key(self) -> str:
        """Reference fusion key ``source::title``."""
        return f"{self.source}::{self.title}"

    @property
    def score(self) -> float:
        """``-bm25``: higher is better, for display."""
        return -self.bm25


@dataclass(frozen=True)
class Contribution:
    """One list occurrence added into a fused score: ``value = 1 / (rrf_k + rank)``
    for the row ``rowid`` at 1-based ``rank`` of ``retriever``'s run."""

    retriever: str
    rank: int
    rowid: int
    value: float


@dataclass(frozen=True)
class Candidate:
    """A fused candidate (one fusion key) and the row that represents it.

    Attributes:
        key: fusion key (``source::title``, or ``#rowid`` in the rowid variant).
        rowid, source, title, content, content_type, session_id, marked:
            the *kept* row: the first one seen (Porter run first);
            ``marked`` as :attr:`Hit.marked` (read :attr:`highlighted`).
        score: summed RRF score (sum of ``contributions`` in order).
        porter_rank / trigram_rank: first 1-based position of the key in each run, or ``None``.
        contributions: every occurrence added, Porter run first.
        merged_rowids: other chunks with the same key, swallowed by it, in first-seen order.
    """

    key: str
    rowid: int
    source: str
    title: str
    content: str
    content_type: str
    session_id: str
    marked: str | Highlight
    score: float
    porter_rank: int | None
    trigram_rank: int | None
    contributions: tuple[Contribution, ...]
    merged_rowids: tuple[int, ...] = ()

    @property
    def highlighted(self) -> str:
        """The content with matches wrapped in ``\\x02`` ... ``\\x03``."""
        return text_of(self.marked)

    @property
    def key_collision(self) -> bool:
        """True when the key occurred more than once in one run (parity field)."""
        seen: set[str] = set()
        for c in self.contributions:
            if c.retriever in seen:
                return True
            seen.add(c.retriever)
        return False

    @property
    def merged(self) -> bool:
        """True when another chunk's row was merged into this key."""
        return bool(self.merged_rowids)

    @property
    def rank(self) -> float:
        """The reference's ``rank`` field: minus the fused score."""
        return -self.score


@dataclass(frozen=True)
class Exit:
    """Where and why a candidate left a pass: data, never prose
    (:func:`engine.pipeline.paths.sentence` words it).

    Attributes:
        stage: stage id where it left (prefixed ``fuzzy:`` in the re-run).
        reason: a code of :data:`engine.pipeline.paths.REASONS`.
        data: the numbers behind it (values int, str, None or tuples of str),
            named as the stage declares for the code.
    """

    stage: str
    reason: str
    data: Data = ()

    @property
    def details(self) -> dict[str, object]:
        """``data`` as a dict."""
        return dict(self.data)

    def get(self, name: str, default: object = None) -> object:
        """One value of ``data``."""
        return next((v for k, v in self.data if k == name), default)

    def to_dict(self) -> dict[str, object]:
        """``{"stage", "reason", **data}`` (tuples become lists): the JSON form."""
        out: dict[str, object] = {"stage": self.stage, "reason": self.reason}
        for k, v in self.data:
            out[k] = list(v) if isinstance(v, tuple) else v
        return out


@dataclass(frozen=True)
class CandidatePath:
    """One chunk's path through one pass (:func:`engine.pipeline.paths.run_paths`).

    Attributes:
        rowid, source, title: the chunk.
        key: its fusion key in this pass (a merged row: the key it was merged into).
        steps: ``(stage id, 1-based position or None)`` for every stage that
            ran, in execution order, ending with the pass's ``final``.
        exit: where it left the pass, or ``None`` when it is in the pass's final list.
    """

    rowid: int
    source: str
    title: str
    key: str
    steps: tuple[tuple[str, int | None], ...]
    exit: Exit | None

    @property
    def positions(self) -> dict[str, int | None]:
        """``steps`` as a dict (execution order)."""
        return dict(self.steps)

    def position(self, stage: str) -> int | None:
        """The 1-based position at ``stage`` (a full id), ``None`` when absent or not run."""
        return next((pos for sid, pos in self.steps if sid == stage), None)


@dataclass(frozen=True)
class FinalResult:
    """One answer: its 1-based ``position``, the fused ``candidate``, the
    ``layer`` (``rrf`` or ``rrf-fuzzy``) and the rerank ``boost`` (``None``
    when the rerank did not run)."""

    position: int
    candidate: Candidate
    layer: str
    boost: float | None

    @property
    def rank(self) -> float:
        """Reference ``rank``: minus the fused score (not the boost)."""
        return -self.candidate.score


@dataclass(frozen=True)
class ChunkRef:
    """A chunk named by the user (why-not, a pin, a counterfactual).

    Attributes:
        rowid: FTS5 row id (shared by both tables).
        source, title, content_type, session_id (``""`` = unattributed), content: the chunk.
    """

    rowid: int
    source: str
    title: str
    content_type: str
    session_id: str
    content: str = field(default="", repr=False)

    @property
    def key(self) -> str:
        """Reference fusion key ``source::title``."""
        return f"{self.source}::{self.title}"

    @classmethod
    def from_candidate(cls, c: Candidate) -> ChunkRef:
        """The kept row of a fused candidate."""
        return cls(c.rowid, c.source, c.title, c.content_type, c.session_id, c.content)
