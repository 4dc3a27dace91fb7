"""F1: what each pipeline stage does (two lines each) and the keys."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer, Static

from ..actions import ACTION_BY_ID, help_keys

_CLOSE = Binding.Group("Close ", compact=True)

#: (stage, two lines) in pipeline order.
STAGES = (
    ("Porter", "FTS5 with the Porter stemmer: words are reduced to stems (install, installing → instal).",
     "Ranked by bm25 with the title weighted 5x; fetches max(2 × pool, 10) rows."),
    ("Trigram", "FTS5 over 3-character slices: finds substrings (CacheMiss inside onCacheMiss) and CJK.",
     "Same ranking and row count; words under 3 characters are skipped."),
    ("Fusion (RRF)", "Reciprocal rank fusion: a row at position p in a list adds 1/(60 + p) to its key.",
     "Keys are source::title, so chunks sharing a heading merge (⚠ collision): the first row wins."),
    ("Candidate pool", "Fusion keeps the best pool-size keys: the limit, or max(8 × limit, 40)",
     "when a session filter is on, so the filter has enough to choose from."),
    ("Session filter", "With an allow-set, only chunks of the chosen sessions (or none) pass;",
     "the others are shown struck through as 'removed'."),
    ("Trim", "The survivors are cut to the limit; what falls below the cut line is 'cut'",
     "and never reaches the rerank."),
    ("Rerank", "Title hits (0.6 for code, 0.3 for prose), term proximity and adjacent phrases add a boost;",
     "results are re-sorted by it (↑ moved up, ↓ down, = stayed)."),
    ("Fuzzy", "Only when nothing survived the filter: each word is corrected against the vocabulary",
     "(1-3 edits by length) and, if anything changed, the whole pipeline re-runs (layer rrf-fuzzy)."),
    ("Final", "The answer and its layer: rrf (first pass), rrf-fuzzy (typo re-run) or none,",
     "with the reason when it is empty."),
    ("Agent view", "What ctx_search hands the agent: at most 2 results per query (1 after call #3), each cut",
     "to 1,500-unit windows around the matches, a 40 KiB cap and a throttle footer "
     f"({ACTION_BY_ID['agent-view'].keys[0].shown})."),
)

#: (key column, what it does): the F1 key list, from the one action table (tui.actions).
KEYS = help_keys()


def help_renderable() -> Table:
    """The help text as a two-column table."""
    t = Table(box=None, show_header=False, pad_edge=False, expand=True)
    t.add_column(no_wrap=True, style="bold")
    t.add_column(ratio=1)
    t.add_row(Text("Pipeline", style="bold underline"), "")
    for name, one, two in STAGES:
        t.add_row(name, Text(f"{one}\n{two}"))
        t.add_row("", "")
    t.add_row(Text("Keys", style="bold underline"), "")
    for key, what in KEYS:
        t.add_row(key, what)
    return t


class HelpScreen(ModalScreen[None]):
    """The stages explained, and the keys."""

    BINDINGS = [
        Binding("escape", "close", "Close", group=_CLOSE, id="help.close", tooltip="Close help; focus returns where it was"),
        Binding("f1", "close", "Close", group=_CLOSE, id="help.toggle", tooltip="Close help"),
    ]

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="dialog help"):
            yield Static("rankscope · how a search is ranked", classes="dialog-title")
            with VerticalScroll(id="help-scroll"):
                yield Static(help_renderable())
            yield Static("↑↓ PgUp PgDn scroll · Esc closes", classes="hint")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.query_one("#help-scroll").focus()

    def action_close(self) -> None:
        """Close help."""
        self.dismiss(None)
