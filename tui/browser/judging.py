"""Judgments in the browser: grade badges and the per-stage metrics table of
the current query. Rich only (no Textual); the numbers come from
:mod:`engine.lab.evaluation`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rich.text import Text

from engine.store import sql
from engine.store.chunkids import ChunkIds, chunk_ids
from engine.lab.evaluation import LOW_JUDGED, QueryEval, evaluate_traces, parse_measures
from engine.lab.qrels import Qrels
from engine.pipeline.trace import Trace
from engine.lab.qrels import GRADE_NAMES
from engine.pipeline.table import RANKED_IDS
from engine.pipeline.words import plural
from engine.store.store import Store

#: Measures of the browser's table (short enough for a narrow pane).
BROWSER_MEASURES = "nDCG@10,RR,R@10,P@3"
#: Grade → badge and style: shown before a graded chunk in every pane.
BADGES = {0: ("✗0", "dim"), 1: ("★1", "yellow"), 2: ("★2", "bold yellow"), 3: ("★3", "bold green")}
#: Cells a badge column takes (badge + space).
BADGE_CELLS = 3


def badge(grade: int | None) -> Text:
    """``★3`` (styled) for a graded chunk, three spaces for an ungraded one."""
    if grade is None:
        return Text(" " * BADGE_CELLS)
    mark, style = BADGES[grade]
    return Text(mark, style=style) + Text(" ")


def grade_words(grade: int) -> str:
    """``"3 highly relevant"``."""
    return f"{grade} {GRADE_NAMES[grade]}"


@dataclass(frozen=True)
class QueryJudging:
    """What the browser shows for the current query's judgments.

    Attributes:
        qid: the query id (``None`` when the query is unjudged).
        grades: ``{rowid: grade}`` for the judged chunks the store has.
        metrics: ``{stage id: {measure: value}}`` (empty when unjudged).
        missing: judged chunk ids no chunk of the store has.
        evaluation: the query's evaluation as ``rankscope eval`` makes it
            (:class:`engine.lab.evaluation.QueryEval`: the metrics and each
            stage's ``Judged@k`` shares), ``None`` when unjudged.
        judged_name: the ``Judged@k`` column shown (``Judged@10``).
    """

    qid: str | None = None
    grades: dict[int, int] = field(default_factory=dict)
    metrics: dict[str, dict[str, float]] = field(default_factory=dict)
    missing: tuple[str, ...] = ()
    evaluation: QueryEval | None = None
    judged_name: str = ""

    def judged_share(self, stage: str) -> float | None:
        """The ``Judged@k`` share of ``stage``'s list (``None``: no list, or unjudged)."""
        if self.evaluation is None:
            return None
        return self.evaluation.judged.get(stage, {}).get(self.judged_name)

    def low_judged(self, stage: str, measure: str) -> bool:
        """True when ``measure`` at ``stage`` rests on fewer than half judged results."""
        return self.evaluation is not None and self.evaluation.low_judged(stage, measure)


def judge_trace(
    store: Store,
    trace: Trace,
    qid: str | None,
    judgments: dict[str, int],
    conn: sql.Connection | None = None,
    ids: ChunkIds | None = None,
) -> QueryJudging:
    """Grades by row, per-stage metrics and ``Judged@k`` of ``trace`` for
    ``judgments`` (``{chunk id: grade}``), computed as ``rankscope eval``
    computes them (:func:`engine.lab.evaluation.evaluate_traces`). Runs in a
    worker thread (``conn`` from ``store.connect()``)."""
    if not judgments:
        return QueryJudging(qid)
    ids = ids or chunk_ids(store, conn)
    grades = {ids.by_id[cid]: g for cid, g in judgments.items() if cid in ids.by_id}
    missing = tuple(cid for cid in judgments if cid not in ids.by_id)
    key = qid or "q"
    qrels = Qrels()
    for cid, g in judgments.items():
        qrels.set_grade(key, cid, g)
    ev = evaluate_traces([(key, trace)], qrels, parse_measures(BROWSER_MEASURES), ids)
    q = ev.queries[0]
    return QueryJudging(qid, grades, q.stages, missing, q, ev.judged_names[0])


#: Marks a value that rests on fewer than half judged results (as ``rankscope eval`` does).
LOW_MARK = "?"


def metrics_lines(judging: QueryJudging, width: int) -> list[Text]:
    """The per-stage metrics table as lines (header, one row per stage that
    ran, in pipeline order, its ``Judged@k`` last; a value resting on fewer
    than half judged results is marked ``?`` and a legend says so), or
    nothing when the query is unjudged."""
    if not judging.metrics:
        return []
    measures = list(next(iter(judging.metrics.values())).keys())
    n = sum(1 for g in judging.grades.values() if g > 0)
    head = Text(f"Judged: {plural(len(judging.grades), 'chunk')} ({n} relevant)", style="bold")
    if judging.missing:
        head.append(f" · {plural(len(judging.missing), 'judged chunk')} not in this store", style="dim")
    lines = [head]
    col = 8
    stage_w = 14
    jname = judging.judged_name
    jcol = len(jname) + 2 if jname else 0
    header = Text(" " * 2 + "stage".ljust(stage_w), style="bold")
    for m in measures:
        header.append(m.rjust(col), style="bold")
    header.append(jname.rjust(jcol), style="bold")
    lines.append(header)
    low_seen = False
    for stage in RANKED_IDS:
        if stage not in judging.metrics:
            continue
        row = Text("  " + stage.ljust(stage_w))
        for m in measures:
            v = judging.metrics[stage][m]
            low = judging.low_judged(stage, m)
            low_seen = low_seen or low
            mark = LOW_MARK if low else " "
            row.append(f"{v:.3f}{mark}".rjust(col), style="yellow" if low else ("" if v > 0 else "dim"))
        if jname:
            share = judging.judged_share(stage)
            text = "—" if share is None else f"{share:.2f}"
            row.append(text.rjust(jcol - 1) + " ", style="yellow" if share is not None and share < LOW_JUDGED else "")
        lines.append(row)
    if low_seen:
        lines.append(
            Text(f"{LOW_MARK} rests on fewer than half judged results ({jname}: the judged share)", style="dim")
        )
    if width < 2 + stage_w + col * len(measures) + jcol:
        from tui.present.cut import end_cut

        return [end_cut(t, width) for t in lines]
    return lines
