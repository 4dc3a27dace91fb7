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

import os
from pathlib import Path
from typing import Annotated, List, Optional

import typer
from rich.console import Group
from rich.text import Text

from engine.pipeline.variants import SPEC_KEYS, Variant, variant_spec
from engine.lab.divergence import Divergence, check_p, most_changed_first
from engine.lab.evaluation import (
    LOW_JUDGED,
    EvalComparison,
    SetEval,
    UngradedChunk,
    compare_evals,
    eval_to_dict,
    evaluate_traces,
    final_divergences,
    parse_measures,
    ungraded_queue,
)
from engine.lab.qrels import Qrels, QrelsError, default_qrels_path, entry_id, read_qrels, write_qrels
from engine.lab.sweep import (
    ALPHA,
    MAX_VARIANTS,
    TESTS,
    Axis,
    SweepEval,
    evaluate_variants,
    parse_axis,
    parse_named,
    run_variants,
    sweep_to_dict,
    variant_set,
)
from engine.store.userdata import remember_query_file
from engine.lab.snapshot import SnapshotCheck, check_snapshot, parse_stage_list, take_snapshot, validate_snapshot
from engine.pipeline.table import RANKED_IDS

from tui.present import safe
from tui.present.cut import clip
from tui.present.fmt import json_text
from tui.present.render import ChunkIdText, plain
from tui.present.tablefit import Cell, Column, Fitted, Table
from .base import (
    NAMES_STORE,
    READS_QRELS,
    READS_QUERIES,
    READS_SNAPSHOT,
    WRITES_QRELS,
    WRITES_SNAPSHOT,
    StorePath,
    check_command_output,
    console,
    fail,
    open_store,
    search_db_option,
    write_json,
    warn_grade_conflicts,
    warn_query_file_sessions,
)
from .lab import SPEC_HELP, rbo_legend, variant_option
from engine.files.reading import load_json_input
from engine.pipeline.words import plural
from engine.files.writing import write_text_file
from .search import load_queries, write_output

# ─── shared ──────────────────────────────────────────────────────────────


def load_qrels_option(qrels: Optional[Path], db: Path, missing_ok: bool = False) -> tuple[Qrels, Path]:
    """The judgments of ``--qrels`` or, without it, the store's default file
    (see :func:`engine.lab.qrels.default_qrels_path`); with ``missing_ok``, no
    judgments when the store's file does not exist yet. Errors become
    CliError; pairs judged with different grades are warned about
    (:func:`~tui.cli.base.warn_grade_conflicts`)."""
    path = qrels if qrels is not None else default_qrels_path(db)
    assert path is not None
    try:
        judgments = read_qrels(path)
        warn_grade_conflicts(judgments, path)
        return judgments, path
    except FileNotFoundError:
        if qrels is not None:
            fail(f"no such qrels file: {qrels}")
        if missing_ok:
            return Qrels(), path
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


def _pair(va: Optional[float], vb: Optional[float], digits: int = 3) -> Text:
    """``0.430`` when A and B agree, else ``0.430 → 0.553`` (green up, red
    down, yellow when one side lacks the stage)."""
    if va is not None and vb is not None and abs(vb - va) < 1e-12:
        return Text(_fmt(va, digits))
    style = "yellow" if va is None or vb is None else ("green" if vb > va else "red")
    return Text(f"{_fmt(va, digits)} → {_fmt(vb, digits)}", style=style)


#: Marks a value that rests on fewer than half judged results.
LOW_MARK = "?"
#: Marks the best variant of a stage on a measure.
BEST_MARK = "▲"
#: Marks a variant whose difference from the reference is significant after Holm's correction.
SIGNIFICANT_MARK = "†"


def _judged_cell(value: Optional[float]) -> Text:
    return Text(_fmt(value, 2), style="yellow" if value is not None and value < LOW_JUDGED else "")


def _value(ev: SetEval, stage: str, measure: str) -> Optional[float]:
    return ev.means.get(stage, {}).get(measure)


def _mean_cell(ev: SetEval, stage: str, measure: str) -> Text:
    """A mean, marked ``?`` when it rests on fewer than half judged results."""
    share = ev.judged_mean(stage, measure)
    low = share is not None and share < LOW_JUDGED
    return Text(_fmt(_value(ev, stage, measure)) + (LOW_MARK if low else " "), style="yellow" if low else "")


def _stage_table(a: SetEval, b: Optional[SetEval]) -> Fitted:
    n = len(a.queries)
    title = f"Mean over {n} judged {'query' if n == 1 else 'queries'}, per stage" + (
        " (A → B)" if b is not None else ""
    )
    jname = a.judged_names[0]
    cols = [Column("stage", "key")] + [Column(m, justify="right") for m in (*a.measures, jname)]
    stages = [s for s in RANKED_IDS if s in a.stages or (b is not None and s in b.stages)]
    rows: list[list[Cell]] = []
    for s in stages:
        row: list[Cell] = [s]
        for m in a.measures:
            row.append(_mean_cell(a, s, m) if b is None else _pair(_value(a, s, m), _value(b, s, m)))
        ja = a.judged_means.get(s, {}).get(jname)
        row.append(_judged_cell(ja) if b is None else _pair(ja, b.judged_means.get(s, {}).get(jname), 2))
        rows.append(row)
    return Fitted(Table(title, cols, rows))


def _div_cells(d: Optional[Divergence]) -> list[Cell]:
    if d is None:
        return ["—", "—"]
    style = "" if d.rbo == 1 else "yellow"
    return [Text(f"{d.rbo:.2f}", style=style), Text(f"{d.jaccard:.2f}", style=style)]


def _query_table(a: SetEval, b: Optional[SetEval], cmp: Optional[EvalComparison] = None, sort: str = "file") -> Fitted:
    """Per query: its id (never cut), its text (the room left, wrapped at
    spaces; left out when there is none: the id names the query), its
    layer and each measure's final value (``A → B`` with ``b``, then the RBO
    and Jaccard@k of the two final lists; ``sort="divergence"``: most changed first)."""
    div = dict(cmp.divergence) if cmp is not None else {}
    title = "Per query, final stage" + (" (A → B)" if b is not None else "")
    if sort == "divergence":
        title += ", most changed first"
    jname = a.judged_names[0]
    cols = [Column("id", "key"), Column("query", "free", min_width=8, max_width=32), Column("layer")]
    cols += [Column(m, justify="right") for m in (*a.measures, jname)]
    if div:
        k = next(iter(div.values())).k
        cols += [Column("RBO", justify="right"), Column(f"J@{k}", justify="right")]
    b_by_id = {q.id: q for q in b.queries} if b is not None else {}
    order = list(range(len(a.queries)))
    if sort == "divergence" and div:
        order = most_changed_first([div.get(q.id) for q in a.queries])
    rows: list[list[Cell]] = []
    for i in order:
        q = a.queries[i]
        layer = q.layer
        cells: list[Cell] = []
        for m in a.measures:
            va = q.value("final", m)
            if b is None:
                low = q.low_judged("final", m)
                cells.append(Text(_fmt(va) + (LOW_MARK if low else " "), style="yellow" if low else ""))
            else:
                cells.append(_pair(va, b_by_id[q.id].value("final", m)))
        ja = q.judged.get("final", {}).get(jname)
        cells.append(_judged_cell(ja) if b is None else _pair(ja, b_by_id[q.id].judged.get("final", {}).get(jname), 2))
        if b is not None and b_by_id[q.id].layer != q.layer:
            layer = f"{q.layer}→{b_by_id[q.id].layer}"
        if div:
            cells += _div_cells(div.get(q.id))
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


def _low_judged_note(ev: SetEval) -> Optional[str]:
    """Which final values rest on fewer than half judged results, or ``None``."""
    parts = []
    for m in ev.measures:
        ids = ev.low_judged("final", m)
        if ids:
            shown = ", ".join(ids[:4]) + (", …" if len(ids) > 4 else "")
            parts.append(f"{m} for {len(ids)} ({shown})")
    if not parts:
        return None
    return (
        f"{LOW_MARK} rests on fewer than half judged results (Judged@k of the measure's cutoff below "
        f"{LOW_JUDGED:g}): grade more (rankscope eval --ungraded). At the final stage: " + "; ".join(parts)
    )


def _notes(a: SetEval) -> list[str]:
    notes = [
        "A query whose list is empty at a stage (or whose fuzzy re-run did not happen) scores 0 there; "
        "means are over every judged query (trec_eval -c).",
        f"{a.judged_names[0]}: the share of a list's top k that is judged (ir-measures' Judged; mean over "
        "queries with a list at that stage).",
    ]
    low = _low_judged_note(a)
    if low is not None:
        notes.append(low)
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
    return notes


def eval_renderable(a: SetEval, cmp: Optional[EvalComparison] = None, sort: str = "file") -> Group:
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
    parts.append(_query_table(a, b, cmp, sort))
    if cmp is not None and cmp.divergence:
        d = next(iter(cmp.divergence.values()))
        parts.append(plain(rbo_legend(d.p, d.k, "the two final lists") + ". 1.00 = the same list.", style="dim"))
    parts += [plain(n, style="dim") for n in _notes(a)]
    return Group(*parts)


# ─── sweeps ──────────────────────────────────────────────────────────────


def _same_everywhere(sw: SweepEval, stage: str) -> bool:
    """True when every variant has ``stage`` with the same means."""
    means = [v.eval.means.get(stage) for v in sw.variants]
    first = means[0]
    return first is not None and all(
        m is not None and all(abs(m[x] - first[x]) < 1e-12 for x in sw.measures) for m in means
    )


def sweep_means_table(sw: SweepEval) -> Fitted:
    """Means per stage (a section each) and variant; the best of a stage on
    a measure marked ▲ (when not every variant ties), a mean resting on fewer
    than half judged results ``?``; a stage where every variant has the same
    means is one row (``all``)."""
    ref = sw.by_name(sw.reference).eval
    n = len(ref.queries)
    jname = ref.judged_names[0]
    cols = [Column("stage", "key"), Column("variant", "key")] + [
        Column(m, justify="right") for m in (*sw.measures, jname)
    ]
    rows: list[list[Cell]] = []
    sections: list[int] = []
    for stage in sw.stages:
        sections.append(len(rows))
        if _same_everywhere(sw, stage):
            row: list[Cell] = [stage, Text(f"all {len(sw.variants)}", style="dim")]
            row += [_mean_cell(ref, stage, m) for m in sw.measures]
            row.append(_judged_cell(ref.judged_means.get(stage, {}).get(jname)))
            rows.append(row)
            continue
        best = {m: sw.best(stage, m) for m in sw.measures}
        for v in sw.variants:
            if stage not in v.eval.means:
                continue
            name = plain(v.name + (" (ref)" if v.name == sw.reference and v.name != "reference" else ""))
            row = [stage, name]
            for m in sw.measures:
                cell = _mean_cell(v.eval, stage, m)
                if v.name in best[m] and len(best[m]) < len(sw.variants):
                    cell = Text(cell.plain.rstrip() + BEST_MARK, style="bold green")
                if stage == sw.stage and m in v.versus and v.versus[m].significant:
                    cell.append(SIGNIFICANT_MARK, style="bold")
                row.append(cell)
            row.append(_judged_cell(v.eval.judged_means.get(stage, {}).get(jname)))
            rows.append(row)
    title = f"Mean over {n} judged {'query' if n == 1 else 'queries'}, per stage and variant"
    return Fitted(Table(title, cols, rows), sections=sections)


def sweep_versus_table(sw: SweepEval) -> Fitted:
    """Each variant against the reference at the tested stage: per measure
    the mean, Δ, queries better / worse / tied, p and Holm's adjusted p."""
    test = "t-test" if sw.test == "t" else "Wilcoxon"
    cols = [Column("variant", "key"), Column("measure", "key")] + [
        Column(c, justify="right") for c in ("mean", "Δ", "better", "worse", "tied", f"p ({test})", "p (Holm)")
    ]
    rows: list[list[Cell]] = []
    sections: list[int] = []
    for v in sw.variants:
        if v.name == sw.reference:
            continue
        sections.append(len(rows))
        for m in sw.measures:
            x = v.versus[m]
            style = "" if abs(x.delta) < 1e-12 else ("green" if x.delta > 0 else "red")
            adjusted = Text(_p(x.p_adjusted), style="bold" if x.significant else "")
            if x.significant:
                adjusted.append(SIGNIFICANT_MARK)
            rows.append(
                [
                    plain(v.name),
                    m,
                    _fmt(v.eval.means.get(sw.stage, {}).get(m)),
                    Text(f"{x.delta:+.3f}", style=style),
                    str(x.improved),
                    str(x.worsened),
                    str(x.tied),
                    _p(x.p),
                    adjusted,
                ]
            )
    return Fitted(
        Table(plain(f"Against the reference {sw.reference}, stage {sw.stage}"), cols, rows), sections=sections
    )


def _most_changed(sw: SweepEval) -> Optional[str]:
    """The non-reference variant with the lowest mean RBO (``None`` when there is none)."""
    others = [v for v in sw.variants if v.name != sw.reference]
    if not others:
        return None
    return min(others, key=lambda v: sum(d.rbo for d in v.divergence.values()) / max(1, len(v.divergence))).name


def sweep_queries_table(sw: SweepEval, against: str) -> Fitted:
    """Per judged query, most changed first: RBO and Jaccard@k of
    ``against``'s final list against the reference's, and each measure's
    final value (reference → variant)."""
    v, ref = sw.by_name(against), sw.by_name(sw.reference)
    ref_by_id = {q.id: q for q in ref.eval.queries}
    cols = [Column("id", "key"), Column("query", "free", min_width=8, max_width=32)]
    cols += [Column("RBO", justify="right"), Column(f"J@{sw.k}", justify="right")]
    cols += [Column(m, justify="right") for m in sw.measures]
    queries = v.eval.queries
    order = most_changed_first([v.divergence.get(q.id) for q in queries])
    rows: list[list[Cell]] = []
    for i in order:
        q = queries[i]
        r = ref_by_id[q.id]
        cells = [_pair(r.value(sw.stage, m), q.value(sw.stage, m)) for m in sw.measures]
        rows.append([plain(q.id), plain(clip(q.query, 60)), *_div_cells(v.divergence.get(q.id)), *cells])
    title = plain(f"Per query, most changed first: {sw.reference} → {against}, stage {sw.stage}")
    return Fitted(Table(title, cols, rows))


def sweep_renderable(sw: SweepEval, against: Optional[str] = None) -> Group:
    """Rich rendering of ``rankscope eval --sweep/--variant``."""
    ref = sw.by_name(sw.reference).eval
    test = "paired t-test (scipy.stats.ttest_rel)" if sw.test == "t" else "Wilcoxon signed-rank (scipy.stats.wilcoxon)"
    parts: list = [
        plain(
            f"Measures (ir-measures, trec_eval definitions): {', '.join(sw.measures)}; "
            f"{len(sw.variants)} variants, reference {sw.reference}"
        ),
        sweep_means_table(sw),
        plain(
            f"{BEST_MARK} best of the variants at that stage; {SIGNIFICANT_MARK} differs from the reference at "
            f"stage {sw.stage} (Holm-adjusted p < {ALPHA:g}); {LOW_MARK} rests on fewer than half judged results.",
            style="dim",
        ),
    ]
    if len(sw.variants) > 1:
        parts.append(sweep_versus_table(sw))
        parts.append(
            plain(
                f"p: two-sided {test} over the judged queries; p (Holm): Holm's step-down correction for "
                "multiple comparisons over the variants tested on that measure "
                "(statsmodels multipletests); — = no difference to test.",
                style="dim",
            )
        )
        name = against or _most_changed(sw)
        if name is not None and name != sw.reference:
            parts.append(sweep_queries_table(sw, name))
            parts.append(
                plain(
                    rbo_legend(sw.p, sw.k) + "; 1.00 = the same list. --against NAME lists another variant.",
                    style="dim",
                )
            )
    st = sw.stats
    parts.append(
        plain(
            f"{st.searches} searches; {st.retriever_runs} retriever runs fetched, {st.reused} reused "
            f"({st.groups} group{'s' if st.groups != 1 else ''} of variants sharing every retriever run).",
            style="dim",
        )
    )
    parts += [plain(n, style="dim") for n in _notes(ref)]
    return Group(*parts)


# ─── the ungraded queue ──────────────────────────────────────────────────


def ungraded_renderable(queue: list[UngradedChunk], depth: int, variants: int, qrels_path: Path) -> Group:
    """``rankscope eval --ungraded``: the queue, one row per (query, chunk)."""
    if not queue:
        return Group(plain(f"Nothing to grade: every chunk in the top {depth} of every list has a grade."))
    cols = [
        Column("query", "key"),
        Column("chunk", "free", min_width=16),
        Column("lists", justify="right"),
        Column("best", justify="right"),
        Column("stages", "free", min_width=8, max_width=40),
    ]
    rows: list[list[Cell]] = [
        [plain(u.query_id), ChunkIdText(u.chunk_id), str(u.lists), str(u.best_rank), plain(", ".join(u.stages))]
        for u in queue
    ]
    where = f"any stage of {variants} variants" if variants > 1 else "any stage"
    queries = len({u.query_id for u in queue})
    title = f"To grade next: {len(queue)} chunks of {queries} queries in the top {depth} of {where}, without a grade"
    return Group(
        Fitted(Table(title, cols, rows)),
        plain(
            f"lists: how many ranked lists hold the chunk in their top {depth}; best: its best rank. "
            f"Grades go to {qrels_path} (the browser's 0-3 keys; 'u' steps through this queue; "
            "'rankscope qrels query-file' lets the browser grade these queries under their ids).",
            style="dim",
        ),
    )


SORTS = ("file", "divergence")


def _sweep_options(sweep: list[str], variants: list[str]) -> tuple[list[Axis], list[tuple[str, Variant]]]:
    axes, named = [], []
    for text in sweep:
        try:
            axes.append(parse_axis(text))
        except ValueError as exc:
            fail(f"--sweep {text}: {exc}")
    for text in variants:
        try:
            named.append(parse_named(text))
        except ValueError as exc:
            fail(f"--variant {text}: {exc}")
    return axes, named


def eval_cmd(
    queries: Annotated[Path, READS_QUERIES] = typer.Argument(
        ..., help="Query file (queries.json format: a JSON list of {id, query, ...})."
    ),
    db: StorePath = search_db_option(),
    qrels: Annotated[Optional[Path], READS_QRELS] = typer.Option(
        None,
        "--qrels",
        help="Judgments: TREC qrels ('qid 0 docid grade', grades 0-3) or rankscope's JSON form. "
        "Default: the store's own file in the user's data folder (the browser grades into it).",
    ),
    measures: Optional[str] = typer.Option(
        None, "--measures", help="Comma-separated ir-measures names (default nDCG@10,RR,R@10,P@3)."
    ),
    a: str = typer.Option(
        "reference", "--a", help="Variant A, the reference of --b, --sweep and --variant. " + SPEC_HELP
    ),
    b: Optional[str] = typer.Option(None, "--b", help="Variant B: compare A and B with paired tests."),
    sweep: Optional[List[str]] = typer.Option(
        None,
        "--sweep",
        help="KEY=V1,V2,...: run every value of one variant setting (keys: "
        + ", ".join(SPEC_KEYS)
        + "); several --sweep form a grid of at most "
        + str(MAX_VARIANTS)
        + " variants. Each is tested against the reference (--a) with Holm's correction.",
    ),
    variant: Optional[List[str]] = typer.Option(
        None, "--variant", help="NAME=SPEC (repeatable): a named variant to compare, e.g. big-pool=pool=10."
    ),
    stage: str = typer.Option("final", "--stage", help="The stage the paired tests run on (a stage id)."),
    test: str = typer.Option(
        "t", "--test", help="Paired test of --sweep/--variant: t (scipy.stats.ttest_rel) or wilcoxon."
    ),
    sort: str = typer.Option(
        "file",
        "--sort",
        help="Per-query order: file, or divergence (most changed final lists first: lowest RBO, then "
        "Jaccard) with --b, --sweep or --variant. A sweep lists queries by divergence.",
    ),
    against: Optional[str] = typer.Option(
        None,
        "--against",
        help="With --sweep/--variant: the variant whose per-query divergence from the reference is listed "
        "(default: the one that changed most).",
    ),
    depth: int = typer.Option(10, "--depth", help="k of Judged@k, Jaccard@k and the ungraded queue's top k."),
    rbo_p: float = typer.Option(0.9, "--rbo-p", help="Persistence p of rank-biased overlap (0 < p < 1)."),
    ungraded: bool = typer.Option(
        False,
        "--ungraded",
        help="List what to grade next instead: the chunks in the top k of any stage (of any variant) "
        "without a grade for their query, most lists first.",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON (see the README for each shape)."),
) -> None:
    """Judge a query file: nDCG, RR, recall and precision at every pipeline
    stage (Porter, trigram, fused, pool, session filter, trim, rerank, final,
    and the fuzzy re-run's stages), the mean over every judged query, and per
    query the final values, with Judged@k (the share of the top k that is
    judged; a value resting on fewer than half judged results is marked ?).

    Documents are chunk ids (SOURCE::TITLE, SOURCE::TITLE#2 for a later chunk
    with the same title in the same source). With --b, A and B side by side:
    queries improved / worsened / tied and a paired t-test and Wilcoxon test
    per measure on the final stage, and per query the rank-biased overlap
    (RBO, Webber et al. 2010) and Jaccard@k of the two final lists.
    With --sweep / --variant, every variant's means per stage (the best
    marked) and a paired test against the reference with Holm's correction
    for multiple comparisons. Retriever runs are shared between variants.
    """
    va = variant_option(a, "--a")
    vb = variant_option(b, "--b") if b is not None else None
    axes, named = _sweep_options(list(sweep or []), list(variant or []))
    many = bool(axes or named)
    if many and vb is not None:
        fail("--b compares two variants; with --sweep or --variant give B as --variant NAME=SPEC")
    if against is not None and not many:
        fail("--against names a variant of --sweep or --variant")
    if sort not in SORTS:
        fail(f"--sort must be one of {', '.join(SORTS)}; got {sort!r}")
    if sort == "divergence" and not many and vb is None:
        fail("--sort divergence needs two variants: give --b, --sweep or --variant")
    if test not in TESTS:
        fail(f"--test must be one of {', '.join(TESTS)}; got {test!r}")
    if stage not in RANKED_IDS:
        fail(f"--stage: unknown stage {stage!r}; stages are {', '.join(RANKED_IDS)}")
    if depth < 1:
        fail(f"--depth must be 1 or more; got {depth}")
    try:
        check_p(rbo_p)
    except ValueError as exc:
        fail(f"--rbo-p: {exc}")
    try:
        vset = variant_set(va, axes, named) if many else None
    except ValueError as exc:
        fail(str(exc))
    if vset is not None and against is not None and against not in vset.names:
        fail(f"--against: no variant named {against!r}; variants: {', '.join(vset.names)}")
    try:
        ms = parse_measures(measures)
    except ValueError as exc:
        fail(f"--measures: {exc}")
    entries = load_queries(queries)
    from engine.store.chunkids import chunk_ids

    with open_store(db) as store:  # first: a file that is no store says so, before its judgments are looked for
        judgments, qrels_path = load_qrels_option(qrels, db, missing_ok=ungraded)
        ids_in_file = [entry_id(e, i) for i, e in enumerate(entries)]
        if not ungraded and not any(judgments.judged(q) for q in ids_in_file):
            known = ", ".join(list(judgments.judgments)[:5]) or "none"
            fail(
                f"none of the {len(entries)} queries of {queries} has judgments in {qrels_path} "
                f"(query ids: {', '.join(ids_in_file[:5])}{', …' if len(ids_in_file) > 5 else ''}; judged ids: {known}); "
                "'--ungraded' lists what to grade"
            )
        if vset is None:
            vset = variant_set(va, (), [("B", vb)] if vb is not None else ())
        warn_query_file_sessions(store, entries)
        try:
            traces, stats = run_variants(store, entries, vset.variants)
        except ValueError as exc:
            fail(str(exc))
        ids = chunk_ids(store)
    if ungraded:
        queue = ungraded_queue(list(traces.items()), judgments, ids, depth)
        if as_json:
            write_json({"depth": depth, "variants": list(vset.names), "queue": [u.to_dict() for u in queue]})
        else:
            console.print(ungraded_renderable(queue, depth, len(vset.names), qrels_path))
        return
    if many:
        try:
            sw = evaluate_variants(
                traces,
                vset,
                judgments,
                ms,
                ids,
                stats,
                stage=stage,
                test="t" if test == "t" else "wilcoxon",
                depth=depth,
                p=rbo_p,
            )
        except ValueError as exc:
            fail(str(exc))
        if as_json:
            write_json(sweep_to_dict(sw))
        else:
            console.print(sweep_renderable(sw, against))
        return
    traces_a = traces[vset.reference]
    ev_a = evaluate_traces(traces_a, judgments, ms, ids, va, depth)
    cmp = None
    if vb is not None:
        traces_b = traces["B"]
        div = final_divergences(traces_a, traces_b, ids, rbo_p, depth)
        cmp = compare_evals(ev_a, evaluate_traces(traces_b, judgments, ms, ids, vb, depth), stage, div)
    if as_json:
        write_json(eval_to_dict(ev_a, cmp))
    else:
        console.print(eval_renderable(ev_a, cmp, sort))


# ─── snapshot ────────────────────────────────────────────────────────────

snapshot_app = typer.Typer(
    help="Ranking regression snapshots: record every stage's ranked chunk ids, check them later (exit 1 on change).",
    context_settings={"help_option_names": ["-h", "--help"]},
)


@snapshot_app.command("save")
def snapshot_save(
    queries: Annotated[Path, READS_QUERIES] = typer.Argument(..., help="Query file (queries.json format)."),
    db: StorePath = search_db_option(),
    out: Annotated[Path, WRITES_SNAPSHOT] = typer.Option(..., "-o", "--out", help="Snapshot file to write (JSON)."),
    variant: str = typer.Option("reference", "--variant", help=SPEC_HELP),
    force: bool = typer.Option(False, "--force", help="Replace an existing snapshot file (never a database)."),
) -> None:
    """Record, per query, the layer and each stage's ranked chunk ids."""
    check_command_output(snapshot_save, locals(), out, "-o", force)
    v = variant_option(variant, "--variant")
    entries = load_queries(queries)
    with open_store(db) as store:
        warn_query_file_sessions(store, entries)
        try:
            snap = take_snapshot(store, entries, v)
        except ValueError as exc:
            fail(str(exc))
    write_output(
        out,
        "-o",
        lambda: write_text_file(out, json_text(snap), overwrite=force),
        f"recorded {len(snap['queries'])} queries",
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
    snapshot: Annotated[Path, READS_SNAPSHOT] = typer.Argument(
        ..., help="A snapshot written by 'rankscope snapshot save'."
    ),
    db: StorePath = search_db_option(),
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
    if not os.path.lexists(snapshot):
        fail(f"no such snapshot file: {snapshot}")
    try:
        data = validate_snapshot(load_json_input(snapshot, "snapshot"), str(snapshot))
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
    source: Annotated[Path, READS_QRELS] = typer.Argument(
        ..., help="Qrels to read (TREC or JSON, detected from the content)."
    ),
    target: Annotated[Path, WRITES_QRELS] = typer.Argument(
        ..., help="File to write: JSON when it ends in .json, else TREC ('qid 0 docid grade')."
    ),
    force: bool = typer.Option(False, "--force", help="Replace an existing TARGET (never a database)."),
) -> None:
    """Convert judgments between TREC qrels and rankscope's JSON form.

    A query and document judged twice with different grades keep the last
    grade (a warning says how many pairs, and the first one's lines); a
    judgment repeated with its grade is kept once, silently. In TREC files
    ids are percent-encoded (%20 a space, %25 a '%'): a '%' that starts no
    such escape is refused, so each id is written back exactly.
    """
    try:
        q = read_qrels(source)
    except FileNotFoundError:
        fail(f"no such qrels file: {source}")
    except QrelsError as exc:
        fail(str(exc))
    warn_grade_conflicts(q, source)
    check_command_output(qrels_convert, locals(), target, "TARGET", force)
    write_output(
        target,
        "TARGET",
        lambda: write_qrels(q, target, overwrite=force),
        f"wrote {plural(q.count(), 'judgment')} for {len(q.judgments)} quer{'y' if len(q.judgments) == 1 else 'ies'}",
        meanwhile="meanwhile",
    )


@qrels_app.command("path")
def qrels_path(db: Annotated[Path, NAMES_STORE] = typer.Option(..., "--db", help="The store (not opened).")) -> None:
    """Print where the browser saves this store's judgments (and eval reads them by default)."""
    path = default_qrels_path(db)
    console.print(safe.line(str(path)), markup=False, highlight=False, soft_wrap=True)


@qrels_app.command("query-file")
def qrels_query_file(
    queries: Annotated[Path, READS_QUERIES] = typer.Argument(..., help="Query file (queries.json format)."),
    db: Annotated[Path, NAMES_STORE] = typer.Option(..., "--db", help="The store (not opened)."),
) -> None:
    """Name QUERIES as the store's query file (query-file.txt in its data
    folder): the browser grades a query typed with the text of one of its
    queries under that query's id, and its compare screen (F7, then F6) lists them."""
    load_queries(queries)  # a file that cannot be read, or with duplicate ids, is refused here
    try:
        remember_query_file(db, queries)
    except OSError as exc:
        fail(f"cannot write the store's query-file note: {exc}")
    console.print(
        safe.line(f"{queries.resolve()} is the query file of {db} (the browser grades its queries under their ids)"),
        markup=False,
        highlight=False,
        soft_wrap=True,
    )
