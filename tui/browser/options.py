"""What the browser is started with: one typed value (:class:`AppOptions`),
built by the launcher (:func:`tui.cli.launch.app_arguments`) or a test and
passed to :class:`tui.browser.app.RankscopeApp` as it is. No Textual here
(the CLI imports it at start-up)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Protocol

from engine import SearchParams, Store, search
from engine.pipeline.trace import Trace

from tui.browser.corpus_cache import CacheEntry, SkipList

if TYPE_CHECKING:
    from engine.store import sql
    from engine.store.discovery import StoreInfo


@dataclass(frozen=True)
class DemoMode:
    """A demo session (``rankscope --demo``, ``rankscope serve --demo``): the
    visitor is someone else, on this machine's terminal, over SSH or in a web
    page.

    Attributes:
        folder: the visitor's temporary folder (mode 0700): their grades,
            history and saved cases live under it, and it is removed when
            they leave (:mod:`tui.cli.visitor`).
        remote: the visitor is over SSH with rankscope as the session's
            command (``ForceCommand``, ``docs/demo-over-ssh.md``): a file
            written here is out of their reach (no shell, no file transfer),
            so exports are refused rather than written.
    """

    folder: Path
    remote: bool = False


class SearchFn(Protocol):
    """The pipeline entry point (:func:`engine.search`; tests inject failures)."""

    def __call__(self, store: Store, params: SearchParams, conn: sql.Connection | None = None) -> Trace: ...


#: Finds the content stores to pick from (:class:`engine.store.discovery.StoreFinder`, or a test's list).
StoreFinderFn = Callable[[], "list[StoreInfo]"]


@dataclass(frozen=True)
class AppOptions:
    """How the browser starts. Exactly one of ``store``, ``index_job`` or
    ``store_finder`` says where the data comes from.

    Attributes:
        store: an open store to browse (the app closes it on exit).
        store_label: how to name the store or corpus in the interface
            (default: the store file's name).
        index_job: index this cache entry's folder first (loading screen).
        store_finder: show a store picker fed by this callable.
        params: start with these parameters (a query is searched at once).
        show_timings: show per-stage milliseconds (off for snapshot tests).
        cursor_blink: blink the query cursor (off for snapshot tests).
        search_fn: the pipeline entry point (tests inject failures here).
        notice: a warning to show once the app starts.
        suggestions: example queries for the start screen.
        skipped: the files the folder's (cached) indexing skipped.
        session_db: the store's context-mode session DB (default: paired by
            name in ``../sessions/``) for the agent view's plugin scope.
        qrels_path: the judgments file to grade into (``--qrels``); default
            the store's own ``qrels.json`` in the user's data folder.
        demo: a demo session (:class:`DemoMode`): no store picker, exports
            delivered to the visitor or refused; ``None``: a user's own session.
        idle_timeout: seconds without a key, click or resize after which
            the app warns, then quits (``None``: never).
    """

    store: Store | None = None
    store_label: str = ""
    index_job: CacheEntry | None = None
    store_finder: StoreFinderFn | None = None
    params: SearchParams = field(default_factory=lambda: SearchParams(""))
    show_timings: bool = True
    cursor_blink: bool = True
    search_fn: SearchFn = search
    notice: str | None = None
    suggestions: tuple[str, ...] = ()
    skipped: SkipList = field(default_factory=SkipList)
    session_db: str | None = None
    qrels_path: Path | None = None
    demo: DemoMode | None = None
    idle_timeout: float | None = None
