"""Evaluation subcommands: ``eval``, ``snapshot save|check`` and ``qrels``.

* ``rankscope eval QUERIES.json --db DB [--qrels QRELS] [--measures nDCG@10,RR,R@10] [--a SPEC] [--b SPEC] [--json]``
* ``rankscope snapshot save QUERIES.json --db DB -o SNAP.json [--variant SPEC]``
* ``rankscope snapshot check SNAP.json --db DB [--stages final] [--json]``
* ``rankscope qrels convert IN OUT`` / ``rankscope qrels path --db DB``

Plain functions (and the ``snapshot``/``qrels`` Typer groups);
:mod:`tui.cli.main` registers them. Rich only, never Textual. The numbers
come from :mod:`engine.lab.evaluation` (ir-measures, trec_eval's definitions).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from rich.console import Group
from rich.text import Text

from engine.pipeline.variants import variant_spec
from engine.lab.evaluation import (
    EvalComparison,
    SetEval,
    compare_evals,
    eval_to_dict,
    evaluate_traces,
    parse_measures,
    run_entries,
)
from engine.lab.qrels import Qrels, QrelsError, default_qrels_path, read_qrels, write_qrels
from engine.lab.snapshot import SnapshotCheck, check_snapshot, parse_stage_list, take_snapshot, validate_snapshot
from engine.pipeline.table import RANKED_IDS

from tui.present import safe
from tui.present.cut import clip
from tui.present.fmt import json_text
from tui.present.render import plain
from tui.present.tablefit import Cell, Column, Fitted, Table
from .base import search_db_option, console, fail, open_store, write_json
from .lab import SPEC_HELP, variant_option
from engine.files.writing import write_text_file
from .search import check_output_file, load_queries

# ─── shared ──────────────────────────────────────────────────────────────


def load_qrels_option(qrels: Optional[Path], db: Path) -> tuple[Qrels, Path]:
    """The judgments of ``--qrels`` or, without it, the store's default file
    (see :func:`engine.lab.qrels.default_qrels_path`). Errors become CliError."""
    path = qrels if qrels is not None else default_qrels_path(db)
    assert path is not None
    try:
        return read_qrels(path), path
    except FileNotFoundError:
        if qrels is not None:
            fail(f"no such qrels file: {qrels}")
        fail(f"no judgments for {db}: none saved at {path}; give --qrels FILE (TREC 'qid 0 docid grade' or JSON)")
    except QrelsError as exc:
        fail(str(exc))
    raise AssertionError("unreachable")


def _fmt(value: Optional[float], digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _p(value: Optional[float]) -> str:
    if value is None:
        return "—"
    return f"{value:.4f}" if value >= 0.0001 else f"{value:.1e}"


# ─── eval ────────────────────────────────────────────────────────────────


def _pair(va: Optional[float], vb: Optional[float]) -> Text:
    """``0.430`` when A and B agree, else ``0.430 → 0.553`` (green up, red
    down, yellow when one side lacks the stage)."""
    if va is not None and vb is not None and abs(vb - va) < 1e-12:
        return Text(_fmt(va))
    style = "yellow" if va is None or vb is None else ("green" if vb > va else "red")
    return Text(f"{_fmt(va)} → {_fmt(vb)}", style=style)


def _stage_table(a: SetEval, b: Optional[SetEval]) -> Fitted:
    n = len(a.queries)
    title = f"Mean over {n} judged {'query' if n == 1 else 'queries'}, per stage" + (
        " (A → B)" if b is not None else ""
    )
    cols = [Column("stage", "key")] + [Column(m, justify="right") for m in a.measures]
    stages = [s for s in RANKED_IDS if s in a.stages or (b is not None and s in b.stages)]
    rows: list[list[Cell]] = []
    for s in stages:
        row: list[Cell] = [s]
        for m in a.measures:
            va = a.means.get(s, {}).get(m)
            row.append(_fmt(va) if b is None else _pair(va, b.means.get(s, {}).get(m)))
        rows.append(row)
    return Fitted(Table(title, cols, rows))


def _query_table(a: SetEval, b: Optional[SetEval]) -> Fitted:
    """Per query: its id (never cut), its text (the room left, wrapped at
    spaces; left out when there is none: the id names the query), its
    layer and each measure's final value (``A → B`` with ``b``)."""
    title = "Per query, final stage" + (" (A → B)" if b is not None else "")
    cols = [Column("id", "key"), Column("query", "free", min_width=8, max_width=32), Column("layer")]
    cols += [Column(m, justify="right") for m in a.measures]
    b_by_id = {q.id: q for q in b.queries} if b is not None else {}
    rows: list[list[Cell]] = []
    for q in a.queries:
        layer = q.layer
        cells: list[Cell] = []
        for m in a.measures:
            va = q.value("final", m)
            cells.append(_fmt(va) if b is None else _pair(va, b_by_id[q.id].value("final", m)))
        if b is not None and b_by_id[q.id].layer != q.layer:
            layer = f"{q.layer}→{b_by_id[q.id].layer}"
        rows.append([plain(q.id), plain(clip(q.query, 60)), layer, *cells])
    return Fitted(Table(title, cols, rows))


def _comparison_table(cmp: EvalComparison) -> Fitted:
    cols = [Column("measure", "key")] + [
        Column(c, justify="right") for c in ("A", "B", "Δ", "better", "worse", "tied", "p (t)", "p (W)")
    ]
    rows: list[list[Cell]] = []
    for m in cmp.measures:
        style = "" if abs(m.delta) < 1e-12 else ("green" if m.delta > 0 else "red")
        rows.append(
            [
                m.measure,
                _fmt(m.mean_a),
                _fmt(m.mean_b),
                Text(f"{m.delta:+.3f}", style=style),
                str(m.improved),
                str(m.worsened),
                str(m.tied),
                _p(m.p_ttest),
                _p(m.p_wilcoxon),
            ]
        )
    return Fitted(
        Table(
            plain(f"A {variant_spec(cmp.a.variant)}  vs  B {variant_spec(cmp.b.variant)}, stage {cmp.stage}"),
            cols,
            rows,
        ),
    )


def eval_renderable(a: SetEval, cmp: Optional[EvalComparison] = None) -> Group:
    """Rich rendering of ``rankscope eval``: per-stage means (A and B side by
    side with ``--b``), the A/B tests, per-query final values, then notes."""
    b = cmp.b if cmp is not None else None
    head = (
        f"variant {variant_spec(a.variant)}"
        if b is None
        else f"A {variant_spec(a.variant)}, B {variant_spec(b.variant)}"
    )
    parts: list = [plain(f"Measures (ir-measures, trec_eval definitions): {', '.join(a.measures)}; {head}")]
    parts.append(_stage_table(a, b))
    if cmp is not None:
        parts.append(_comparison_table(cmp))
        parts.append(
            Text(
                "better / worse / tied: judged queries where B scores higher / lower / the same. p (t): paired "
                "two-sided t-test (scipy.stats.ttest_rel); p (W): Wilcoxon signed-rank test (scipy.stats.wilcoxon, "
                "ties dropped); — = no difference to test.",
                style="dim",
            )
        )
    parts.append(_query_table(a, b))
    notes = [
        "A query whose list is empty at a stage (or whose fuzzy re-run did not happen) scores 0 there; "
        "means are over every judged query (trec_eval -c).",
    ]
    if a.unjudged:
        shown = ", ".join(a.unjudged[:8]) + (f", … ({len(a.unjudged) - 8} more)" if len(a.unjudged) > 8 else "")
        notes.append(
            f"{len(a.unjudged)} unjudged {'query' if len(a.unjudged) == 1 else 'queries'} not counted: {shown}"
        )
    if a.unknown_docs:
        shown = ", ".join(a.unknown_docs[:3]) + (", …" if len(a.unknown_docs) > 3 else "")
        notes.append(
            f"{len(a.unknown_docs)} judged chunk id(s) are not in this store (stale judgments or another store): {shown}"
        )
    parts += [plain(n, style="dim") for n in notes]
    return Group(*parts)


def eval_cmd(
    queries: Path = typer.Argument(..., help="Query file (queries.json format: a JSON list of {id, query, ...})."),
    db: Path = search_db_option(),
    qrels: Optional[Path] = typer.Option(
        None,
        "--qrels",
        help="Judgments: TREC qrels ('qid 0 docid grade', grades 0-3) or rankscope's JSON form. "
        "Default: the store's own file in the user's data folder (the browser grades into it).",
    ),
    measures: Optional[str] = typer.Option(
        None, "--measures", help="Comma-separated ir-measures names (default nDCG@10,RR,R@10,P@3)."
    ),
    a: str = typer.Option("reference", "--a", help="Variant A (default: the reference). " + SPEC_HELP),
    b: Optional[str] = typer.Option(None, "--b", help="Variant B: compare A and B with paired tests."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON: {measures, stages, queries, comparison}."),
) -> None:
    """Judge a query file: nDCG, RR, recall and precision at every pipeline
    stage (Porter, trigram, fused, pool, session filter, trim, rerank, final,
    and the fuzzy re-run's stages), the mean over every judged query, and per
    query the final values.

    Documents are chunk ids (SOURCE::TITLE, SOURCE::TITLE#2 for a later chunk
    with the same title in the same source). With --b, A and B side by side:
    queries improved / worsened / tied and a paired t-test and Wilcoxon test
    per measure on the final stage.
    """
    va = variant_option(a, "--a")
    vb = variant_option(b, "--b") if b is not None else None
    try:
        ms = parse_measures(measures)
    except ValueError as exc:
        fail(f"--measures: {exc}")
    entries = load_queries(queries)
    from engine.store.chunkids import chunk_ids

    with open_store(db) as store:  # first: a file that is no store says so, before its judgments are looked for
        judgments, qrels_path = load_qrels_option(qrels, db)
        ids_in_file = [str(e.get("id", i + 1)) for i, e in enumerate(entries)]
        if not any(judgments.judged(q) for q in ids_in_file):
            known = ", ".join(list(judgments.judgments)[:5]) or "none"
            fail(
                f"none of the {len(entries)} queries of {queries} has judgments in {qrels_path} "
                f"(query ids: {', '.join(ids_in_file[:5])}{', …' if len(ids_in_file) > 5 else ''}; judged ids: {known})"
            )
        try:
            traces_a = run_entries(store, entries, va)
            traces_b = run_entries(store, entries, vb) if vb is not None else None
        except ValueError as exc:
            fail(str(exc))
        ids = chunk_ids(store)
    ev_a = evaluate_traces(traces_a, judgments, ms, ids, va)
    cmp = None
    if traces_b is not None:
        cmp = compare_evals(ev_a, evaluate_traces(traces_b, judgments, ms, ids, vb))
    if as_json:
        write_json(eval_to_dict(ev_a, cmp))
    else:
        console.print(eval_renderable(ev_a, cmp))


# ─── snapshot ────────────────────────────────────────────────────────────

snapshot_app = typer.Typer(
    help="Ranking regression snapshots: record every stage's ranked chunk ids, check them later (exit 1 on change).",
    context_settings={"help_option_names": ["-h", "--help"]},
)


@snapshot_app.command("save")
def snapshot_save(
    queries: Path = typer.Argument(..., help="Query file (queries.json format)."),
    db: Path = search_db_option(),
    out: Path = typer.Option(..., "-o", "--out", help="Snapshot file to write (JSON)."),
    variant: str = typer.Option("reference", "--variant", help=SPEC_HELP),
    force: bool = typer.Option(False, "--force", help="Replace an existing snapshot file (never a database)."),
) -> None:
    """Record, per query, the layer and each stage's ranked chunk ids."""
    check_output_file(out, "-o", db=db, force=force)
    v = variant_option(variant, "--variant")
    entries = load_queries(queries)
    with open_store(db) as store:
        try:
            snap = take_snapshot(store, entries, v)
        except ValueError as exc:
            fail(str(exc))
    try:
        write_text_file(out, json_text(snap), overwrite=force)
    except FileExistsError:
        fail(f"-o {out} appeared while the queries ran; nothing was written (give another name or --force)")
    except OSError as exc:
        fail(f"cannot write -o {out}: {exc.strerror or exc}")
    console.print(
        safe.line(f"recorded {len(snap['queries'])} queries to {out}"), markup=False, highlight=False, soft_wrap=True
    )


def snapshot_lines(result: SnapshotCheck) -> list[Text]:
    """The readable diff, one :class:`~rich.text.Text` per output line: per
    changed query, its layer change and per stage what moved (old → new
    position), entered (at) and left (was). Print each with
    ``soft_wrap=True``: a line is never wrapped, so a CI log can be grepped
    line by line for a chunk id."""
    scope = "every stage" if result.stages is None else "stages " + ", ".join(result.stages)
    note = (
        [
            plain(
                f"not compared (the snapshot predates them): {', '.join(result.unrecorded)}; "
                "save the snapshot again to include them",
                style="yellow",
            )
        ]
        if result.unrecorded
        else []
    )
    if result.ok:
        return [Text(f"unchanged: {result.checked} queries, {scope}", style="green"), *note]
    n = len(result.changed)
    lines: list[Text] = [Text(f"changed: {n} of {result.checked} queries ({scope})", style="bold red"), *note]
    for q in result.changed:
        lines.append(plain(f"query {q.id} ({clip(q.query, 60)!r})", style="bold"))
        if q.layer_old != q.layer_new:
            lines.append(plain(f"  layer: {q.layer_old} → {q.layer_new}", style="yellow"))
        for s in q.stages:
            lines.append(plain(f"  {s.stage}:", style="cyan"))
            for cid, old, new in s.moved:
                lines.append(plain(f"    moved   {old} → {new}  {cid}"))
            for cid, new in s.entered:
                lines.append(plain(f"    entered at {new}  {cid}", style="green"))
            for cid, old in s.left:
                lines.append(plain(f"    left (was {old})  {cid}", style="red"))
    return lines


@snapshot_app.command("check")
def snapshot_check(
    snapshot: Path = typer.Argument(..., help="A snapshot written by 'rankscope snapshot save'."),
    db: Path = search_db_option(),
    stages: Optional[str] = typer.Option(
        None, "--stages", help="Compare only these stage ids (comma-separated, e.g. final); default every stage."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the diff as JSON."),
) -> None:
    """Re-run a snapshot's queries; exit 0 when every compared stage and layer
    is unchanged, 1 with a per-query, per-stage diff (moved, entered, left)."""
    try:
        wanted = parse_stage_list(stages)
    except ValueError as exc:
        fail(f"--stages: {exc}")
    try:
        data = json.loads(snapshot.read_text("utf-8"))
    except FileNotFoundError:
        fail(f"no such snapshot file: {snapshot}")
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        fail(f"cannot read snapshot {snapshot}: {exc}")
    try:
        validate_snapshot(data, str(snapshot))
    except ValueError as exc:
        fail(str(exc))
    with open_store(db) as store:
        try:
            result = check_snapshot(store, data, wanted)
        except ValueError as exc:
            fail(f"{snapshot}: {exc}")
    if as_json:
        write_json(result.to_dict())
    else:
        for text in snapshot_lines(result):
            console.print(text, soft_wrap=True)
    if not result.ok:
        raise typer.Exit(1)


# ─── qrels ───────────────────────────────────────────────────────────────

qrels_app = typer.Typer(
    help="Judgments (qrels): convert between TREC and JSON, find a store's own file.",
    context_settings={"help_option_names": ["-h", "--help"]},
)


@qrels_app.command("convert")
def qrels_convert(
    source: Path = typer.Argument(..., help="Qrels to read (TREC or JSON, detected from the content)."),
    target: Path = typer.Argument(
        ..., help="File to write: JSON when it ends in .json, else TREC ('qid 0 docid grade')."
    ),
    force: bool = typer.Option(False, "--force", help="Replace an existing TARGET (never a database)."),
) -> None:
    """Convert judgments between TREC qrels and rankscope's JSON form."""
    try:
        q = read_qrels(source)
    except FileNotFoundError:
        fail(f"no such qrels file: {source}")
    except QrelsError as exc:
        fail(str(exc))
    check_output_file(target, "TARGET", force=force)
    try:
        write_qrels(q, target)
    except OSError as exc:
        fail(f"cannot write {target}: {exc.strerror or exc}")
    console.print(
        safe.line(f"wrote {q.count()} judgments for {len(q.judgments)} queries to {target}"),
        markup=False,
        highlight=False,
        soft_wrap=True,
    )


@qrels_app.command("path")
def qrels_path(db: Path = typer.Option(..., "--db", help="The store (not opened).")) -> None:
    """Print where the browser saves this store's judgments (and eval reads them by default)."""
    path = default_qrels_path(db)
    console.print(safe.line(str(path)), markup=False, highlight=False, soft_wrap=True)
