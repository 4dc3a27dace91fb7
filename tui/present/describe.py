"""One description of what compare, why-not and doctor found, for both front-ends.

``rankscope compare`` / ``why`` / ``doctor`` and the browser's F7 / F8 / F9
screens show the same findings. The words, numbers, columns and emphasis are
decided once here, as data (:class:`Span`, :class:`~tui.present.tablefit.Table`
of :data:`Line` cells, :class:`Description`); :func:`to_rich` is the one converter to Rich that both
use (the CLI prints it, the browser puts it in a ``Static``; the compare
screen fills its ``DataTable`` from the same :class:`Table`, converting cells
with :func:`line_text`). Store-derived text is made safe
(:func:`tui.present.safe.line`) in the converter. No Textual here.

Emphasis is a role, not a colour (:data:`ROLES`): meaning never rests on
colour alone (markers carry ↑ ↓ = new gone, verdicts ✓ ✗ ⚠ and words), and
bad news (``bad``, ``down``, ``gone``) is bold and never dim, so that
without colour (``NO_COLOR``) it is at least as visible as the good news.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Sequence

from rich.console import Group, RenderableType
from rich.table import Table as RichTable
from rich.text import Text

from engine.pipeline.variants import variant_spec
from engine.pipeline.table import in_rerun, stage, title
from engine.lab.why import Explanation

from tui.present import safe
from tui.present.cut import clip
from tui.present.fmt import query_label
from tui.present.render import retriever_warning
from tui.present.tablefit import Column, Fitted, Table

# Types only: the browser's first paint loads neither the compare nor the doctor code.
if TYPE_CHECKING:
    from engine.lab.compare import ChunkComparison, CompareCounts, Comparison
    from engine.lab.doctor import DoctorReport

#: Role → Rich style.
ROLES = {
    "": "",
    "strong": "bold",
    "dim": "dim",
    "em": "italic",
    "good": "bold green",
    "warn": "bold yellow",
    "bad": "bold red",
    "up": "green",
    "down": "bold red",
    "same": "dim",
    "new": "cyan",
    "gone": "bold magenta",
}

#: Longest empty-result reason shown in full (it can quote a corrected query).
REASON_SHOWN = 600


@dataclass(frozen=True)
class Span:
    """A piece of text and its role (a key of :data:`ROLES`)."""

    text: str
    role: str = ""


#: One line: spans in order.
Line = tuple[Span, ...]


def line(*parts: str | Span) -> Line:
    """A :data:`Line` from strings (plain) and spans."""
    return tuple(p if isinstance(p, Span) else Span(p) for p in parts)


@dataclass(frozen=True)
class Description:
    """Blocks in order: lines, tables and blank lines (``()``)."""

    blocks: tuple[Line | Table[Line], ...] = field(default_factory=tuple)


# ─── the one converter ───────────────────────────────────────────────────


def line_text(ln: Line, **kwargs: Any) -> Text:
    """One :data:`Line` as Rich text (every span made safe for a terminal)."""
    t = Text(**kwargs)
    for s in ln:
        t.append(safe.line(s.text), style=ROLES[s.role])
    return t


def table_heading(tb: Table[Line], shown: int) -> Text:
    """``Name (n): gloss; first k shown, hint``."""
    n = len(tb.rows)
    count = f"{n} {tb.unit}{'' if n == 1 else 's'}" if tb.unit else str(n)
    heading = Text(f"{tb.name} ({count})", style="bold")
    more = f"first {shown} shown" + (f", {tb.more_hint}" if tb.more_hint else "") if shown < len(tb.rows) else ""
    tail = "; ".join(x for x in (tb.gloss, more) if x)
    if tail:
        heading.append(f": {tail}", style="dim")
    return heading


#: Widest a wide column gets (cells).
WIDE_MAX = 56
#: Narrowest a wide column is squeezed to by :func:`table_renderable` with ``fit`` (cells).
WIDE_MIN = 10


def table_renderable(tb: Table[Line], max_rows: int | None = None, details: bool = True, fit: bool = False) -> Group:
    """The heading over a Rich table of at most ``max_rows`` rows (all when
    ``None``); ``details`` false leaves the detail columns out. ``fit``
    lays the table out for the width it is printed at (the CLI,
    :func:`_fitted`); without it Rich shares the room."""
    columns = [c for c in tb.columns if details or not c.detail]
    keep = [i for i, c in enumerate(tb.columns) if details or not c.detail]
    rows = tb.rows if max_rows is None else tb.rows[:max_rows]
    if fit:
        return Group(_fitted(table_heading(tb, len(rows)), columns, keep, rows))
    t = RichTable(expand=False, box=None, header_style="bold underline", pad_edge=False)
    for c in columns:
        if c.wide:
            t.add_column(c.name, overflow="fold", ratio=1, max_width=WIDE_MAX)
        else:
            t.add_column(c.name, no_wrap=True, justify="right" if c.numeric else "left")
    for row in rows:
        t.add_row(*[line_text(row[i]) for i in keep])
    return Group(table_heading(tb, len(rows)), t)


def _fitted(heading: Text, columns: list[Column], keep: list[int], rows: Sequence[Sequence[Line]]) -> Fitted:
    """:func:`table_renderable`'s table laid out by :mod:`tui.present.tablefit`:
    numbers and the key never cut or wrapped; the wide columns share what
    the others leave, a ``path`` column at least its longest name (so no
    name is cut), the others at least :data:`WIDE_MIN`, wrapped at spaces.
    When they do not fit side by side they are stacked in one (``title /
    source``), and when even that does not fit the table is split into
    parts that repeat the key column, under ``heading`` (``… (continued)``)."""
    from rich.cells import cell_len

    from tui.present.render import PathText
    from tui.present.tablefit import Cell, Stack

    def cell(j: int, ln: Line) -> Cell:
        text = line_text(ln)
        return PathText(text.plain, str(text.spans[0].style) if text.spans else "") if columns[j].path else text

    cells: list[list[Cell]] = [[cell(j, row[i]) for j, i in enumerate(keep)] for row in rows]
    wide = [j for j, c in enumerate(columns) if c.wide]

    def floor_of(j: int) -> int:
        head = cell_len(columns[j].name)
        if columns[j].path:
            return max([head] + [r[j].narrowest for r in cells])  # type: ignore[union-attr]
        return max(head, WIDE_MIN)

    def col(j: int) -> Column:
        c = columns[j]
        return replace(c, min_width=floor_of(j), max_width=max(WIDE_MAX, floor_of(j))) if c.wide else c

    options: dict[str, Any] = {"box": None, "header_style": "bold underline", "pad_edge": False}
    side_by_side = Fitted(Table(heading, [col(j) for j in range(len(columns))], cells), **options)
    if len(wide) < 2:
        return side_by_side
    first = wide[0]
    shown = [j for j in range(len(columns)) if j == first or j not in wide]
    floor = max(floor_of(j) for j in wide)
    stack = Column(" / ".join(columns[w].name for w in wide), "free", min_width=floor, max_width=max(WIDE_MAX, floor))

    def dim(c: Cell) -> Cell:
        return PathText(c.text, "dim") if isinstance(c, PathText) else c

    def stacked(r: list[Cell]) -> Cell:
        return Stack(*[dim(r[w]) for w in wide])

    narrow = [[stacked(r) if j == first else r[j] for j in shown] for r in cells]
    side_by_side.instead = Fitted(Table(heading, [stack if j == first else col(j) for j in shown], narrow), **options)
    return side_by_side


def to_rich(desc: Description, max_rows: int | None = None, details: bool = True, fit: bool = False) -> Group:
    """Every block of ``desc`` as Rich renderables (tables cut to
    ``max_rows``; ``fit``: see :func:`table_renderable`)."""
    parts: list[RenderableType] = []
    for block in desc.blocks:
        if isinstance(block, Table):
            parts.append(table_renderable(block, max_rows, details, fit))
        else:
            parts.append(line_text(block))
    return Group(*parts)


# ─── why-not ─────────────────────────────────────────────────────────────


def stage_words(stage: str) -> str:
    """A stage id in words, from :data:`engine.pipeline.table.STAGES`:
    ``fuzzy:trim`` → ``fuzzy re-run · Trim``."""
    return f"fuzzy re-run · {title(stage)}" if in_rerun(stage) else title(stage)


def _reason_role(e: Explanation) -> str:
    """``good``: returned, as the answer tells it; ``warn``: returned, with a
    caveat from another stage (moved down by the rerank); ``bad``: left."""
    if not e.returned:
        return "bad"
    return "good" if stage(e.stage).kind == "answer" else "warn"


def describe_explanation(e: Explanation) -> Description:
    """The chunk, a verdict (✓ in the answer / ✗ left the pipeline at a
    stage, with the reason code) and the engine's message with the numbers."""
    c = e.chunk
    head = line(Span(f"row {c.rowid} ", "strong"), Span(c.title or "(no title)", "strong"))
    where = line(Span(f"{c.source} · {c.content_type} · session {c.session_id or '(none)'}", "dim"))
    if e.returned:
        verdict: list[Span] = [
            Span("✓ in the answer" + (f" at #{e.position}" if e.position is not None else ""), "strong")
        ]
    else:
        verdict = [Span(f"✗ left the pipeline at {stage_words(e.stage)}", "strong")]
        if e.position is not None:
            verdict.append(Span(f" (#{e.position} at that stage)"))
    verdict += [Span(" · reason ", "dim"), Span(e.reason, _reason_role(e))]
    if e.run == "fuzzy" and not in_rerun(e.stage):
        verdict.append(Span(" (fuzzy re-run)", "dim"))
    return Description((head, where, tuple(verdict), line(e.message)))


def describe_explanations(explanations: list[Explanation]) -> Description:
    """Every explanation, separated by blank lines."""
    blocks: list[Line | Table[Line]] = []
    for i, e in enumerate(explanations):
        if i:
            blocks.append(())
        blocks += describe_explanation(e).blocks
    return Description(tuple(blocks))


# ─── compare ─────────────────────────────────────────────────────────────


def marker_label(row: ChunkComparison) -> str:
    """``↑2`` / ``↓1`` / ``=`` / ``new`` / ``gone``: the move from A to B in words and symbols."""
    if row.marker == "up":
        return f"↑{row.delta}"
    if row.marker == "down":
        return f"↓{-(row.delta or 0)}"
    return {"same": "=", "new": "new", "gone": "gone"}[row.marker]


def counts_line(counts: CompareCounts, overlap: float | None = None, mean: bool = False) -> Line:
    """``improved 0 · worsened 2 · unchanged 1 · only in A 2 · only in B 2 · overlap 0.20``."""
    out: list[Span] = []
    for i, (name, n, role) in enumerate(
        (
            ("improved", counts.improved, "up"),
            ("worsened", counts.worsened, "down"),
            ("unchanged", counts.unchanged, ""),
            ("only in A", counts.only_in_a, "gone"),
            ("only in B", counts.only_in_b, "new"),
        )
    ):
        if i:
            out.append(Span(" · ", "dim"))
        out += [Span(f"{name} "), Span(str(n), role if n and role else "strong")]
    if overlap is not None:
        out += [Span(" · ", "dim"), Span(f"{'mean ' if mean else ''}overlap {overlap:.2f}")]
    return tuple(out)


def side_note(label: str, layer: str, n: int) -> str:
    """``A rrf, 3 results``."""
    return f"{label} {layer}, {n} result{'s' if n != 1 else ''}"


def _num(n: int | None) -> Line:
    return line("—" if n is None else str(n))


def _score(x: float | None, fmt: str) -> Line:
    return line("—" if x is None else format(x, fmt))


#: The compare table's columns.
COMPARE_COLUMNS = (
    Column("A#", justify="right"),
    Column("B#", justify="right"),
    Column("move"),
    Column("row", "key", "right"),
    Column("title", "free"),
    Column("source", "free", path=True),
    Column("rrf A", justify="right", detail=True),
    Column("rrf B", justify="right", detail=True),
    Column("boost A", justify="right", detail=True),
    Column("boost B", justify="right", detail=True),
)


@dataclass(frozen=True)
class ComparisonDescription:
    """A comparison in parts, so the browser can lay them out around its form.

    Attributes:
        head: both variants with their layers and result counts.
        table: one row per chunk (``COMPARE_COLUMNS``); no rows when both
            answers are empty.
        empty: why neither run returned anything (lines), or ``()``.
        counts: the counts (improved, worsened, unchanged, only in A / B).
        overlap: shared chunks / the longer answer (0..1).
        notes: short notes (``A rrf, 3 results``, shadow corrections,
            ``same answer, same order``).
        warnings: one line per run whose retriever failed
            (:func:`tui.present.render.retriever_warning`), or ``()``.
    """

    head: Line
    table: Table[Line]
    empty: tuple[Line, ...]
    counts: Line
    overlap: float
    notes: tuple[str, ...]
    warnings: tuple[Line, ...] = ()

    def as_description(self) -> Description:
        """Head, the retriever warnings, the table (or why it is empty), the
        counts with the overlap, the notes."""
        body: tuple[Line | Table[Line], ...] = (self.table,) if self.table.rows else self.empty
        counts = self.counts + (Span(" · ", "dim"), Span(f"overlap {self.overlap:.2f}"))
        notes = (line(Span(" · ".join(self.notes), "dim")),) if self.notes else ()
        return Description((self.head,) + self.warnings + ((),) + body + ((), counts) + notes)


def describe_comparison(cmp: Comparison, store_path: str | None = None) -> ComparisonDescription:
    """A :class:`~engine.lab.compare.Comparison` as data both front-ends show
    (``store_path`` goes into the retriever warnings' check command)."""
    ta, tb = cmp.trace_a, cmp.trace_b
    head = line(
        Span("A ", "strong"),
        f"{variant_spec(ta.params.variant)} (layer {ta.layer}, {len(ta.final)} results)   ",
        Span("B ", "strong"),
        f"{variant_spec(tb.params.variant)} (layer {tb.layer}, {len(tb.final)} results)",
    )
    warnings = tuple(
        line(Span(f"{label}: {w}", "bad"))
        for label, w in (("A", retriever_warning(ta, store_path)), ("B", retriever_warning(tb, store_path)))
        if w
    )
    rows = tuple(
        (
            _num(r.position_a),
            _num(r.position_b),
            line(Span(marker_label(r), r.marker)),
            line(Span(str(r.rowid), "dim")),
            line(Span(r.title, "strong")),
            line(Span(r.source, "dim")),
            _score(r.score_a, ".4f"),
            _score(r.score_b, ".4f"),
            _score(r.boost_a, ".3f"),
            _score(r.boost_b, ".3f"),
        )
        for r in cmp.rows
    )
    table = Table(f"A vs B for {query_label(cmp.params_a.query)}", COMPARE_COLUMNS, rows, unit="chunk")
    empty: tuple[Line, ...] = ()
    if not cmp.rows:
        empty = (line(Span("Neither run returned anything.", "strong")),) + tuple(
            line(f"{label}: {clip(t.empty_reason, REASON_SHOWN)}")
            for label, t in (("A", ta), ("B", tb))
            if t.empty_reason
        )
    d = cmp.divergence()
    notes = [
        side_note("A", ta.layer, len(ta.final)),
        side_note("B", tb.layer, len(tb.final)),
        f"RBO {d.rbo:.2f} · J@{d.k} {d.jaccard:.2f}",
    ]
    for label, t in (("A", ta), ("B", tb)):
        if t.fuzzy.shadow and t.fuzzy.rerun is not None:
            notes.append(
                f"{label}: fuzzy shadow run corrected the query to {query_label(t.fuzzy.corrected_query or '')}"
                " (not the answer)"
            )
        elif t.fuzzy.shadow:
            notes.append(f"{label}: fuzzy shadow run: no word needed or found a correction")
    if cmp.counts.identical and cmp.rows:
        notes.append("same answer, same order")
    return ComparisonDescription(head, table, empty, counts_line(cmp.counts), cmp.overlap, tuple(notes), warnings)


# ─── doctor ──────────────────────────────────────────────────────────────


def describe_report(report: DoctorReport, label: str = "") -> Description:
    """The store line, the integrity checks run, one line per finding (in
    words: ✗ for damage, ⚠ otherwise; with damage, how to rebuild), then a
    table per kind of problem (every row: front-ends show the first few)."""
    if report.read_error is not None:
        stats = f"{report.schema} · unreadable"
    else:
        vocab = "missing (no typo fallback)" if report.vocabulary_size is None else f"{report.vocabulary_size} words"
        stats = (
            f"{report.schema} · {report.sources} sources · {report.chunks} chunks · "
            f"trigram rows {report.trigram_rows} · vocabulary {vocab}"
        )
        if report.segments:
            stats += " · index segments " + ", ".join(
                f"{table} {'?' if n is None else n}" for table, n in report.segments
            )
    blocks: list[Line | Table[Line]] = [
        line(Span(label or report.path or "(in memory)", "strong")),
        line(Span(stats, "dim")),
    ]
    if report.integrity:
        blocks.append(
            line(
                Span(
                    "integrity: " + ", ".join(f"{c.title} {'ok' if c.ok else 'FAILED'}" for c in report.integrity),
                    "dim",
                )
            )
        )
    blocks.append(())
    if report.ok:
        blocks.append(line(Span("✓ No problems found.", "good")))
        return Description(tuple(blocks))
    # ``findings`` begins with the read error, then one line per failed integrity check (damage, or a
    # check that could not run), in that order; the rest are not damage
    damage = ([True] if report.read_error is not None else []) + [c.damage for c in report.integrity if not c.ok]
    for i, finding in enumerate(report.findings):
        bad = i < len(damage) and damage[i]
        blocks.append(line(Span(("✗ " if bad else "⚠ ") + finding, "bad" if bad else "warn")))
    if report.damaged:
        blocks.append(
            line(
                Span(
                    "Rebuild the store from its files (rankscope index into a new --db; rankscope never "
                    "writes to it): searches on a damaged index can silently miss or misrank chunks.",
                    "em",
                )
            )
        )
    hint = "rankscope doctor --json lists all"

    def table(name: str, gloss: str, columns: tuple[Column, ...], rows: list[tuple[Any, ...]]) -> None:
        blocks.extend([(), Table(name, columns, tuple(tuple(line(str(x)) for x in r) for r in rows), gloss, hint)])

    def n(name: str) -> Column:
        return Column(name, justify="right")

    def w(name: str) -> Column:
        return Column(name, "free")

    if report.collisions:
        table(
            "Fusion-key collisions",
            "chunks sharing source::title; fusion keeps the first row seen",
            (n("chunks"), w("key"), w("rowids")),
            [(c.count, c.key, ", ".join(map(str, c.rowids))) for c in report.collisions],
        )
    if report.oversized:
        table(
            f"Chunks over {report.max_chunk_bytes} bytes",
            "",
            (n("rowid"), n("bytes"), w("title"), w("source")),
            [(o.rowid, o.bytes, o.title, o.source or "(no source row)") for o in report.oversized],
        )
    if report.untitled:
        table(
            "Empty or Untitled titles",
            "no heading, weak title boost",
            (n("rowid"), w("title"), w("source")),
            [(u.rowid, repr(u.title), u.source or "(no source row)") for u in report.untitled],
        )
    if report.count_mismatches:
        table(
            "Counts that disagree with the rows stored",
            "",
            (n("id"), w("source"), Column("count"), n("recorded"), n("actual")),
            [
                (
                    "—" if m.source_id is None else m.source_id,
                    "—" if m.label is None else m.label,
                    m.what,
                    m.recorded,
                    m.actual,
                )
                for m in report.count_mismatches
            ],
        )
    if report.stale:
        table(
            "Stale file-backed sources",
            "changed since indexing (not refreshed here)",
            (w("label"), w("file")),
            [(s.label, s.file_path) for s in report.stale],
        )
    if report.stale_errors:
        table("Sources that could not be checked", "", (w("label"), w("error")), list(report.stale_errors))
    return Description(tuple(blocks))
