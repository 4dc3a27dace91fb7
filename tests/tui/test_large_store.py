"""A large store opens without reading every chunk first: the browser's
worker reads the counts the sources table records and shows them, then
counts the sessions (which need every chunk read) and shows them when ready."""

from __future__ import annotations

import threading

import pytest

import tui.browser.screens.browser as browser_module
from tui.browser import facts
from tui.browser.facts import read_facts

from .conftest import browsing, plain, processed, stages_store, wait_for

WIDE = (120, 40)


def test_read_facts_of_a_large_store_reads_no_chunk(monkeypatch):
    store = stages_store()
    monkeypatch.setattr(facts, "EXACT_FACTS_MAX_CHUNKS", 10)

    def never(*a, **kw):
        raise AssertionError("a large store's chunks were read before the first paint")

    monkeypatch.setattr(store, "stats", never)
    monkeypatch.setattr(store, "session_counts", never)
    f = read_facts(store)
    assert f.sessions_pending and f.session_counts == []
    assert f.stats == store.recorded_stats()
    assert f.stats.chunks == 129 and f.stats.sources == 24  # recorded = actual on a store rankscope wrote
    assert f.source_labels == [s.label for s in store.sources()]


def test_read_facts_of_a_small_store_counts_everything():
    store = stages_store()
    f = read_facts(store)
    assert not f.sessions_pending
    assert f.stats == store.stats() and f.session_counts == store.session_counts()


@pytest.fixture
def held_sessions(monkeypatch):
    """A store too large for exact facts at once: the browser's session count
    (read in a worker, never on the UI thread) waits until the test sets the
    returned event; set at the end whatever happens, so the worker ends."""
    monkeypatch.setattr(facts, "EXACT_FACTS_MAX_CHUNKS", 10)
    release = threading.Event()
    real = browser_module.read_sessions

    def slow(store, conn=None):
        assert threading.current_thread() is not threading.main_thread()
        release.wait(10)
        return real(store, conn)

    monkeypatch.setattr(browser_module, "read_sessions", slow)
    yield release
    release.set()


async def test_sessions_are_counted_after_the_first_paint(held_sessions):
    release = held_sessions
    async with browsing(WIDE) as (app, pilot):
        await wait_for(
            pilot,
            lambda: app.browser is not None and "sessions being counted" in plain(app.browser.results.message),
            what="the start text saying the sessions are being counted",
        )
        assert app.browser.overview.sessions_pending
        release.set()
        await wait_for(
            pilot,
            lambda: not app.browser.overview.sessions_pending and "3 sessions." in plain(app.browser.results.message),
            what="the session count",
        )
        assert [s for s, _ in app.browser.overview.session_counts if s] == ["sess-A", "sess-B", "sess-C"]
        welcome = plain(app.browser.results.message)
        assert "3 sessions." in welcome and "being counted" not in welcome


async def test_the_session_count_never_replaces_a_failed_search(held_sessions):
    release = held_sessions
    async with browsing(WIDE) as (app, pilot):
        await wait_for(
            pilot, lambda: app.browser is not None and app.browser.overview.sessions_pending, what="the pending count"
        )
        results = app.browser.results
        results.show_failure(RuntimeError("disk I/O error"))
        assert not results.welcome_shown
        failed = plain(results.message)
        release.set()
        await wait_for(pilot, lambda: not app.browser.overview.sessions_pending, what="the session count")
        await processed(pilot)
        assert plain(results.message) == failed and results.border_subtitle == "search failed"
