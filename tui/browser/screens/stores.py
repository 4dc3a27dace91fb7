"""The store picker (``rankscope --stores``): content stores found on this
machine by :func:`engine.store.discovery.find_stores`, opened read-only.

Its workers look for the stores (discovery may walk folders) and open the
one picked (its counts read, so that a damaged store is refused here, with
the picker still up); the open store goes to the app
(:class:`tui.browser.messages.StoreReady`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from engine import Store, StoreError

from tui.present import safe
from tui.present.fmt import human_bytes, looked_in, session_db_summary
from tui.browser.corpus_cache import SkipList
from tui.browser.facts import describe_problem, read_facts
from tui.browser.messages import StoreReady
from tui.browser.options import StoreFinderFn
from tui.browser.screens.work import WorkScreen
from tui.browser.widgets.footer import KeyFooter


def human_size(n: int | None) -> str:
    """``1.2 MiB`` style size (:func:`tui.present.fmt.human_bytes`, as ``rankscope stores`` prints it)."""
    return "?" if n is None else human_bytes(n)


def store_line(info: Any) -> Text:
    """One picker line for a ``StoreInfo``."""
    t = Text(safe.line(str(info.path)), style="bold")
    details = [human_size(getattr(info, "size_bytes", None))]
    for attr, noun in (("sources", "sources"), ("chunks", "chunks")):
        value = getattr(info, attr, None)
        if value is not None:
            details.append(f"{value} {noun}")
    schema = getattr(info, "schema", None)
    if schema:
        details.append(str(schema))
    client = getattr(info, "client", "")
    if client:
        details.append(f"client {client}")
    if getattr(info, "wal_bytes", 0):
        details.append("live (a writer has it open)")
    if getattr(info, "session_db", None):
        details.append(f"session DB: {session_db_summary(info)} (plugin scope available)")
    t.append("\n  " + " · ".join(details), style="dim")
    error = getattr(info, "error", None)
    if error:
        t.append(f"\n  ✗ unreadable, cannot be opened: {safe.line(str(error))}", style="bold")
    return t


class StorePickerScreen(WorkScreen[None]):
    """Pick a discovered store to browse (read-only)."""

    WORK = {"discover": "Store discovery", "open": "Opening the store"}

    @dataclass
    class Found(Message):
        """Discovery finished: ``infos`` (``engine.store.discovery.StoreInfo``-like,
        in list order) and the folders searched, when the finder tells
        (``engine.store.discovery.StoreFinder``), else ``()``."""

        infos: list[Any]
        looked_in: tuple[Any, ...] = ()

    @dataclass
    class Refused(Message):
        """The picked store cannot be opened or read: ``problem`` says why."""

        problem: str

    BINDINGS = [
        # priority: otherwise the app's own (hidden) ctrl+q wins and the footer shows no way out
        Binding("ctrl+q", "app.quit", "Quit", id="stores.quit", tooltip="Quit rankscope", priority=True),
        Binding(
            "escape",
            "close",
            "Back",
            id="stores.close",
            tooltip="Back to the store you were browsing (when the picker was opened from it)",
        ),
    ]

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "close":
            return self.opened_from_browser
        return True

    @property
    def opened_from_browser(self) -> bool:
        """True when a browser lies beneath (the picker came from ctrl+p)."""
        from tui.browser.screens.browser import BrowserScreen

        return any(isinstance(s, BrowserScreen) for s in self.app.screen_stack[:-1])

    def action_close(self) -> None:
        """Close the picker opened from the browser (ctrl+p)."""
        self.app.pop_screen()

    def __init__(self, finder: StoreFinderFn) -> None:
        super().__init__()
        self.finder = finder
        self.infos: list[Any] = []

    def compose(self) -> ComposeResult:
        with Vertical(id="stores-box"):
            yield Static(Text("Content stores on this machine", style="bold"), id="stores-title")
            yield Static("looking…", id="stores-status", classes="hint")
            yield OptionList(id="stores-list")
            with VerticalScroll(id="stores-none"):  # where it looked, when it found nothing (scrolls)
                yield Static(id="stores-looked")
        yield KeyFooter()

    def on_mount(self) -> None:
        self._discover()

    @work(thread=True, exclusive=True, exit_on_error=False, group="discover")
    def _discover(self) -> None:
        """Find the content stores (it may walk folders); post :class:`Found`."""
        from engine.store.discovery import StoreFinder

        infos = list(self.finder())
        where = tuple(self.finder.locations()) if isinstance(self.finder, StoreFinder) else ()
        self.post_message(self.Found(infos, where))

    @on(Found)
    def _found(self, event: Found) -> None:
        self.show_stores(event.infos, event.looked_in)

    def show_stores(self, infos: list[Any], locations: Sequence[Any] = ()) -> None:
        """List the discovered stores (``infos``: objects with an optional
        ``error`` attribute, in list order) and focus the first; with none,
        say so, and where it looked (``locations``: the folders searched,
        listed as ``rankscope stores`` lists them), and hide the list."""
        self.infos = infos
        status = self.query_one("#stores-status", Static)
        options = self.query_one("#stores-list", OptionList)
        if not infos:
            status.update("No context-mode content stores found" + (". Looked in:" if locations else "."))
            t = Text("\n".join(safe.line(line) for line in looked_in(list(locations))))
            t.append(
                ("\n\n" if locations else "")
                + "Run 'rankscope PATH' with a folder or a .db file"
                + (", or set $CONTEXT_MODE_DIR to the folder above content/." if locations else "."),
                style="italic",
            )
            self.query_one("#stores-looked", Static).update(t)
            options.display = False
            none = self.query_one("#stores-none")
            none.display = True
            none.focus()
            return
        bad = sum(1 for i in infos if getattr(i, "error", None))
        status.update(
            f"{len(infos)} found · Enter opens read-only · ctrl+q quits"
            + (f" · {bad} unreadable (✗) cannot be opened" if bad else "")
        )
        options.set_options([Option(store_line(i), id=str(n)) for n, i in enumerate(infos)])
        options.highlighted = 0
        options.focus()

    @on(OptionList.OptionSelected, "#stores-list")
    def _picked(self, event: OptionList.OptionSelected) -> None:
        info = self.infos[int(event.option_id or 0)]
        error = getattr(info, "error", None)
        if error:
            self.notify(
                safe.line(f"{info.path} is unreadable: {error}"),
                title="Cannot open the store",
                severity="error",
                markup=False,
            )
            return
        self._open(Path(str(info.path)))

    @work(thread=True, exclusive=True, exit_on_error=False, group="open")
    def _open(self, path: Path) -> None:
        """Open the store at ``path`` read-only and read its counts; post
        :class:`~tui.browser.messages.StoreReady` (it goes on to the app), or
        :class:`Refused` when it cannot be opened or read."""
        try:
            store = Store.open_readonly(path)
        except StoreError as exc:
            self.post_message(self.Refused(str(exc)))
            return
        try:
            facts = read_facts(store)
        except Exception as exc:
            store.close()
            self.post_message(self.Refused(describe_problem(exc)))
            return
        self.post_message(StoreReady(store, path.name, facts, SkipList()))

    @on(Refused)
    def _refused(self, event: Refused) -> None:
        self.notify(safe.line(event.problem), title="Cannot open the store", severity="error", markup=False)
        self.query_one("#stores-list", OptionList).focus()
