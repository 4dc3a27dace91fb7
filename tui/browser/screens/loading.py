"""The loading screen: indexes a corpus folder into the cache in a thread
worker, with a progress bar, reads the new store's counts, then hands the
store to the app (:class:`tui.browser.messages.StoreReady`)."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Center, Middle, Vertical
from textual.message import Message
from textual.widgets import ProgressBar, Static
from textual.worker import get_current_worker

from tui.present import safe
from tui.browser.corpus_cache import CacheEntry, SkipList, build_cache, corpus_files
from tui.browser.facts import read_facts
from tui.browser.messages import StoreReady
from tui.browser.screens.work import WorkScreen
from tui.browser.widgets.footer import KeyFooter


class LoadingScreen(WorkScreen[None]):
    """Index ``entry.folder`` into ``entry.db_path``, showing progress."""

    BINDINGS = [
        # priority: otherwise the app's own (hidden) ctrl+q wins and the footer shows no way out
        Binding("ctrl+q", "app.quit", "Quit", id="loading.quit", tooltip="Stop indexing and quit", priority=True),
    ]

    WORK = {"index": "Indexing"}

    @dataclass
    class Progress(Message):
        """One more file indexed (bursts are merged: only the newest counts)."""

        done: int
        total: int
        label: str

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, LoadingScreen.Progress)

    def __init__(self, entry: CacheEntry, label: str, writable: bool = True) -> None:
        super().__init__()
        self.entry = entry
        self.label = label
        #: Open the built store for writing (its stale refresh may re-index); ``False`` in a demo.
        self.writable = writable
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
        yield KeyFooter()

    def on_mount(self) -> None:
        self._index()

    @work(thread=True, exclusive=True, exit_on_error=False, group="index")
    def _index(self) -> None:
        """Index the folder into the cache, posting :class:`Progress`, read
        the store's counts, then post :class:`~tui.browser.messages.StoreReady`
        (it goes on to the app). Raises what indexing or reading raises (the
        store is closed first)."""
        worker = get_current_worker()
        total = len(corpus_files(self.entry.folder))
        done = 0
        self.post_message(self.Progress(0, total, ""))

        def progress(label: str, nbytes: int) -> None:
            nonlocal done
            done += 1
            self.post_message(self.Progress(done, total, label))

        skips: list[SkipList] = []
        store = build_cache(
            self.entry,
            progress=progress,
            cancelled=lambda: worker.is_cancelled,
            on_skips=skips.append,
            writable=self.writable,
        )
        try:
            facts = read_facts(store)
        except BaseException:
            store.close()
            raise
        if worker.is_cancelled:
            store.close()
            return
        self.post_message(StoreReady(store, self.label, facts, skips[0] if skips else SkipList()))

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

    def worker_failed(self, group: str, error: BaseException) -> None:
        """Indexing failed (notified already): say so here."""
        self.show_error(error)

    def show_error(self, error: BaseException) -> None:
        """Say that indexing failed (the app also notifies)."""
        self.failed = True
        self.query_one("#loading-file", Static).update(
            Text(f"Indexing failed: {safe.line(str(error))}\nctrl+q quits.", style="bold")
        )
