"""What-if lab: compare two runs of a query side by side.

* :func:`compare` runs one query under two parameter sets (A and B) and lines
  up their final lists chunk by chunk (variants: :mod:`engine.pipeline.variants`).
* :func:`compare_set` does that for every query of a query file and sums it up.

Conventions: positions are **1-based** positions in a final list; "improved"
means a chunk sits *higher* (smaller position) in B than in A, which is a
statement about rank, not about relevance. A chunk is identified by the row id
of the candidate that represents it (see :func:`compare` for how rows merged by
a ``source::title`` collision are matched). Pure Python; no Textual.
"""

from __future__ import annotations

import dataclasses
from dataclasses import asdict, dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence

from engine.lab.divergence import DEFAULT_K, DEFAULT_P, Divergence, check_k, check_p, divergence, most_changed_first
from engine.lab.qrels import check_query_ids, entry_id
from engine.pipeline.candidates import FinalResult
from engine.pipeline.export import trace_to_dict
from engine.pipeline.params import SearchParams
from engine.pipeline.run import search
from engine.pipeline.trace import Trace
from engine.pipeline.variants import Variant, as_variant, variant_spec
from engine.store.store import Store

# ─── one query, two runs ─────────────────────────────────────────────────

MARKERS = ("up", "down", "same", "new", "gone")


@dataclass(frozen=True)
class CompareCounts:
    """How the chunks of two final lists relate.

    Attributes:
        improved: chunks in both lists that sit higher (smaller 1-based
            position) in B.
        worsened: chunks in both lists that sit lower in B.
        unchanged: chunks at the same position in both.
        only_in_a: chunks only A returned (marker ``gone``).
        only_in_b: chunks only B returned (marker ``new``).
    """

    improved: int = 0
    worsened: int = 0
    unchanged: int = 0
    only_in_a: int = 0
    only_in_b: int = 0

    @property
    def shared(self) -> int:
        """Chunks returned by both runs."""
        return self.improved + self.worsened + self.unchanged

    @property
    def identical(self) -> bool:
        """True when both lists hold the same chunks in the same order."""
        return self.improved == self.worsened == self.only_in_a == self.only_in_b == 0

    def __add__(self, other: "CompareCounts") -> "CompareCounts":
        return CompareCounts(
            self.improved + other.improved,
            self.worsened + other.worsened,
            self.unchanged + other.unchanged,
            self.only_in_a + other.only_in_a,
            self.only_in_b + other.only_in_b,
        )


@dataclass(frozen=True)
class ChunkComparison:
    """One chunk's place in A's and B's final lists.

    Attributes:
        rowid_a: row id of the candidate representing the chunk in A, or
            ``None`` when A did not return it.
        rowid_b: the same for B. Differs from ``rowid_a`` only when a
            ``source::title`` collision made a different row represent the
            same merged group (see :func:`compare`).
        source, title, content_type: of the representing row (B's when B
            returned it, else A's).
        position_a / position_b: 1-based position in A's / B's final list,
            or ``None`` when absent.
        marker: ``"up"`` (higher in B), ``"down"`` (lower in B), ``"same"``,
            ``"new"`` (only in B) or ``"gone"`` (only in A).
        score_a / score_b: fused RRF score in each run (``None`` when absent).
        boost_a / boost_b: rerank boost in each run (``None`` when absent or
            the rerank did not run).
    """

    rowid_a: int | None
    rowid_b: int | None
    source: str
    title: str
    content_type: str
    position_a: int | None
    position_b: int | None
    marker: str
    score_a: float | None = None
    score_b: float | None = None
    boost_a: float | None = None
    boost_b: float | None = None

    @property
    def rowid(self) -> int:
        """The representing row id (B's when B returned the chunk, else A's)."""
        return self.rowid_b if self.rowid_b is not None else self.rowid_a  # type: ignore[return-value]

    @property
    def key(self) -> str:
        """``source::title``."""
        return f"{self.source}::{self.title}"

    @property
    def delta(self) -> int | None:
        """Positions gained in B (``position_a - position_b``; positive = up),
        ``None`` unless both runs returned the chunk."""
        if self.position_a is None or self.position_b is None:
            return None
        return self.position_a - self.position_b


@dataclass(frozen=True)
class Comparison:
    """One query run twice (A and B) and lined up chunk by chunk.

    Attributes:
        trace_a / trace_b: the full traces (``trace.params.variant`` says
            which variant produced each).
        rows: one per chunk in either final list: B's order first, then the
            chunks only A returned, in A's order.
        counts: improved / worsened / unchanged / only-in-A / only-in-B.
    """

    trace_a: Trace
    trace_b: Trace
    rows: tuple[ChunkComparison, ...]
    counts: CompareCounts

    @property
    def params_a(self) -> SearchParams:
        """A's search parameters."""
        return self.trace_a.params

    @property
    def params_b(self) -> SearchParams:
        """B's search parameters."""
        return self.trace_b.params

    @property
    def final_a(self) -> tuple[FinalResult, ...]:
        """A's final list."""
        return self.trace_a.final

    @property
    def final_b(self) -> tuple[FinalResult, ...]:
        """B's final list."""
        return self.trace_b.final

    @property
    def overlap(self) -> float:
        """Shared chunks / the longer final list (0..1); 1.0 when both are empty."""
        return overlap_ratio(self.counts.shared, len(self.final_a), len(self.final_b))

    def divergence(self, p: float = DEFAULT_P, k: int = DEFAULT_K) -> Divergence:
        """RBO and Jaccard@k of B's final list against A's (chunks by row id; :mod:`engine.lab.divergence`).

        Raises:
            ValueError: a bad ``p`` or ``k``."""
        return divergence([r.candidate.rowid for r in self.final_a], [r.candidate.rowid for r in self.final_b], p, k)


def overlap_ratio(shared: int, len_a: int, len_b: int) -> float:
    """``shared / max(len_a, len_b)``; 1.0 when both lists are empty."""
    longest = max(len_a, len_b)
    return 1.0 if longest == 0 else shared / longest


def _group(result: FinalResult) -> set[int]:
    return {result.candidate.rowid, *result.candidate.merged_rowids}


def _match(final_a: Sequence[FinalResult], final_b: Sequence[FinalResult]) -> dict[int, int]:
    """B index → A index. Pass 1: same representing row id. Pass 2: rows of
    the same merged group (kept row plus merged rows) overlap."""
    a_by_rowid = {r.candidate.rowid: i for i, r in enumerate(final_a)}
    matched: dict[int, int] = {}
    used_a: set[int] = set()
    for j, rb in enumerate(final_b):
        i = a_by_rowid.get(rb.candidate.rowid)
        if i is not None and i not in used_a:
            matched[j] = i
            used_a.add(i)
    for j, rb in enumerate(final_b):
        if j in matched:
            continue
        group = _group(rb)
        for i, ra in enumerate(final_a):
            if i not in used_a and group & _group(ra):
                matched[j] = i
                used_a.add(i)
                break
    return matched


def compare_traces(trace_a: Trace, trace_b: Trace) -> Comparison:
    """Line up two existing traces (see :func:`compare`)."""
    final_a, final_b = trace_a.final, trace_b.final
    matched = _match(final_a, final_b)
    rows: list[ChunkComparison] = []
    counts = {m: 0 for m in MARKERS}
    for j, rb in enumerate(final_b):
        cb = rb.candidate
        i = matched.get(j)
        ra = final_a[i] if i is not None else None
        if ra is None:
            marker = "new"
        elif rb.position < ra.position:
            marker = "up"
        elif rb.position > ra.position:
            marker = "down"
        else:
            marker = "same"
        counts[marker] += 1
        rows.append(
            ChunkComparison(
                rowid_a=ra.candidate.rowid if ra else None,
                rowid_b=cb.rowid,
                source=cb.source,
                title=cb.title,
                content_type=cb.content_type,
                position_a=ra.position if ra else None,
                position_b=rb.position,
                marker=marker,
                score_a=ra.candidate.score if ra else None,
                score_b=cb.score,
                boost_a=ra.boost if ra else None,
                boost_b=rb.boost,
            )
        )
    used_a = set(matched.values())
    for i, ra in enumerate(final_a):
        if i in used_a:
            continue
        ca = ra.candidate
        counts["gone"] += 1
        rows.append(
            ChunkComparison(
                rowid_a=ca.rowid,
                rowid_b=None,
                source=ca.source,
                title=ca.title,
                content_type=ca.content_type,
                position_a=ra.position,
                position_b=None,
                marker="gone",
                score_a=ca.score,
                boost_a=ra.boost,
            )
        )
    return Comparison(
        trace_a,
        trace_b,
        tuple(rows),
        CompareCounts(counts["up"], counts["down"], counts["same"], counts["gone"], counts["new"]),
    )


def compare(store: Store, params_a: SearchParams, params_b: SearchParams) -> Comparison:
    """Run ``params_a`` and ``params_b`` (usually the same query under two
    variants) and compare their final lists.

    Chunks are matched by the row id of the candidate representing them. When
    no row id matches, a B result is matched to an A result whose merged
    group (kept row plus ``merged_rowids``) shares a row: the same
    ``source::title`` group represented by a different row, e.g. Porter-only
    against trigram-only fusion.

    Args:
        store: an open store (searched twice, A first).
        params_a / params_b: the two parameter sets (may differ in anything,
            not only in the variant).

    Returns:
        A :class:`Comparison` with both traces, one :class:`ChunkComparison`
        per chunk (1-based positions, marker up/down/same/new/gone) and the
        counts.

    Raises:
        Nothing beyond :func:`engine.pipeline.run.search` (which never raises
        for any query text).
    """
    return compare_traces(search(store, params_a), search(store, params_b))


# ─── a whole query file ──────────────────────────────────────────────────


@dataclass(frozen=True)
class QueryComparison:
    """One query of a set, compared.

    Attributes:
        id: the entry's ``id`` (or its 1-based index as a string).
        query: the query text.
        counts: as in :class:`Comparison`.
        overlap: shared chunks / the longer final list (1.0 when both empty).
        layer_a / layer_b: match layer of each run.
        size_a / size_b: final list lengths.
        comparison: the full :class:`Comparison` (with both traces).
        divergence: RBO and Jaccard@k of B's final list against A's
            (:mod:`engine.lab.divergence`, chunks by row id).
    """

    id: str
    query: str
    counts: CompareCounts
    overlap: float
    layer_a: str
    layer_b: str
    size_a: int
    size_b: int
    comparison: Comparison
    divergence: Divergence

    @property
    def changed(self) -> bool:
        """True when the final lists differ (in membership or order)."""
        return not self.counts.identical


@dataclass(frozen=True)
class SetComparison:
    """A query file compared under two variants.

    Attributes:
        variant_a / variant_b: the two variants.
        queries: one :class:`QueryComparison` per entry, in file order.
        totals: counts summed over every query.
        mean_overlap: mean of the per-query overlaps, or ``None`` for an
            empty set.
        p / k: RBO persistence and Jaccard depth of the divergences.
    """

    variant_a: Variant
    variant_b: Variant
    queries: tuple[QueryComparison, ...]
    totals: CompareCounts
    mean_overlap: float | None
    p: float = DEFAULT_P
    k: int = DEFAULT_K

    def most_changed_first(self) -> SetComparison:
        """The same comparison, queries most changed first (lowest RBO, then Jaccard, then file order)."""
        order = most_changed_first([q.divergence for q in self.queries])
        return dataclasses.replace(self, queries=tuple(self.queries[i] for i in order))

    @property
    def changed_queries(self) -> int:
        """Queries whose final lists differ."""
        return sum(1 for q in self.queries if q.changed)

    @property
    def layer_changes(self) -> int:
        """Queries whose match layer differs between A and B."""
        return sum(1 for q in self.queries if q.layer_a != q.layer_b)


#: Keys a query-file entry may have (``../shared/parity/*/queries.json``):
#: ``why`` is a note for people, ``id`` names the entry in the output.
ENTRY_KEYS = ("id", "query", "why", "limit", "source", "source_match", "content_type", "sessions")


def params_for_entry(entry: Mapping[str, Any] | SearchParams, variant: Variant, index: int = 0) -> SearchParams:
    """:class:`SearchParams` for one query-file entry (``query``, ``limit``
    (default 3), ``source``, ``source_match``, ``content_type``,
    ``sessions``; ``id`` and ``why`` are allowed too) under ``variant``. A
    :class:`SearchParams` keeps its fields and only takes the variant.

    Raises:
        ValueError: the entry is not a mapping with a string ``query``, has a
            key outside :data:`ENTRY_KEYS` (a typo such as ``limt``), a
            ``sessions`` that is not a list of strings, a ``limit`` that is
            not an integer, or another invalid field; the message names the
            1-based entry number and its id.
    """
    if isinstance(entry, SearchParams):
        return dataclasses.replace(entry, variant=variant)
    where = f"query #{index + 1}"
    if not isinstance(entry, Mapping) or not isinstance(entry.get("query"), str):
        raise ValueError(f"{where}: an entry must be an object with a string 'query'; got {entry!r}")
    where += f" ({entry.get('id', '?')})"
    unknown = [k for k in entry if k not in ENTRY_KEYS]
    if unknown:
        names = ", ".join(repr(k) for k in unknown)
        raise ValueError(
            f"{where}: unknown key{'s' if len(unknown) > 1 else ''} {names}; allowed: {', '.join(ENTRY_KEYS)}"
        )
    sessions = entry.get("sessions")
    if sessions is not None and not (isinstance(sessions, list) and all(isinstance(x, str) for x in sessions)):
        raise ValueError(f"{where}: 'sessions' must be a list of session id strings (or null); got {sessions!r}")
    limit = entry.get("limit", 3)
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise ValueError(f"{where}: 'limit' must be an integer; got {limit!r}")
    for key in ("source", "source_match", "content_type"):
        if entry.get(key) is not None and not isinstance(entry[key], str):
            raise ValueError(f"{where}: {key!r} must be a string (or null); got {entry[key]!r}")
    try:
        return SearchParams(
            query=entry["query"],
            limit=limit,
            source=entry.get("source"),
            source_match="like" if entry.get("source_match") is None else entry["source_match"],
            content_type=entry.get("content_type"),
            sessions=tuple(sessions) if sessions is not None else None,
            variant=variant,
        )
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{where}: {exc}") from None


def compare_set(
    store: Store,
    entries: Iterable[Mapping[str, Any] | SearchParams],
    variant_a: Variant | str | None = None,
    variant_b: Variant | str | None = None,
    p: float = DEFAULT_P,
    k: int = DEFAULT_K,
    run: Callable[[SearchParams], Trace] | None = None,
) -> SetComparison:
    """Compare every query of a query file under ``variant_a`` and ``variant_b``.

    Args:
        store: an open store.
        entries: query-file entries (format of ``queries.json``: ``id``,
            ``query``, ``limit``, ``source``, ``source_match``,
            ``content_type``, ``sessions``) or :class:`SearchParams`.
        variant_a / variant_b: a :class:`Variant`, a spec string for
            :func:`engine.pipeline.variants.parse_variant`, or ``None`` for the reference.
        p / k: RBO persistence and Jaccard depth of each query's :class:`Divergence`.
        run: runs one search (A's, then B's, query by query); ``None``:
            :func:`engine.pipeline.run.search` on ``store``'s connection. Its
            exceptions propagate.

    Returns:
        A :class:`SetComparison`: per-query counts, overlap and divergence,
        totals, and the mean overlap.

    Raises:
        ValueError: a bad variant spec, a bad entry or two entries with one
            id (all entries are validated before any search runs), or a bad
            ``p`` or ``k``.
    """
    va, vb = as_variant(variant_a), as_variant(variant_b)
    check_p(p)
    check_k(k)
    items = list(entries)
    pairs = [(params_for_entry(e, va, i), params_for_entry(e, vb, i)) for i, e in enumerate(items)]
    check_query_ids([e if isinstance(e, Mapping) else {} for e in items])
    out: list[QueryComparison] = []
    totals = CompareCounts()
    for i, (entry, (pa, pb)) in enumerate(zip(items, pairs)):
        cmp = compare(store, pa, pb) if run is None else compare_traces(run(pa), run(pb))
        qid = entry_id(entry, i) if isinstance(entry, Mapping) else str(i + 1)
        out.append(
            QueryComparison(
                qid,
                pa.query,
                cmp.counts,
                cmp.overlap,
                cmp.trace_a.layer,
                cmp.trace_b.layer,
                len(cmp.final_a),
                len(cmp.final_b),
                cmp,
                divergence([r.candidate.rowid for r in cmp.final_a], [r.candidate.rowid for r in cmp.final_b], p, k),
            )
        )
        totals = totals + cmp.counts
    mean = sum(q.overlap for q in out) / len(out) if out else None
    return SetComparison(va, vb, tuple(out), totals, mean, p, k)


# ─── JSON ────────────────────────────────────────────────────────────────


def counts_to_dict(counts: CompareCounts) -> dict[str, int]:
    """``{improved, worsened, unchanged, only_in_a, only_in_b, shared}``."""
    return {**asdict(counts), "shared": counts.shared}


def comparison_to_dict(cmp: Comparison, include_traces: bool = True) -> dict[str, object]:
    """JSON-ready form: ``query``, ``a``/``b`` {variant, layer, final
    [{position, rowid, source, title, score, boost}]}, ``rows`` [{marker,
    position_a, position_b, rowid_a, rowid_b, source, title, content_type,
    score_a, score_b, boost_a, boost_b}], ``counts``, ``overlap``, ``rbo``,
    ``jaccard``, ``rbo_p``, ``jaccard_k`` (:meth:`Comparison.divergence`) and,
    with ``include_traces``, ``traces`` {a, b} as :func:`engine.pipeline.export.trace_to_dict`."""

    def side(trace: Trace) -> dict[str, object]:
        return {
            "variant": variant_spec(trace.params.variant),
            "spec": variant_spec(trace.params.variant),
            "layer": trace.layer,
            "final": [
                {
                    "position": r.position,
                    "rowid": r.candidate.rowid,
                    "source": r.candidate.source,
                    "title": r.candidate.title,
                    "score": r.candidate.score,
                    "boost": r.boost,
                }
                for r in trace.final
            ],
        }

    out = {
        "query": cmp.params_a.query,
        "a": side(cmp.trace_a),
        "b": side(cmp.trace_b),
        "rows": [
            {
                "marker": r.marker,
                "position_a": r.position_a,
                "position_b": r.position_b,
                "rowid_a": r.rowid_a,
                "rowid_b": r.rowid_b,
                "source": r.source,
                "title": r.title,
                "content_type": r.content_type,
                "score_a": r.score_a,
                "score_b": r.score_b,
                "boost_a": r.boost_a,
                "boost_b": r.boost_b,
            }
            for r in cmp.rows
        ],
        "counts": counts_to_dict(cmp.counts),
        "overlap": cmp.overlap,
    }
    d = cmp.divergence()  # what the text form shows beside the table ("RBO 0.73 · J@10 0.50")
    out.update({"rbo": d.rbo, "jaccard": d.jaccard, "rbo_p": d.p, "jaccard_k": d.k})
    if include_traces:
        out["traces"] = {"a": trace_to_dict(cmp.trace_a), "b": trace_to_dict(cmp.trace_b)}
    return out


def set_comparison_to_dict(sc: SetComparison) -> dict[str, object]:
    """JSON-ready form: ``variant_a``, ``variant_b``, ``queries`` [{id,
    query, layer_a, layer_b, size_a, size_b, counts, overlap, rbo, jaccard,
    rows}] (in the order of ``sc.queries``), ``rbo_p``, ``jaccard_k``,
    ``totals``, ``mean_overlap``, ``changed_queries``, ``layer_changes``
    (no traces)."""
    return {
        "variant_a": variant_spec(sc.variant_a),
        "variant_b": variant_spec(sc.variant_b),
        "queries": [
            {
                "id": q.id,
                "query": q.query,
                "layer_a": q.layer_a,
                "layer_b": q.layer_b,
                "size_a": q.size_a,
                "size_b": q.size_b,
                "counts": counts_to_dict(q.counts),
                "overlap": q.overlap,
                "rbo": q.divergence.rbo,
                "jaccard": q.divergence.jaccard,
                "rows": comparison_to_dict(q.comparison, include_traces=False)["rows"],
            }
            for q in sc.queries
        ],
        "rbo_p": sc.p,
        "jaccard_k": sc.k,
        "totals": counts_to_dict(sc.totals),
        "mean_overlap": sc.mean_overlap,
        "changed_queries": sc.changed_queries,
        "layer_changes": sc.layer_changes,
    }
