"""The loading screen: indexes a corpus folder into the cache in a thread
worker, with a progress bar, then hands the store to the app."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Center, Middle, Vertical
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer, ProgressBar, Static

from tui.present import safe
from tui.browser.corpus_cache import CacheEntry
from tui.browser.messages import IndexFolder


class LoadingScreen(Screen):
    """Index ``entry.folder`` into ``entry.db_path``, showing progress."""

    BINDINGS = [
        # priority: otherwise the app's own (hidden) ctrl+q wins and the footer shows no way out
        Binding("ctrl+q", "app.quit", "Quit", id="loading.quit", tooltip="Stop indexing and quit", priority=True),
    ]

    class Progress(Message):
        """One more file indexed (bursts are merged: only the newest counts)."""

        def __init__(self, done: int, total: int, label: str) -> None:
            self.done = done
            self.total = total
            self.label = label
            super().__init__()

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, LoadingScreen.Progress)

    def __init__(self, entry: CacheEntry, label: str) -> None:
        super().__init__()
        self.entry = entry
        self.label = label
        #: Indexing failed and the screen says so: progress posted before the failure, handled after it, is dropped.
        self.failed = False

    def compose(self) -> ComposeResult:
        with Middle():
            with Center():
                with Vertical(id="loading-box"):
                    yield Static(Text(f"Indexing {safe.line(self.label)}", style="bold"), id="loading-title")
                    yield Static(Text(f"into {self.entry.db_path}", style="dim"), id="loading-target")
                    yield ProgressBar(id="loading-bar", show_eta=False)
                    yield Static("counting files…", id="loading-file")
        yield Footer()

    def on_mount(self) -> None:
        self.app.post_message(IndexFolder(self, self.entry, self.label))

    @on(Progress)
    def _progress(self, event: Progress) -> None:
        if self.failed:  # the worker's last progress can arrive after the app reported its failure
            return
        bar = self.query_one("#loading-bar", ProgressBar)
        bar.update(total=max(event.total, 1), progress=event.done)
        self.query_one("#loading-file", Static).update(
            Text(
                f"{event.done}/{event.total} files" + (f" · {safe.line(event.label)}" if event.label else ""),
                style="dim",
            )
        )

    def store_refused(self, error: BaseException) -> None:
        """The freshly built store cannot be read (the app has notified)."""
        self.show_error(error)

    def show_error(self, error: BaseException) -> None:
        """Say that indexing failed (the app also notifies)."""
        self.failed = True
        self.query_one("#loading-file", Static).update(
            Text(f"Indexing failed: {safe.line(str(error))}\nctrl+q quits.", style="bold")
        )
