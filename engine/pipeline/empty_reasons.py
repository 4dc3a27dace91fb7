"""Why a search returned nothing, as data and in words.

:class:`~engine.pipeline.trace.Trace` records the explanation as data:
``Trace.empty`` is a tuple of :class:`EmptyPart` (a code and the facts
behind it), empty when there are results. :func:`empty_sentence` puts the
parts in words (``Trace.empty_reason``: their sentences joined by ``"; "``);
nothing parses a sentence back. :func:`engine.pipeline.run.search` decides the
parts; this module only words them. Like :mod:`engine.pipeline.stages.fuzzy_reasons` it
imports nothing of the model at run time (no import cycle). Pure Python.

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
``fuzzy``                 ``fuzzy_code`` (the fuzzy stage's own code,   what the typo fallback did: skipped
                          :class:`~engine.pipeline.trace.FuzzyStage`); with      (``policy-never``, ``no-vocabulary``,
                          ``corrected`` also ``corrected_query``        ``first-pass-found``: worded by
                                                                        :data:`engine.pipeline.stages.fuzzy_reasons.FUZZY_CODES`),
                                                                        or ran and found no word or no
                                                                        correction, or corrected the query and
                                                                        its re-run kept nothing
``unexplained``           (none)                                        no other part applies (not expected;
                                                                        worded "no results")
========================= ============================================= =========================================

Session ids are names (strings); counts and sizes are ints; tuples are in
the order the sentence lists them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Union

from engine.pipeline.stages.fuzzy_reasons import FUZZY_CODES
from engine.pipeline.words import filter_words

if TYPE_CHECKING:
    from engine.pipeline.trace import FuzzyStage

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


def _empty_query(p: EmptyPart, f: "FuzzyStage") -> str:
    return "empty query: nothing to search for"


def _fts_limit_0(p: EmptyPart, f: "FuzzyStage") -> str:
    return "the retrievers fetch 0 rows (fts_limit 0)"


def _retriever_error(p: EmptyPart, f: "FuzzyStage") -> str:
    return f"a retriever failed: {p.text('error')}"


def _no_match(p: EmptyPart, f: "FuzzyStage") -> str:
    searched = p.names("retrievers")
    if len(searched) == 2:
        where = "either index"
    elif searched:
        where = f"the {searched[0]} index ({p.text('variant_retrievers')} only)"
    else:
        where = "any index"
    filters = filter_words(p.text("source"), p.text("source_match"), p.text("content_type"))
    return f"no match in {where}" + (f" with {filters}" if filters else "")


def _pool_empty(p: EmptyPart, f: "FuzzyStage") -> str:
    return f"the candidate pool is empty (pool size {p.number('pool_size')}): fusion handed nothing on"


def _filter_removed_all(p: EmptyPart, f: "FuzzyStage") -> str:
    n = p.number("removed")
    if n == 1:
        return "the only pooled candidate was removed by the session filter"
    return f"all {n} pooled candidates were removed by the session filter"


def _unknown_sessions(p: EmptyPart, f: "FuzzyStage") -> str:
    unknown = p.names("sessions")
    listed = p.names("store_sessions")
    more = p.number("store_session_count") - len(listed)
    names = ", ".join(listed) + (f", … ({more} more)" if more > 0 else "") if listed else "none"
    noun = "session" if len(unknown) == 1 else "sessions"
    return f"no chunk in this store has {noun} {_quoted(unknown)} (sessions: {names})"


def _sessions_not_pooled(p: EmptyPart, f: "FuzzyStage") -> str:
    return f"no pooled candidate has session {_quoted(p.names('sessions'))}"


def _limit_0(p: EmptyPart, f: "FuzzyStage") -> str:
    if p.text("layer") == "none":
        return "limit is 0"
    return "limit is 0: the pipeline ran but the trim keeps nothing"


def _fuzzy(p: EmptyPart, f: "FuzzyStage") -> str:
    code = p.text("fuzzy_code")
    if code == "no-correction":
        return "fuzzy found no correction"
    if code == "no-word":
        return "fuzzy had no word to correct"
    if code == "corrected":
        return f"the corrected query {p.text('corrected_query')!r} matched nothing that passed the filters"
    return FUZZY_CODES[code](f)  # skipped: the fuzzy stage's own sentence


def _unexplained(p: EmptyPart, f: "FuzzyStage") -> str:
    return "no results"


#: ``EmptyPart.code``: every empty-result code, each with its sentence (the
#: part and the trace's fuzzy stage in, one clause out).
EMPTY_CODES: dict[str, Callable[[EmptyPart, "FuzzyStage"], str]] = {
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


def part_sentence(part: EmptyPart, fuzzy: "FuzzyStage") -> str:
    """One part in words; ``fuzzy`` is the trace's fuzzy stage (a ``fuzzy``
    part of a skipped fallback is worded by :data:`engine.pipeline.stages.fuzzy_reasons.FUZZY_CODES`)."""
    return EMPTY_CODES[part.code](part, fuzzy)


def empty_sentence(parts: tuple[EmptyPart, ...], fuzzy: "FuzzyStage") -> str | None:
    """Why the search returned nothing, in words: ``"no match in either
    index; fuzzy found no correction"``; ``None`` when ``parts`` is empty
    (there are results)."""
    if not parts:
        return None
    return "; ".join(part_sentence(p, fuzzy) for p in parts)
