"""``rankscope [PATH] [--stores]``: decide what to browse and start the app.

* no PATH: the bundled ``sample_corpus/`` folder;
* a folder: indexed into the cache (loading screen with a progress bar) unless
  an up-to-date cached store exists, which opens at once;
* a file: opened read-only as a content store (``Store.open_readonly``);
  refused when even its counts cannot be read (a damaged file);
* ``--stores``: a picker over :func:`engine.store.discovery.find_stores` (when that
  module exists).

Bad paths raise :class:`tui.cli.base.CliError` (one line, exit status 2).
"""

from __future__ import annotations

import os
import sys
from dataclasses import replace
from pathlib import Path

import tui

from engine import Store, StoreError
from engine.store.corpus import SESSIONS_FILE, load_sessions_map

from tui.browser.corpus_cache import CacheEntry, cache_entry, cached_skips, load_cached
from tui.browser.options import AppOptions, StoreFinderFn
from tui.cli.base import CliError
from tui.browser.facts import read_facts

#: The corpus opened when no PATH is given.
SAMPLE_CORPUS = Path(tui.__file__).resolve().parent.parent / "sample_corpus"
#: Said when there is no PATH and no sample corpus (a non-editable ``pip install .`` leaves it out).
SAMPLE_MISSING = (
    "the sample corpus is not installed; install with `pip install -e .` from a clone, or run `rankscope PATH`"
)
#: Queries that show one stage each on the sample corpus (README, "Ten queries to try").
SAMPLE_QUERIES = ("throttling", "inflight", "write quorum", "replicaton quorom", "tombstone replicaton", "kafka")


def _finder(project_dir: str | None) -> StoreFinderFn | None:
    try:
        from engine.store.discovery import StoreFinder
    except ImportError:
        return None
    return StoreFinder(project_dir)


def _folder_source(folder: Path, demo_cache: Path | None = None) -> AppOptions:
    """The options for a corpus folder: a cached store or an index job.

    ``demo_cache``: a demo session's own cache folder. The user's cached
    store is then only read (when it is up to date); otherwise the folder is
    indexed into ``demo_cache``, never into the user's cache.
    """
    if (folder / SESSIONS_FILE).is_file():
        try:
            load_sessions_map(folder / SESSIONS_FILE)
        except ValueError as exc:
            raise CliError(str(exc)) from exc
    entry: CacheEntry = cache_entry(folder)
    if demo_cache is not None:
        store = load_cached(entry, writable=False) if entry.db_path.is_file() else None
        if store is not None:
            return AppOptions(store=store, store_label=folder.name, skipped=cached_skips(entry))
        entry = cache_entry(folder, root=demo_cache)
    try:
        entry.db_path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CliError(f"cannot create the cache folder {entry.db_path.parent}: {exc.strerror or exc}") from exc
    store = load_cached(entry)
    if store is not None:
        return AppOptions(store=store, store_label=folder.name, skipped=cached_skips(entry))
    return AppOptions(index_job=entry, store_label=folder.name)


def app_arguments(path: str | None, stores: bool = False, demo_cache: Path | None = None) -> AppOptions:
    """The :class:`~tui.browser.options.AppOptions` for ``rankscope [PATH] [--stores]``;
    ``demo_cache``: a demo session's own cache folder (:func:`_folder_source`).

    Raises:
        CliError: the path does not exist, is not a content store, or the
            cache cannot be created.
    """
    notice = None
    if stores:
        finder = _finder(path)
        if finder is not None:
            return AppOptions(store_finder=finder, store_label="discovered stores")
        notice = "store discovery not available"
    if path is None:
        if not SAMPLE_CORPUS.is_dir():
            raise CliError(SAMPLE_MISSING)
        args = replace(_folder_source(SAMPLE_CORPUS, demo_cache), suggestions=SAMPLE_QUERIES)
    else:
        p = Path(path).expanduser()
        if not p.exists():
            raise CliError(f"no such file or folder: {path}")
        if p.is_dir():
            args = _folder_source(p.resolve(), demo_cache)
        else:
            try:
                store = Store.open_readonly(p)
            except StoreError as exc:
                raise CliError(str(exc)) from exc
            try:
                read_facts(store)  # a store damaged where its counts live cannot be browsed at all
            except StoreError as exc:
                store.close()
                raise CliError(str(exc)) from exc
            args = AppOptions(store=store, store_label=p.name)
    return replace(args, notice=notice) if notice else args


def require_terminal() -> None:
    """Refuse to start the browser without a terminal: standard input and
    standard error must be one (Textual reads keys from the first and draws
    on the second), unless textual-serve drives it (its ``TEXTUAL_DRIVER``;
    pipes to a web page). Without it the app would draw into a file and wait
    for keys forever.

    Raises:
        CliError: no terminal.
    """
    if os.environ.get("TEXTUAL_DRIVER"):
        return
    try:
        ok = sys.stdin.isatty() and sys.stderr.isatty()
    except (AttributeError, ValueError):  # closed or replaced streams
        ok = False
    if not ok:
        raise CliError(
            "the browser needs a terminal (its keys come from standard input, it draws on standard error); "
            "run 'rankscope --help' for the subcommands"
        )


def launch_browser(
    path: str | None,
    stores: bool = False,
    qrels: Path | None = None,
    idle_timeout: float | None = None,
    notice: str | None = None,
) -> None:
    """Open the browser on ``path`` (see the module docstring) and run it
    until the user quits; ``qrels`` is the judgments file to grade into
    (``--qrels``; default: the store's own file in the user's data folder);
    ``idle_timeout``: seconds without input before it quits (``None``: never);
    ``notice``: a warning the browser shows once it starts (after any of its own).

    Raises:
        CliError: for a bad path (the CLI prints it and exits with status 2).
    """
    from tui.browser.app import RankscopeApp

    options = replace(app_arguments(path, stores), qrels_path=qrels, idle_timeout=idle_timeout)
    if notice:
        options = replace(options, notice=f"{options.notice}\n{notice}" if options.notice else notice)
    require_terminal()
    app = RankscopeApp(options)
    app.run()
    if app.return_code:
        raise SystemExit(app.return_code)
