"""The arguments of one search (reference ``searchWithFallback``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from engine.js.strings import undecodable
from engine.pipeline.variants import Variant
from engine.pipeline.words import filter_words

#: Reference default limit of ``searchWithFallback``.
DEFAULT_LIMIT = 3
#: Upper bound we accept for ``limit`` (larger values are a typo, not a wish).
MAX_LIMIT = 10_000
#: Longest query we accept, in characters.
MAX_QUERY_CHARS = 10_000


@dataclass(frozen=True)
class SearchParams:
    """One search.

    Attributes:
        query: raw user text (any Unicode; FTS5 syntax is neutralised).
        limit: results wanted (0..``MAX_LIMIT``).
        source: label filter; ``None`` or ``""`` means no filter.
        source_match: ``"like"`` (substring, ASCII case-folded by SQLite ``LIKE``) or ``"exact"``.
        content_type: ``"code"``, ``"prose"`` or ``None`` for both.
        sessions: the session allow-set; ``None`` = no session filter, ``()``
            = only unattributed chunks (session id ``""``) pass.
        variant: pipeline configuration (reference by default).

    Raises:
        ValueError: a negative or huge limit, an unknown content type or
            source-match mode, a query longer than ``MAX_QUERY_CHARS``, or a
            query, source or session id holding a lone surrogate (:func:`undecodable`).
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
        """The SQL filters both retrievers apply, in words (``""`` when none;
        :func:`engine.pipeline.words.filter_words`)."""
        return filter_words(self.source, self.source_match, self.content_type)
