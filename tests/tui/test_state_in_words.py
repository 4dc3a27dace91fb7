"""State shown without relying on colour, and nothing left unsaid: session
boxes read [x]/[ ], switch hints follow the switch, the loading screen's
footer offers ctrl+q, indexing from the browser says which files it skipped,
and an export names its absolute path."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Label, SelectionList, Switch

from tui.screens.sessions import SessionsScreen

from .conftest import build_app, plain, run_command, search_for, settle

NARROW = (80, 24)


def line_text(widget, y: int) -> str:
    return "".join(segment.text for segment in widget.render_line(y))


async def test_session_boxes_read_x_or_blank_and_the_filter_hint_follows_the_switch():
    app = build_app()
    async with app.run_test(size=NARROW) as pilot:
        await search_for(pilot, "cache")
        await pilot.press("f3")
        await pilot.pause()
        dialog = app.screen
        assert isinstance(dialog, SessionsScreen)
        boxes = dialog.query_one(SelectionList)
        assert line_text(boxes, 0).startswith("[ ] ")  # the stock box reads ▐X▌ on and off
        state = dialog.query_one("#filter-state", Label)
        assert plain(state).startswith("off: every session passes")
        await pilot.press("space")  # allow the first session: the filter turns on
        await settle(pilot)
        assert line_text(boxes, 0).startswith("[x] ✓ allowed")
        assert line_text(boxes, 1).startswith("[ ] ")
        assert dialog.query_one("#filter-on", Switch).value
        assert plain(state).startswith("on: only the allowed sessions pass")
        dialog.query_one("#filter-on", Switch).value = False
        await settle(pilot)
        assert plain(state).startswith("off: every session passes")
        assert app.browser.params.sessions is None


async def test_the_exact_switch_hint_follows_the_switch():
    app = build_app()
    async with app.run_test(size=NARROW) as pilot:
        await pilot.press("f2")
        await pilot.pause()
        dialog = app.screen
        state = dialog.query_one("#exact-state", Label)
        assert plain(state).startswith("off:")
        dialog.query_one("#exact", Switch).value = True
        await pilot.pause()
        assert plain(state).startswith("on:")


async def test_the_loading_screen_footer_offers_ctrl_q(tmp_path):
    from textual.widgets._footer import FooterKey

    from tui.app import make_app
    from tui.cache import CacheEntry

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.md").write_text("# A\n")
    blocker = tmp_path / "file"
    blocker.write_text("x")
    entry = CacheEntry(corpus, blocker / "x.db", blocker / "x.fingerprint")  # fails: the loading screen stays
    app = make_app(index_job=entry, store_label="corpus")
    async with app.run_test(size=NARROW) as pilot:
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.screen.active_bindings["ctrl+q"].binding.show
        assert any(k.key == "ctrl+q" for k in app.screen.query(FooterKey))


async def test_the_store_picker_footer_offers_ctrl_q():
    from textual.widgets._footer import FooterKey

    from tui.app import make_app

    app = make_app(store_finder=lambda: [], show_timings=False, cursor_blink=False)
    async with app.run_test(size=NARROW) as pilot:
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert any(k.key == "ctrl+q" for k in app.screen.query(FooterKey))


def _folder_with_skips(tmp_path: Path) -> Path:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.md").write_text("# Alpha\nalpha words\n")
    (folder / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00binary")
    (folder / "dump.bin").write_bytes(b"\x00\x01\x02" * 100)
    return folder


async def _browse(app, pilot) -> None:
    from tui.screens.browser import BrowserScreen

    for _ in range(100):
        await pilot.pause(0.05)
        await app.workers.wait_for_complete()
        if isinstance(app.screen, BrowserScreen):
            break
    await pilot.pause()
    await pilot.pause()
    assert isinstance(app.screen, BrowserScreen)


async def test_indexing_from_the_browser_says_which_files_were_skipped(tmp_path):
    from tui.app import make_app
    from tui.launch import app_arguments
    from tui.screens.skipped import SkippedScreen

    folder = _folder_with_skips(tmp_path)
    args = app_arguments(str(folder))
    assert "index_job" in args
    app = make_app(**args, show_timings=False, cursor_blink=False)
    async with app.run_test(size=NARROW) as pilot:
        await _browse(app, pilot)
        notes = [n for n in app._notifications if "skipped" in n.message]
        assert notes and "2 files skipped (2 binary)" in notes[0].message
        welcome = plain(app.browser.results.message)
        assert "2 files skipped (2 binary)" in welcome and "Skipped files" in welcome
        await run_command(pilot, "skipped files")
        await pilot.pause()
        await pilot.pause()
        assert isinstance(app.screen, SkippedScreen)
        listed = plain(app.screen.query_one("#skipped-list"))
        assert "logo.png" in listed and "dump.bin" in listed
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is app.browser

    # the next launch finds the store cached, and still says so
    args = app_arguments(str(folder))
    assert "store" in args and len(args["skipped"].skipped) == 2
    app = make_app(**args, show_timings=False, cursor_blink=False)
    async with app.run_test(size=NARROW) as pilot:
        await pilot.pause()
        assert "2 files skipped (2 binary)" in plain(app.browser.results.message)


async def test_export_notification_gives_the_absolute_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    app = build_app()
    async with app.run_test(size=NARROW) as pilot:
        await search_for(pilot, "cache")
        path = app.action_export_trace(Path("."))  # a relative folder: the notification still names it in full
        await pilot.pause()
        assert path is not None and path.exists()
        expected = str((tmp_path / path.name).resolve())
        assert any(n.message == expected for n in app._notifications)
