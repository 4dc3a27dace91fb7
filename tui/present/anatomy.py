"""The anatomy of a score and "why is X above Y", as descriptions both
front-ends show (``rankscope explain`` prints them; the browser's Journey
pane and stage inspector show them).

Built from :mod:`engine.lab.explain`'s data as :class:`~tui.present.describe.Description`
blocks (lines and tables: :func:`tui.present.describe.to_rich` converts
them), so the words and numbers are decided once. Numbers: bm25 and parts
to 6 decimals, idf to 4, fused scores to 6, boosts to 4; positions 1-based
(``#3``). No Textual here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from engine.lab.counterfactual import Counterfactual, change_words
from engine.lab.counterfactual import sentence as counterfactual_sentence
from engine.lab.explain import ChunkAnatomy, Decision, FusedSide, RetrieverAnatomy, RetrieverDiff, Versus
from engine.pipeline.paths import sentence as exit_sentence
from engine.pipeline.table import base_id, in_rerun
from engine.pipeline.stages.rerank import RerankEntry

from tui.present.describe import Description, Line, Span, line, stage_words
from tui.present.tablefit import Column, Table

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, Group, RenderResult

#: Retriever ids → the names shown.
RETRIEVER_NAMES = {"porter": "Porter", "trigram": "Trigram"}


def _pos(p: int | None) -> str:
    return "—" if p is None else f"#{p}"


def _num(x: float | None, digits: int = 6) -> str:
    return "—" if x is None else f"{x:.{digits}f}"


def _tf(x: float) -> str:
    return f"{x:g}"


def chunk_head(a: ChunkAnatomy) -> tuple[Line, Line]:
    """``row 106 Replication > Write quorum`` and ``docs/replication.md · final #1``."""
    where = "not in the answer" if a.final is None else f"final #{a.final}"
    if a.exit is not None:
        where = f"left at {stage_words(a.exit.stage)}: {exit_sentence(a.exit)}"
    elif all(p is None for _, p in a.steps):
        where = "not retrieved by this search"
    return (
        line(Span(f"row {a.rowid} ", "strong"), Span(a.title or "(no title)", "strong")),
        line(Span(a.source, "dim"), Span(" · "), Span(where, "good" if a.final is not None else "warn")),
    )


def steps_line(a: ChunkAnatomy) -> Line:
    """``porter #2 · trigram #2 · fusion #2 · … · final #1`` (ids as the pass
    ran them; a fuzzy re-run's are prefixed)."""
    out: list[Span] = []
    for i, (sid, pos) in enumerate(a.steps):
        if i:
            out.append(Span(" · ", "dim"))
        out += [Span(f"{sid} "), Span(_pos(pos), "strong" if pos is not None else "dim")]
    return tuple(out)


#: Columns of a retriever's anatomy table.
ANATOMY_COLUMNS = (
    Column("phrase", kind="free"),
    Column("rows", justify="right"),
    Column("idf", justify="right"),
    Column("title", justify="right"),
    Column("content", justify="right"),
    Column("tf", justify="right"),
    Column("part", justify="right"),
)


def retriever_verdict(r: RetrieverAnatomy) -> str:
    """What the retriever did with the chunk, in words."""
    name = RETRIEVER_NAMES.get(r.retriever, r.retriever)
    if not r.match:
        return f"{name}: did not run for this query (no word it indexes, or the variant skips it)"
    if r.bm25 is None:
        return f"{name}: no phrase of {r.match} matches this chunk"
    if r.rank is None:
        return f"{name}: bm25 {_num(r.bm25)}, but not among the rows it returned"
    return f"{name}: rank #{r.rank}, bm25 {_num(r.bm25)}"


def describe_retriever(r: RetrieverAnatomy) -> Description:
    """One retriever's anatomy: a table headed by the verdict and the
    table's numbers (rows, average and this chunk's tokens), a row per
    phrase, then the sum checked against FTS5's value."""
    if not r.match:
        return Description((line(Span(retriever_verdict(r), "strong")),))
    gloss = f"{r.rows:,} rows, {r.avg_tokens:.2f} tokens on average, this chunk {r.row_tokens}"
    if r.unsupported is not None:
        return Description(
            (
                line(Span(retriever_verdict(r), "strong")),
                line(Span(f"no breakdown: this table is not supported ({r.unsupported}); {gloss}", "warn")),
            )
        )
    rows = tuple(
        (
            line(Span(p.phrase, "strong" if p.part else "")),
            line(f"{p.rows_matching:,}"),
            line(f"{p.idf:.4f}"),
            line(str(p.title_hits)),
            line(str(p.content_hits)),
            line(_tf(p.weighted_tf)),
            line(Span(_num(p.part), "strong" if p.part else "dim")),
        )
        for p in r.phrases
    )
    blocks: list[Line | Table[Line]] = [Table(retriever_verdict(r), ANATOMY_COLUMNS, rows, gloss=gloss, unit="phrase")]
    if r.bm25 is not None:
        parts = " + ".join(_num(p.part) for p in r.phrases if p.part)
        check = Span(" = FTS5's bm25() to the last bit", "good") if r.exact else Span(" ≠ FTS5's value", "bad")
        blocks.append(line(f"bm25 = -({parts}) = {_num(-1.0 * r.score)}", check))
    return Description(tuple(blocks))


#: How a part is computed, under the tables (FTS5's bm25, ``fts5_aux.c``).
FORMULA = (
    "part = idf × tf × (k1 + 1) / (tf + k1 × (1 − b + b × tokens / average)), k1 1.2, b 0.75; "
    "tf = 5 × title hits + 1 × content hits; idf = ln((rows − n + 0.5) / (n + 0.5)), at least 1e-6"
)


def describe_anatomy(a: ChunkAnatomy) -> Description:
    """A chunk's head, its positions at every stage, then each retriever's anatomy."""
    blocks: list[Line | Table[Line]] = [*chunk_head(a), line(Span("id ", "dim"), a.chunk_id)]
    if a.pass_name == "fuzzy":
        blocks.append(line(Span(f"the typo re-run answered: its query {a.query!r}", "em")))
    blocks.append(steps_line(a))
    for r in a.retrievers:
        blocks.append(())
        blocks += describe_retriever(r).blocks
    if any(r.phrases for r in a.retrievers):
        blocks += [(), line(Span(FORMULA, "dim"))]
    return Description(tuple(blocks))


# ─── X versus Y ──────────────────────────────────────────────────────────


def _row(rowid: int | None) -> str:
    return "—" if rowid is None else f"row {rowid}"


def positions_table(v: Versus) -> Table[Line]:
    """Both chunks' positions at every stage of the pass."""
    x, y = v.chunk, v.other
    other = dict(y.steps)
    rows = tuple(
        (line(sid), line(Span(_pos(p), "strong" if p else "dim")), line(Span(_pos(other.get(sid)), "dim")))
        for sid, p in x.steps
    )
    cols = (
        Column("stage", kind="key"),
        Column(f"row {x.rowid}", justify="right"),
        Column(f"row {y.rowid}", justify="right"),
    )
    return Table("Positions", cols, rows, unit="stage")


def _diff_table(d: RetrieverDiff, x: int, y: int) -> Table[Line]:
    cols = (
        Column("phrase", kind="free"),
        Column(f"tf {x}", justify="right"),
        Column(f"tf {y}", justify="right"),
        Column(f"part {x}", justify="right"),
        Column(f"part {y}", justify="right"),
        Column("difference", justify="right"),
    )
    rows = tuple(
        (
            line(p.phrase),
            line(_tf(p.weighted_tf[0])),
            line(_tf(p.weighted_tf[1])),
            line(_num(p.parts[0])),
            line(_num(p.parts[1])),
            line(Span(f"{p.difference:+.6f}", "strong")),
        )
        for p in d.phrases
    )
    name = RETRIEVER_NAMES.get(d.retriever, d.retriever)
    head = (
        f"{name}: rank {_pos(d.ranks[0])} against {_pos(d.ranks[1])}, bm25 {_num(d.bm25[0])} against {_num(d.bm25[1])}"
    )
    gloss = f"{d.row_tokens[0]} against {d.row_tokens[1]} tokens; the largest difference first"
    return Table(head, cols, rows, gloss=gloss, unit="phrase")


def _fused_words(f: FusedSide, rowid: int, k: int | None) -> str:
    if f.score is None:
        return f"row {rowid}: no fused key"
    terms = " + ".join(f"1/({k}+{rank}) {RETRIEVER_NAMES.get(r, r)}" for r, rank, _, _ in f.contributions)
    own = "" if f.key_rowid == rowid else f" (in row {f.key_rowid}'s key)"
    return f"row {rowid}{own}: {_num(f.score)} = {terms}"


def _rerank_table(entries: tuple[RerankEntry | None, RerankEntry | None], x: int, y: int) -> Table[Line]:
    cols = (Column("part"), Column(f"row {x}", justify="right"), Column(f"row {y}", justify="right"))

    def vals(get: Callable[[RerankEntry], str]) -> tuple[Line, Line]:
        a, b = entries
        return line("—" if a is None else get(a)), line("—" if b is None else get(b))

    rows: list[tuple[Line, ...]] = [
        (line("title boost"), *vals(lambda e: f"{e.title_boost:.4f}")),
        (line("proximity boost"), *vals(lambda e: f"{e.proximity_boost:.4f}")),
        (line("phrase boost"), *vals(lambda e: f"{e.phrase_boost:.4f}")),
        (line(Span("boost", "strong")), *vals(lambda e: f"{e.boost:.4f}")),
        (line("fused score (tie-break)"), *vals(lambda e: f"{e.candidate.score:.6f}")),
        (line("position before → after"), *vals(lambda e: f"#{e.old_position} → #{e.new_position}")),
    ]
    return Table("Rerank", cols, tuple(rows), unit="value")


def decision_lines(v: Versus) -> Description:
    """What decided the order, in words and numbers (:class:`engine.lab.explain.Decision`)."""
    d = v.decision
    x, y = v.chunk.rowid, v.other.rowid
    if d.above is None:
        text = "Neither chunk was returned by a retriever in this search: they have no order."
        if any(e is not None for e in d.exits):
            text = "Neither chunk got past fusion: they have no order."
        return Description((line(Span(text, "strong")),))
    head = line(
        Span(f"{_row(d.above)} is above {_row(d.below)}", "strong"),
        Span(" · decided at ", "dim"),
        Span(stage_words(d.stage) if base_id(d.stage) != "retrieve" else _retrieve_words(d.stage), "strong"),
    )
    blocks: list[Line | Table[Line]] = [head]
    kind = d.kind
    if kind == "retriever":
        for diff in d.retrievers:
            blocks.append(_diff_table(diff, x, y))
    elif kind == "fusion":
        assert d.fused is not None
        for f, rowid in zip(d.fused, (x, y)):
            blocks.append(line(_fused_words(f, rowid, d.rrf_k)))
        if d.fused[0].score is not None and d.fused[0].score == d.fused[1].score:
            blocks.append(
                line(Span("equal scores: fusion keeps the order it first saw them in (Porter's run first)", "dim"))
            )
    elif kind == "rerank" and d.rerank is not None:
        blocks.append(_rerank_table(d.rerank, x, y))
    for e, rowid in zip(d.exits, (x, y)):
        if e is not None and e.stage == d.stage:
            blocks.append(line(Span(f"row {rowid}: ", "strong"), Span(exit_sentence(e), "warn")))
    if d.order_since is not None and d.order_since != d.stage:
        since = _retrieve_words(d.order_since) if base_id(d.order_since) == "retrieve" else stage_words(d.order_since)
        blocks.append(line(Span(f"{_row(d.above)} was above {_row(d.below)} from {since} on", "dim")))
    return Description(tuple(blocks))


def _retrieve_words(stage_id: str) -> str:
    words = "both retrievers (Porter and trigram)"
    return f"fuzzy re-run · {words}" if in_rerun(stage_id) else words


def flip_line(v: Versus) -> Line | None:
    """``row 139 would be above row 106 with rerank off (#1 and #2; proven by re-running)``,
    or why no change does it; ``None`` when not looked for."""
    cf: Counterfactual | None = v.flip
    d = v.decision
    if cf is None or d.above is None or d.below is None:
        return None
    if cf.change is not None:
        finals = dict(cf.finals)
        via = " after typo correction" if cf.layer == "rrf-fuzzy" else ""
        return line(
            Span(f"{_row(d.below)} would be above {_row(d.above)} with "),
            Span(change_words(cf.change), "strong"),
            f" (#{finals.get(d.below)} and #{finals.get(d.above)}{via}; proven by re-running)",
        )
    if cf.reason == "no-single-change":
        return line(
            Span(
                f"No single change puts {_row(d.below)} above {_row(d.above)} (tried limits up to "
                f"{cf.get('limit_max')}, pool sizes up to {cf.get('pool_size_max')}, the filters, the session, "
                "fusion key, rerank and retrievers)",
                "dim",
            )
        )
    return line(Span(f"{_row(d.below)} above {_row(d.above)}: {counterfactual_sentence(cf)}", "dim"))


def describe_versus(v: Versus) -> Description:
    """Both chunks' heads, their positions at every stage, what decided
    their order, and the change that would flip it."""
    blocks: list[Line | Table[Line]] = [*chunk_head(v.chunk), line(Span("  versus", "dim")), *chunk_head(v.other), ()]
    if v.chunk.pass_name == "fuzzy":
        blocks.append(line(Span(f"the typo re-run answered: its query {v.chunk.query!r}", "em")))
    blocks += [positions_table(v), ()]
    blocks += decision_lines(v).blocks
    flip = flip_line(v)
    if flip is not None:
        blocks += [(), flip]
    return Description(tuple(blocks))


# ─── short forms: the browser's panes and the rank flow ──────────────────


def decision_numbers(d: Decision, mine: int = 0) -> str:
    """The numbers that decided, the chunk at index ``mine`` of the
    decision's pairs first: ``Porter #1 against #3``, ``fused 0.032258
    against 0.032787``, ``boost 1.6618 against 1.5253``, or for a cut the
    exit in words; ``""`` when there are none."""
    other = 1 - mine
    kind = d.kind
    if kind == "retriever":
        return ", ".join(
            f"{RETRIEVER_NAMES.get(r.retriever, r.retriever)} {_pos(r.ranks[mine])} against {_pos(r.ranks[other])}"
            for r in d.retrievers
        )
    if kind == "fusion" and d.fused is not None:
        a, b = d.fused[mine].score, d.fused[other].score
        tie = " (equal: first seen first)" if a is not None and a == b else ""
        return f"fused {_num(a)} against {_num(b)}{tie}"
    if kind == "rerank" and d.rerank is not None:
        ea, eb = d.rerank[mine], d.rerank[other]
        if ea is not None and eb is not None:
            return f"boost {ea.boost:.4f} against {eb.boost:.4f}"
    gone = next((e for e in d.exits if e is not None and e.stage == d.stage), None)
    return exit_sentence(gone) if gone is not None else ""


def where_words(d: Decision) -> str:
    """The deciding stage in words (``Rerank``, ``both retrievers``)."""
    return "both retrievers" if base_id(d.stage) == "retrieve" else stage_words(d.stage)


def position_words(position: int, above: Decision | None, below: Decision | None, rowid: int) -> str:
    """What holds a chunk at its ``position`` in the answer, from
    :func:`engine.lab.explain.neighbours` (each decision's first chunk is
    ``rowid``): ``why #2: under row 106 by Rerank (boost 1.5253 against
    1.6618) · over row 146 by both retrievers (Porter #1 against #3)``."""
    parts = []
    for d, word in ((above, "under"), (below, "over")):
        if d is None or d.above is None:
            continue
        other = d.above if d.above != rowid else d.below
        numbers = decision_numbers(d, 0)
        parts.append(f"{word} row {other} by {where_words(d)}" + (f" ({numbers})" if numbers else ""))
    if not parts:
        return f"why #{position}: the only result"
    return f"why #{position}: " + " · ".join(parts)


def position_brief(above: Decision | None, below: Decision | None, rowid: int) -> str:
    """:func:`position_words` without the numbers, the stages by id, for a
    line that must stay short: ``under row 106 (rerank), over row 146
    (retrieve)`` (``""``: no neighbour)."""
    parts = []
    for d, word in ((above, "under"), (below, "over")):
        if d is not None and d.above is not None:
            other = d.above if d.above != rowid else d.below
            parts.append(f"{word} row {other} ({d.stage})")
    return ", ".join(parts)


def parts_words(r: RetrieverAnatomy) -> str:
    """A retriever's phrases on one line for the stage inspector:
    ``write 3.2198 (title 1, content 3) + quorum 3.7396 (title 1, content 1)``."""
    if r.unsupported is not None:
        return f"no breakdown ({r.unsupported})"
    bits = [
        f"{p.phrase} {p.part:.4f} (title {p.title_hits}, content {p.content_hits})"
        for p in r.phrases
        if p.part or p.weighted_tf
    ]
    return " + ".join(bits) if bits else "no phrase hits it"


#: Cells of the longest bar in the journey's score table.
BAR_CELLS = 12
#: Fewest cells of the longest bar (a narrow pane).
BAR_MIN = 4
#: Cells a phrase keeps in the journey's score table before it folds, and the most it takes.
PHRASE_MIN, PHRASE_MAX = 14, 24
#: The bar's glyphs: the share of a part from title hits, and from content hits.
TITLE_GLYPH, CONTENT_GLYPH = "█", "▒"


def bar(part: float, title_hits: int, weighted_tf: float, longest: float, cells: int = BAR_CELLS) -> str:
    """A bar of ``part`` against ``longest`` (``cells`` for the longest), the
    share that came from title hits (``5 × title / tf``) in
    :data:`TITLE_GLYPH`, the rest in :data:`CONTENT_GLYPH`."""
    if part <= 0 or longest <= 0:
        return ""
    n = max(1, round(cells * part / longest))
    in_title = round(n * (5.0 * title_hits / weighted_tf)) if weighted_tf else 0
    return TITLE_GLYPH * in_title + CONTENT_GLYPH * (n - in_title)


class PhraseBars:
    """One retriever's phrases as a table whose bars take the width the
    other columns leave (at most :data:`BAR_CELLS`, at least
    :data:`BAR_MIN`): the longest part of the chunk gets the whole bar."""

    def __init__(self, r: RetrieverAnatomy, longest: float) -> None:
        self.r = r
        self.longest = longest

    def __rich_console__(self, console: "Console", options: "ConsoleOptions") -> "RenderResult":
        from rich.cells import cell_len
        from rich.table import Table as RichTable
        from rich.text import Text

        from tui.present import safe

        phrases = self.r.phrases
        widest = max(min(max(cell_len(safe.line(p.phrase)) for p in phrases), PHRASE_MAX), len("phrase"))
        numbers = len("title") + len("content") + max(len(_num(p.part, 4)) for p in phrases)
        room = options.max_width - widest - numbers - 8  # the gaps between the five columns (2 cells each)
        cells = max(BAR_MIN, min(BAR_CELLS, room))
        t = RichTable(box=None, show_header=True, header_style="dim", pad_edge=False, expand=False)
        t.add_column("phrase", overflow="fold", min_width=min(widest, PHRASE_MIN), max_width=PHRASE_MAX)
        t.add_column("title", justify="right", no_wrap=True)
        t.add_column("content", justify="right", no_wrap=True)
        t.add_column("part", justify="right", no_wrap=True)
        t.add_column("", no_wrap=True, width=cells)
        for p in phrases:
            style = "bold" if p.part else "dim"
            t.add_row(
                Text(safe.line(p.phrase), style=style),
                str(p.title_hits),
                str(p.content_hits),
                Text(_num(p.part, 4), style=style),
                bar(p.part, p.title_hits, p.weighted_tf, self.longest, cells),
            )
        yield t


def score_renderable(a: ChunkAnatomy) -> "Group":
    """The journey's score section: per retriever its verdict and a row per
    phrase (title and content hits, the part, a bar showing which phrases
    carried the score and how much of each part came from the title:
    :class:`PhraseBars`)."""
    from rich.console import Group
    from rich.text import Text

    from tui.present import safe

    head = Text("Score", style="bold underline")
    head.append(
        f" · bm25 phrase by phrase · {TITLE_GLYPH} from title hits (×5), {CONTENT_GLYPH} from content", style="dim"
    )
    parts: list[Text | PhraseBars] = [head]
    longest = max((p.part for r in a.retrievers for p in r.phrases), default=0.0)
    for r in a.retrievers:
        verdict = Text(safe.line(retriever_verdict(r)), style="bold")
        if r.exact:
            verdict.append(" (the parts add up to it exactly)", style="dim")
        parts.append(verdict)
        if r.phrases and r.bm25 is not None:
            parts.append(PhraseBars(r, longest))
    return Group(*parts)


def versus_renderable(v: Versus, searching: bool = False) -> "Group":
    """The journey's "versus" section: what put the two chunks in their
    order (:func:`decision_lines`) and the change that would flip them
    (``searching``: still being looked for)."""
    from rich.console import Group
    from rich.text import Text

    from tui.present.describe import to_rich

    head = Text(f"Versus row {v.other.rowid}", style="bold underline")
    head.append(" · the chunk marked with v", style="dim")
    blocks = decision_lines(v).blocks
    flip = flip_line(v)
    tail: list[Line | Table[Line]] = []
    if flip is not None:
        tail = [flip]
    elif searching and v.decision.above is not None:
        tail = [line(Span("looking for one change that flips them (re-running the search)…", "dim"))]
    return Group(head, to_rich(Description(blocks + tuple(tail))))
