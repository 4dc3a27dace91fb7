"""Rich renderables for a trace: used by ``rankscope search`` (and reusable in
the browser). Imports Rich only, never Textual."""

from __future__ import annotations

import re
import shlex
from typing import Callable

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from engine.diff import stage_summaries
from engine.model import Trace
from engine.paths import sentence
from engine.stages import RETRIEVERS, in_rerun, title

from . import safe
from .fmt import clip, query_label

#: Longest empty-result reason printed in full (it can quote a corrected query).
REASON_SHOWN = 600


def plain(text: object, style: str = "") -> Text:
    """Store-derived ``text`` as one line of Rich text: control characters made
    visible (:func:`tui.safe.line`) and no markup interpreted."""
    return Text(safe.line(None if text is None else str(text)), style=style)


class PathText:
    """A store-derived path (a source label) for a table cell that wraps
    after its ``/`` separators, never inside a name: ``docs/`` over
    ``replication.md``, where Rich's folding gave ``docs/replication`` over
    ``.md``. A name wider than the column alone is folded. Its narrowest
    width is its longest name (with its slash), so a table gives it that much."""

    def __init__(self, path: object, style: str = "") -> None:
        self.text = safe.line(None if path is None else str(path))
        self.style = style

    def _names(self) -> list[str]:
        return re.findall(r"[^/]*/|[^/]+", self.text) or [""]

    @property
    def narrowest(self) -> int:
        """Its longest name, with its slash (cells)."""
        return max(cell_len(n) for n in self._names())

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement(self.narrowest, cell_len(self.text))

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        lines, current = [], ""
        for name in self._names():
            if current and cell_len(current + name) > options.max_width:
                lines.append(current)
                current = name
            else:
                current += name
        lines.append(current)
        yield Text("\n".join(lines), style=self.style, overflow="fold")


def highlight_text(highlighted: str, style: str = "bold reverse") -> Text:
    """Turn FTS5 highlight markers (``\\x02``…``\\x03``) into styled Rich text."""
    text = Text()
    inside = False
    buf: list[str] = []
    for ch in highlighted:
        if ch in "\x02\x03":
            text.append("".join(buf), style=style if inside else None)
            buf = []
            inside = ch == "\x02"
        else:
            buf.append(ch)
    text.append("".join(buf), style=style if inside else None)
    return text


def final_table(trace: Trace) -> "ByWidth":
    """The answer: position, title, source, type, session, RRF score, boost,
    laid out for the width it is printed at (:func:`_final_table`)."""
    return ByWidth(lambda width: _final_table(trace, width))


#: Widest the results table's title and source columns get (cells).
TITLE_MAX, SOURCE_MAX = 48, 32
#: Narrowest title column of the results table (cells).
TITLE_MIN = 12


def _final_table(trace: Trace, width: int) -> Table:
    """The results table in ``width`` cells: the position, the type, the
    session id and the numbers are never cut or wrapped; the source wraps
    at its slashes (its column is at least its longest name: no name is
    cut) and the title (folded at spaces) takes what is left."""
    t = Table(
        title=plain(f"Results for {query_label(trace.params.query)} (layer {trace.layer})"),
        title_justify="left",
        expand=False,
    )
    rows = [
        (
            str(r.position),
            plain(r.candidate.title),
            PathText(r.candidate.source),
            plain(r.candidate.content_type),
            plain(r.candidate.session_id or "—"),
            f"{r.candidate.score:.5f}",
            "—" if r.boost is None else f"{r.boost:.3f}",
        )
        for r in trace.final
    ]
    heads = ("#", "title", "source", "type", "session", "rrf", "boost")
    fixed = [
        max([cell_len(heads[i])] + [cell_len(str(getattr(row[i], "plain", row[i]))) for row in rows])
        for i in (0, 3, 4, 5, 6)
    ]
    room = width - (3 * len(heads) + 1) - sum(fixed)  # the heavy box: a rule and a space either side of each cell
    title_nat = min(TITLE_MAX, max([cell_len(heads[1])] + [cell_len(row[1].plain) for row in rows]))
    source_nat = min(SOURCE_MAX, max([cell_len(heads[2])] + [cell_len(row[2].text) for row in rows]))
    names = max([cell_len(heads[2])] + [row[2].narrowest for row in rows])
    source_w = min(source_nat, max(names, room - title_nat, room // 2))
    title_w = max(TITLE_MIN, min(title_nat, room - source_w))
    source_w = max(names, min(source_nat, room - title_w))
    t.add_column("#", justify="right", no_wrap=True)
    t.add_column("title", overflow="fold", width=title_w)
    t.add_column("source", width=source_w)
    t.add_column("type", no_wrap=True)
    t.add_column("session", no_wrap=True)
    t.add_column("rrf", justify="right", no_wrap=True)
    t.add_column("boost", justify="right", no_wrap=True)
    for row in rows:
        t.add_row(*row)
    return t


def stages_table(trace: Trace) -> Table:
    """One row per stage: name, what it did, time."""
    t = Table(title="Stages", title_justify="left", expand=False)
    t.add_column("stage", no_wrap=True)
    t.add_column("what happened", overflow="fold", max_width=90)
    t.add_column("ms", justify="right", no_wrap=True)
    for s in stage_summaries(trace):
        t.add_row(
            plain(s.title if not in_rerun(s.stage) else f"↳ {s.title}"),
            plain(s.headline),
            "" if s.elapsed_ms is None else f"{s.elapsed_ms:.2f}",
        )
    return t


#: Narrower than this, the fusion table puts each source under its title.
FUSION_WIDE = 110


class ByWidth:
    """A renderable built for the width it is given: ``build(width)`` (a
    table whose columns depend on the room, e.g. the terminal's width)."""

    def __init__(self, build: Callable[[int], RenderableType]) -> None:
        self.build = build

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement.get(console, options, self.build(options.max_width))

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self.build(options.max_width)


def fusion_table(trace: Trace, top: int = 10) -> ByWidth:
    """The fused list with each run's rank and contribution, collisions
    flagged, and what became of each candidate (from its path): where it
    left the pass and why, or its place in the answer. Under
    :data:`FUSION_WIDE` columns each source is printed under its title."""
    return ByWidth(lambda width: _fusion_table(trace, top, width))


def _fusion_table(trace: Trace, top: int, width: int) -> Table:
    run = trace.answering_run or trace.first
    shown = run.fusion.candidates[:top]
    wide = width >= FUSION_WIDE
    t = Table(title=f"{title('fusion')}: top {top}", title_justify="left", expand=False)
    numbers = {"#": len(str(len(shown))), "porter": 6, "trigram": 7, "score": 7}
    # a path is never cut inside a name (it wraps at its slashes): its column
    # is at least as wide as its longest name; narrow, the note takes the rest
    names = max((PathText(c.source).narrowest for c in shown), default=1)
    if wide:
        widths: dict[str, int | None] = {"title": None, "source": None, "note": None}
    else:
        room = width - (3 * (len(numbers) + 2) + 1) - sum(numbers.values())
        where = min(max(names, room // 2), 44)
        widths = {"title / source": where, "note": max(room - where, 12)}
    cols = ("#", "title", "source") if wide else ("#", "title / source")
    for col in cols + ("porter", "trigram", "score", "note"):
        t.add_column(
            col,
            justify="right" if col in numbers else "left",
            overflow="fold",
            max_width={"title": 44, "source": 32}.get(col),
            width=widths.get(col),
        )
    for i, c in enumerate(shown, 1):
        notes = []
        if c.merged_rowids:
            notes.append(f"merged row{'s' if len(c.merged_rowids) != 1 else ''} {', '.join(map(str, c.merged_rowids))}")
        path = run.path(c.rowid)
        if path is not None and path.exit is not None:
            notes.append(sentence(path.exit))
        elif path is not None and path.steps and path.steps[-1][1] is not None:
            notes.append(f"in the answer at #{path.steps[-1][1]}")
        where_cells = (
            (plain(c.title), PathText(c.source)) if wide else (Group(plain(c.title), PathText(c.source, "dim")),)
        )
        t.add_row(
            str(i),
            *where_cells,
            str(c.porter_rank or "—"),
            str(c.trigram_rank or "—"),
            f"{c.score:.5f}",
            plain("; ".join(notes)),
        )
    return t


def retriever_failures(trace: Trace) -> list[tuple[str, str]]:
    """``(retriever, SQLite's error)`` for each retriever whose query failed,
    in the first pass or the fuzzy re-run (each pair once, in order)."""
    runs = [trace.first] + ([trace.fuzzy.rerun] if trace.fuzzy.rerun is not None else [])
    seen: dict[tuple[str, str], None] = {}
    for run in runs:
        for name in RETRIEVERS:
            r = run.record(name)
            if r is not None and r.error:  # type: ignore[attr-defined]
                seen[(name, r.error)] = None  # type: ignore[attr-defined]
    return list(seen)


def retriever_warning(trace: Trace, store_path: str | None = None) -> str | None:
    """One sentence when a retriever failed (``None`` otherwise): which one,
    SQLite's words, what the answer rests on, and how to check the store.
    A failing retriever is not an error of the query (sanitising rules that
    out): it usually means a damaged FTS index, and the search still
    answers, from the other retriever only. Retrievers are named by their
    stage titles (:data:`engine.stages.STAGES`)."""
    failures = retriever_failures(trace)
    if not failures:
        return None
    names = sorted({name for name, _ in failures}, key=RETRIEVERS.index)
    words = "; ".join(dict.fromkeys(err for _, err in failures))
    if len(names) == 1:
        other = next(r for r in RETRIEVERS if r != names[0])
        what = (
            f"the {title(names[0])} retriever failed ({words}): the results come from the {title(other)} "
            "retriever alone"
        )
    else:
        what = f"both retrievers failed ({words}): there can be no results"
    check = f"rankscope doctor --db {shlex.quote(store_path)}" if store_path else "rankscope doctor"
    return f"warning: {what}. The store's FTS index is probably damaged; check it with: {check}"


def trace_renderable(trace: Trace, store_path: str | None = None) -> Group:
    """Everything ``rankscope search`` prints (a warning first when a
    retriever failed: :func:`retriever_warning`)."""
    porter = clip(trace.first.porter.query, 100) or "(none)"
    trigram = clip(trace.first.trigram.query, 100) or "(skipped)"
    parts: list[RenderableType] = []
    warning = retriever_warning(trace, store_path)
    if warning:
        parts.append(plain(warning, style="bold red"))
    parts.append(plain(f"porter: {porter}    trigram: {trigram}", style="dim"))
    if trace.final:
        parts.append(final_table(trace))
    else:
        parts.append(plain(f"No results: {clip(trace.empty_reason or '', REASON_SHOWN)}", style="bold"))
    parts.append(stages_table(trace))
    if (trace.answering_run or trace.first).fusion.candidates:
        parts.append(fusion_table(trace))
    return Group(*parts)
