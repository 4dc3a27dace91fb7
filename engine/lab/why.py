""" "Why is chunk X missing?": where a chunk left the pipeline, and why.

:func:`why_not` runs (or takes) a trace and follows one chunk through it.
Each answer is an :class:`~engine.pipeline.hooks.Explanation`: a stage id,
a stable ``reason`` code (:data:`REASONS`) and a plain-words ``message``
with the numbers. The stories are the stages' own (their ``explain``,
``kept`` and ``absent`` hooks); this module finds which one applies:

* a returned chunk: the answering pass's ``kept`` hooks in table order
  (``outranked`` when the rerank moved it down, else ``returned``);
* a chunk a retriever returned: where its path left, read by
  :func:`engine.pipeline.paths.fate` (the deepest exit), told by that
  stage's ``explain`` hook or, without one, its exit's sentence and data;
* a chunk no retriever returned: the ``absent`` hooks in table order, each
  given the story so far (the filters, the uncapped runs, the typo correction).

Stories from the fuzzy re-run say so and name the corrected query.
Positions are **1-based**. :func:`fate` is the one answer to "where did
chunk X go" for every view (the flow, the pin, the browser).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from engine.pipeline.candidates import ChunkRef, Exit, FinalResult
from engine.pipeline.hooks import Explanation, PassView
from engine.pipeline.passes import Run
from engine.pipeline.paths import REASONS as PATH_REASONS
from engine.pipeline.paths import Fate, data_names, passes, sentence
from engine.pipeline.paths import fate as path_fate
from engine.pipeline.params import SearchParams
from engine.pipeline.run import search
from engine.pipeline.stages.retrieve import RETRIEVERS, Request, RetrieverRun, retrieve
from engine.pipeline.table import STAGES, stage
from engine.pipeline.trace import Trace
from engine.store import sql
from engine.store.store import Store

__all__ = ["REASONS", "ChunkNotFoundError", "ChunkRef", "Explanation", "fate", "find_chunks", "why_not"]

#: Every reason code :func:`why_not` gives, in pipeline order: the stages'
#: exit codes, then the codes of the stories of a returned chunk.
REASONS: tuple[str, ...] = tuple(c for s in STAGES for c, r in s.reasons.items() if r.told) + tuple(
    c for s in STAGES for c in s.answers
)


class ChunkNotFoundError(LookupError):
    """No chunk has the requested row id or ``source::title`` key."""


# ─── finding the chunk ───────────────────────────────────────────────────


def _rows_to_refs(rows: list[Any]) -> list[ChunkRef]:
    dec = sql.decode
    return [
        ChunkRef(int(r[0]), dec(r[1]) or "", dec(r[2]) or "", r[3] or "prose", dec(r[4]) or "", dec(r[5]) or "")
        for r in rows
    ]


def _rowid_not_found(c: sql.Connection, rowid: int) -> str:
    """Why no chunk could be explained for ``rowid``, as it is: a chunk
    whose source row is missing (the retrievers join on ``sources``: it can
    never be returned), no such row id, or no chunk at all."""
    orphan = c.execute(
        f"SELECT chunks.source_id, {sql.text('chunks.title')} FROM chunks WHERE chunks.rowid = ?", (rowid,)
    ).fetchone()
    if orphan is not None:
        sid = orphan[0]
        sid = int(sid) if isinstance(sid, float) and sid.is_integer() else sid  # the FTS column keeps what was stored
        return (
            f"chunk rowid {rowid} ({sql.decode(orphan[1])!r}) has no source row (source_id {sid} is not in "
            "sources): the retrievers join chunks on sources, so it can never be returned "
            "(rankscope doctor lists it among the orphan chunks)"
        )
    total, low, high = c.execute("SELECT COUNT(*), MIN(rowid), MAX(rowid) FROM chunks").fetchone()
    if not total:
        return f"no chunk has rowid {rowid}: the store has no chunks"
    noun = "chunk" if total == 1 else "chunks"
    return f"no chunk has rowid {rowid} (the store has {total} {noun}, rowids {low}..{high})"


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
                raise ChunkNotFoundError(_rowid_not_found(c, rowid))
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


class _Ctx:
    """One :func:`why_not` call: what the stages' hooks may ask (:class:`~engine.pipeline.hooks.Asking`)."""

    def __init__(self, store: Store, conn: sql.Connection, trace: Trace) -> None:
        self.store, self.conn, self.trace = store, conn, trace
        self.params: SearchParams = trace.params
        self.pool_size, self.fts_limit = trace.pool_size, trace.fts_limit
        self.first: PassView = trace.first
        self._full: dict[tuple[str, str], RetrieverRun] = {}
        self._total: int | None = None
        self._following = False

    def record(self, stage_id: str) -> object | None:
        return self.trace.record(stage_id)

    def passes(self) -> tuple[PassView, ...]:
        return passes(self.trace)

    def _full_run(self, retriever: str, query: str) -> RetrieverRun:
        """The retriever's run for ``query`` with every match (no candidate cap)."""
        if (retriever, query) not in self._full:
            if self._total is None:
                self._total = int(self.conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0])
            request = Request.of(retriever, query, max(self._total, 1), self.params)
            self._full[(retriever, query)] = retrieve(self.conn, self.store.schema, request)
        return self._full[(retriever, query)]

    def full_ranks(self, query: str, rowid: int) -> dict[str, dict[str, object] | None]:
        out: dict[str, dict[str, object] | None] = {}
        for name in RETRIEVERS:
            run = self._full_run(name, query)
            if run.skipped or run.error:
                out[name] = {"skipped": run.skipped or run.error}
                continue
            hit = next((h for h in run.hits if h.rowid == rowid), None)
            out[name] = None if hit is None else {"rank": hit.rank, "bm25": hit.bm25, "matches": len(run.hits)}
        return out

    def result(self, rowid: int) -> FinalResult | None:
        return next((r for r in self.trace.final if r.candidate.rowid == rowid), None)

    def returned_words(self, position: int) -> str:
        t = self.trace
        via = f" after typo correction to {t.fuzzy.corrected_query!r}" if t.layer == "rrf-fuzzy" else ""
        return f"Returned at #{position} of {len(t.final)} (layer {t.layer}){via}"

    def follow(self, chunk: ChunkRef, run: PassView) -> Explanation | None:
        if self._following:
            return None
        self._following = True
        try:
            result = self.result(chunk.rowid)
            if result is not None:
                return _kept(self, chunk, result.position, answer_only=True)
            assert isinstance(run, Run)
            return _left(self, chunk, run)
        finally:
            self._following = False


def _kept(ctx: _Ctx, chunk: ChunkRef, position: int, answer_only: bool = False) -> Explanation:
    """The story of a returned chunk: the answering pass's ``kept`` hooks in
    table order (``answer_only``: only the answer stage's)."""
    run = ctx.trace.answering_run
    assert run is not None
    for s in STAGES:
        if s.kept is not None and (s.kind == "answer" or not answer_only):
            told = s.kept(ctx, run, chunk, position)
            if told is not None:
                return told
    raise AssertionError(f"no stage tells the story of returned row {chunk.rowid}")


def _left(ctx: _Ctx, chunk: ChunkRef, run: Run) -> Explanation:
    """Where ``chunk`` left ``run`` (it has a path there and is not in the answer)."""
    path = run.path(chunk.rowid)
    assert path is not None and path.exit is not None, f"row {chunk.rowid} did not leave the {run.pass_name} pass"
    exit = path.exit
    spec = stage(exit.stage)
    if spec.explain is not None:
        return spec.explain(ctx, run, exit, chunk)
    words = sentence(exit)  # a stage without a story of its own: its sentence and its data
    at = exit.get("position")
    return Explanation(
        chunk,
        exit.stage,
        exit.reason,
        f"{words[:1].upper()}{words[1:]}.",
        run.pass_name,
        at if isinstance(at, int) else None,
        exit.details,
    )


def _in_rerun(ctx: _Ctx, exp: Explanation) -> Explanation:
    """A story from the fuzzy re-run says so and names the corrected query."""
    if exp.run != "fuzzy" or ctx.trace.fuzzy.rerun is None:
        return exp
    lead = f"In the fuzzy re-run (corrected query {ctx.trace.fuzzy.rerun.query!r}): "
    return replace(exp, message=lead + exp.message[:1].lower() + exp.message[1:])


def _explain_chunk(ctx: _Ctx, chunk: ChunkRef) -> Explanation:
    result = ctx.result(chunk.rowid)
    if result is not None:
        return _kept(ctx, chunk, result.position)
    found = path_fate(ctx.trace, chunk.rowid)
    if found is not None:
        run = next(r for r in ctx.trace.runs if r.pass_name == found.pass_name)
        return _in_rerun(ctx, _left(ctx, chunk, run))
    told: Explanation | None = None
    for s in STAGES:
        if s.absent is not None:
            told = s.absent(ctx, chunk, told) or told
    assert told is not None, f"no stage tells why row {chunk.rowid} was not retrieved"
    return _in_rerun(ctx, told)


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
    ended up in the answer), named by its ``source::title`` key (every chunk
    sharing it, in row id order) or its row id.

    Args:
        trace: the trace of ``params`` if you have it (saves a search).
        conn: a connection from ``store.connect()`` when called from another
            thread; defaults to the store's own connection.

    Returns:
        One :class:`~engine.pipeline.hooks.Explanation` per chunk. A chunk no
        retriever returned is looked for further: uncapped retriever runs,
        typo corrections; nothing is written.

    Raises:
        ValueError: neither or both of ``key`` and ``rowid``, or a ``trace``
            made with other parameters.
        ChunkNotFoundError: no chunk has that key or row id.
        CorruptStoreError / StoreError: the store cannot be read.
    """
    if trace is not None and trace.params != params:
        raise ValueError("the trace given was produced with other search parameters")

    def explain(given: sql.Connection | None) -> list[Explanation]:
        c = given or store.conn
        chunks = find_chunks(store, key=key, rowid=rowid, conn=c)
        t = trace if trace is not None else search(store, params, conn=given)
        with store.using(c):
            ctx = _Ctx(store, c, t)
            return [_explain_chunk(ctx, ch) for ch in chunks]

    # retried while another process writing the store breaks a read (Store.reading)
    told: list[Explanation] = store.reading(explain, conn, action="explain a chunk of")
    return told


def exit_of_explanation(exp: Explanation) -> Exit | None:
    """The :class:`~engine.pipeline.candidates.Exit` a why-not explanation names
    (``None`` when the chunk was returned); data named as its stage declares
    (:func:`engine.pipeline.paths.data_names`), lists as tuples."""
    if exp.returned:
        return None
    names = data_names(exp.reason) if exp.reason in PATH_REASONS else tuple(exp.details)
    data = tuple((n, tuple(v) if isinstance(v, list) else v) for n, v in ((n, exp.details.get(n)) for n in names))
    return Exit(exp.stage, exp.reason, data)


def fate(store: Store, trace: Trace, rowid: int, conn: sql.Connection | None = None) -> Fate:
    """Where chunk ``rowid`` went in ``trace``: :func:`engine.pipeline.paths.fate`
    when a retriever returned it (no store access), else why-not's exit.

    Raises:
        ChunkNotFoundError: no chunk has that row id.
        CorruptStoreError / StoreError: the store cannot be read.
    """
    known = path_fate(trace, rowid)
    if known is not None:
        return known
    [exp] = why_not(store, trace.params, rowid=rowid, trace=trace, conn=conn)
    exit = exit_of_explanation(exp)
    return Fate(rowid, exp.position if exit is None else None, exit, exp.run)
