"""State shown without relying on colour, and nothing left unsaid: session
boxes read [x]/[ ], switch hints follow the switch, the loading screen's
footer offers ctrl+q, indexing from the browser says which files it skipped,
and an export names its absolute path."""

from __future__ import annotations

from dataclasses import replace

from pathlib import Path

from textual.widgets import Footer, Label, SelectionList, Switch

from tui.browser.screens.params import ParamsScreen
from tui.browser.screens.sessions import SessionsScreen

from .conftest import (
    failing_index_app,
    browsing,
    notifications,
    plain,
    press,
    processed,
    query_input,
    record_notifications,
    run_command,
    settle,
    wait_for,
    wait_screen,
)

NARROW = (80, 24)


def line_text(widget, y: int) -> str:
    return "".join(segment.text for segment in widget.render_line(y))


def footer_keys(screen) -> set[str]:
    """The keys the footer of ``screen`` offers (its key widgets, found by
    public querying: ``FooterKey`` is the type name of the footer's keys)."""
    return {k.key for footer in screen.query(Footer) for k in footer.query("FooterKey")}


async def test_session_boxes_read_x_or_blank_and_the_filter_hint_follows_the_switch():
    async with browsing(NARROW, "cache") as (app, pilot):
        await press(pilot, "f3")
        dialog = await wait_screen(pilot, SessionsScreen)
        await processed(pilot)
        boxes = dialog.query_one(SelectionList)
        assert line_text(boxes, 0).startswith("[ ] ")  # the stock box reads ▐X▌ on and off
        state = dialog.query_one("#filter-state", Label)
        assert plain(state).startswith("off: every session passes")
        await press(pilot, "space")  # allow the first session: the filter turns on
        await settle(pilot)
        await wait_for(pilot, lambda: line_text(boxes, 0).startswith("[x] sess-"))
        assert line_text(boxes, 0).rstrip().endswith("chunks)  ✓ allowed")
        assert line_text(boxes, 1).startswith("[ ] sess-") and "allowed" not in line_text(boxes, 1)
        assert dialog.query_one("#filter-on", Switch).value
        assert plain(state).startswith("on: only the allowed sessions pass")
        dialog.query_one("#filter-on", Switch).value = False
        await settle(pilot)
        await wait_for(pilot, lambda: plain(state).startswith("off: every session passes"))
        assert app.browser.params.sessions is None


async def test_the_exact_switch_hint_follows_the_switch():
    async with browsing(NARROW) as (app, pilot):
        await wait_for(pilot, lambda: query_input(app) is not None)
        await press(pilot, "f2")
        dialog = await wait_screen(pilot, ParamsScreen)
        state = dialog.query_one("#exact-state", Label)
        assert plain(state).startswith("off:")
        dialog.query_one("#exact", Switch).value = True
        await wait_for(pilot, lambda: plain(state).startswith("on:"))


async def test_the_loading_screen_footer_offers_ctrl_q(tmp_path):
    app = failing_index_app(tmp_path)  # the loading screen stays
    async with app.run_test(size=NARROW) as pilot:
        await wait_for(pilot, lambda: any("Indexing failed" in (n.title or "") for n in notifications(app)))
        await settle(pilot)
        assert app.screen.active_bindings["ctrl+q"].binding.show
        await wait_for(pilot, lambda: "ctrl+q" in footer_keys(app.screen))


async def test_the_store_picker_footer_offers_ctrl_q():
    from tui.browser.app import RankscopeApp
    from tui.browser.options import AppOptions
    from tui.browser.screens.stores import StorePickerScreen

    app = RankscopeApp(AppOptions(store_finder=lambda: [], show_timings=False, cursor_blink=False))
    async with app.run_test(size=NARROW) as pilot:
        await wait_screen(pilot, StorePickerScreen, focused=False)
        await settle(pilot)
        await wait_for(pilot, lambda: "ctrl+q" in footer_keys(app.screen))


def _folder_with_skips(tmp_path: Path) -> Path:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.md").write_text("# Alpha\nalpha words\n")
    (folder / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00binary")
    (folder / "dump.bin").write_bytes(b"\x00\x01\x02" * 100)
    return folder


async def _browse(app, pilot) -> None:
    """Wait until indexing is done and the browser is on top."""
    from tui.browser.screens.browser import BrowserScreen

    await wait_screen(pilot, BrowserScreen, timeout=60)
    await settle(pilot)


async def test_indexing_from_the_browser_says_which_files_were_skipped(tmp_path):
    from tui.browser.app import RankscopeApp
    from tui.cli.launch import app_arguments
    from tui.browser.screens.skipped import SkippedScreen

    folder = _folder_with_skips(tmp_path)
    args = app_arguments(str(folder))
    assert args.index_job is not None
    app = record_notifications(RankscopeApp(replace(args, show_timings=False, cursor_blink=False)))
    async with app.run_test(size=NARROW) as pilot:
        await _browse(app, pilot)
        await wait_for(pilot, lambda: any("skipped" in n.message for n in notifications(app)))
        notes = [n for n in notifications(app) if "skipped" in n.message]
        assert notes and "2 files skipped (2 binary)" in notes[0].message
        welcome = plain(app.browser.results.message)
        assert "2 files skipped (2 binary)" in welcome and "Skipped files" in welcome
        await run_command(pilot, "skipped files")
        skipped = await wait_screen(pilot, SkippedScreen, focused=False)
        await processed(pilot)
        listed = plain(skipped.query_one("#skipped-list"))
        assert "logo.png" in listed and "dump.bin" in listed
        await press(pilot, "escape")
        await wait_for(pilot, lambda: app.screen is app.browser)

    # the next launch finds the store cached, and still says so
    args = app_arguments(str(folder))
    assert args.store is not None and len(args.skipped.skipped) == 2
    app = RankscopeApp(replace(args, show_timings=False, cursor_blink=False))
    async with app.run_test(size=NARROW) as pilot:
        await wait_for(pilot, lambda: query_input(app) is not None)
        assert "2 files skipped (2 binary)" in plain(app.browser.results.message)


async def test_export_notification_gives_the_absolute_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    async with browsing(NARROW, "cache") as (app, pilot):
        path = app.action_export_trace(Path("."))  # a relative folder: the notification still names it in full
        assert path is not None and path.exists()
        expected = str((tmp_path / path.name).resolve())
        await wait_for(pilot, lambda: any(n.message == expected for n in notifications(app)))
