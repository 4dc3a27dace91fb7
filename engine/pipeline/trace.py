"""Value objects of the engine: parameters, candidates and the stage trace.

Every class is a frozen dataclass; sequences are tuples. Conventions:

* ``rank`` / ``position`` are **1-based** positions in a list.
* ``score`` is higher-is-better. ``bm25`` is SQLite's raw ``bm25(table, 5.0,
  1.0)`` value (negative, lower is better), kept as is.
* A *fusion key* is ``source + "::" + title`` (the reference merges by it).
* ``elapsed_ms`` are wall-clock milliseconds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Literal

from engine.pipeline.empty_reasons import EmptyPart, empty_sentence
from engine.pipeline.stages.fuzzy_reasons import reason_sentence
from engine.pipeline.words import filter_words
from engine.js.strings import undecodable
from engine.store.freshness import RefreshReport

ContentType = Literal["code", "prose"]
SourceMatch = Literal["like", "exact"]
Layer = Literal["rrf", "rrf-fuzzy", "none"]

#: Reference RRF constant (Cormack, Clarke & Buettcher 2009).
RRF_K = 60
#: Reference default limit of ``searchWithFallback``.
DEFAULT_LIMIT = 3
#: Upper bound we accept for ``limit`` (larger values are a typo, not a wish).
MAX_LIMIT = 10_000
#: Longest query we accept, in characters.
MAX_QUERY_CHARS = 10_000

FUSION_KEYS = ("source-title", "rowid")
RERANK_MODES = ("on", "off", "before-trim")
FUZZY_POLICIES = ("fallback", "always", "never")
RETRIEVER_SETS = ("both", "porter", "trigram")


@dataclass(frozen=True)
class Variant:
    """A pipeline configuration. The defaults are the reference behaviour.

    Attributes:
        fusion_key: ``"source-title"`` (reference: merge chunks sharing
            ``source::title``) or ``"rowid"`` (one key per chunk).
        rrf_k: RRF constant k in ``1 / (k + rank)`` (reference 60).
        fts_limit: rows fetched per retriever; ``None`` means the reference
            ``max(2 * pool_size, 10)``.
        pool_size: fusion limit without an allow-set; ``None`` = ``limit``.
        pool_size_sessions: fusion limit with an allow-set; ``None`` =
            ``max(8 * limit, 40)``.
        rerank: ``"on"`` (reference: rerank the trimmed list), ``"off"``, or
            ``"before-trim"`` (rerank the whole filtered pool, then trim).
        fuzzy: ``"fallback"`` (reference: only when the filtered fusion is
            empty), ``"always"`` (also run it as a shadow and record what it
            would return), ``"never"``.
        retrievers: ``"both"`` (reference), ``"porter"`` or ``"trigram"``.
    """

    fusion_key: str = "source-title"
    rrf_k: int = RRF_K
    fts_limit: int | None = None
    pool_size: int | None = None
    pool_size_sessions: int | None = None
    rerank: str = "on"
    fuzzy: str = "fallback"
    retrievers: str = "both"

    def __post_init__(self) -> None:
        for name, allowed in (
            ("fusion_key", FUSION_KEYS),
            ("rerank", RERANK_MODES),
            ("fuzzy", FUZZY_POLICIES),
            ("retrievers", RETRIEVER_SETS),
        ):
            value = getattr(self, name)
            if value not in allowed:
                raise ValueError(f"{name} must be one of {', '.join(allowed)}; got {value!r}")
        if isinstance(self.rrf_k, bool) or not isinstance(self.rrf_k, int) or self.rrf_k < 0:
            raise ValueError(f"rrf_k must be a non-negative integer; got {self.rrf_k!r}")
        for name in ("fts_limit", "pool_size", "pool_size_sessions"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise ValueError(f"{name} must be a non-negative integer or None; got {value!r}")

    @property
    def is_reference(self) -> bool:
        """True when every field has its reference value."""
        return self == Variant()

    def describe(self) -> str:
        """Short ``key=value`` list of the fields that differ from the reference."""
        ref = Variant()
        parts = [f"{k}={getattr(self, k)}" for k in self.__dataclass_fields__ if getattr(self, k) != getattr(ref, k)]
        return ",".join(parts) or "reference"


@dataclass(frozen=True)
class SearchParams:
    """Arguments of one search (reference ``searchWithFallback``).

    Attributes:
        query: raw user text (any Unicode; FTS5 syntax is neutralised).
        limit: results wanted (0..``MAX_LIMIT``).
        source: label filter; ``None`` or ``""`` means no filter.
        source_match: ``"like"`` (substring, ASCII case-folded by SQLite
            ``LIKE``) or ``"exact"``.
        content_type: ``"code"``, ``"prose"`` or ``None`` for both.
        sessions: the session allow-set; ``None`` = no session filter, ``()``
            = only unattributed chunks (session id ``""``) pass.
        variant: pipeline configuration (reference by default).

    Raises:
        ValueError: on a negative or huge limit, an unknown content type or
            source-match mode, a query longer than ``MAX_QUERY_CHARS``, or a
            query, source or session id holding a lone surrogate
            (undecodable input, see :func:`undecodable`).
    """

    query: str
    limit: int = DEFAULT_LIMIT
    source: str | None = None
    source_match: str = "like"
    content_type: str | None = None
    sessions: tuple[str, ...] | None = None
    variant: Variant = field(default_factory=Variant)
    #: The lowest limit accepted. A subclass may lower it: the stages cut with
    #: Python slices (``[:limit]``), which for a negative integer keep what
    #: JavaScript's ``slice(0, limit)`` keeps (all but the last ``-limit``).
    MIN_LIMIT: ClassVar[int] = 0

    def __post_init__(self) -> None:
        if not isinstance(self.query, str):
            raise ValueError(f"query must be a string; got {type(self.query).__name__}")
        if len(self.query) > MAX_QUERY_CHARS:
            raise ValueError(f"query is {len(self.query)} characters; the maximum is {MAX_QUERY_CHARS}")
        problem = undecodable(self.query)
        if problem:
            raise ValueError(f"query {problem}; is the terminal's encoding UTF-8?")
        if isinstance(self.limit, bool) or not isinstance(self.limit, int):
            raise ValueError(f"limit must be an integer; got {self.limit!r}")
        if self.limit < self.MIN_LIMIT:
            raise ValueError(
                f"limit must be 0 or more; got {self.limit} (the reference mis-handles negative limits, context-mode #1119)"
                if self.MIN_LIMIT == 0
                else f"limit must be at least {self.MIN_LIMIT}; got {self.limit}"
            )
        if self.limit > MAX_LIMIT:
            raise ValueError(f"limit must be at most {MAX_LIMIT}; got {self.limit}")
        if self.source_match not in ("like", "exact"):
            raise ValueError(f"source_match must be 'like' or 'exact'; got {self.source_match!r}")
        if self.content_type not in (None, "code", "prose"):
            raise ValueError(f"content_type must be 'code', 'prose' or None; got {self.content_type!r}")
        if self.sessions is not None and not isinstance(self.sessions, tuple):
            object.__setattr__(self, "sessions", tuple(self.sessions))
        for name, text in [("source", self.source), *(("session id", s) for s in self.sessions or ())]:
            problem = undecodable(text) if isinstance(text, str) else None
            if problem:
                raise ValueError(f"{name} {text!r} {problem}; is the terminal's encoding UTF-8?")

    @property
    def filter_text(self) -> str:
        """The SQL filters both retrievers apply, in words (``""`` when none):
        ``source LIKE '%docs%'``, ``source = 'a.md'``, ``content_type = 'code'``,
        joined by `` and `` (:func:`engine.pipeline.words.filter_words`)."""
        return filter_words(self.source, self.source_match, self.content_type)


@dataclass(frozen=True)
class Hit:
    """One row returned by a retriever.

    Attributes:
        rank: 1-based position in the retriever's run.
        rowid: FTS5 rowid (both tables share rowids).
        source: the source label.
        title: chunk title.
        content: chunk text.
        content_type: ``"code"`` or ``"prose"``.
        session_id: attribution session id (``""`` when unattributed).
        bm25: raw ``bm25(table, 5.0, 1.0)`` (negative; lower is better).
        highlighted: content with matches wrapped in ``\\x02`` ... ``\\x03``.
    """

    rank: int
    rowid: int
    source: str
    title: str
    content: str
    content_type: str
    session_id: str
    bm25: float
    highlighted: str

    @property
    def key(self) -> str:
        """Reference fusion key ``source::title``."""
        return f"{self.source}::{self.title}"

    @property
    def score(self) -> float:
        """``-bm25``: higher is better, for display."""
        return -self.bm25


@dataclass(frozen=True)
class RetrieverRun:
    """One retriever's ranked run.

    Attributes:
        name: ``"porter"`` or ``"trigram"``.
        query: the sanitised MATCH string (``""`` for a skipped trigram run).
        fts_limit: the ``LIMIT`` used.
        hits: rows in SQL order (bm25 ascending).
        skipped: why the retriever did not run, or ``None``.
        error: an SQLite error message (the run is then empty), or ``None``.
        elapsed_ms: time spent in SQL (for a cached run: in the cache lookup).
        cached: the run was served from the store's run cache (computed by
            an earlier search of the same store data version with the same
            sanitised query, row limit and filters; see :mod:`engine.store.cache`).
        ranked_by: how the rows were ranked: ``"fts5"`` (FTS5 scored every
            match) or ``"top-k"`` (:mod:`engine.pipeline.stages.topk` scored only the rows
            that could reach the limit; same rows, order and bm25 bits).
        ranking: facts of that choice, ``((name, value), ...)``: for
            ``top-k`` ``phrase_rows`` (rows each phrase matches, query
            order), ``ranked_phrases`` (0-based indexes of the phrases FTS5
            ranked), ``rows_read`` and ``texts_tokenized``; for ``fts5``
            after a declined attempt, ``declined`` (a
            :class:`engine.pipeline.stages.topk.Declined` code); else empty.
    """

    name: str
    query: str
    fts_limit: int
    hits: tuple[Hit, ...]
    skipped: str | None = None
    error: str | None = None
    elapsed_ms: float = 0.0
    cached: bool = False
    ranked_by: str = "fts5"
    ranking: tuple[tuple[str, object], ...] = ()

    def ranking_fact(self, name: str, default: object = None) -> object:
        """The value of fact ``name`` in :attr:`ranking`, or ``default``."""
        return next((v for k, v in self.ranking if k == name), default)


@dataclass(frozen=True)
class Contribution:
    """One list occurrence added into a fused score: ``1 / (rrf_k + rank)``.

    Attributes:
        retriever: ``"porter"`` or ``"trigram"``.
        rank: 1-based position in that retriever's run.
        rowid: the row at that position (may differ from the kept row).
        value: the added amount.
    """

    retriever: str
    rank: int
    rowid: int
    value: float


@dataclass(frozen=True)
class Candidate:
    """A fused candidate (one fusion key) and the row that represents it.

    Attributes:
        key: fusion key (``source::title``, or ``#rowid`` in the rowid variant).
        rowid, source, title, content, content_type, session_id, highlighted:
            the *kept* row: the first one seen (Porter run first).
        score: summed RRF score (sum of ``contributions`` in order).
        porter_rank / trigram_rank: first 1-based position of the key in each
            run, or ``None`` when absent.
        contributions: every occurrence added, Porter run first.
        merged_rowids: other chunks that carried the same key and were
            swallowed by it (key collision), in first-seen order.
    """

    key: str
    rowid: int
    source: str
    title: str
    content: str
    content_type: str
    session_id: str
    highlighted: str
    score: float
    porter_rank: int | None
    trigram_rank: int | None
    contributions: tuple[Contribution, ...]
    merged_rowids: tuple[int, ...] = ()

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
class FusionStage:
    """Reciprocal rank fusion of the two runs (Cormack, Clarke & Buettcher 2009).

    Attributes:
        rrf_k: the constant k.
        candidates: every fused key, sorted by score descending, ties in
            first-seen order (stable sort).
        elapsed_ms: time spent fusing.
    """

    rrf_k: int
    candidates: tuple[Candidate, ...]
    elapsed_ms: float = 0.0


@dataclass(frozen=True)
class PoolStage:
    """The candidate pool: the first ``pool_size`` fused candidates (the
    reference's fusion limit).

    Attributes:
        pool_size: the cut (``limit``, or ``max(8 * limit, 40)`` with a
            session allow-set, or the variant's override).
        kept: ``fused[:pool_size]``, in fused order.
        beyond: ``fused[pool_size:]``: fused but cut by the pool size.
    """

    pool_size: int
    kept: tuple[Candidate, ...]
    beyond: tuple[Candidate, ...]
    elapsed_ms: float = 0.0


@dataclass(frozen=True)
class FilterStage:
    """Session filter over the candidate pool.

    Attributes:
        allow_set: the allowed session ids, or ``None`` (no filter ran).
        kept: pool candidates whose session id is ``""`` or allowed, in order.
        removed: the others, in pool order.
        note: a caveat about the filter on this store (e.g. an older schema
            without a session column, where every chunk passes), or ``None``.
    """

    allow_set: tuple[str, ...] | None
    kept: tuple[Candidate, ...]
    removed: tuple[Candidate, ...]
    elapsed_ms: float = 0.0
    note: str | None = None


@dataclass(frozen=True)
class TrimStage:
    """Trim of the filtered list to ``limit``.

    Attributes:
        limit: the cut.
        kept: ``filtered[:limit]``.
        cut: ``filtered[limit:]``.
    """

    limit: int
    kept: tuple[Candidate, ...]
    cut: tuple[Candidate, ...]
    elapsed_ms: float = 0.0


@dataclass(frozen=True)
class RerankEntry:
    """Rerank components of one candidate.

    Attributes:
        candidate: the fused candidate.
        title_hits: terms found as substrings of the lower-cased title.
        title_boost: ``w * title_hits / len(terms)``, w = 0.6 code / 0.3 prose.
        proximity_boost: ``1 / (1 + min_span / len(content))`` (UTF-16 units).
        phrase_boost: ``0.5 * min(1, adjacent_pairs / 4)``.
        boost: ``(title_boost + proximity_boost) + phrase_boost``.
        min_span: smallest window (start of first to start of last term),
            ``None`` with fewer than two terms or a term missing.
        adjacent_pairs: ordered term pairs within 30 code units, or ``None``.
        old_position: 1-based position before the rerank.
        new_position: 1-based position after it.
    """

    candidate: Candidate
    title_hits: int
    title_boost: float
    proximity_boost: float
    phrase_boost: float
    boost: float
    min_span: int | None
    adjacent_pairs: int | None
    old_position: int
    new_position: int

    @property
    def moved(self) -> int:
        """Positions gained (positive = moved up)."""
        return self.old_position - self.new_position


@dataclass(frozen=True)
class RerankStage:
    """Proximity / title rerank.

    Attributes:
        query: the text the terms came from (corrected text in a fuzzy re-run).
        terms: rerank terms.
        entries: one per input candidate, in the **new** order.
    """

    query: str
    terms: tuple[str, ...]
    entries: tuple[RerankEntry, ...]
    elapsed_ms: float = 0.0


#: Prefix of the fuzzy re-run's stage ids (``fuzzy:trim``).
FUZZY_PREFIX = "fuzzy:"
#: The two passes a search can make: the raw query, and the typo-corrected re-run.
PASSES = ("first", "fuzzy")


@dataclass(frozen=True)
class Exit:
    """Where and why a candidate left a pass: data, never prose (sentences
    come from :func:`engine.pipeline.paths.sentence`).

    Attributes:
        stage: stage id where it left (prefixed ``fuzzy:`` in the re-run),
            e.g. ``"pool"``, ``"fuzzy:trim"``.
        reason: a code from :data:`engine.pipeline.paths.REASONS`, e.g. ``"merged"``.
        data: the numbers behind it, as ``(name, value)`` pairs in a fixed
            order (values are int, str, None or tuples of str); see
            :data:`engine.pipeline.paths.REASONS` for each code's names.
    """

    stage: str
    reason: str
    data: tuple[tuple[str, object], ...] = ()

    @property
    def details(self) -> dict[str, object]:
        """``data`` as a dict."""
        return dict(self.data)

    def get(self, name: str, default: object = None) -> object:
        """One value of ``data``."""
        for k, v in self.data:
            if k == name:
                return v
        return default

    def to_dict(self) -> dict:
        """``{"stage", "reason", **data}`` (tuples become lists): the JSON form."""
        out: dict = {"stage": self.stage, "reason": self.reason}
        for k, v in self.data:
            out[k] = list(v) if isinstance(v, tuple) else v
        return out


@dataclass(frozen=True)
class CandidatePath:
    """One chunk's path through one pass.

    Every chunk a retriever returned in the pass has one. Positions are
    **1-based** places in each stage's ranked list
    (:func:`engine.pipeline.table.ranked`), matched by row id; ``None`` where the
    chunk was absent. The retriever stages (``porter``, ``trigram``) are
    parallel entries: a chunk may be absent from one of them without leaving.
    From fusion on, the stages are a chain: the chunk holds a position at
    each one until ``exit.stage``, and ``None`` from there on.

    Attributes:
        rowid: the chunk's FTS5 row id.
        source, title: the chunk's source label and title.
        key: its fusion key in this pass (``source::title``, or ``#rowid``
            in the rowid variant); a merged row carries the key it was
            merged into.
        steps: ``(stage id, position or None)`` for every stage that ran in
            the pass, in execution order, ending with the pass's ``final``
            (``fuzzy:final`` in the re-run).
        exit: where it left the pass, or ``None`` when it is in the pass's
            final list.
    """

    rowid: int
    source: str
    title: str
    key: str
    steps: tuple[tuple[str, int | None], ...]
    exit: Exit | None

    @property
    def positions(self) -> dict[str, int | None]:
        """``steps`` as a dict ``{stage id: position or None}`` (execution order)."""
        return dict(self.steps)

    def position(self, stage: str) -> int | None:
        """The 1-based position at ``stage`` (a full id, e.g. ``fuzzy:pool``),
        ``None`` when absent or the stage did not run."""
        for sid, pos in self.steps:
            if sid == stage:
                return pos
        return None


@dataclass(frozen=True)
class Run:
    """One pass of the pass stages (retrieve, fuse, pool, filter, trim,
    rerank; see :data:`engine.pipeline.table.STAGES`).

    Attributes:
        query: the text searched (the raw query, or the corrected one).
        records: ``(stage id, record)`` for every stage that ran, in
            execution order; ids are unprefixed (``"trim"``, also in the
            fuzzy re-run). Records are :class:`RetrieverRun`,
            :class:`FusionStage`, :class:`PoolStage`, :class:`FilterStage`,
            :class:`TrimStage`, :class:`RerankStage`, or a new stage's own type.
        results: this pass's answer in order (empty when nothing survived).
        pass_name: ``"first"`` (raw query) or ``"fuzzy"`` (the re-run).
        paths: one :class:`CandidatePath` per chunk a retriever returned
            (computed once by :func:`engine.pipeline.paths.run_paths`), deepest first.
    """

    query: str
    records: tuple[tuple[str, object], ...]
    results: tuple[Candidate, ...]
    pass_name: str = "first"
    paths: tuple[CandidatePath, ...] = field(default=(), repr=False)

    @property
    def prefix(self) -> str:
        """``""`` for the first pass, ``"fuzzy:"`` for the re-run."""
        return FUZZY_PREFIX if self.pass_name == "fuzzy" else ""

    @property
    def order(self) -> tuple[str, ...]:
        """Unprefixed ids of the stages that ran, in execution order."""
        return tuple(sid for sid, _ in self.records)

    def record(self, stage: str) -> object | None:
        """The record of ``stage`` (``"trim"`` or ``"fuzzy:trim"``), or
        ``None`` when it did not run in this pass."""
        base = stage[len(FUZZY_PREFIX) :] if stage.startswith(FUZZY_PREFIX) else stage
        for sid, rec in self.records:
            if sid == base:
                return rec
        return None

    def path(self, rowid: int) -> CandidatePath | None:
        """The path of chunk ``rowid``, or ``None`` if no retriever returned it."""
        for p in self.paths:
            if p.rowid == rowid:
                return p
        return None

    @property
    def porter(self) -> RetrieverRun:
        """The Porter retriever's run."""
        return self.record("porter")  # type: ignore[return-value]

    @property
    def trigram(self) -> RetrieverRun:
        """The trigram retriever's run."""
        return self.record("trigram")  # type: ignore[return-value]

    @property
    def fusion(self) -> FusionStage:
        """RRF over both runs."""
        return self.record("fusion")  # type: ignore[return-value]

    @property
    def pool(self) -> PoolStage:
        """The candidate pool (first ``pool_size`` fused candidates)."""
        return self.record("pool")  # type: ignore[return-value]

    @property
    def filter(self) -> FilterStage:
        """The session filter over the pool."""
        return self.record("filter")  # type: ignore[return-value]

    @property
    def trim(self) -> TrimStage | None:
        """The trim of the filtered list; ``None`` when nothing survived the
        filter (the pass then hands over to fuzzy)."""
        return self.record("trim")  # type: ignore[return-value]

    @property
    def rerank(self) -> RerankStage | None:
        """The rerank, or ``None`` when it did not run."""
        return self.record("rerank")  # type: ignore[return-value]


@dataclass(frozen=True)
class Correction:
    """Fuzzy correction of one word.

    Attributes:
        word: the lower-cased query word.
        corrected: the replacement, or ``None`` when kept (exact vocabulary
            hit, or nothing within ``max_distance``).
        max_distance: allowed Levenshtein distance (1 / 2 / 3 by UTF-16 length).
        candidates_within: vocabulary words within the allowance (the word
            itself included).
        distance: edit distance of the chosen correction, else ``None``.
        exact: the word itself is in the vocabulary.
        candidates_scanned: vocabulary rows read (length window).
        cached: served from the store's correction cache (the reference
            caches corrections too; see :mod:`engine.store.cache`).
    """

    word: str
    corrected: str | None
    max_distance: int
    candidates_within: int
    distance: int | None = None
    exact: bool = False
    candidates_scanned: int = 0
    cached: bool = False


@dataclass(frozen=True)
class FuzzyStage:
    """The typo fallback. Why it ran (or not) is data: codes from
    :data:`engine.pipeline.stages.fuzzy_reasons.FUZZY_CODES` / :data:`engine.pipeline.stages.fuzzy_reasons.FUZZY_TRIGGERS`
    and the numbers behind them; :attr:`reason` puts them in words.

    Attributes:
        ran: whether corrections were computed.
        code: when skipped, why (``policy-never``, ``first-pass-found``,
            ``no-vocabulary``); when it ran, the outcome (``no-word``,
            ``no-correction``, ``corrected``).
        trigger: when it ran, why (``shadow``, ``fusion-empty``,
            ``pool-empty``, ``all-removed``); else ``None``.
        words: the words tried.
        corrections: one per word.
        corrected_query: the corrected words joined by spaces, or ``None``.
        rerun: the second pass with the corrected query, or ``None`` (not
            needed: nothing changed).
        shadow: ``True`` when it ran only as a what-if (fuzzy policy
            ``always`` with a non-empty first pass): its rerun is not the answer.
        first_pass_results: candidates that survived the first pass's
            session filter (the numbers behind ``first-pass-found`` and
            ``shadow``).
        pool_size: the first pass's pool size (behind ``pool-empty``).
    """

    ran: bool
    code: str
    trigger: str | None = None
    words: tuple[str, ...] = ()
    corrections: tuple[Correction, ...] = ()
    corrected_query: str | None = None
    rerun: Run | None = None
    shadow: bool = False
    elapsed_ms: float = 0.0
    first_pass_results: int = 0
    pool_size: int = 0

    @property
    def reason(self) -> str:
        """Why it ran or was skipped, in words (:func:`engine.pipeline.stages.fuzzy_reasons.reason_sentence`)."""
        return reason_sentence(self)


@dataclass(frozen=True)
class FinalResult:
    """One answer.

    Attributes:
        position: 1-based position in the final list.
        candidate: the fused candidate shown.
        layer: ``"rrf"`` or ``"rrf-fuzzy"``.
        boost: the rerank boost (``None`` when the rerank did not run).
    """

    position: int
    candidate: Candidate
    layer: str
    boost: float | None

    @property
    def rank(self) -> float:
        """Reference ``rank``: minus the fused score (not the boost)."""
        return -self.candidate.score


@dataclass(frozen=True)
class Trace:
    """Everything one search did, stage by stage, in pipeline order.

    Attributes:
        params: the search parameters (with the variant).
        pool_size: fusion limit (``limit`` or ``max(8 * limit, 40)``).
        fts_limit: rows fetched per retriever.
        refresh: the stale-source check.
        first: the first pass (raw query).
        fuzzy: the fallback stage.
        layer: ``"rrf"``, ``"rrf-fuzzy"`` or ``"none"``.
        final: the answer.
        empty: when ``final`` is empty, why, as data: the parts of
            :mod:`engine.pipeline.empty_reasons` (codes and facts), in order; ``()``
            when there are results. :attr:`empty_reason` words them.
        timings_ms: stage name → elapsed milliseconds, in pipeline order.
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

    @property
    def empty_reason(self) -> str | None:
        """When ``final`` is empty, why, in words (the parts of :attr:`empty`
        worded by :func:`engine.pipeline.empty_reasons.empty_sentence`, joined by
        ``"; "``); ``None`` when there are results."""
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
    def total_ms(self) -> float:
        """Sum of the stage timings."""
        return sum(ms for _, ms in self.timings_ms)
