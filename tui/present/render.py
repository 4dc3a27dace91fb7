"""Rich renderables for a trace: used by ``rankscope search`` (and reusable in
the browser). Imports Rich only, never Textual."""

from __future__ import annotations

import re
import shlex
from typing import Callable

from rich import box
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.measure import Measurement
from rich.text import Text

from engine.lab.journey import stage_summaries
from engine.pipeline.trace import Trace
from engine.pipeline.paths import sentence
from engine.pipeline.table import RETRIEVERS, in_rerun, title

from tui.present import safe
from tui.present.cut import clip, middle_cut
from tui.present.fmt import query_label
from tui.present.tablefit import Cell, Column, Fitted, Stack, Table

#: Longest empty-result reason printed in full (it can quote a corrected query).
REASON_SHOWN = 600


def plain(text: object, style: str = "") -> Text:
    """Store-derived ``text`` as one line of Rich text: control characters made
    visible (:func:`tui.present.safe.line`) and no markup interpreted."""
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

    @property
    def plain(self) -> str:
        """Its text (:class:`tui.present.tablefit.Shaped`)."""
        return self.text

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


#: A chunk id's pieces: a path's names with their ``/``, the source with its
#: ``::``, the title's words with the spaces after them.
_ID_PIECES = re.compile(r"(?:[^/:\s]|:(?!:))*(?:/|::|\s+)|(?:[^/:\s]|:(?!:))+")


class ChunkIdText(PathText):
    """A chunk id (``SOURCE::TITLE``, :mod:`engine.store.chunkids`) for a table
    cell: wraps after the source's ``/``, after ``::`` and between the title's
    words (``docs/replication.md::`` over ``Replication > Write quorum``), never
    inside a name; a piece wider than the column is cut in the middle
    (:func:`tui.present.cut.middle_cut`), so no id loses its start or its end.
    Its narrowest width is its longest piece (cells)."""

    def _names(self) -> list[str]:
        return _ID_PIECES.findall(self.text) or [""]

    @property
    def narrowest(self) -> int:
        """Its longest piece, without the spaces after it (cells)."""
        return max(cell_len(n.rstrip()) for n in self._names())

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement(self.narrowest, cell_len(self.text.rstrip()))

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = options.max_width
        lines, current = [], ""
        for name in self._names():
            if current.strip() and cell_len((current + name).rstrip()) > width:
                lines.append(current)
                current = name
            else:
                current += name
        lines.append(current)
        cut = [middle_cut(line.rstrip(), width, sep="\x00") for line in lines]
        yield Text("\n".join(cut), style=self.style, no_wrap=True, overflow="crop")


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


def final_table(trace: Trace) -> Fitted:
    """The answer: position, title, source, type, session, RRF score and
    boost, laid out for the width it is printed at (:mod:`tui.present.tablefit`):
    the position, the type, the session id and the numbers are never cut
    or wrapped; the title wraps at spaces and the source at its slashes
    (its column is at least its longest name: no name is cut); when the two
    do not fit side by side the source goes under the title."""
    title = plain(f"Results for {query_label(trace.params.query)} (layer {trace.layer})", style="table.title")
    heads = [Column("#", "key", justify="right")]
    tail = [Column("type"), Column("session"), Column("rrf", justify="right"), Column("boost", justify="right")]
    names = max([cell_len("source")] + [PathText(r.candidate.source).narrowest for r in trace.final])
    rows: list[list[Cell]] = []
    stacked: list[list[Cell]] = []
    for r in trace.final:
        c = r.candidate
        values: list[Cell] = [
            plain(c.content_type),
            plain(c.session_id or "—"),
            f"{c.score:.5f}",
            "—" if r.boost is None else f"{r.boost:.3f}",
        ]
        rows.append([str(r.position), plain(c.title), PathText(c.source), *values])
        stacked.append([str(r.position), Stack(plain(c.title), PathText(c.source, "dim")), *values])
    side_by_side = [
        Column("title", "free", min_width=TITLE_MIN, max_width=TITLE_MAX, share=3),
        Column("source", "free", min_width=names, max_width=max(SOURCE_MAX, names), share=2),
    ]
    one = [Column("title / source", "free", min_width=max(TITLE_MIN, names), max_width=max(TITLE_MAX, names))]
    return Fitted(
        Table(title, heads + side_by_side + tail, rows),
        box=box.HEAVY_HEAD,
        instead=Fitted(Table(title, heads + one + tail, stacked), box=box.HEAVY_HEAD),
    )


#: Widest the results table's title and source columns get (cells).
TITLE_MAX, SOURCE_MAX = 48, 32
#: Narrowest title column of the results table (cells).
TITLE_MIN = 12
#: Narrowest free-text column of the stage and fusion tables (cells).
NOTE_MIN = 12


def stages_table(trace: Trace) -> Fitted:
    """One row per stage: name, what it did (wrapped at spaces), time."""
    cols = [
        Column("stage", "key"),
        Column("what happened", "free", min_width=NOTE_MIN, max_width=90),
        Column("ms", justify="right"),
    ]
    rows: list[list[Cell]] = [
        [
            plain(s.title if not in_rerun(s.stage) else f"↳ {s.title}"),
            plain(s.headline),
            "" if s.elapsed_ms is None else f"{s.elapsed_ms:.2f}",
        ]
        for s in stage_summaries(trace)
    ]
    return Fitted(Table(plain("Stages", style="table.title"), cols, rows), box=box.HEAVY_HEAD)


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
    :data:`FUSION_WIDE` columns each source is printed under its title, and
    when even that does not fit whole, the note under both
    (:mod:`tui.present.tablefit`: the ranks and scores are never cut or wrapped)."""
    return ByWidth(lambda width: _fusion_table(trace, top, width))


def _fusion_table(trace: Trace, top: int, width: int) -> Fitted:
    run = trace.answering_run or trace.first
    shown = run.fusion.candidates[:top]
    # a path is never cut inside a name (it wraps at its slashes): its column
    # is at least as wide as its longest name
    names = max([cell_len("source")] + [PathText(c.source).narrowest for c in shown])
    heading = plain(f"{title('fusion')}: top {top}", style="table.title")
    key = [Column("#", "key", justify="right")]
    numbers = [Column(name, justify="right") for name in ("porter", "trigram", "score")]
    note = [Column("note", "free", min_width=NOTE_MIN, share=2)]  # the title's half beside it, a third when wide
    wide: list[list[Cell]] = []
    narrow: list[list[Cell]] = []
    narrowest: list[list[Cell]] = []
    for i, c in enumerate(shown, 1):
        notes = []
        if c.merged_rowids:
            notes.append(f"merged row{'s' if len(c.merged_rowids) != 1 else ''} {', '.join(map(str, c.merged_rowids))}")
        path = run.path(c.rowid)
        if path is not None and path.exit is not None:
            notes.append(sentence(path.exit))
        elif path is not None and path.steps and path.steps[-1][1] is not None:
            notes.append(f"in the answer at #{path.steps[-1][1]}")
        ranks: list[Cell] = [str(c.porter_rank or "—"), str(c.trigram_rank or "—"), f"{c.score:.5f}"]
        what = plain("; ".join(notes))
        wide.append([str(i), plain(c.title), PathText(c.source), *ranks, what])
        narrow.append([str(i), Stack(plain(c.title), PathText(c.source, "dim")), *ranks, what])
        narrowest.append(
            [str(i), Stack(plain(c.title), PathText(c.source, "dim"), plain(what.plain, "italic")), *ranks]
        )
    stack_min = max(NOTE_MIN, names)
    stacked = Fitted(
        Table(
            heading,
            key + [Column("title / source / note", "free", min_width=stack_min, max_width=max(44, names))] + numbers,
            narrowest,
        ),
        box=box.HEAVY_HEAD,
    )
    where = [Column("title / source", "free", min_width=stack_min, max_width=max(44, names), share=2)]
    by_title = Fitted(Table(heading, key + where + numbers + note, narrow), box=box.HEAVY_HEAD, instead=stacked)
    if width < FUSION_WIDE:
        return by_title
    side_by_side = [
        Column("title", "free", max_width=44, share=3),
        Column("source", "free", min_width=names, max_width=max(32, names), share=2),
    ]
    return Fitted(Table(heading, key + side_by_side + numbers + note, wide), box=box.HEAVY_HEAD, instead=by_title)


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
    stage titles (:data:`engine.pipeline.table.STAGES`)."""
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
