"""The stage inspector: every pipeline stage of a trace, in order, as one
keyboard-navigable list.

Each stage is a header line (from :func:`engine.lab.journey.stage_summaries`, so the
browser and ``rankscope search`` tell the same story; titles from
:data:`engine.pipeline.table.STAGES`) followed by its candidates. Where a candidate
left the pass is read from its path (:attr:`engine.pipeline.passes.Run.paths`); a
stage without a renderer of its own here gets the generic one (its ranked
list, then the candidates that left there with their exit in words). Meaning never rests on colour alone: removed candidates are dim,
struck through *and* say "removed"; cut ones sit below a cut line and say
"cut"; rerank moves carry ↑ ↓ =; key collisions carry ⚠ and the swallowed rows.
The selected chunk's retriever rows also carry its score phrase by phrase
(:func:`tui.present.anatomy.parts_words`), once a worker has computed it
(:meth:`StageInspector.show_anatomy`).

:func:`stage_lines` is pure (Rich only) and is what the tests look at;
:class:`StageInspector` puts the lines in an :class:`~textual.widgets.OptionList`.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual import on
from textual.message import Message
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from engine.lab.explain import ChunkAnatomy
from engine.lab.journey import StageSummary, stage_summaries
from engine.pipeline.candidates import Candidate, Hit
from engine.pipeline.stages.retrieve import RetrieverRun
from engine.pipeline.passes import Run
from engine.pipeline.trace import Trace
from engine.pipeline.paths import sentence
from engine.pipeline.table import base_id, in_rerun, ranked, stage, title

from tui.present import safe
from tui.present.anatomy import parts_words
from tui.present.cut import cut_beside
from tui.browser.subject import Subject

#: Rows shown per stage before "… N more" (the JSON export has them all).
MAX_ROWS = 40
DIM = "dim"
REMOVED = "dim strike"


@dataclass(frozen=True)
class StageLine:
    """One line (or a few wrapped lines) of the inspector.

    Attributes:
        text: what is shown.
        kind: ``"header"``, ``"row"`` (selectable), ``"note"`` or ``"rule"``.
        subject: the chunk a ``"row"`` stands for.
        stage: the stage id the line belongs to.
    """

    text: Text
    kind: str
    stage: str
    subject: Subject | None = None


def wrap_indented(text: str, width: int, indent: str) -> str:
    """``text`` wrapped to ``width`` cells, every line starting with ``indent``."""
    import textwrap

    return textwrap.fill(
        text,
        width=max(width, len(indent) + 20),
        initial_indent=indent,
        subsequent_indent=indent,
        break_on_hyphens=False,
    )


def _short(x: float) -> str:
    return f"{x:.5f}"


def pad_rights(texts: list[Text]) -> list[Text]:
    """Right-hand texts left-padded to one width, so the titles beside them line up."""
    width = max((t.cell_len for t in texts), default=0)
    return [Text(" " * (width - t.cell_len)) + t for t in texts]


def _label(prefix: str, c: Candidate | Hit, style: str = "") -> Text:
    t = Text(prefix, style=style)
    t.append(safe.line(c.title), style=style)
    t.append(" · " + safe.line(c.source), style=(style + " dim").strip())
    return t


def _hits(run: Run) -> list[Hit]:
    """Every row the pass's retrievers returned (up to :data:`MAX_ROWS` each: the rows shown)."""
    out: list[Hit] = []
    for name in ("porter", "trigram"):
        rec = run.record(name)
        if isinstance(rec, RetrieverRun):
            out += rec.hits[:MAX_ROWS]
    return out


def _pos(n: int | None) -> str:
    return f"{n:>3} " if n is not None else "  — "


class _Builder:
    def __init__(self, trace: Trace, width: int, show_timings: bool, anatomy: ChunkAnatomy | None = None) -> None:
        self.trace = trace
        self.width = max(width, 30)
        self.show_timings = show_timings
        self.anatomy = anatomy
        self.lines: list[StageLine] = []

    # ── primitives ──
    def header(self, s: StageSummary, prefix: str = "") -> None:
        title = Text(("↳ re-run · " if prefix else "") + s.title, style="bold reverse")
        head = Text("▌", style="bold")
        head.append_text(title)
        right = f"{s.elapsed_ms:.2f} ms" if self.show_timings and s.elapsed_ms is not None else ""
        self.lines.append(StageLine(cut_beside(head, right, self.width) if right else head, "header", s.stage))
        self.note(s.headline, s.stage, style="italic")

    def note(self, text: str | Text, stage: str, style: str = DIM) -> None:
        if isinstance(text, str):
            text = Text(wrap_indented(safe.line(text), self.width, "  "), style=style)
        else:
            text = Text("  ", style=style) + text
        self.lines.append(StageLine(text, "note", stage))

    def rule(self, label: str, stage: str) -> None:
        label = f" {label} "
        side = max((self.width - len(label) - 2) // 2, 2)
        self.lines.append(StageLine(Text("  " + "╌" * side + label + "╌" * side, style="bold"), "rule", stage))

    def row(self, text: Text, stage: str, subject: Subject) -> None:
        self.lines.append(StageLine(text, "row", stage, subject))

    def more(self, n: int, stage: str) -> None:
        if n > 0:
            self.note(f"… {n} more (F6 exports the full trace)", stage)

    # ── stages ──
    def retriever(self, run: Run, stage: str) -> None:
        r: RetrieverRun = run.record(stage)  # type: ignore[assignment]
        if not r.hits:
            return
        a = self.anatomy
        parts = a.retriever(base_id(stage)) if a is not None and a.pass_name == run.pass_name else None
        for h in r.hits[:MAX_ROWS]:
            right = Text(f"bm25 {h.bm25:.3f}", style=DIM)
            text = cut_beside(_label(_pos(h.rank), h), right, self.width)
            if parts is not None and h.rowid == parts_rowid(a):
                # the selected chunk's score, phrase by phrase (computed in a worker: engine.lab.explain)
                text.append("\n" + wrap_indented("= " + safe.line(parts_words(parts)), self.width, "      "), style=DIM)
            self.row(text, stage, Subject.from_hit(h, title(stage)))
        self.more(len(r.hits) - MAX_ROWS, stage)

    def fusion(self, run: Run, stage: str) -> None:
        f = run.fusion
        for i, c in enumerate(f.candidates[:MAX_ROWS], 1):
            text = cut_beside(_label(_pos(i), c), Text(f"= {_short(c.score)}", style="bold"), self.width)
            parts = []
            for x in c.contributions:
                name = "porter" if x.retriever == "porter" else "trigram"
                bit = f"{name} #{x.rank} +{_short(x.value)}"
                if x.rowid != c.rowid:
                    bit += f" (row {x.rowid})"
                parts.append(bit.replace(" ", "\u00a0"))  # never wrap inside one contribution
            text.append("\n" + wrap_indented(" · ".join(parts), self.width, "      "), style=DIM)
            if c.merged_rowids:
                rows = ", ".join(map(str, c.merged_rowids))
                noun = "row" if len(c.merged_rowids) == 1 else "rows"
                text.append(
                    "\n"
                    + wrap_indented(
                        f"⚠ key collision: swallowed {noun} {rows} (same source::title); kept row {c.rowid}",
                        self.width,
                        "      ",
                    ),
                    style="bold",
                )
            self.row(text, stage, Subject.from_candidate(c, title(stage)))
        self.more(len(f.candidates) - MAX_ROWS, stage)

    def _left_here(self, run: Run, c: Candidate, stage: str) -> bool:
        """True when ``c``'s path leaves the pass at ``stage``."""
        path = run.path(c.rowid)
        return path is not None and path.exit is not None and path.exit.stage == stage

    def pool(self, run: Run, stage: str) -> None:
        p = run.pool
        origin = title(stage)
        for i, c in enumerate(p.kept[:MAX_ROWS], 1):
            self.row(
                cut_beside(_label(_pos(i), c), Text(_short(c.score), style=DIM), self.width),
                stage,
                Subject.from_candidate(c, origin),
            )
        self.more(len(p.kept) - MAX_ROWS, stage)
        if p.beyond:
            self.rule(f"pool size {p.pool_size}: beyond the pool", stage)
            for i, c in enumerate(p.beyond[:MAX_ROWS], p.pool_size + 1):
                self.row(
                    cut_beside(_label(_pos(i), c, DIM), Text("beyond pool", style=DIM), self.width),
                    stage,
                    Subject.from_candidate(c, origin),
                )
            self.more(len(p.beyond) - MAX_ROWS, stage)

    def filter(self, run: Run, stage: str) -> None:
        flt = run.filter
        if flt.allow_set is None:
            return
        origin = title(stage)
        received = run.pool.kept[:MAX_ROWS]
        removed = [self._left_here(run, c, stage) for c in received]
        rights = pad_rights(
            [
                Text(f"removed (session {safe.line(c.session_id) or chr(39) * 2})", style="bold")
                if gone
                else Text(f"kept (session {safe.line(c.session_id) or chr(39) * 2})", style=DIM)
                for c, gone in zip(received, removed)
            ]
        )
        kept_pos = 0
        for c, gone, right in zip(received, removed, rights):
            if gone:
                self.row(
                    cut_beside(_label("  ✗ ", c, REMOVED), right, self.width), stage, Subject.from_candidate(c, origin)
                )
            else:
                kept_pos += 1
                self.row(
                    cut_beside(_label(_pos(kept_pos), c), right, self.width), stage, Subject.from_candidate(c, origin)
                )
        self.more(len(run.pool.kept) - MAX_ROWS, stage)

    def trim(self, run: Run, stage: str) -> None:
        tr = run.trim
        if tr is None:
            return
        for i, c in enumerate(tr.kept[:MAX_ROWS], 1):
            self.row(
                cut_beside(_label(_pos(i), c), Text("kept", style=DIM), self.width),
                stage,
                Subject.from_candidate(c, title(stage)),
            )
        if tr.cut:
            self.rule(f"cut at limit {tr.limit}", stage)
            for i, c in enumerate(tr.cut[:MAX_ROWS], tr.limit + 1):
                self.row(
                    cut_beside(_label(_pos(i), c, DIM), Text("cut", style="bold"), self.width),
                    stage,
                    Subject.from_candidate(c, title(stage)),
                )
            self.more(len(tr.cut) - MAX_ROWS, stage)

    def rerank(self, run: Run, stage: str) -> None:
        rr = run.rerank
        if rr is None:
            return
        for e in rr.entries[:MAX_ROWS]:
            arrow = "↑" if e.moved > 0 else "↓" if e.moved < 0 else "="
            prefix = f"{e.old_position:>2}→{e.new_position:<2}{arrow} "
            text = cut_beside(_label(prefix, e.candidate), Text(f"boost {e.boost:.3f}", style="bold"), self.width)
            terms = len(rr.terms) or 1
            nb = "\u00a0"
            detail = f"title{nb}+{e.title_boost:.3f}{nb}({e.title_hits}/{terms}{nb}terms)"
            detail += f" · proximity{nb}+{e.proximity_boost:.3f}"
            detail += f"{nb}(span{nb}{e.min_span})" if e.min_span is not None else f"{nb}(n/a)"
            detail += f" · phrase{nb}+{e.phrase_boost:.3f}"
            if e.adjacent_pairs is not None:
                detail += f"{nb}({e.adjacent_pairs}{nb}pair{'s' if e.adjacent_pairs != 1 else ''})"
            text.append("\n" + wrap_indented(detail, self.width, "       "), style=DIM)
            self.row(text, stage, Subject.from_candidate(e.candidate, title(stage)))
        self.more(len(rr.entries) - MAX_ROWS, stage)

    def generic(self, run: Run, stage: str) -> None:
        """A stage without a renderer of its own: its ranked list, then the
        candidates whose path leaves the pass here, with the exit in words."""
        origin = title(stage)
        items = ranked(run, stage)
        for i, c in enumerate(items[:MAX_ROWS], 1):
            assert isinstance(c, Candidate)  # only list stages come here; they rank candidates
            self.row(
                cut_beside(_label(_pos(i), c), Text(_short(c.score), style=DIM), self.width),
                stage,
                Subject.from_candidate(c, origin),
            )
        self.more(len(items) - MAX_ROWS, stage)
        left = [p for p in run.paths if p.exit is not None and p.exit.stage == stage]
        if left:
            self.rule(f"left at {origin.lower()}", stage)
            fused = {c.rowid: c for c in run.fusion.candidates}
            for p in left[:MAX_ROWS]:
                c = fused[p.rowid]
                self.row(
                    cut_beside(_label("  ✗ ", c, DIM), Text(safe.line(sentence(p.exit)), style="bold"), self.width),  # type: ignore[arg-type]
                    stage,
                    Subject.from_candidate(c, origin),
                )
            self.more(len(left) - MAX_ROWS, stage)

    def fuzzy(self) -> None:
        fz = self.trace.fuzzy
        if not fz.ran:
            return
        why = fz.reason if fz.shadow else (fz.trigger_sentence or fz.reason)
        self.note(f"ran because {why}", "fuzzy")
        for c in fz.corrections:
            t = Text("  " + safe.line(c.word), style="bold")
            if c.corrected:
                t.append(" → ")
                t.append(safe.line(c.corrected), style="bold underline")
                t.append(f"  (distance {c.distance}, {c.candidates_within} within {c.max_distance})", style=DIM)
            elif c.exact:
                t.append("  kept: already in the vocabulary", style=DIM)
            elif c.max_distance == 0:
                t.append("  kept: under 3 characters", style=DIM)
            else:
                t.append(f"  kept: no vocabulary word within {c.max_distance} edits", style=DIM)
            self.lines.append(StageLine(t, "note", "fuzzy"))
        if fz.corrected_query is not None:
            self.note(f"corrected query: {fz.corrected_query!r}" + (" (re-run below)" if fz.rerun else ""), "fuzzy")

    def final(self) -> None:
        rights = pad_rights(
            [
                Text(
                    f"rrf {_short(r.candidate.score)} · boost {'—' if r.boost is None else format(r.boost, '.3f')}",
                    style=DIM,
                )
                for r in self.trace.final
            ]
        )
        for r, right in zip(self.trace.final, rights):
            c = r.candidate
            self.row(
                cut_beside(_label(_pos(r.position), c), right, self.width),
                "final",
                Subject.from_candidate(c, title("final")),
            )

    def build(self) -> list[StageLine]:
        trace = self.trace
        if self.show_timings:
            self.note(
                f"total {trace.total_ms:.2f} ms · pool size {trace.pool_size} · {trace.fts_limit} rows per retriever",
                "total",
            )
        else:
            self.note(f"pool size {trace.pool_size} · {trace.fts_limit} rows per retriever", "total")
        own = {
            "fusion": self.fusion,
            "pool": self.pool,
            "filter": self.filter,
            "trim": self.trim,
            "rerank": self.rerank,
        }
        for s in stage_summaries(trace):
            run = trace.fuzzy.rerun if in_rerun(s.stage) else trace.first
            self.header(s, "fuzzy:" if in_rerun(s.stage) else "")
            spec = stage(s.stage)
            if spec.id == "fuzzy":
                self.fuzzy()
            elif spec.id == "final":
                self.final()
            elif run is None or run.record(s.stage) is None:
                continue
            elif spec.kind == "retriever":
                self.retriever(run, s.stage)
            else:
                own.get(base_id(s.stage), self.generic)(run, s.stage)
        return self.lines


def parts_rowid(a: ChunkAnatomy | None) -> int | None:
    """The row id whose retriever rows carry the score line."""
    return None if a is None else a.rowid


def stage_lines(
    trace: Trace, width: int = 78, show_timings: bool = True, anatomy: ChunkAnatomy | None = None
) -> list[StageLine]:
    """Every line of the inspector for ``trace``, in pipeline order, fitted to
    ``width`` cells (long titles are cut with an ellipsis); with ``anatomy``
    (the selected chunk's), its retriever rows carry their phrases' parts."""
    return _Builder(trace, width, show_timings, anatomy).build()


class StageInspector(OptionList):
    """One section per pipeline stage; highlight any candidate to follow it.

    Posts :class:`StageInspector.Picked` when a candidate row is highlighted
    while the inspector has focus, or chosen with Enter (``chosen=True``).
    """

    @dataclass
    class Picked(Message):
        """A candidate row in the inspector was highlighted or chosen."""

        subject: Subject
        chosen: bool

    def __init__(self, *, show_timings: bool = True, id: str | None = None) -> None:
        super().__init__(id=id)
        self.show_timings = show_timings
        self.trace: Trace | None = None
        self._subjects: dict[str, Subject] = {}
        self._stages: list[str] = []
        self._headers: list[int] = []
        self._width = 0
        #: The stage header :meth:`show_stage` put at the top before the inspector was laid out (its pane just shown).
        self._top_pending: int | None = None
        self.border_title = "Stages"
        #: ``{rowid: grade}`` of the current query's judged chunks, and the
        #: per-stage metrics lines shown above the stages (see :mod:`tui.browser.judging`).
        self.grades: dict[int, int] = {}
        self.metrics: list[Text] = []
        #: The selected chunk's score (:func:`engine.lab.explain.explain_chunk`), shown under its retriever rows.
        self.anatomy: ChunkAnatomy | None = None

    def on_mount(self) -> None:
        self.show_placeholder()

    def show_placeholder(self, text: str = "Each pipeline stage appears here once you search.") -> None:
        """Show a one-line hint instead of a trace."""
        self.trace = None
        self._subjects = {}
        self._stages, self._headers = [], []
        self.set_options([Option(Text(text, style="italic"), disabled=True)])

    def show_trace(self, trace: Trace) -> None:
        """Render ``trace``; the highlight returns to the top."""
        self.trace = trace
        self.anatomy = None
        self._render_lines(keep_highlight=False)

    def show_anatomy(self, anatomy: ChunkAnatomy | None) -> None:
        """Show ``anatomy``'s phrase parts under its chunk's retriever rows
        (``None``: under none); the highlight stays. Nothing is redrawn when
        neither the old nor the new chunk has a retriever row here."""
        old, self.anatomy = self.anatomy, anatomy
        if self.trace is None or old == anatomy:
            return
        shown = {h.rowid for run in (self.trace.first, self.trace.fuzzy.rerun) if run for h in _hits(run)}
        if {parts_rowid(old), parts_rowid(anatomy)} & shown:
            self._render_lines(keep_highlight=True)

    def _content_width(self) -> int:
        width = self.scrollable_content_region.width or self.size.width or 80
        return max(width - 1, 30)

    def _render_lines(self, keep_highlight: bool) -> None:
        if self.trace is None:
            return
        old = self.highlighted
        # the highlighted row by what it shows (its stage and chunk), not by index: lines
        # above it (the metrics table) may come or go
        old_key = None
        if old is not None and old < len(self._stages):
            subject = self._subjects.get(f"c{old}")
            old_key = (self._stages[old], subject) if subject is not None else None
        self._width = self._content_width()
        options: list[Option | None] = []
        self._subjects = {}
        self._stages, self._headers = [], []
        for i, line in enumerate(self._judged_lines()):
            self._stages.append(line.stage)
            if line.kind == "header":
                self._headers.append(i)
            if line.kind == "row" and line.subject is not None:
                oid = f"c{i}"
                self._subjects[oid] = line.subject
                options.append(Option(line.text, id=oid))
            else:
                options.append(Option(line.text, disabled=True))
        self.set_options(options)
        same = None
        if keep_highlight and old_key is not None:
            same = next(
                (
                    i
                    for i, stage in enumerate(self._stages)
                    if stage == old_key[0] and self._subjects.get(f"c{i}") == old_key[1]
                ),
                None,
            )
        if same is not None:
            self.highlighted = same
            self.scroll_to_highlight()
        elif keep_highlight and old is not None and old < self.option_count:
            self.highlighted = old
        else:
            self.highlighted = None

    def show_judging(self, grades: dict[int, int], metrics: list[Text]) -> None:
        """Show grade badges on judged chunks (``{rowid: grade}``) and the
        per-stage metrics lines at the top; the highlight stays."""
        if grades == self.grades and [m.plain for m in metrics] == [m.plain for m in self.metrics]:
            return
        self.grades, self.metrics = dict(grades), list(metrics)
        if self.trace is not None:
            self._render_lines(keep_highlight=True)

    def _judged_lines(self) -> list[StageLine]:
        """:func:`stage_lines`, with the metrics table first and, when any
        chunk is graded, a badge column before every candidate row."""
        from tui.browser.judging import BADGE_CELLS, badge

        assert self.trace is not None
        graded = bool(self.grades)
        width = self._width - BADGE_CELLS if graded else self._width
        lines = stage_lines(self.trace, width, self.show_timings, self.anatomy)
        if graded:
            pad = Text(" " * BADGE_CELLS)
            out = []
            for line in lines:
                mark = badge(self.grades.get(line.subject.rowid)) if line.kind == "row" and line.subject else pad
                parts = line.text.split("\n")
                text = mark + parts[0]
                for part in parts[1:]:
                    text += Text("\n") + pad + part
                out.append(StageLine(text, line.kind, line.stage, line.subject))
            lines = out
        head = [StageLine(t, "note", "metrics") for t in self.metrics]
        return head + lines

    def on_resize(self) -> None:
        if self.trace is not None and self._content_width() != self._width:
            self._render_lines(keep_highlight=True)
        if self._top_pending is not None and self.size.height:
            self.call_after_refresh(self._scroll_pending)

    def _scroll_pending(self) -> None:
        index, self._top_pending = self._top_pending, None
        if index is not None and index == self.highlighted:  # still there: nothing moved it meanwhile
            self.scroll_to_highlight(top=True)

    def show_stage(self, stage: str) -> bool:
        """Scroll so that the header of ``stage`` (an id such as ``fuzzy`` or
        ``fuzzy:porter``) is at the top; Down then moves into its rows. Not
        laid out yet (its pane was just shown: no height to scroll in), it
        scrolls once it is. Returns false when the trace has no such stage."""
        for i in self._headers:
            if self._stages[i] == stage:
                self._jump(i)
                self._top_pending = None if self.size.height else i
                return True
        return False

    def _jump(self, index: int) -> None:
        self.highlighted = index
        self.scroll_to_highlight(top=True)

    def stage_ids(self) -> list[tuple[str, str]]:
        """``(stage id, header text)`` of every stage shown, in order."""
        if self.trace is None:
            return []
        return [(s.stage, ("re-run " if in_rerun(s.stage) else "") + s.title) for s in stage_summaries(self.trace)]

    def action_next_stage(self) -> None:
        """Jump to the next stage header."""
        current = -1 if self.highlighted is None else self.highlighted
        nxt = next((i for i in self._headers if i > current), None)
        if nxt is not None:
            self._jump(nxt)

    def action_previous_stage(self) -> None:
        """Jump to the previous stage header."""
        current = self.option_count if self.highlighted is None else self.highlighted
        prev = [i for i in self._headers if i < current]
        if prev:
            self._jump(prev[-1])

    # ── keyboard: the top is reachable, nothing wraps ──
    #
    # The lines above the first candidate (total time, pool size, the first
    # headers and notes) are not selectable; Home, PageUp and Up at the first
    # row scroll to the very top so they can be read. Up at the first row and
    # Down at the last stay put instead of wrapping around.

    def _rows(self) -> list[int]:
        return [i for i in range(self.option_count) if not self.get_option_at_index(i).disabled]

    def action_first(self) -> None:
        """Highlight the first candidate and scroll to the very top."""
        rows = self._rows()
        if rows:
            self.highlighted = rows[0]
        self.scroll_home(animate=False)

    def action_last(self) -> None:
        """Highlight the last candidate and scroll to the very bottom."""
        rows = self._rows()
        if rows:
            self.highlighted = rows[-1]
        self.scroll_end(animate=False)

    def action_cursor_up(self) -> None:
        """The previous candidate; at the first one, scroll to the top (no wrap)."""
        self._step(down=False)

    def action_cursor_down(self) -> None:
        """The next candidate; at the last one, scroll to the bottom (no wrap)."""
        self._step(down=True)

    def _step(self, down: bool) -> None:
        """One candidate down (or up); past the last (first) one, scroll to
        the very bottom (top) instead of wrapping. With none highlighted: the first."""
        current = self.highlighted
        if current is None:
            self.action_first()
            return
        beyond = [i for i in self._rows() if (i > current if down else i < current)]
        if beyond:
            self.highlighted = beyond[0] if down else beyond[-1]
        elif down:
            self.scroll_end(animate=False)
        else:
            self.scroll_home(animate=False)

    def action_page_up(self) -> None:
        """A page up; from the first page, to the very top."""
        rows = self._rows()
        if not rows or self.highlighted is None or self.highlighted <= rows[0]:
            self.action_first()
            return
        super().action_page_up()
        if self.highlighted is None or self.highlighted <= rows[0]:
            self.action_first()

    def action_page_down(self) -> None:
        """A page down (from the top when nothing is highlighted yet); from
        the last page, to the very bottom."""
        rows = self._rows()
        if not rows or (self.highlighted is not None and self.highlighted >= rows[-1]):
            self.action_last()
            return
        if self.highlighted is None:
            self.highlighted = rows[0]  # not the stock jump to the very end
        super().action_page_down()
        if self.highlighted is None:
            self.action_last()

    def stage_of(self, index: int) -> str | None:
        """The stage id of the option at ``index``."""
        return self._stages[index] if 0 <= index < len(self._stages) else None

    def subject_at(self, index: int | None) -> Subject | None:
        """The subject of the option at ``index``, if it is a candidate row."""
        if index is None or index >= self.option_count:
            return None
        oid = self.get_option_at_index(index).id
        return self._subjects.get(oid) if oid else None

    def subjects(self) -> list[tuple[int, Subject]]:
        """``(option index, subject)`` for every candidate row, in order."""
        out = []
        for i in range(self.option_count):
            s = self.subject_at(i)
            if s is not None:
                out.append((i, s))
        return out

    @on(OptionList.OptionHighlighted)
    def _highlighted(self, event: OptionList.OptionHighlighted) -> None:
        event.stop()
        subject = self._subjects.get(event.option_id or "")
        if subject is not None and self.has_focus:
            self.post_message(self.Picked(subject, chosen=False))

    @on(OptionList.OptionSelected)
    def _selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        subject = self._subjects.get(event.option_id or "")
        if subject is not None:
            self.post_message(self.Picked(subject, chosen=True))
