"""A store damaged in the middle never crashes the browser: the launcher
refuses one whose counts cannot be read (one line, exit status 2), the store
picker refuses it, a damaged cache is rebuilt, and a search that hits a
damaged part of the index is explained (notification + the results' empty
state) while the app keeps running."""

from __future__ import annotations


from types import SimpleNamespace

import pytest

from engine import Store
from tui.cli import CliError, main
from tui.cli.launch import app_arguments

from .conftest import (
    browsing,
    damaged_store,
    notifications,
    plain,
    press,
    query_input,
    record_notifications,
    settle,
    type_text,
    wait_for,
    wait_screen,
)

NARROW = (80, 24)


@pytest.fixture
def counts_damaged(corpus, tmp_path):
    """A store whose counts (the sources table) cannot be read."""
    return damaged_store(tmp_path / "counts.db", ("sources",))


@pytest.fixture
def index_damaged(corpus, tmp_path):
    """A store whose counts read fine but whose trigram index is damaged."""
    return damaged_store(tmp_path / "index.db", ("chunks_trigram_data",), keep_first=True)


def test_launch_refuses_a_store_whose_counts_cannot_be_read(counts_damaged):
    with pytest.raises(CliError, match="damaged|cannot read"):
        app_arguments(str(counts_damaged))


def test_main_says_so_in_one_line_with_status_2(counts_damaged, capsys):
    with pytest.raises(SystemExit) as exc:
        main([str(counts_damaged)])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("rankscope: error:") and "\n" not in err
    assert str(counts_damaged) in err


def test_launch_opens_a_store_whose_counts_read_fine(index_damaged):
    args = app_arguments(str(index_damaged))
    assert isinstance(args.store, Store)
    args.store.close()


def test_a_damaged_cache_is_rebuilt(corpus, tmp_path):
    from tui.browser.corpus_cache import build_cache, cache_entry, load_cached

    entry = cache_entry(corpus, root=tmp_path / "cache")
    build_cache(entry).close()
    cached = load_cached(entry)
    assert cached is not None
    cached.close()
    damaged_store(tmp_path / "broken.db", ("sources",)).replace(entry.db_path)
    assert load_cached(entry) is None  # rebuilt, never browsed


async def test_a_failing_search_is_explained_and_the_app_keeps_running(index_damaged):
    store = Store.open_readonly(index_damaged)
    async with browsing(NARROW, store=store) as (app, pilot):
        await wait_for(pilot, lambda: app.focused is not None and app.focused is query_input(app))
        await type_text(pilot, "cache")
        await press(pilot, "enter")
        await settle(pilot)
        browser = app.browser
        assert app.is_running and app.screen is browser
        message = plain(browser.results.message)
        assert "Search failed: the store is damaged" in message
        assert str(index_damaged) in message
        assert browser.results.border_subtitle == "search failed"
        assert browser.trace is None
        errors = [n for n in notifications(app) if n.severity == "error"]
        assert len(errors) == 1 and f"{index_damaged} is damaged" in errors[0].message
        # the same failure again (typing on) does not pile up notifications
        await type_text(pilot, "s")
        await press(pilot, "enter")
        await settle(pilot)
        assert browser.query_box.value == "caches" and "Search failed" in plain(browser.results.message)
        assert len([n for n in notifications(app) if n.severity == "error"]) == 1
        # the lab screens report their failures too, and the app stays up
        from tui.browser.screens.compare import CompareScreen
        from tui.browser.screens.doctor import DoctorScreen
        from tui.browser.screens.why import WhyScreen

        for key, cls in (("f7", CompareScreen), ("f8", WhyScreen), ("f9", DoctorScreen)):
            await press(pilot, key)
            await wait_screen(pilot, cls)
            await settle(pilot)
            assert app.is_running
            await press(pilot, "escape")
            await wait_for(pilot, lambda: app.screen is browser)
        assert app.is_running


async def test_a_store_whose_counts_cannot_be_read_still_opens_in_the_app(counts_damaged):
    """The app given such a store directly (the launcher refuses it): the
    start screen says so instead of crashing."""
    store = Store.open_readonly(counts_damaged)
    async with browsing(NARROW, store=store) as (app, pilot):
        await wait_for(pilot, lambda: app.focused is not None and app.focused is query_input(app))
        assert app.is_running
        assert "counts could not be read" in plain(app.browser.results.message)
        await type_text(pilot, "cache")
        await press(pilot, "enter")
        await settle(pilot)
        assert "Search failed" in plain(app.browser.results.message)


def _picker_app(infos):
    from tui.browser.app import RankscopeApp
    from tui.browser.options import AppOptions

    return record_notifications(
        RankscopeApp(AppOptions(store_finder=lambda: infos, show_timings=False, cursor_blink=False))
    )


async def _wait_for_the_list(pilot):
    """Wait until the store picker lists what it found."""
    from tui.browser.screens.stores import StorePickerScreen

    app = pilot.app
    await wait_screen(pilot, StorePickerScreen)
    await wait_for(pilot, lambda: app.screen.query_one("#stores-list").option_count > 0)
    await settle(pilot)


async def test_the_picker_refuses_a_store_marked_unreadable(counts_damaged):
    from tui.browser.screens.stores import StorePickerScreen

    info = SimpleNamespace(
        path=counts_damaged,
        size_bytes=1,
        sources=None,
        chunks=None,
        schema=None,
        error="cannot read: database disk image is malformed",
    )
    async with browsing(NARROW, app=_picker_app([info])) as (app, pilot):
        await _wait_for_the_list(pilot)
        assert "cannot be opened" in str(app.screen.query_one("#stores-list").get_option_at_index(0).prompt)
        await press(pilot, "enter")
        await wait_for(
            pilot, lambda: any(n.severity == "error" and "unreadable" in n.message for n in notifications(app))
        )
        await settle(pilot)
        assert isinstance(app.screen, StorePickerScreen) and app.is_running


async def test_the_picker_refuses_a_damaged_store_not_yet_marked(counts_damaged):
    """Discovery found it readable, but it is damaged now: still refused."""
    from tui.browser.screens.stores import StorePickerScreen

    info = SimpleNamespace(path=counts_damaged, size_bytes=1, sources=1, chunks=1, schema=None, error=None)
    async with browsing(NARROW, app=_picker_app([info])) as (app, pilot):
        await _wait_for_the_list(pilot)
        await press(pilot, "enter")
        await wait_for(pilot, lambda: any(n.severity == "error" and "damaged" in n.message for n in notifications(app)))
        await settle(pilot)
        assert isinstance(app.screen, StorePickerScreen) and app.is_running
        assert app.browser is None
