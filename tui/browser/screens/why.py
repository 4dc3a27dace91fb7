""" "Why is chunk X missing?": pick any chunk of the store with a fuzzy finder
(by title or source, or a row id) and see where it left the pipeline for the
browser's query, with the reason code and the numbers
(:func:`engine.lab.why.why_not`).

The screen's own thread workers read the chunk list (once per store: it is
kept in the browser's :class:`~tui.browser.link.ChunkList`), match it
(``rapidfuzz.process.extract`` over ``source::title``) and explain a chunk.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Sequence

from rich.console import Group, RenderableType
from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option
from textual.worker import get_current_worker

from engine import SearchParams
from engine.pipeline.variants import variant_spec
from engine.pipeline.trace import Trace
from engine.lab.counterfactual import Counterfactual, would_return_with
from engine.lab.why import ChunkNotFoundError, Explanation, why_not
from engine.store.rows import ChunkRow

from tui.present import safe
from tui.browser.actions import bindings, close_keys
from tui.browser.cmdline import append_params
from tui.browser.link import BrowserLink, ChunkEntry
from tui.present.cut import end_cut
from tui.present.describe import describe_explanations, to_rich
from tui.browser.screens.browser import BrowserScreen
from tui.browser.screens.work import WorkScreen
from tui.browser.widgets.footer import KeyFooter

if TYPE_CHECKING:
    from engine.pipeline.runcache import RunCache


#: Most matches listed by the finder.
MAX_MATCHES = 50
#: Entries whose mean per-word score (rapidfuzz partial_ratio, 0-100) is below this are dropped.
SCORE_CUTOFF = 75
_ROWID = re.compile(r"^\s*(?:row\s*|#)?(\d{1,18})\s*$", re.IGNORECASE)


def chunk_entries(rows: list[ChunkRow]) -> list[ChunkEntry]:
    """Finder entries from :meth:`engine.Store.iter_chunks` rows (content dropped)."""
    return [ChunkEntry(r.rowid, r.source or "", r.title, r.content_type or "prose", r.session_id) for r in rows]


def finder_keys(entries: list[ChunkEntry]) -> list[str]:
    """The text the finder matches for each entry: ``source::title``,
    lower-cased with punctuation as spaces (rapidfuzz ``default_process``)."""
    from rapidfuzz import utils

    return [utils.default_process(e.key) for e in entries]


def match_chunks(
    text: str, entries: list[ChunkEntry], keys: list[str] | None = None, limit: int = MAX_MATCHES
) -> list[ChunkEntry]:
    """The entries best matching ``text`` over ``source::title``, best first.

    Case and punctuation are ignored. Each word of ``text`` is matched on its
    own (rapidfuzz ``partial_ratio``, so a word may sit anywhere and carry a
    typo); an entry scores the mean over the words and needs at least
    ``SCORE_CUTOFF``. Ties go to the closer whole match (``WRatio``), then to
    the lower row id. A row id (``46``, ``#46``, ``row 46``) puts that chunk
    first. Empty text lists the first ``limit`` chunks in row id order.

    Args:
        keys: :func:`finder_keys` of ``entries`` (computed when omitted).
    """
    if not text.strip():
        return entries[:limit]
    from rapidfuzz import fuzz, process, utils

    keys = keys if keys is not None else finder_keys(entries)
    query = utils.default_process(text)
    words = query.split()
    out: list[ChunkEntry] = []
    m = _ROWID.match(text)
    if m:
        rowid = int(m.group(1))
        out = [e for e in entries if e.rowid == rowid]
    if words:
        total: dict[int, float] = {}
        for word in words:
            for _, score, i in process.extract(
                word, keys, scorer=fuzz.partial_ratio, processor=None, limit=None, score_cutoff=SCORE_CUTOFF * 0.8
            ):
                total[i] = total.get(i, 0.0) + score
        good = [(s / len(words), i) for i, s in total.items() if s / len(words) >= SCORE_CUTOFF]
        good.sort(key=lambda x: (-x[0], x[1]))
        best = good[: max(limit * 4, 200)]
        ranked = sorted(best, key=lambda x: (-round(x[0]), -fuzz.WRatio(query, keys[x[1]]), x[1]))
        out += [entries[i] for _, i in ranked]
    seen: set[int] = set()
    unique = []
    for e in out:
        if e.rowid not in seen:
            seen.add(e.rowid)
            unique.append(e)
    return unique[:limit]


def entry_prompt(e: ChunkEntry, width: int = 200) -> Text:
    """One finder line: ``row  46  title · source`` (one line, ellipsis)."""
    t = Text(f"row {e.rowid:>4}  ", style="dim", no_wrap=True, overflow="ellipsis")
    t.append(safe.line(e.title) or "(no title)", style="bold")
    t.append(" · " + safe.line(e.source or "(no source row)"), style="dim")
    if e.session_id:
        t.append(f" · {safe.line(e.session_id)}", style="dim italic")
    return end_cut(t, max(width, 20))


def explanations_renderable(explanations: list[Explanation], changes: Sequence[Counterfactual] = ()) -> Group:
    """Every explanation and (``changes``) the change that returns it, as
    ``rankscope why`` prints them (:func:`tui.present.describe.describe_explanations`)."""
    return to_rich(describe_explanations(explanations, changes))


class WhyScreen(WorkScreen[None]):
    """Find a chunk and see where (and why) it left the pipeline."""

    BROWSER_KEYS = False
    WORK = {"why": "Why not?", "chunks": "Reading the chunk list", "find": "Finding chunks"}

    @dataclass
    class ChunksRead(Message):
        """The store's chunk list is in the browser's :class:`~tui.browser.link.ChunkList`."""

    @dataclass
    class Matched(Message):
        """The finder's matches for one text, best first; ``seq``: the request's number."""

        seq: int
        matches: list[ChunkEntry]

    @dataclass
    class Explained(Message):
        """Chunk ``rowid`` explained: ``explanations``, or none with ``error``
        (the chunk is not in the store); ``seq``: the request's number.
        Posted twice: then again with ``changes``, each explanation's
        smallest change that returns it (:func:`engine.lab.counterfactual.would_return_with`)."""

        seq: int
        explanations: list[Explanation]
        error: str | None = None
        changes: list[Counterfactual] | None = None

    BINDINGS = [
        *close_keys(
            "why", "this screen", toggle="f8", escape_tooltip="Close; focus returns where it was (or to the comparison)"
        ),
        Binding(
            "down",
            "to_list",
            "Matches",
            key_display="↓",
            id="why.list",
            show=False,
            tooltip="Move from the finder to the matching chunks",
        ),
        *bindings("why"),  # p: pin (tui.browser.actions)
    ]

    def __init__(
        self, link: BrowserLink, params: SearchParams, *, rowid: int | None = None, trace: Trace | None = None
    ) -> None:
        super().__init__()
        self.link = link
        self.params = params
        self.cursor_blink = link.cursor_blink
        self.rowid = rowid
        self.trace = trace if trace is not None and trace.params == params else None
        self.entries: list[ChunkEntry] | None = None
        self.matches: list[ChunkEntry] = []
        self.explanations: list[Explanation] = []
        self._seq = 0
        self._shown_seq = 0
        self._find_seq = 0
        self._find_shown = 0
        #: Retriever runs reused by the counterfactual searches (one per screen).
        self._runs: RunCache | None = None

    def compose(self) -> ComposeResult:
        yield Static(id="why-title", classes="lab-title")
        yield Input(
            f"row {self.rowid}" if self.rowid is not None else "",
            id="why-find",
            compact=True,
            placeholder="Find a chunk: part of its title or source, or a row id",
            tooltip="Fuzzy match over source::title; Enter explains the highlighted match",
        )
        yield OptionList(id="why-list")
        with VerticalScroll(id="why-box"):
            yield Static(id="why-text")
        yield KeyFooter(compact=True)

    def on_mount(self) -> None:
        for field in self.query(Input):
            field.cursor_blink = self.cursor_blink
        self._show_title()
        box = self.query_one("#why-box")
        box.border_title = "Why?"
        self.query_one("#why-list", OptionList).set_options(
            [Option(Text("loading the chunk list…", style="italic"), disabled=True)]
        )
        if self.rowid is not None:
            self.explain(self.rowid)
        else:
            self._text(
                Text(
                    "Type part of a chunk's title or source, pick it (↓ then Enter), and see where it "
                    "left the pipeline for this query, with the numbers.",
                    style="italic",
                )
            )
        # opened on a chunk (from a pane or a comparison): the answer has the focus, so p pins
        # that chunk at once; Tab or shift+Tab reach the finder
        (self.query_one("#why-box") if self.rowid is not None else self.query_one("#why-find", Input)).focus()
        if self.link.chunk_list.entries is not None:
            self._set_entries(self.link.chunk_list.entries)  # read already for this store
        else:
            self._read_chunks()

    @work(thread=True, exclusive=True, exit_on_error=False, group="chunks")
    def _read_chunks(self) -> None:
        """Read the store's chunk list into the browser's :class:`~tui.browser.link.ChunkList`; post :class:`ChunksRead`."""
        store, chunk_list = self.link.store, self.link.chunk_list
        with store.thread_connection() as conn, store.lock:
            rows = store.iter_chunks(conn, with_content=False)
        entries = chunk_entries(rows)
        del rows
        chunk_list.keys = finder_keys(entries)
        chunk_list.entries = entries
        self.post_message(self.ChunksRead())

    def _show_title(self) -> None:
        p = self.params
        t = Text("Why not? ", style="bold")
        t.append(f"{safe.line(p.query)!r}" if p.query else "(empty query)")
        append_params(t, p)
        t.append(" · variant ", style="dim")
        t.append(variant_spec(p.variant), style="bold" if not p.variant.is_reference else "dim")
        self.query_one("#why-title", Static).update(t)

    def _text(self, content: RenderableType) -> None:
        self.query_one("#why-text", Static).update(content)

    # ── the finder ─────────────────────────────────────────────────────

    @on(ChunksRead)
    def _loaded(self) -> None:
        if self.link.chunk_list.entries is not None:
            self._set_entries(self.link.chunk_list.entries)

    def _set_entries(self, entries: list[ChunkEntry]) -> None:
        self.entries = entries
        self.find(self.query_one("#why-find", Input).value)

    def find(self, text: str) -> None:
        """List the chunks matching ``text`` (in a thread worker)."""
        if self.entries is None:
            return
        self._find_seq += 1
        self._match(text, self._find_seq)

    @work(thread=True, exclusive=True, exit_on_error=False, group="find")
    def _match(self, text: str, seq: int) -> None:
        """Fuzzy-match ``text`` against the chunk list; post :class:`Matched`."""
        worker = get_current_worker()
        chunk_list = self.link.chunk_list
        entries, keys = chunk_list.entries or [], chunk_list.keys
        matches = match_chunks(text, entries, keys if len(keys) == len(entries) else None)
        if not worker.is_cancelled:
            self.post_message(self.Matched(seq, matches))

    @on(Input.Changed, "#why-find")
    def _find_changed(self, event: Input.Changed) -> None:
        event.stop()
        self.find(event.value)

    @on(Matched)
    def _matches(self, event: Matched) -> None:
        if event.seq <= self._find_shown:
            return
        self._find_shown = event.seq
        self.matches = event.matches
        options = self.query_one("#why-list", OptionList)
        total = len(self.entries or ())
        typed = self.query_one("#why-find", Input).value.strip()
        options.border_title = (
            f"{len(event.matches)} match{'es' if len(event.matches) != 1 else ''} of {total} chunks"
            if typed
            else f"{total} chunks"
        )
        width = max((options.scrollable_content_region.width or options.size.width or 78) - 1, 20)
        if not event.matches:
            options.set_options([Option(Text("no chunk matches", style="italic"), disabled=True)])
            return
        options.set_options([Option(entry_prompt(e, width), id=str(i)) for i, e in enumerate(event.matches)])
        options.highlighted = 0

    def focus_finder(self) -> None:
        """Focus the finder, its text selected (ctrl+l, /: typing replaces it)."""
        finder = self.query_one("#why-find", Input)
        if self.focused is finder:
            finder.select_all()
        else:
            self.set_focus(finder)  # selects the text (Input.select_on_focus)

    def on_key(self, event: events.Key) -> None:
        """A character typed in the list or the answer goes to the finder
        (it went nowhere), replacing its text as typing there does; keys
        bound here (p pins) keep their meaning."""
        finder = self.query_one("#why-find", Input)
        if not event.is_printable or event.key in self.active_bindings:
            return
        event.stop()
        event.prevent_default()
        # Keys typed in a burst were sent to the pane before the first one moved the focus:
        # they arrive here with the finder focused already, and go to it in order.
        if self.focused is not finder:
            self.focus_finder()  # the finder's focus event is queued now, ahead of the key
        finder.post_message(events.Key(event.key, event.character))

    def action_to_list(self) -> None:
        """Down in the finder: move into the matches."""
        options = self.query_one("#why-list", OptionList)
        if self.matches:
            options.focus()

    @on(Input.Submitted, "#why-find")
    def _find_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        options = self.query_one("#why-list", OptionList)
        if self.matches:
            i = options.highlighted or 0
            self.explain(self.matches[min(i, len(self.matches) - 1)].rowid)

    @on(OptionList.OptionSelected, "#why-list")
    def _picked(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option_id is not None:
            self.explain(self.matches[int(event.option_id)].rowid)

    # ── explaining ─────────────────────────────────────────────────────

    def explain(self, rowid: int) -> None:
        """Explain chunk ``rowid`` for the current parameters (thread worker)."""
        self.rowid = rowid
        self._seq += 1
        self.query_one("#why-box").border_subtitle = f"row {rowid} · explaining…"
        self._explain(self.params, rowid, self._seq, self.trace)

    @work(thread=True, exclusive=True, exit_on_error=False, group="why")
    def _explain(self, params: SearchParams, rowid: int, seq: int, trace: Trace | None) -> None:
        """Explain chunk ``rowid`` for ``params`` (``trace``: its search, when
        at hand); post :class:`Explained`."""
        from engine.pipeline.runcache import RunCache

        worker = get_current_worker()
        store = self.link.store
        with store.thread_connection() as conn:
            try:
                explanations = why_not(store, params, rowid=rowid, conn=conn, trace=trace)
            except ChunkNotFoundError as exc:
                self.post_message(self.Explained(seq, [], str(exc)))
                return
            if worker.is_cancelled:
                return
            self.post_message(self.Explained(seq, explanations))
            # then what `rankscope why` prints under each: the smallest change that returns it
            if self._runs is None:
                self._runs = RunCache(store)
            shown = trace if trace is not None else self.link.search_fn(store, params, conn=conn)
            changes = [
                would_return_with(
                    store,
                    params,
                    rowid=e.chunk.rowid,
                    trace=shown,
                    runs=self._runs,
                    conn=conn,
                    stop=lambda: worker.is_cancelled,
                )
                for e in explanations
            ]
        if not worker.is_cancelled:
            self.post_message(self.Explained(seq, explanations, changes=changes))

    @on(Explained)
    def _explained(self, event: Explained) -> None:
        if event.seq < self._shown_seq or (event.seq == self._shown_seq and event.changes is None):
            return
        first = event.seq > self._shown_seq
        self._shown_seq = event.seq
        box = self.query_one("#why-box", VerticalScroll)
        if event.error:
            self.explanations = []
            box.border_subtitle = ""
            self._text(Text(safe.line(event.error), style="bold"))
            return
        self.explanations = event.explanations
        box.border_subtitle = f"row {self.rowid}" if self.rowid is not None else ""
        if event.changes is None:
            box.border_subtitle += " · finding the smallest change that returns it…"
        self._text(explanations_renderable(event.explanations, event.changes or ()))
        if first:
            box.scroll_home(animate=False)

    @on(BrowserScreen.ParamsChanged)
    def _params_changed(self, event: BrowserScreen.ParamsChanged) -> None:
        self.params = replace(event.params, variant=self.params.variant)
        self.trace = None
        self._show_title()
        if self.rowid is not None:
            self.explain(self.rowid)

    def worker_failed(self, group: str, error: BaseException) -> None:
        """A worker of this screen failed (notified already): say so in place."""
        if group == "why":
            self.query_one("#why-box").border_subtitle = "failed"
            self._text(Text(f"Could not explain: {safe.line(str(error))}", style="bold"))
        elif group in ("chunks", "find"):
            self.query_one("#why-list", OptionList).set_options(
                [Option(Text(f"chunk list unavailable: {safe.line(str(error))}", style="italic"), disabled=True)]
            )

    def pin_target(self) -> int | None:
        """The chunk p pins: the highlighted match while the list has focus,
        the explained chunk while the answer has it, ``None`` in the finder
        (there p is text)."""
        focused = self.focused
        options = self.query_one("#why-list", OptionList)
        if focused is options and self.matches:
            i = options.highlighted
            return self.matches[i].rowid if i is not None and i < len(self.matches) else None
        if focused is not None and focused.id == "why-box":
            return self.rowid
        return None

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "pin":
            return self.pin_target() is not None or None  # shown dimmed while the finder has focus
        return True

    def on_descendant_focus(self) -> None:
        self.refresh_bindings()

    def action_pin(self) -> None:
        """p on a match or on the answer: pin that chunk in the browser."""
        rowid = self.pin_target()
        if rowid is None:
            return
        self.link.pin(rowid)
        entry = next((e for e in self.entries or () if e.rowid == rowid), None)
        what = f"{entry.title} · {entry.source}" if entry is not None else f"row {rowid}"
        self.notify(
            safe.line(f"Pinned {what}: the line under the query follows its fate."),
            title="Pinned",
            timeout=4,
            markup=False,
        )

    def action_close(self) -> None:
        """Close the screen."""
        self.dismiss(None)
