"""Why a search returned nothing, as data and in words.

``Trace.empty`` is a tuple of :class:`EmptyPart` (a code and the facts
behind it), empty when there are results: :func:`empty_parts` decides them,
:func:`empty_sentence` words them (``Trace.empty_reason``: their sentences
joined by ``"; "``); nothing parses a sentence back.

Parts come in this order: at most one part about the first pass
(``empty-query``, ``fts-limit-0``, ``retriever-error``, ``no-match``,
``pool-empty``, ``filter-removed-all`` or ``limit-0``), after
``filter-removed-all`` the session parts (``unknown-sessions``, then
``sessions-not-pooled``), then the part about the typo fallback
(``fuzzy``, or ``limit-0`` when its re-run kept candidates). ``empty-query``
and ``unexplained`` stand alone, and so does ``limit-0`` when the answering
pass kept candidates and the trim to ``limit`` 0 dropped them.

========================= ============================================= =========================================
code                      facts                                         meaning
========================= ============================================= =========================================
``empty-query``           (none)                                        the query is blank: nothing was searched
``fts-limit-0``           (none)                                        the retrievers fetch 0 rows (variant
                                                                        ``fts_limit`` 0)
``retriever-error``       ``retriever`` (``porter`` or ``trigram``),    fusion got nothing and this retriever's
                          ``error`` (SQLite's message)                  query failed (the first that failed)
``no-match``              ``retrievers`` (the retriever ids searched,   no retriever matched; the other facts
                          in stage order), ``variant_retrievers``       are the SQL filters both retrievers
                          (``both``, ``porter`` or ``trigram``),        applied (``None``: no such filter)
                          ``source``, ``source_match``,
                          ``content_type``
``pool-empty``            ``pool_size``                                 fusion found candidates; the pool of
                                                                        ``pool_size`` kept none
``filter-removed-all``    ``removed`` (how many)                        the session filter removed every pooled
                                                                        candidate
``unknown-sessions``      ``sessions`` (allowed ids no chunk in the     allowed session ids the store does not
                          store has), ``store_sessions`` (the store's   have at all
                          non-empty session ids, sorted, at most 8),
                          ``store_session_count`` (how many in all)
``sessions-not-pooled``   ``sessions`` (allowed ids the store has but   allowed session ids no pooled candidate
                          no pooled candidate had)                      had
``limit-0``               ``layer`` (``none``, ``rrf`` or               ``limit`` is 0; with layer ``rrf`` or
                          ``rrf-fuzzy``)                                ``rrf-fuzzy`` a pass kept candidates and
                                                                        the trim to 0 kept none
``fuzzy``                 ``fuzzy_code`` (the fuzzy stage's own code);  what the typo fallback did (worded by
                          after a correction also ``corrected_query``   :func:`engine.pipeline.stages.fuzzy.empty_words`)
``unexplained``           (none)                                        no other part applies (not expected;
                                                                        worded "no results")
========================= ============================================= =========================================

Session ids are names (strings); counts and sizes are ints; tuples are in
the order the sentence lists them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Union

from engine.pipeline.params import SearchParams
from engine.pipeline.passes import Run
from engine.pipeline.stages.fuzzy import FuzzyStage, empty_words
from engine.pipeline.stages.retrieve import RETRIEVERS, runs_retriever
from engine.pipeline.stages.session_filter import unknown_sessions
from engine.pipeline.words import filter_words

#: A fact's value: a count or size, a name, a flag, a list of names, or none.
Fact = Union[int, str, bool, None, tuple[str, ...]]


@dataclass(frozen=True)
class EmptyPart:
    """One reason a search returned nothing: a code of :data:`EMPTY_CODES`
    and its facts (see the module docstring for each code's facts).

    Attributes:
        code: the reason's code.
        facts: ``(name, value)`` pairs, in the table's order.

    Raises:
        ValueError: for a code not in :data:`EMPTY_CODES`.
    """

    code: str
    facts: tuple[tuple[str, Fact], ...] = ()

    def __post_init__(self) -> None:
        if self.code not in EMPTY_CODES:
            raise ValueError(f"unknown empty-result code {self.code!r}; known: {', '.join(EMPTY_CODES)}")

    @classmethod
    def of(cls, code: str, **facts: Fact) -> EmptyPart:
        """``EmptyPart.of("pool-empty", pool_size=0)``."""
        return cls(code, tuple(facts.items()))

    @property
    def data(self) -> dict[str, Fact]:
        """The facts as a dict (name → value)."""
        return dict(self.facts)

    def fact(self, name: str) -> Fact:
        """The value of fact ``name``.

        Raises:
            KeyError: the part has no such fact.
        """
        for key, value in self.facts:
            if key == name:
                return value
        raise KeyError(f"{self.code} has no fact {name!r}")

    def text(self, name: str) -> str:
        """Fact ``name`` as text (``""`` for ``None``)."""
        value = self.fact(name)
        return "" if value is None else str(value)

    def names(self, name: str) -> tuple[str, ...]:
        """Fact ``name``, a tuple of names."""
        value = self.fact(name)
        return value if isinstance(value, tuple) else ()

    def number(self, name: str) -> int:
        """Fact ``name``, a count or size."""
        value = self.fact(name)
        return value if isinstance(value, int) else 0


def _quoted(ids: tuple[str, ...]) -> str:
    return ", ".join(f"'{s}'" for s in ids)


def _empty_query(p: EmptyPart, f: FuzzyStage) -> str:
    return "empty query: nothing to search for"


def _fts_limit_0(p: EmptyPart, f: FuzzyStage) -> str:
    return "the retrievers fetch 0 rows (fts_limit 0)"


def _retriever_error(p: EmptyPart, f: FuzzyStage) -> str:
    return f"a retriever failed: {p.text('error')}"


def _no_match(p: EmptyPart, f: FuzzyStage) -> str:
    searched = p.names("retrievers")
    if len(searched) == 2:
        where = "either index"
    elif searched:
        where = f"the {searched[0]} index ({p.text('variant_retrievers')} only)"
    else:
        where = "any index"
    filters = filter_words(p.text("source"), p.text("source_match"), p.text("content_type"))
    return f"no match in {where}" + (f" with {filters}" if filters else "")


def _pool_empty(p: EmptyPart, f: FuzzyStage) -> str:
    return f"the candidate pool is empty (pool size {p.number('pool_size')}): fusion handed nothing on"


def _filter_removed_all(p: EmptyPart, f: FuzzyStage) -> str:
    n = p.number("removed")
    if n == 1:
        return "the only pooled candidate was removed by the session filter"
    return f"all {n} pooled candidates were removed by the session filter"


def _unknown_sessions(p: EmptyPart, f: FuzzyStage) -> str:
    unknown = p.names("sessions")
    listed = p.names("store_sessions")
    more = p.number("store_session_count") - len(listed)
    names = ", ".join(listed) + (f", … ({more} more)" if more > 0 else "") if listed else "none"
    noun = "session" if len(unknown) == 1 else "sessions"
    return f"no chunk in this store has {noun} {_quoted(unknown)} (sessions: {names})"


def _sessions_not_pooled(p: EmptyPart, f: FuzzyStage) -> str:
    return f"no pooled candidate has session {_quoted(p.names('sessions'))}"


def _limit_0(p: EmptyPart, f: FuzzyStage) -> str:
    if p.text("layer") == "none":
        return "limit is 0"
    return "limit is 0: the pipeline ran but the trim keeps nothing"


def _fuzzy(p: EmptyPart, f: FuzzyStage) -> str:
    return empty_words(p.text("fuzzy_code"), p.text("corrected_query") if "corrected_query" in p.data else "", f)


def _unexplained(p: EmptyPart, f: FuzzyStage) -> str:
    return "no results"


#: ``EmptyPart.code``: every empty-result code, each with its sentence (the
#: part and the trace's fuzzy stage in, one clause out).
EMPTY_CODES: dict[str, Callable[[EmptyPart, FuzzyStage], str]] = {
    "empty-query": _empty_query,
    "fts-limit-0": _fts_limit_0,
    "retriever-error": _retriever_error,
    "no-match": _no_match,
    "pool-empty": _pool_empty,
    "filter-removed-all": _filter_removed_all,
    "unknown-sessions": _unknown_sessions,
    "sessions-not-pooled": _sessions_not_pooled,
    "limit-0": _limit_0,
    "fuzzy": _fuzzy,
    "unexplained": _unexplained,
}


def part_sentence(part: EmptyPart, fuzzy: FuzzyStage) -> str:
    """One part in words; ``fuzzy`` is the trace's fuzzy stage (it words a skipped fallback)."""
    return EMPTY_CODES[part.code](part, fuzzy)


def empty_sentence(parts: tuple[EmptyPart, ...], fuzzy: FuzzyStage) -> str | None:
    """Why the search returned nothing, in words: ``"no match in either
    index; fuzzy found no correction"``; ``None`` when ``parts`` is empty
    (there are results)."""
    if not parts:
        return None
    return "; ".join(part_sentence(p, fuzzy) for p in parts)


#: At most this many of the store's session ids an ``unknown-sessions`` part names.
SESSIONS_LISTED = 8


def _missing_sessions(first: Run, store_sessions: Callable[[], list[str]]) -> list[EmptyPart]:
    """When the session filter removed everything: allowed ids no chunk of
    the store has (``unknown-sessions``; one store query, only on this path)
    and ids only candidates outside the pool have (``sessions-not-pooled``)."""
    flt = first.filter
    seen = {c.session_id for c in flt.removed}
    absent = [s for s in dict.fromkeys(flt.allow_set or ()) if s not in seen]
    if not absent:
        return []
    known = store_sessions()
    unknown = unknown_sessions(absent, known, shown=0)
    parts = []
    if unknown:
        named = sorted(s for s in known if s)
        parts.append(
            EmptyPart.of(
                "unknown-sessions",
                sessions=tuple(u.session for u in unknown),
                store_sessions=tuple(named[:SESSIONS_LISTED]),
                store_session_count=unknown[0].store_session_count,
            )
        )
    pooled_elsewhere = tuple(s for s in absent if s in known)
    if pooled_elsewhere:
        parts.append(EmptyPart.of("sessions-not-pooled", sessions=pooled_elsewhere))
    return parts


def empty_parts(
    params: SearchParams, first: Run, fuzzy: FuzzyStage, store_sessions: Callable[[], list[str]] = lambda: []
) -> tuple[EmptyPart, ...]:
    """Why a search with layer ``none`` returned nothing: at most one part
    about the first pass (with the session parts after ``filter-removed-all``),
    then one about the typo fallback; ``(unexplained,)`` when none applies."""
    if not params.query.strip():
        return (EmptyPart.of("empty-query"),)
    parts: list[EmptyPart] = []
    if not first.fusion.candidates and first.porter.fts_limit == 0:
        parts.append(EmptyPart.of("fts-limit-0"))
    elif not first.fusion.candidates:
        failed = first.porter if first.porter.error else first.trigram if first.trigram.error else None
        if failed is not None:
            parts.append(EmptyPart.of("retriever-error", retriever=failed.name, error=failed.error))
        else:
            parts.append(
                EmptyPart.of(
                    "no-match",
                    retrievers=tuple(name for name in RETRIEVERS if runs_retriever(params, name)),
                    variant_retrievers=params.variant.retrievers,
                    source=params.source,
                    source_match=params.source_match,
                    content_type=params.content_type,
                )
            )
    elif not first.pool.kept and params.limit != 0:
        parts.append(EmptyPart.of("pool-empty", pool_size=first.pool.pool_size))
    elif first.filter.allow_set is not None and not first.filter.kept:
        parts.append(EmptyPart.of("filter-removed-all", removed=len(first.filter.removed)))
        parts += _missing_sessions(first, store_sessions)
    elif params.limit == 0:
        parts.append(EmptyPart.of("limit-0", layer="none"))
    if not fuzzy.ran or fuzzy.rerun is None:
        parts.append(EmptyPart.of("fuzzy", fuzzy_code=fuzzy.code))
    elif not fuzzy.rerun.filter.kept:
        parts.append(EmptyPart.of("fuzzy", fuzzy_code=fuzzy.code, corrected_query=fuzzy.corrected_query))
    elif params.limit == 0:
        parts.append(EmptyPart.of("limit-0", layer="none"))
    return tuple(parts) or (EmptyPart.of("unexplained"),)


def answered_empty(layer: str) -> tuple[EmptyPart, ...]:
    """Why an answering pass (layer ``rrf`` or ``rrf-fuzzy``) returned nothing: the trim to ``limit`` 0."""
    return (EmptyPart.of("limit-0", layer=layer),)
