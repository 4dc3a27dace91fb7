"""What-if lab subcommands: ``compare``, ``why``, ``explain`` and ``doctor``.

Plain functions, registered in :data:`tui.cli.main.COMMANDS`; each renders
the description of :mod:`tui.present.describe` (the browser's compare, why and doctor
screens show the same one). Rich only, never Textual.

* ``rankscope compare QUERY --db DB --b SPEC [--a SPEC] [filters] [--json]``
* ``rankscope compare --queries FILE --db DB --b SPEC [--a SPEC] [--json]``
* ``rankscope why QUERY --db DB (--chunk SOURCE::TITLE | --rowid N) [filters] [--variant SPEC] [--json]``
* ``rankscope explain QUERY --db DB (--chunk ID | --rowid N) [--vs ID | --vs-rowid N] [filters] [--json]``
* ``rankscope doctor --db DB [--json] [--examples N]``

A variant SPEC is ``key=value`` pairs joined by commas (see
:func:`engine.lab.compare.parse_variant`), or ``reference``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, List, Optional

import typer
from rich.console import Group
from rich.text import Text

from engine.pipeline.variants import SPEC_KEYS, parse_variant, variant_spec
from engine.lab.compare import (
    Comparison,
    SetComparison,
    compare,
    compare_set,
    comparison_to_dict,
    set_comparison_to_dict,
)
from engine.lab.divergence import check_k, check_p
from engine.lab.doctor import DoctorReport, check_integrity, diagnose
from engine.pipeline.variants import Variant
from engine.store.errors import CorruptStoreError, StoreError
from engine.store.store import Store
from engine.lab.counterfactual import Counterfactual
from engine.lab.counterfactual import would_return_with
from engine.pipeline.run import search
from engine.pipeline.runcache import RunCache
from engine.lab.why import ChunkNotFoundError, Explanation, find_chunks, why_not
from engine.lab.explain import explain_chunk, explain_versus
from engine.store.chunkids import chunk_ids

from .base import (
    READS_QUERIES,
    ContentTypeFilter,
    StorePath,
    Limit,
    OptionalLimit,
    search_db_option,
    SessionFilter,
    SourceExact,
    SourceFilter,
    console,
    fail,
    make_params,
    open_store,
    warn_unknown_sessions,
    write_json,
    warn_query_file_sessions,
)
from tui.present.describe import (
    counts_line,
    describe_comparison,
    describe_explanation,
    describe_report,
    line_text,
    to_rich,
)
from tui.present.anatomy import describe_anatomy, describe_versus
from tui.present.cut import clip
from tui.present.render import plain
from tui.present.tablefit import Cell, Column, Fitted, Table
from .search import load_queries

SPEC_HELP = (
    "Variant spec: comma-separated key=value, e.g. key=rowid,rrf_k=10 (keys: "
    + ", ".join(SPEC_KEYS)
    + "), or 'reference'."
)


#: The options ``why`` and ``explain`` share: the query, the chunk's row id, a variant.
QueryText = Annotated[str, typer.Argument(help="Query text. A query that begins with '-' goes after '--'.")]
ChunkRowid = Annotated[Optional[int], typer.Option("--rowid", help="The chunk's row id.")]
VariantSpec = Annotated[str, typer.Option("--variant", help=SPEC_HELP)]


def variant_option(spec: str, option: str) -> Variant:
    """Parse a variant spec given to ``option``, turning ValueError into CliError."""
    try:
        return parse_variant(spec)
    except ValueError as exc:
        fail(f"{option}: {exc}")
    raise AssertionError("unreachable")


def _opt(value: Optional[float], fmt: str = "{:.5f}") -> str:
    return "—" if value is None else fmt.format(value)


# ─── compare ─────────────────────────────────────────────────────────────


def comparison_renderable(cmp: Comparison, store_path: str | None = None) -> Group:
    """One :class:`~engine.lab.compare.Comparison` (the description the
    browser's compare screen shows too: :func:`tui.present.describe.describe_comparison`),
    with a warning per run whose retriever failed (``store_path`` goes into
    its check command)."""
    return to_rich(describe_comparison(cmp, store_path).as_description(), fit=True)


def set_comparison_renderable(sc: SetComparison) -> Group:
    """Rich rendering of a :class:`~engine.lab.compare.SetComparison`: one row
    per query, a totals row, the mean overlap (ids and numbers never cut:
    :mod:`tui.present.tablefit`)."""
    cols = [Column("id", "key"), Column("query", "free", min_width=8, max_width=32), Column("layer A→B")] + [
        Column(c, justify="right") for c in ("A", "B", "↑", "↓", "=", "gone", "new", "overlap", "RBO", f"J@{sc.k}")
    ]
    rows: list[list[Cell]] = []
    for q in sc.queries:
        c = q.counts
        layer = q.layer_a if q.layer_a == q.layer_b else f"{q.layer_a}→{q.layer_b}"
        rows.append(
            [
                plain(q.id),
                plain(clip(q.query, 60)),
                Text(layer, style="" if q.layer_a == q.layer_b else "yellow"),
                str(q.size_a),
                str(q.size_b),
                str(c.improved),
                str(c.worsened),
                str(c.unchanged),
                str(c.only_in_a),
                str(c.only_in_b),
                Text(f"{q.overlap:.2f}", style="" if q.overlap == 1 else "yellow"),
                Text(f"{q.divergence.rbo:.2f}", style="" if q.divergence.rbo == 1 else "yellow"),
                Text(f"{q.divergence.jaccard:.2f}", style="" if q.divergence.jaccard == 1 else "yellow"),
            ]
        )
    c = sc.totals
    rows.append(
        [
            "total",
            f"{len(sc.queries)} queries",
            f"{sc.layer_changes} differ",
            "",
            "",
            str(c.improved),
            str(c.worsened),
            str(c.unchanged),
            str(c.only_in_a),
            str(c.only_in_b),
            _opt(sc.mean_overlap, "{:.2f}"),
            _opt(_mean([q.divergence.rbo for q in sc.queries]), "{:.2f}"),
            _opt(_mean([q.divergence.jaccard for q in sc.queries]), "{:.2f}"),
        ]
    )
    t = Fitted(
        Table(plain(f"A {variant_spec(sc.variant_a)}  vs  B {variant_spec(sc.variant_b)}"), cols, rows),
        sections=[len(rows) - 1],
    )
    summary = Text(
        f"{sc.changed_queries} of {len(sc.queries)} queries changed ({sc.layer_changes} changed layer); "
        + line_text(counts_line(sc.totals, sc.mean_overlap, mean=True)).plain
    )
    legend = Text(
        rbo_legend(sc.p, sc.k) + "; 1.00 = the same list. --sort divergence lists the most changed first.",
        style="dim",
    )
    return Group(t, summary, legend)


def rbo_legend(p: float, k: int, lists: str = "the final lists") -> str:
    """What the RBO and J@k columns mean (:mod:`engine.lab.divergence`), for
    persistence ``p`` and depth ``k``; the caller ends the sentence."""
    return (
        f"RBO: rank-biased overlap of {lists} (Webber et al. 2010, extrapolated, p = {p:g}); "
        f"J@{k}: Jaccard of their top {k}"
    )


def _mean(values: list[float]) -> Optional[float]:
    return sum(values) / len(values) if values else None


def compare_cmd(
    query: Optional[str] = typer.Argument(
        None, help="Query text (omit with --queries). A query that begins with '-' goes after '--'."
    ),
    db: StorePath = search_db_option(),
    b: str = typer.Option(..., "--b", help="Variant B. " + SPEC_HELP),
    a: str = typer.Option("reference", "--a", help="Variant A (default: the reference)."),
    queries: Annotated[Optional[Path], READS_QUERIES] = typer.Option(
        None, "--queries", help="Compare every query of this file (queries.json format) instead."
    ),
    limit: OptionalLimit = None,
    source: SourceFilter = None,
    source_exact: SourceExact = False,
    content_type: ContentTypeFilter = None,
    session: SessionFilter = None,
    sort: str = typer.Option(
        "file",
        "--sort",
        help="With --queries: file order, or divergence (most changed final lists first: lowest RBO, then Jaccard).",
    ),
    rbo_p: float = typer.Option(0.9, "--rbo-p", help="Persistence p of rank-biased overlap (0 < p < 1)."),
    depth: int = typer.Option(10, "--depth", help="k of Jaccard@k."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON (a single query includes both traces)."),
) -> None:
    """Run a query (or a query file) under two pipeline variants, A and B, side by side.

    Each chunk of either answer gets its position in A and B and a marker:
    ↑/↓ (moved up/down in B), = (same), new (only in B), gone (only in A).

    Note: without --session the candidate pool equals --limit, so
    rerank=before-trim only differs from the reference together with a
    larger pool (e.g. --b rerank=before-trim,pool=20).
    """
    va, vb = variant_option(a, "--a"), variant_option(b, "--b")
    if (query is None) == (queries is None):
        fail("give either a QUERY or --queries FILE (not both, not neither)")
    if queries is None and sort != "file":
        fail("--sort orders the queries of --queries FILE")
    if queries is not None:
        given = [
            name
            for name, value in (
                ("--limit", limit),
                ("--source", source),
                ("--content-type", content_type),
                ("--session", session),
            )
            if value
        ] + (["--source-exact"] if source_exact else [])
        if given:
            fail(f"{', '.join(given)} apply to a single QUERY; with --queries each entry carries its own")
        if sort not in ("file", "divergence"):
            fail(f"--sort must be file or divergence; got {sort!r}")
        try:
            check_p(rbo_p)
        except ValueError as exc:
            fail(f"--rbo-p: {exc}")
        try:
            check_k(depth)
        except ValueError as exc:
            fail(f"--depth: {exc}")
        entries = load_queries(queries)
        with open_store(db) as store:
            warn_query_file_sessions(store, entries)
            try:
                sc = compare_set(store, entries, va, vb, rbo_p, depth)
            except ValueError as exc:
                fail(str(exc))
        if sort == "divergence":
            sc = sc.most_changed_first()
        if as_json:
            write_json(set_comparison_to_dict(sc))
        else:
            console.print(set_comparison_renderable(sc))
        return
    assert query is not None
    n = 3 if limit is None else limit
    pa = make_params(query, n, source, source_exact, content_type, session, variant=va)
    pb = make_params(query, n, source, source_exact, content_type, session, variant=vb)
    with open_store(db) as store:
        warn_unknown_sessions(store, session)
        cmp = compare(store, pa, pb)
    if as_json:
        write_json(comparison_to_dict(cmp))
    else:
        console.print(comparison_renderable(cmp, str(db)))


# ─── why ─────────────────────────────────────────────────────────────────

#: SQLite row ids are signed 64-bit integers.
ROWID_MIN, ROWID_MAX = -(2**63), 2**63 - 1


def explanation_renderable(e: Explanation, cf: Counterfactual | None = None) -> Group:
    """One :class:`~engine.lab.why.Explanation` and the change that returns it
    (the description the browser's why screen shows too:
    :func:`tui.present.describe.describe_explanation`)."""
    return to_rich(describe_explanation(e, cf))


def why_cmd(
    query: QueryText,
    db: StorePath = search_db_option(),
    chunk: Optional[str] = typer.Option(
        None, "--chunk", help="The chunk's SOURCE::TITLE key (every chunk sharing it is explained)."
    ),
    rowid: ChunkRowid = None,
    limit: Limit = 3,
    source: SourceFilter = None,
    source_exact: SourceExact = False,
    content_type: ContentTypeFilter = None,
    session: SessionFilter = None,
    variant: VariantSpec = "reference",
    as_json: bool = typer.Option(False, "--json", help="Print the explanations as JSON."),
    agent: bool = typer.Option(
        False,
        "--agent",
        help="Ask as the agent would: QUERY is one ctx_search call (--limit, --source, --content-type are its "
        "parameters, --session a hand-picked allow-set); give the smallest change to that call that delivers the "
        "chunk, found by re-running the call.",
    ),
) -> None:
    """Explain why a chunk is (or is not) in the answer: the stage where it
    left the pipeline, a reason code and the numbers, and the smallest single
    change that would return it (found by re-running the pipeline)."""
    if (chunk is None) == (rowid is None):
        fail("name the chunk with either --chunk SOURCE::TITLE or --rowid N (exactly one)")
    if rowid is not None and not ROWID_MIN <= rowid <= ROWID_MAX:
        fail(f"--rowid {rowid} is outside SQLite's row id range ({ROWID_MIN} to {ROWID_MAX}): no chunk has it")
    if agent:
        why_agent(query, db, chunk, rowid, limit, source, source_exact, content_type, session, variant, as_json)
        return
    params = make_params(
        query, limit, source, source_exact, content_type, session, variant=variant_option(variant, "--variant")
    )
    with open_store(db) as store:
        warn_unknown_sessions(store, session)
        try:
            trace = search(store, params)
            explanations = why_not(store, params, key=chunk, rowid=rowid, trace=trace)
        except (ChunkNotFoundError, ValueError) as exc:
            fail(str(exc))
        runs = RunCache(store)
        changes = [would_return_with(store, params, rowid=e.chunk.rowid, trace=trace, runs=runs) for e in explanations]
    if as_json:
        write_json(
            {
                "query": query,
                "variant": variant_spec(params.variant),
                "explanations": [
                    dict(e.to_dict(), would_return_with=cf.would_return_with(), counterfactual=cf.to_dict())
                    for e, cf in zip(explanations, changes)
                ],
            }
        )
        return
    for i, (e, cf) in enumerate(zip(explanations, changes)):
        if i:
            console.print()
        console.print(explanation_renderable(e, cf))


def why_agent(
    query: str,
    db: Path,
    chunk: Optional[str],
    rowid: Optional[int],
    limit: int,
    source: Optional[str],
    source_exact: bool,
    content_type: Optional[str],
    session: Optional[List[str]],
    variant: str,
    as_json: bool,
) -> None:
    """``why --agent``: QUERY as one ``ctx_search`` call; what the agent should have asked."""
    from engine.agent import AgentContext, AgentViewError, ThrottleConfig
    from engine.agent.advice import should_have_asked

    from .agent import chunk_rowids, write_advice

    if source_exact:
        fail("--source-exact is not a ctx_search parameter (its source filter is always a LIKE match)")
    if variant != "reference":
        fail("--variant: ctx_search runs the reference pipeline; --agent takes no variant")
    if content_type is not None and content_type not in ("code", "prose"):
        fail(f"--content-type must be code or prose; got {content_type!r}")
    arguments: dict = {"queries": [query], "limit": limit}
    if source is not None:
        arguments["source"] = source
    if content_type is not None:
        arguments["contentType"] = content_type
    context = AgentContext(allow_sessions=tuple(session) if session else None, throttle=ThrottleConfig.from_env())
    with open_store(db) as store:
        warn_unknown_sessions(store, session)
        rowids = chunk_rowids(store, chunk if chunk is not None else str(rowid), "--chunk" if chunk else "--rowid")
        try:
            advices = [should_have_asked(store, arguments, context, rowid=r) for r in rowids]
        except AgentViewError as exc:
            fail(str(exc))
    write_advice(advices, as_json)


# ─── doctor ──────────────────────────────────────────────────────────────


def doctor_renderable(report: DoctorReport, examples: int = 5) -> Group:
    """A :class:`~engine.lab.doctor.DoctorReport` (the description the browser's
    doctor screen shows too: :func:`tui.present.describe.describe_report`); each
    table shows at most ``examples`` rows."""
    return to_rich(describe_report(report), max_rows=examples, fit=True)


def doctor_cmd(
    db: StorePath = typer.Option(..., "--db", help="Store to inspect (opened read-only; nothing is refreshed)."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
    examples: int = typer.Option(5, "--examples", help="Rows shown per list in the human report."),
    quick: bool = typer.Option(
        False,
        "--quick",
        help=(
            "Skip the integrity checks (they copy the store to a temporary folder and read all of it); "
            "a store that cannot be read is still reported damaged (exit status 1)."
        ),
    ),
) -> None:
    """Diagnose a store: damage (SQLite's and FTS5's integrity checks, on a
    private copy), fusion-key collisions, oversized chunks, Untitled titles,
    wrong source counts, vocabulary, stale file-backed sources.

    Exit status 1 when the store is damaged (even one that cannot be
    opened: the integrity checks still run), else 0.
    """
    if examples < 0:
        fail(f"--examples must be 0 or more; got {examples}")
    try:
        store = Store.open_readonly(db)
    except CorruptStoreError as exc:
        checks = () if quick else check_integrity(str(db))
        report = DoctorReport.unreadable(str(db), "schema unknown", exc.reason, checks)
    except StoreError as exc:
        fail(str(exc))
    else:
        with store:
            try:
                report = diagnose(store, integrity=not quick)
            except CorruptStoreError as exc:  # --quick: no integrity checks, the damage is the reading's
                report = DoctorReport.unreadable(str(db), store.schema.generation, exc.reason, ())
    if as_json:
        write_json(report.to_dict())
    else:
        console.print(doctor_renderable(report, examples))
    if report.damaged:
        raise typer.Exit(1)


# ─── explain ─────────────────────────────────────────────────────────────


def _rowid_of(
    store: Store, chunk_id: Optional[str], rowid: Optional[int], option: str, rowid_option: str
) -> Optional[int]:
    """The row id named by a chunk id (given with ``option``, ``--chunk``)
    or a row id (given with ``rowid_option``, ``--rowid``)."""
    if rowid is not None:
        if not ROWID_MIN <= rowid <= ROWID_MAX:
            fail(f"{rowid_option} {rowid} is outside SQLite's row id range ({ROWID_MIN} to {ROWID_MAX})")
        try:
            find_chunks(store, rowid=rowid)
        except ChunkNotFoundError as exc:
            fail(f"{rowid_option}: {exc}")
        return rowid
    if chunk_id is None:
        return None
    found = chunk_ids(store).by_id.get(chunk_id)
    if found is None:
        try:
            find_chunks(store, key=chunk_id)  # its error names the source's titles
        except ChunkNotFoundError as exc:
            fail(f"{option} {chunk_id!r}: {exc}")
        fail(f"{option}: no chunk has id {chunk_id!r} (chunk ids: SOURCE::TITLE, then #2, #3 for repeats)")
    return found


def explain_cmd(
    query: QueryText,
    db: StorePath = search_db_option(),
    chunk: Optional[str] = typer.Option(
        None, "--chunk", help="The chunk's id: SOURCE::TITLE, or SOURCE::TITLE#2 for a later chunk sharing it."
    ),
    rowid: ChunkRowid = None,
    vs: Optional[str] = typer.Option(
        None, "--vs", help="Compare with this chunk (its id): why is one above the other?"
    ),
    vs_rowid: Optional[int] = typer.Option(None, "--vs-rowid", help="Compare with the chunk of this row id."),
    limit: Limit = 3,
    source: SourceFilter = None,
    source_exact: SourceExact = False,
    content_type: ContentTypeFilter = None,
    session: SessionFilter = None,
    variant: VariantSpec = "reference",
    as_json: bool = typer.Option(
        False, "--json", help="Print the anatomy as JSON (schema: README, 'Explain a score')."
    ),
) -> None:
    """Explain a chunk's score: its bm25 in each retriever phrase by phrase
    (rows matching, idf, title and content hits, each phrase's part: they add
    up to FTS5's bm25() exactly) and its position at every stage. With --vs,
    why one chunk is above the other: the stage that decided it, in numbers,
    and the one parameter change that would flip them (found by re-running)."""
    if (chunk is None) == (rowid is None):
        fail("name the chunk with either --chunk ID or --rowid N (exactly one)")
    if vs is not None and vs_rowid is not None:
        fail("name the other chunk with either --vs ID or --vs-rowid N (not both)")
    params = make_params(
        query, limit, source, source_exact, content_type, session, variant=variant_option(variant, "--variant")
    )
    with open_store(db) as store:
        warn_unknown_sessions(store, session)
        x = _rowid_of(store, chunk, rowid, "--chunk", "--rowid")
        y = _rowid_of(store, vs, vs_rowid, "--vs", "--vs-rowid")
        assert x is not None
        if y is not None and y == x:
            fail("--vs names the same chunk as the one explained; name another one")
        trace = search(store, params)
        if y is None:
            anatomy = explain_chunk(store, trace, x)
            versus = None
        else:
            versus = explain_versus(store, trace, x, y)
            anatomy = versus.chunk
    if as_json:
        write_json({"query": query, **anatomy.to_dict(), "vs": None if versus is None else versus.to_dict()})
        return
    console.print(to_rich(describe_anatomy(anatomy) if versus is None else describe_versus(versus), fit=True))
