""" "Why is chunk X missing?": where a chunk left the pipeline, and why.

:func:`why_not` runs (or takes) a trace and follows one chunk through it: the
SQL filters, both retrievers (with their candidate counts), fusion (and
``source::title`` merges), the candidate pool, the session filter, the trim,
the rerank and the fuzzy fallback. Each answer is an :class:`Explanation`
with a stable ``reason`` code and a plain-words ``message`` carrying the
numbers.

Reason codes (in pipeline order):

=======================  ==========  =========================================
reason                   stage       meaning
=======================  ==========  =========================================
``source-filter``        retrieve    the source label filter excludes it
``content-type-filter``  retrieve    the content-type filter excludes it
``no-term``              retrieve    no query term is indexed in it
``fuzzy-not-attempted``  fuzzy       the typo-corrected query would match it,
                                     but the fuzzy fallback never ran
``retriever-skipped``    retrieve    only a retriever the variant skipped
                                     would match it
``beyond-fts-limit``     retrieve    matched, but beyond each retriever's
                                     candidate count (``fts_limit``)
``merged``               fusion      merged into another chunk by a fusion-key
                                     (``source::title``) collision
``beyond-pool``          pool        fused, but beyond the candidate pool
``session-filter``       filter      removed by the session filter
``trimmed``              trim        cut by the trim to ``limit``
``outranked``            rerank      returned, but the rerank moved it down
``returned``             final       in the answer
=======================  ==========  =========================================

For a chunk a retriever returned, the stage and the code come from its
path (:attr:`engine.pipeline.trace.Run.paths`, computed once by the pipeline); this
module adds the numbers a reader needs (scores, formulas, the rows that beat
it) and, for a chunk no retriever returned, looks further (uncapped
retriever runs, the filters, the typo correction). Stage ids come from
:data:`engine.pipeline.table.STAGES`; stages of the fuzzy re-run are prefixed
``fuzzy:``. A reason a new stage declares is explained with its sentence
(:func:`engine.pipeline.paths.sentence`) and data. Positions are **1-based**. Pure
Python; no Textual.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from engine.store import sql
from engine.pipeline.stages.fuzzy import correct_word
from engine.js.strings import js_to_lower
from engine.pipeline.trace import Candidate, Hit, RetrieverRun, Run, SearchParams, Trace
from engine.pipeline.paths import REASONS as PATH_REASONS
from engine.pipeline.paths import sentence
from engine.pipeline.run import search
from engine.pipeline.query import fuzzy_words, porter_words, trigram_words
from engine.pipeline.stages.retrieve import like_pattern, retrieve, runs_retriever
from engine.pipeline.table import RETRIEVERS, depth
from engine.pipeline.table import title as stage_title
from engine.store.errors import is_corruption
from engine.store.indexing import vocabulary_words
from engine.store.store import Store
from engine.pipeline.words import plural

#: Every reason code :func:`why_not` gives, in pipeline order: the exit codes
#: of :data:`engine.pipeline.paths.REASONS` (except ``not-retrieved``, which why-not
#: always refines), then the two outcomes of a returned chunk.
REASONS: tuple[str, ...] = tuple(c for c in PATH_REASONS if c != "not-retrieved") + ("outranked", "returned")
#: Distinctive words shown for a ``no-term`` chunk.
DISTINCTIVE_WORDS = 8
#: At most this many of a chunk's words are checked for document frequency.
_DF_SCAN = 60


class ChunkNotFoundError(LookupError):
    """No chunk has the requested row id or ``source::title`` key."""


@dataclass(frozen=True)
class ChunkRef:
    """The chunk being explained.

    Attributes:
        rowid: FTS5 row id (shared by both tables).
        source: source label.
        title: chunk title.
        content_type: ``"code"`` or ``"prose"``.
        session_id: attribution session id (``""`` = unattributed).
        content: the chunk text.
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
    def from_candidate(cls, c: Candidate) -> "ChunkRef":
        """The kept row of a fused candidate."""
        return cls(c.rowid, c.source, c.title, c.content_type, c.session_id, c.content)


@dataclass(frozen=True)
class Explanation:
    """Where one chunk left the pipeline (or where it ended up).

    Attributes:
        chunk: the chunk.
        stage: stage id: ``retrieve``, ``fuzzy``, ``fusion``, ``pool``,
            ``filter``, ``trim``, ``rerank`` or ``final``; prefixed
            ``fuzzy:`` when the story is in the fuzzy re-run.
        reason: a code from :data:`REASONS`.
        message: one or two sentences in plain words, with the numbers.
        run: the pass explained: ``"first"`` (raw query) or ``"fuzzy"``
            (the corrected-query re-run).
        position: 1-based position at ``stage`` when it has one: final
            position (``returned``/``outranked``), position among the
            session-filtered candidates (``trimmed``, or the rerank order
            with ``rerank=before-trim``), pool position (``session-filter``),
            fused position (``beyond-pool``), best full bm25 rank
            (``beyond-fts-limit``); else ``None``.
        details: reason-specific values (JSON-ready: str, int, float, bool,
            None, lists and dicts of them), e.g. ``fts_limit`` and
            ``full_ranks`` for ``beyond-fts-limit``, ``kept_rowid`` for
            ``merged``, ``beaten_by`` for ``outranked``.
    """

    chunk: ChunkRef
    stage: str
    reason: str
    message: str
    run: str = "first"
    position: int | None = None
    details: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def returned(self) -> bool:
        """True when the chunk is in the answer (``returned`` or ``outranked``)."""
        return self.reason in ("returned", "outranked")

    def to_dict(self) -> dict:
        """JSON-ready form: ``rowid, source, title, content_type, session_id,
        stage, reason, message, run, position, details``."""
        c = self.chunk
        return {
            "rowid": c.rowid,
            "source": c.source,
            "title": c.title,
            "content_type": c.content_type,
            "session_id": c.session_id,
            "stage": self.stage,
            "reason": self.reason,
            "message": self.message,
            "run": self.run,
            "position": self.position,
            "details": self.details,
        }


# ─── finding the chunk ───────────────────────────────────────────────────


def _rows_to_refs(rows) -> list[ChunkRef]:
    dec = sql.decode
    return [
        ChunkRef(int(r[0]), dec(r[1]) or "", dec(r[2]) or "", r[3] or "prose", dec(r[4]) or "", dec(r[5]) or "")
        for r in rows
    ]


def find_chunks(
    store: Store,
    *,
    key: str | None = None,
    rowid: int | None = None,
    conn: sql.Connection | None = None,
) -> list[ChunkRef]:
    """The chunks named by a ``source::title`` key (all of them, rowid
    order) or by a row id (one).

    Raises:
        ValueError: neither or both of ``key`` and ``rowid`` given.
        ChunkNotFoundError: nothing matches; for a key the message lists
            titles of the closest source (:func:`titles_hint`: the ones
            closest to the title typed, and how many more).
    """
    if (key is None) == (rowid is None):
        raise ValueError("name exactly one chunk: give key='source::title' or rowid=N")
    t = sql.text
    select = (
        f"SELECT chunks.rowid, {t('sources.label')}, {t('chunks.title')}, chunks.content_type, "
        f"{t(store.schema.session_column())}, {t('chunks.content')} FROM chunks JOIN sources ON sources.id = chunks.source_id "
    )
    with store.using(conn) as c:
        if rowid is not None:
            if isinstance(rowid, bool) or not isinstance(rowid, int):
                raise ValueError(f"rowid must be an integer; got {rowid!r}")
            refs = _rows_to_refs(c.execute(select + "WHERE chunks.rowid = ?", (rowid,)).fetchall())
            if not refs:
                total = c.execute("SELECT COUNT(*), MIN(rowid), MAX(rowid) FROM chunks").fetchone()
                raise ChunkNotFoundError(
                    f"no chunk has rowid {rowid} (the store has {total[0]} chunks, rowids {total[1]}..{total[2]})"
                )
            return refs
        assert key is not None
        refs = _rows_to_refs(
            c.execute(
                select + "WHERE sources.label || '::' || chunks.title = ? ORDER BY chunks.rowid", (key,)
            ).fetchall()
        )
        if refs:
            return refs
        if "::" not in key:
            raise ChunkNotFoundError(f"{key!r} is not a source::title key (no '::' in it)")
        labels = [
            lbl
            for lbl in (
                sql.decode(r[0])
                for r in c.execute(
                    f"SELECT {sql.text('label')} FROM sources WHERE ? LIKE label || '::%'", (key,)
                ).fetchall()
            )
            if key.startswith(lbl + "::")
        ]
        if not labels:
            source = key.split("::", 1)[0]
            raise ChunkNotFoundError(f"no chunk has key {key!r}: no source is labelled {source!r}")
        label = labels[-1]
        titles = list(
            dict.fromkeys(
                sql.decode(r[0])
                for r in c.execute(
                    f"SELECT {sql.text('chunks.title')} FROM chunks JOIN sources ON sources.id = chunks.source_id "
                    "WHERE sources.label = ? ORDER BY chunks.rowid",
                    (label,),
                ).fetchall()
            )
        )
        raise ChunkNotFoundError(f"no chunk has key {key!r}; " + titles_hint(label, titles, key[len(label) + 2 :]))


# ─── helpers ─────────────────────────────────────────────────────────────

#: Titles named in the hint of an unknown ``source::title`` key (the rest are counted).
TITLES_SHOWN = 6


def titles_hint(label: str, titles: list[str], typed: str) -> str:
    """The hint after an unknown key: the source's distinct ``titles``
    (rowid order), all of them when there are at most :data:`TITLES_SHOWN`,
    else the :data:`TITLES_SHOWN` closest to the ``typed`` title (rapidfuzz
    ``WRatio`` on lower-cased alphanumerics; ties in rowid order) and how
    many more there are::

        source 'a.md' has titles: 'Intro'; 'Usage'
        source 'b.json' has 13 titles; the 6 closest to 'nope': 'node'; ...; and 7 more
    """
    if len(titles) <= TITLES_SHOWN:
        return f"source {label!r} has titles: " + "; ".join(repr(t) for t in titles)
    if typed.strip():
        from rapidfuzz import fuzz, utils

        scores = [fuzz.WRatio(typed, t, processor=utils.default_process) for t in titles]
        order = sorted(range(len(titles)), key=lambda i: (-scores[i], i))
        shown, which = [titles[i] for i in order[:TITLES_SHOWN]], f"the {TITLES_SHOWN} closest to {typed!r}"
    else:
        shown, which = titles[:TITLES_SHOWN], f"the first {TITLES_SHOWN}"
    return (
        f"source {label!r} has {len(titles)} titles; {which}: "
        + "; ".join(repr(t) for t in shown)
        + f"; and {len(titles) - len(shown)} more"
    )


def _fmt(x: float) -> str:
    return f"{x:.6f}".rstrip("0").rstrip(".") if x else "0"


def _rrf_formula(cand: Candidate, rrf_k: int) -> str:
    return " + ".join(f"1/({rrf_k}+{c.rank})" for c in cand.contributions)


def _hit_rank(run: RetrieverRun, rowid: int) -> Hit | None:
    return next((h for h in run.hits if h.rowid == rowid), None)


def _pool_words(trace: Trace, params: SearchParams) -> str:
    v = params.variant
    if params.sessions is not None:
        return (
            f"pool size {trace.pool_size}, set by the variant"
            if v.pool_size_sessions is not None
            else f"pool size {trace.pool_size} = max(8 × limit {params.limit}, 40) with a session allow-set"
        )
    return (
        f"pool size {trace.pool_size}, set by the variant"
        if v.pool_size is not None
        else f"pool size {trace.pool_size} = limit without a session allow-set"
    )


def _fts_words(trace: Trace, params: SearchParams) -> str:
    if params.variant.fts_limit is not None:
        return f"fts_limit {trace.fts_limit}, set by the variant"
    return f"fts_limit {trace.fts_limit} = max(2 × pool size {trace.pool_size}, 10)"


class _Ctx:
    """Shared state of one :func:`why_not` call (connection, caches)."""

    def __init__(self, store: Store, conn: sql.Connection, params: SearchParams, trace: Trace):
        self.store, self.conn, self.params, self.trace = store, conn, params, trace
        self._full: dict[tuple[str, str], RetrieverRun] = {}
        self._total: int | None = None

    def total_chunks(self) -> int:
        if self._total is None:
            self._total = int(self.conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0])
        return self._total

    def full_run(self, retriever: str, query: str) -> RetrieverRun:
        """The retriever's run for ``query`` with every match (no candidate cap)."""
        key = (retriever, query)
        if key not in self._full:
            p = self.params
            self._full[key] = retrieve(
                self.conn,
                self.store.schema,
                retriever,
                query,
                max(self.total_chunks(), 1),
                p.source,
                p.source_match,
                p.content_type,
            )
        return self._full[key]

    def full_ranks(self, query: str, rowid: int) -> dict[str, dict | None]:
        """Per retriever: ``{rank, bm25, matches}`` of ``rowid`` in the
        uncapped run, ``{"skipped": why}`` when the query gives it nothing to
        run, or ``None`` when it does not match."""
        out: dict[str, dict | None] = {}
        for name in RETRIEVERS:
            run = self.full_run(name, query)
            if run.skipped or run.error:
                out[name] = {"skipped": run.skipped or run.error}
                continue
            hit = _hit_rank(run, rowid)
            out[name] = None if hit is None else {"rank": hit.rank, "bm25": hit.bm25, "matches": len(run.hits)}
        return out


def distinctive_words(
    store: Store, chunk: ChunkRef, n: int = DISTINCTIVE_WORDS, conn: sql.Connection | None = None
) -> list[str]:
    """Up to ``n`` words that characterise ``chunk``: its vocabulary words
    (lower-cased, 3+ characters, no stopwords; title first), ordered by how
    few chunks contain them (Porter document frequency), then by how often
    the chunk uses them, then by first occurrence."""
    c = conn or store.conn
    words = vocabulary_words(chunk.title + "\n" + chunk.content)[:_DF_SCAN]
    lower = js_to_lower(chunk.title + "\n" + chunk.content)
    scored = []
    for i, w in enumerate(words):
        try:
            df = c.execute(
                "SELECT COUNT(*) FROM chunks WHERE chunks MATCH ?", ('"' + w.replace('"', "") + '"',)
            ).fetchone()[0]
        except sql.Error as exc:
            if is_corruption(exc):
                raise
            continue
        if df == 0:
            continue
        scored.append((df, -lower.count(w), i, w))
    scored.sort()
    return [w for *_, w in scored[:n]]


def _describe_full(name: str, info: dict | None) -> str:
    label = stage_title(name)
    if info is None:
        return f"{label}: no match"
    if "skipped" in info:
        return f"{label}: skipped ({info['skipped']})"
    return f"{label}: bm25 rank {info['rank']} of {info['matches']} (bm25 {info['bm25']:.4f})"


# ─── one pass ────────────────────────────────────────────────────────────


def _explain_run(ctx: _Ctx, chunk: ChunkRef, run: Run, which: str, *, follow_merge: bool = True) -> Explanation:
    """Where ``chunk`` left ``run`` (it is known not to be in the answer).
    Stories from the fuzzy re-run say so and name the corrected query."""
    exp = _explain_pass(ctx, chunk, run, which, follow_merge)
    if which != "fuzzy":
        return exp
    lead = f"In the fuzzy re-run (corrected query {run.query!r}): "
    return replace(exp, message=lead + exp.message[:1].lower() + exp.message[1:])


def _explain_pass(ctx: _Ctx, chunk: ChunkRef, run: Run, which: str, follow_merge: bool) -> Explanation:
    params, trace = ctx.params, ctx.trace
    prefix = "fuzzy:" if which == "fuzzy" else ""
    v = params.variant
    hits = {r.name: _hit_rank(r, chunk.rowid) for r in (run.porter, run.trigram)}
    if not any(hits.values()):
        full = ctx.full_ranks(run.query, chunk.rowid)
        ran = {name for name in RETRIEVERS if runs_retriever(params, name)}
        matched_ran = {n: i for n, i in full.items() if n in ran and i and "rank" in i}
        matched_skipped = {n: i for n, i in full.items() if n not in ran and i and "rank" in i}
        details: dict[str, Any] = {"query": run.query, "full_ranks": full, "fts_limit": trace.fts_limit}
        if matched_ran:
            best = min(i["rank"] for i in matched_ran.values())
            details["rank"] = best
            parts = "; ".join(_describe_full(n, full[n]) for n in RETRIEVERS if n in ran)
            return Explanation(
                chunk,
                prefix + "retrieve",
                "beyond-fts-limit",
                f"It matches the query but sits beyond the candidates each retriever fetches "
                f"({_fts_words(trace, params)}): {parts}.",
                which,
                best,
                details,
            )
        if matched_skipped:
            only = ", ".join(sorted(ran)) or "no"
            details["retrievers"] = sorted(ran)
            parts = "; ".join(_describe_full(n, full[n]) for n in matched_skipped)
            return Explanation(
                chunk,
                prefix + "retrieve",
                "retriever-skipped",
                f"The variant runs only the {only} retriever, which does not match it; "
                f"the skipped one would have: {parts} (fts_limit {trace.fts_limit}).",
                which,
                None,
                details,
            )
        pw = porter_words(run.query)
        tw = trigram_words(run.query)
        distinct = distinctive_words(ctx.store, chunk, conn=ctx.conn)
        details.update(
            {
                "porter_terms": pw,
                "trigram_terms": tw,
                "chunk_words": distinct,
                "porter_query": run.porter.query,
                "trigram_query": run.trigram.query,
            }
        )
        looked = f"Porter looked for {', '.join(pw) or '(no word)'} (stemmed)"
        looked += f", trigram for {', '.join(tw)}" if tw else ", trigram did not run (no word of 3+ characters)"
        return Explanation(
            chunk,
            prefix + "retrieve",
            "no-term",
            f"No query term is indexed in it: {looked}. It is about: {', '.join(distinct) or '(no indexed words)'}.",
            which,
            None,
            details,
        )

    # It entered this pass: where it left is on its path (engine.pipeline.paths).
    path = run.path(chunk.rowid)
    assert path is not None, f"row {chunk.rowid} was retrieved but has no path"
    exit = path.exit
    fusion = run.fusion
    if exit is None:
        # Survived this pass but not in the answer: the pass did not answer.
        return Explanation(
            chunk,
            prefix + "trim",
            "trimmed",
            f"Survived this pass, but the answer came from the other pass (layer {trace.layer}).",
            which,
            None,
            {"layer": trace.layer},
        )
    if exit.reason == "merged":
        kept_pos = exit.get("into_position")
        assert isinstance(kept_pos, int), exit  # the fusion stage records it for every merge
        kept = fusion.candidates[kept_pos - 1]
        own = [c for c in kept.contributions if c.rowid == chunk.rowid]
        own_words = "; ".join(
            f"{'Porter' if c.retriever == 'porter' else 'trigram'} rank {c.rank}: 1/({fusion.rrf_k}+{c.rank})"
            for c in own
        )
        details = {
            "kept_rowid": kept.rowid,
            "kept_key": kept.key,
            "kept_fused_position": kept_pos,
            "contributions": [{"retriever": c.retriever, "rank": c.rank, "value": c.value} for c in own],
        }
        fate = ""
        if follow_merge:
            final_pos = next((r.position for r in trace.final if r.candidate.rowid == kept.rowid), None)
            if final_pos is not None:
                fate = f" Row {kept.rowid} was returned at #{final_pos}."
                details["kept_outcome"] = "returned"
            else:
                sub = _explain_pass(ctx, ChunkRef.from_candidate(kept), run, which, follow_merge=False)
                fate = f" Row {kept.rowid} itself {sub.message[:1].lower()}{sub.message[1:]}"
                details["kept_outcome"] = sub.reason
        return Explanation(
            chunk,
            exit.stage,
            "merged",
            f"Fusion merged it into row {kept.rowid} ({kept.title!r}): both have the key {kept.key!r} and the first "
            f"row seen keeps it. Its contributions ({own_words}) went into row {kept.rowid}'s score "
            f"{_fmt(kept.score)} (fused #{kept_pos}).{fate}",
            which,
            None,
            details,
        )
    cand = next((c for c in fusion.candidates if c.rowid == chunk.rowid), None)
    assert cand is not None
    score_words = f"RRF score {_fmt(cand.score)} = {_rrf_formula(cand, fusion.rrf_k)}"
    at = exit.get("position")
    if exit.reason == "beyond-pool":
        pool_size = exit.get("pool_size")
        return Explanation(
            chunk,
            exit.stage,
            "beyond-pool",
            f"Fused at #{at} of {len(fusion.candidates)} with {score_words}, but the candidate pool keeps "
            f"the first {pool_size} ({_pool_words(trace, params)}).",
            which,
            at,  # type: ignore[arg-type]
            {"fused_position": at, "pool_size": pool_size, "score": cand.score, "candidates": len(fusion.candidates)},
        )
    if exit.reason == "session-filter":
        allow_set = exit.get("allow_set") or ()
        assert isinstance(allow_set, (tuple, list)), exit  # the session filter records a sequence
        allow = tuple(allow_set)
        allowed = ", ".join(repr(s) for s in allow) or "(empty: only unattributed chunks)"
        return Explanation(
            chunk,
            exit.stage,
            "session-filter",
            f"Pooled at #{at}, then removed by the session filter: its session id {cand.session_id!r} is not "
            f"in the allow-set {allowed} (only '' and allowed ids pass).",
            which,
            at,  # type: ignore[arg-type]
            {"session_id": cand.session_id, "allow_set": list(allow), "pool_position": at},
        )
    if exit.reason == "trimmed":
        trim = run.trim
        assert trim is not None
        received = len(trim.kept) + len(trim.cut)
        if v.rerank == "before-trim" and run.rerank is not None:
            entry = next(e for e in run.rerank.entries if e.candidate.rowid == chunk.rowid)
            msg = (
                f"After the rerank (variant rerank=before-trim) it stood at #{at} of {received} with boost "
                f"{_fmt(entry.boost)}, but the trim keeps the first {trim.limit} (limit)."
            )
        else:
            msg = (
                f"Passed the session filter at #{at} of {received} ({score_words}), but the trim keeps the "
                f"first {trim.limit} (limit)."
            )
        return Explanation(
            chunk,
            exit.stage,
            "trimmed",
            msg,
            which,
            at,  # type: ignore[arg-type]
            {"position": at, "limit": trim.limit, "score": cand.score, "filtered": received},
        )
    # A stage without a story of its own here: its sentence and its data.
    words = sentence(exit)
    return Explanation(
        chunk,
        exit.stage,
        exit.reason,
        f"{words[:1].upper()}{words[1:]}.",
        which,
        at if isinstance(at, int) else None,
        exit.details,
    )


def _explain_returned(ctx: _Ctx, chunk: ChunkRef, position: int) -> Explanation:
    trace = ctx.trace
    run = trace.answering_run
    which = "fuzzy" if trace.layer == "rrf-fuzzy" else "first"
    prefix = "fuzzy:" if which == "fuzzy" else ""
    result = trace.final[position - 1]
    cand = result.candidate
    via = f" after typo correction to {trace.fuzzy.corrected_query!r}" if which == "fuzzy" else ""
    details: dict[str, Any] = {"position": position, "layer": trace.layer, "score": cand.score, "boost": result.boost}
    entry = None
    if run is not None and run.rerank is not None:
        entry = next((e for e in run.rerank.entries if e.candidate.rowid == chunk.rowid), None)
    if entry is not None and entry.new_position > entry.old_position:
        beaten = [
            e
            for e in run.rerank.entries  # type: ignore[union-attr]
            if e.new_position < entry.new_position and e.old_position > entry.old_position
        ]
        details.update(
            {
                "fused_position": entry.old_position,
                "rerank_position": entry.new_position,
                "boost_parts": {
                    "title": entry.title_boost,
                    "proximity": entry.proximity_boost,
                    "phrase": entry.phrase_boost,
                },
                "beaten_by": [
                    {
                        "rowid": e.candidate.rowid,
                        "title": e.candidate.title,
                        "boost": e.boost,
                        "title_boost": e.title_boost,
                        "proximity_boost": e.proximity_boost,
                        "phrase_boost": e.phrase_boost,
                        "fused_position": e.old_position,
                        "rerank_position": e.new_position,
                    }
                    for e in beaten
                ],
            }
        )
        by = "; ".join(
            f"#{e.new_position} {e.candidate.title!r} (fused #{e.old_position}) boost {_fmt(e.boost)} = title "
            f"{_fmt(e.title_boost)} + proximity {_fmt(e.proximity_boost)} + phrase {_fmt(e.phrase_boost)}"
            for e in beaten
        )
        return Explanation(
            chunk,
            prefix + "rerank",
            "outranked",
            f"Returned at #{position} of {len(trace.final)} (layer {trace.layer}){via}, but the rerank moved it down from fused "
            f"#{entry.old_position}: its boost {_fmt(entry.boost)} (title {_fmt(entry.title_boost)} + proximity "
            f"{_fmt(entry.proximity_boost)} + phrase {_fmt(entry.phrase_boost)}) lost to {by}.",
            which,
            position,
            details,
        )
    boost = "" if result.boost is None else f", rerank boost {_fmt(result.boost)}"
    return Explanation(
        chunk,
        prefix + "final",
        "returned",
        f"Returned at #{position} of {len(trace.final)} (layer {trace.layer}){via}: RRF score {_fmt(cand.score)}{boost}.",
        which,
        position,
        details,
    )


def _source_excluded(ctx: _Ctx, chunk: ChunkRef) -> bool:
    p = ctx.params
    if not p.source:
        return False
    if p.source_match == "exact":
        return chunk.source != p.source
    row = ctx.conn.execute("SELECT ? LIKE ? ESCAPE '\\'", (chunk.source, like_pattern(p.source))).fetchone()
    return not row[0]


def _fuzzy_check(ctx: _Ctx, chunk: ChunkRef, base: Explanation) -> Explanation | None:
    """``fuzzy-not-attempted`` when the corrected query would match ``chunk``
    but the fallback did not run (or ran only as a shadow)."""
    trace, params = ctx.trace, ctx.params
    fz = trace.fuzzy
    if trace.layer == "rrf-fuzzy" or (fz.ran and not fz.shadow):
        return None
    words = list(fz.words) if fz.ran else fuzzy_words(params.query)
    if fz.ran:
        corrected, corrections = fz.corrected_query, fz.corrections
    else:
        if not ctx.store.schema.has_vocabulary or not words:
            return None
        corrections = tuple(correct_word(ctx.conn, w) for w in words)
        corrected = " ".join(c.corrected or c.word for c in corrections)
    if not words or not corrected or corrected == " ".join(words):
        return None
    full = ctx.full_ranks(corrected, chunk.rowid)
    matched = {n: i for n, i in full.items() if i and "rank" in i}
    if not matched:
        return None
    fixes = ", ".join(f"{c.word} → {c.corrected}" for c in corrections if c.corrected)
    where = "; ".join(_describe_full(n, full[n]) for n in RETRIEVERS)
    found = len(trace.first.filter.kept)
    if params.variant.fuzzy == "never":
        why = "the variant sets fuzzy=never, so typo correction is disabled"
    elif fz.shadow:
        why = (
            f"it ran only as a shadow (variant fuzzy=always): the first pass found {plural(found, 'result')}, "
            "so the answer stays the first pass's"
        )
    else:
        why = (
            f"the first pass already found {plural(found, 'result')} and the fallback only runs when it finds "
            "nothing (a weak first match blocks typo correction)"
        )
    details = dict(base.details)
    details.update(
        {
            "corrected_query": corrected,
            "corrections": fixes,
            "corrected_ranks": full,
            "first_pass_results": found,
            "shadow": fz.shadow,
        }
    )
    return Explanation(
        chunk,
        "fuzzy",
        "fuzzy-not-attempted",
        f"No query term is indexed in it, but the typo correction {fixes} gives {corrected!r}, which matches it "
        f"({where}). Fuzzy never ran for the answer: {why}.",
        "first",
        None,
        details,
    )


def _explain_chunk(ctx: _Ctx, chunk: ChunkRef) -> Explanation:
    trace, params = ctx.trace, ctx.params
    final_pos = next((r.position for r in trace.final if r.candidate.rowid == chunk.rowid), None)
    if final_pos is not None:
        return _explain_returned(ctx, chunk, final_pos)
    if _source_excluded(ctx, chunk):
        mode = "equal to" if params.source_match == "exact" else "containing"
        return Explanation(
            chunk,
            "retrieve",
            "source-filter",
            f"The source filter keeps labels {mode} {params.source!r}; this chunk's source is {chunk.source!r}.",
            "first",
            None,
            {"source": chunk.source, "filter": params.source, "source_match": params.source_match},
        )
    if params.content_type and chunk.content_type != params.content_type:
        return Explanation(
            chunk,
            "retrieve",
            "content-type-filter",
            f"The content-type filter keeps only {params.content_type} chunks; this one is {chunk.content_type}.",
            "first",
            None,
            {"content_type": chunk.content_type, "filter": params.content_type},
        )
    runs: list[tuple[str, Run]] = []
    rerun = trace.fuzzy.rerun if not trace.fuzzy.shadow else None
    if trace.layer == "rrf-fuzzy" and rerun is not None:
        runs = [("fuzzy", rerun), ("first", trace.first)]
    else:
        runs = [("first", trace.first)] + ([("fuzzy", rerun)] if rerun is not None else [])
    best: Explanation | None = None
    for which, run in runs:
        exp = _explain_run(ctx, chunk, run, which)
        if best is None:
            best = exp
            continue
        # Deeper wins; at equal depth a specific reason beats "no term matched"
        # (e.g. a skipped retriever on the first pass vs the re-run's terms).
        d, best_d = depth(exp.stage), depth(best.stage)
        if d > best_d or (d == best_d and best.reason == "no-term" and exp.reason != "no-term"):
            best = exp
    assert best is not None
    if best.reason == "no-term" and best.run == "first":
        return _fuzzy_check(ctx, chunk, best) or best
    return best


def why_not(
    store: Store,
    params: SearchParams,
    *,
    key: str | None = None,
    rowid: int | None = None,
    trace: Trace | None = None,
    conn: sql.Connection | None = None,
) -> list[Explanation]:
    """Explain where a chunk left the pipeline for ``params`` (or where it
    ended up in the answer).

    Name the chunk by its ``source::title`` key or by its row id. A key that
    several chunks share (a fusion-key collision) names all of them: each
    gets its own explanation, in row id order.

    Args:
        store: an open store.
        params: the search (any variant).
        key: ``source + "::" + title`` of the chunk(s).
        rowid: the chunk's FTS5 row id.
        trace: the trace of ``params`` if you already have it (saves a
            search); must have been produced with these ``params``.
        conn: a connection from ``store.connect()`` when called from another
            thread; defaults to the store's own connection.

    Returns:
        One :class:`Explanation` per chunk: its ``stage``, ``reason`` (a code
        from :data:`REASONS`) and ``message``. Explaining a chunk runs each
        retriever once more without a candidate cap (to find its full bm25
        rank) and may compute typo corrections; nothing is written.

    Raises:
        ValueError: neither or both of ``key`` and ``rowid``, or a ``trace``
            made with other parameters.
        ChunkNotFoundError: no chunk has that key or row id.
        CorruptStoreError: the store's file is damaged.
        StoreError: the store cannot be read otherwise.
    """
    if trace is not None and trace.params != params:
        raise ValueError("the trace given was produced with other search parameters")

    def explain(given: sql.Connection | None) -> list[Explanation]:
        c = given or store.conn
        chunks = find_chunks(store, key=key, rowid=rowid, conn=c)
        t = trace if trace is not None else search(store, params, conn=given)
        with store.using(c):
            ctx = _Ctx(store, c, params, t)
            return [_explain_chunk(ctx, ch) for ch in chunks]

    # retried while another process writing the store breaks a read (Store.reading)
    return store.reading(explain, conn, action="explain a chunk of")
