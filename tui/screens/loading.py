"""The loading screen: indexes a corpus folder into the cache in a thread
worker, with a progress bar, then hands the store to the app."""

from __future__ import annotations

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Center, Middle, Vertical
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer, ProgressBar, Static
from textual.worker import Worker, WorkerState, get_current_worker

from ..cache import CacheEntry, build_cache, corpus_files
from ..messages import StoreReady


class LoadingScreen(Screen):
    """Index ``entry.folder`` into ``entry.db_path``, showing progress."""

    BINDINGS = [
        Binding("ctrl+q", "app.quit", "Quit", id="loading.quit", tooltip="Stop indexing and quit"),
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

    def compose(self) -> ComposeResult:
        with Middle():
            with Center():
                with Vertical(id="loading-box"):
                    yield Static(Text(f"Indexing {self.label}", style="bold"), id="loading-title")
                    yield Static(Text(f"into {self.entry.db_path}", style="dim"), id="loading-target")
                    yield ProgressBar(id="loading-bar", show_eta=False)
                    yield Static("counting files…", id="loading-file")
        yield Footer()

    def on_mount(self) -> None:
        self.index()

    @work(thread=True, exclusive=True, exit_on_error=False, group="index")
    def index(self) -> None:
        """Build the cached store in a thread and post :class:`StoreReady`."""
        worker = get_current_worker()
        total = len(corpus_files(self.entry.folder))
        done = 0
        self.post_message(self.Progress(0, total, ""))

        def progress(label: str, nbytes: int) -> None:
            nonlocal done
            done += 1
            self.post_message(self.Progress(done, total, label))

        store = build_cache(self.entry, progress=progress, cancelled=lambda: worker.is_cancelled)
        if worker.is_cancelled:
            store.close()
            return
        self.post_message(StoreReady(store, self.label))

    @on(Progress)
    def _progress(self, event: Progress) -> None:
        bar = self.query_one("#loading-bar", ProgressBar)
        bar.update(total=max(event.total, 1), progress=event.done)
        self.query_one("#loading-file", Static).update(
            Text(f"{event.done}/{event.total} files" + (f" · {event.label}" if event.label else ""), style="dim")
        )

    @on(Worker.StateChanged)
    def _state(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR:
            self.query_one("#loading-file", Static).update(
                Text(f"Indexing failed: {event.worker.error}\nctrl+q quits.", style="bold")
            )
