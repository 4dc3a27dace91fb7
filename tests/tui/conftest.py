"""Fixtures for the browser tests: a fixed small corpus in a fresh store and
an app built with the same factory the CLI uses."""

from __future__ import annotations

from pathlib import Path

import pytest

#: The parity corpus (24 files, 129 chunks, sessions sess-A/B/C/D).
CORPUS = Path(__file__).parents[2].parent / "shared" / "parity" / "stages" / "corpus"


def stages_store():
    """A fresh in-memory store holding the parity corpus."""
    from engine import Store, index_corpus

    store = Store.create(":memory:")
    index_corpus(store, CORPUS)
    return store


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


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path, monkeypatch):
    """Never touch the real user cache."""
    monkeypatch.setenv("RANKSCOPE_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def corpus() -> Path:
    """Path of the parity corpus."""
    if not CORPUS.is_dir():
        pytest.skip(f"parity corpus missing at {CORPUS}")
    return CORPUS


def plain(widget) -> str:
    """The text a Static shows, rendered without styles."""
    import io

    from rich.console import Console

    console = Console(width=200, file=io.StringIO(), record=True, color_system=None)
    console.print(widget.content)
    return console.export_text()
