"""The journey pane: where one chunk stood at every stage, its score phrase
by phrase (and, with a chunk marked by ``v``, why one of the two is above
the other), and the chunk itself with the query's matched terms highlighted.

The score and the comparison need the store (phrase counts, the row's
tokens, re-runs): the browser computes them in a worker and hands them in
(:meth:`JourneyPane.show_score`, :meth:`JourneyPane.show_versus`)."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from engine.pipeline.trace import Trace
from engine.pipeline.paths import sentence
from engine.pipeline.table import in_rerun, stage, title

from tui.present.render import highlight_text
from tui.present import safe
from tui.browser.subject import Subject

#: Highlight style: reverse video reads with and without colour.
MATCH_STYLE = "bold reverse"


def stage_name(stage: str) -> str:
    """Display name of a journey stage id, from :data:`engine.pipeline.table.STAGES`
    (``fuzzy:trim`` → ``↳ Trim``)."""
    return f"↳ {title(stage)}" if in_rerun(stage) else title(stage)


def journey_renderable(subject: Subject, trace: Trace) -> Group:
    """The subject's header, its step-by-step journey and where it left."""
    steps = subject.journey(trace)
    head = Text(safe.line(subject.title), style="bold")
    head.append(
        f"\n{safe.line(subject.source)} · {safe.line(subject.content_type)} · session "
        f"{safe.line(subject.session_id) or '(none)'}"
        f" · row {subject.rowid}",
        style="dim",
    )
    head.append(f"\npicked in {subject.origin}" + (" (following this row)" if subject.by_row else ""), style="dim")
    table = Table(box=None, show_header=True, header_style="bold", pad_edge=False, expand=False)
    table.add_column("stage", no_wrap=True)
    table.add_column("pos", justify="right", no_wrap=True)
    table.add_column("what happened", overflow="fold")
    for s in steps:
        gone = s.position is None and stage(s.stage).kind != "retriever"
        table.add_row(
            stage_name(s.stage),
            "—" if s.position is None else f"#{s.position}",
            Text(safe.line(s.note), style="bold" if gone else ""),
        )
    fate = subject.fate(trace)
    if fate.exit is None:
        verdict = Text(f"✓ in the answer at #{fate.position} (layer {trace.layer})", style="bold")
    else:
        words = f"✗ left the pipeline at {stage_name(fate.exit.stage)}: {safe.line(sentence(fate.exit))}"
        verdict = Text(words, style="bold")
    return Group(head, Text(""), table, Text(""), verdict)


#: A trigram substring match (inside a word: ``quorum`` in ``writeQuorum``): underlined,
#: distinguishable from a Porter token match without colour.
TRIGRAM_STYLE = "underline"
#: Matched by both.
BOTH_STYLE = "bold reverse underline"


def spans_text(spans) -> Text:
    """The chunk text of :class:`engine.lab.terms.MatchSpans` with Porter token
    matches in reverse video, trigram substring matches underlined, both
    in both."""
    styles = {"porter": MATCH_STYLE, "trigram": TRIGRAM_STYLE, "both": BOTH_STYLE, None: ""}
    t = Text()
    for text, kind in spans.segments():
        t.append(safe.block(text), style=styles[kind])
    return t


def preview_renderable(subject: Subject, trace: Trace | None = None) -> Group:
    """The chunk text with its matches: Porter token matches in reverse
    video, trigram substring matches underlined (from both retrievers'
    highlights in ``trace``); without a trace, the subject's own markers."""
    from engine.lab.terms import trace_spans

    spans = trace_spans(trace, subject.rowid) if trace is not None else None
    title = Text("Chunk", style="bold underline")
    if spans is not None and (spans.porter or spans.trigram):
        title.append(
            f" · highlighted matches: Porter {len(spans.porter)} (reverse: whole tokens) · "
            f"trigram {len(spans.trigram)} (underline: substrings)",
            style="dim",
        )
        return Group(title, spans_text(spans))
    n = subject.highlighted.count("\x02")
    title.append(" · ", style="dim")
    title.append(f"{n} highlighted match{'es' if n != 1 else ''}" if n else "no highlighted match", style="dim")
    body = highlight_text(safe.marked(subject.highlighted) or safe.block(subject.content), style=MATCH_STYLE)
    return Group(title, body)


class JourneyPane(VerticalScroll):
    """Journey of the selected chunk plus a scrollable preview of its content."""

    can_focus = True

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.border_title = "Journey"
        self.subject: Subject | None = None

    def compose(self) -> ComposeResult:
        yield Static(id="journey-steps")
        yield Static(id="journey-versus")
        yield Static(id="journey-score")
        yield Static(id="journey-preview")

    def on_mount(self) -> None:
        self.clear()

    def action_scroll_end(self) -> None:
        """End: the chunk's last line, kept there while the layout settles
        (Textual's anchor, released by any scroll back up). The end measured
        when the key is pressed can be short: the pane may just have been
        shown (nothing measured yet: End did nothing) or its text re-wrapped
        around the scroll bar (a line short)."""
        self.anchor()

    def clear(
        self, text: str = "Select a result, or any candidate in Stages, to follow it through the pipeline."
    ) -> None:
        """Show the hint instead of a journey."""
        self.anchor(False)
        self.subject = None
        self.query_one("#journey-steps", Static).update(Text(text, style="italic"))
        self.show_score(None)
        self.show_versus(None)
        self.query_one("#journey-preview", Static).update("")

    def show(self, subject: Subject, trace: Trace) -> None:
        """Show ``subject``'s journey through ``trace`` and its content."""
        self.anchor(False)
        self.subject = subject
        self.query_one("#journey-steps", Static).update(journey_renderable(subject, trace))
        self.show_score(Text("Score: reading its phrases…", style="dim italic"))
        self.show_versus(None)
        self.query_one("#journey-preview", Static).update(preview_renderable(subject, trace))
        self.scroll_home(animate=False)

    def show_score(self, renderable: RenderableType | None) -> None:
        """Show the subject's score section (``None``: none)."""
        score = self.query_one("#journey-score", Static)
        score.update(renderable if renderable is not None else "")
        score.display = renderable is not None

    def show_versus(self, renderable: RenderableType | None) -> None:
        """Show the comparison with the marked chunk (``None``: none)."""
        versus = self.query_one("#journey-versus", Static)
        versus.update(renderable if renderable is not None else "")
        versus.display = renderable is not None
