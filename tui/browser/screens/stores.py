"""The store picker (``rankscope --stores``): content stores found on this
machine by :func:`engine.store.discovery.find_stores`, opened read-only."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, OptionList, Static
from textual.widgets.option_list import Option

from engine import Store, StoreError

from tui.present import safe
from tui.present.fmt import human_bytes, looked_in, session_db_summary
from tui.browser.messages import DiscoverStores, StoreReady, StoresFound


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


class StorePickerScreen(Screen):
    """Pick a discovered store to browse (read-only)."""

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

    def __init__(self, finder: Callable[[], list[Any]]) -> None:
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
        yield Footer()

    def on_mount(self) -> None:
        self.app.post_message(DiscoverStores(self, self.finder))

    @on(StoresFound)
    def _found(self, event: StoresFound) -> None:
        self.show_stores(event.infos, event.looked_in)

    def show_stores(self, infos: list[Any], locations: tuple = ()) -> None:
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
    def _open(self, event: OptionList.OptionSelected) -> None:
        info = self.infos[int(event.option_id or 0)]
        error = getattr(info, "error", None)
        if error:
            self.notify(
                safe.line(f"{info.path} is unreadable: {error}"),
                title="Cannot open the store",
                severity="error",
                markup=False,
                timeout=10,
            )
            return
        try:
            store = Store.open_readonly(info.path)
        except StoreError as exc:
            self.notify(safe.line(str(exc)), title="Cannot open store", severity="error", markup=False)
            return
        self.post_message(StoreReady(store, Path(str(info.path)).name))  # the app checks it can be read

    def store_refused(self, error: BaseException) -> None:
        """The picked store could not be read (the app has notified): stay here."""
        self.query_one("#stores-list", OptionList).focus()
