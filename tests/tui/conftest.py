"""Fixtures for the browser tests: a fixed small corpus in a fresh store and
an app built with the same factory the CLI uses."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..conftest import PARITY

#: The parity corpus (24 files, 129 chunks, sessions sess-A/B/C/D), vendored in tests/golden.
CORPUS = PARITY / "stages" / "corpus"


def stages_store():
    """A fresh in-memory store holding the parity corpus."""
    from engine import Store, index_corpus

    store = Store.create(":memory:")
    index_corpus(store, CORPUS)
    return store


def damaged_store(path: Path, tables: tuple[str, ...], keep_first: bool = False) -> Path:
    """The parity corpus indexed into ``path``, then every page of ``tables``
    (but the first, with ``keep_first``) overwritten with junk, the way a bad
    disk block damages a file in the middle. ``("sources",)`` breaks the
    store's counts; ``("chunks_trigram_data",)`` with ``keep_first`` (its
    first page holds the index structure the table needs to open) leaves them
    readable and breaks searching."""
    import shutil
    import sqlite3

    from engine import Store, index_corpus

    clean = path.with_name(path.stem + "-clean.db")
    store = Store.create(clean)
    index_corpus(store, CORPUS)
    store.close()
    conn = sqlite3.connect(clean)
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    marks = ",".join("?" * len(tables))
    pages = [p for (p,) in conn.execute(f"SELECT pageno FROM dbstat WHERE name IN ({marks}) ORDER BY pageno", tables)]
    conn.close()
    pages = pages[1:] if keep_first else pages
    assert pages, f"no pages to damage in {tables}"
    shutil.copy(clean, path)
    with open(path, "r+b") as fh:
        for page in pages:
            fh.seek((page - 1) * page_size)
            fh.write(b"\xaa" * page_size)
    return path


def build_app(**kwargs):
    """The browser on the parity corpus, deterministic (no timings, no blink)."""
    from tui.app import make_app

    store = kwargs.pop("store", None) or stages_store()
    kwargs.setdefault("store_label", "stages corpus")
    kwargs.setdefault("show_timings", False)
    kwargs.setdefault("cursor_blink", False)
    return make_app(store, **kwargs)


async def settle(pilot) -> None:
    """Wait until every pending search has finished and been shown."""
    app = pilot.app
    for _ in range(50):
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        browser = app.browser
        if browser is None or browser._shown_seq >= browser._seq:
            return
    raise AssertionError("searches did not settle")


async def search_for(pilot, text: str) -> None:
    """Replace the query with ``text`` by typing it, press Enter, wait."""
    app = pilot.app
    await pilot.press("ctrl+l")
    await pilot.press(*text) if text else await pilot.press("backspace")
    await pilot.press("enter")
    await settle(pilot)


async def run_command(pilot, typed: str) -> None:
    """Open the command palette, type ``typed``, let it match, press Enter."""
    await pilot.press("ctrl+p")
    await pilot.pause()
    await pilot.press(*typed)
    await pilot.pause(0.3)
    await pilot.press("enter")


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path, monkeypatch):
    """Never touch the real user cache."""
    monkeypatch.setenv("RANKSCOPE_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def corpus() -> Path:
    """Path of the parity corpus (vendored: never skipped)."""
    assert CORPUS.is_dir(), f"parity corpus missing at {CORPUS} (see tests/golden/README.md)"
    return CORPUS


def plain(widget) -> str:
    """The text a Static shows, rendered without styles."""
    import io

    from rich.console import Console

    console = Console(width=200, file=io.StringIO(), record=True, color_system=None)
    console.print(widget.content)
    return console.export_text()
