"""Keyboard navigation at 80x24: Tab skips what is not shown, the stage
inspector's top is reachable and nothing wraps, closing a dialog returns
focus where it was, and the footer offers only keys that work."""

from __future__ import annotations

from .conftest import build_app, search_for

NARROW = (80, 24)


async def test_tab_from_the_query_goes_to_the_visible_pane():
    app = build_app()
    async with app.run_test(size=NARROW) as pilot:
        await search_for(pilot, "cache")
        browser = app.browser
        query = browser.query_box.input
        await pilot.press("down", "2")  # show the stages
        await pilot.pause()
        assert app.focused is browser.inspector
        await pilot.press("ctrl+l")
        await pilot.pause()
        assert app.focused is query
        await pilot.press("tab")
        await pilot.pause()
        assert app.focused is browser.inspector  # not the tab bar, not a hidden pane
        await pilot.press("tab")
        await pilot.pause()
        assert app.focused is query
        await pilot.press("shift+tab")
        await pilot.pause()
        assert app.focused is browser.inspector
        await pilot.press("1", "ctrl+l", "tab")  # back on the results
        await pilot.pause()
        assert app.focused is browser.results.table
        assert [w for w in browser.focus_chain if w.region.height == 0] == []


async def test_home_scrolls_the_stages_to_the_very_top_and_nothing_wraps():
    app = build_app()
    async with app.run_test(size=NARROW) as pilot:
        await search_for(pilot, "cache")
        browser = app.browser
        ins = browser.inspector
        await pilot.press("down", "2")
        await pilot.pause()
        rows = [i for i, _ in ins.subjects()]
        assert ins.highlighted is None
        await pilot.press("pagedown")  # a fresh trace: one page down from the top, not to the end
        await pilot.pause()
        assert rows[0] < ins.highlighted < rows[-1]
        await pilot.press("end")
        await pilot.pause()
        assert ins.highlighted == rows[-1] and ins.scroll_y > 0
        await pilot.press("down")  # at the last row: stays (no wrap to the top)
        await pilot.pause()
        assert ins.highlighted == rows[-1]
        await pilot.press("home")
        await pilot.pause()
        assert ins.highlighted == rows[0]
        assert ins.scroll_y == 0  # the total line and the first headers are on screen
        first_line = str(ins.get_option_at_index(0).prompt)
        assert first_line.strip().startswith("pool size")
        await pilot.press("up")  # at the first row: stays (no wrap to the end)
        await pilot.pause()
        assert ins.highlighted == rows[0] and ins.scroll_y == 0
        # scrolled away with the first row highlighted, Up brings the top back
        ins.scroll_to(y=4, animate=False, immediate=True)
        await pilot.press("up")
        await pilot.pause()
        assert ins.highlighted == rows[0] and ins.scroll_y == 0
        # PageDown then PageUp twice returns to the very top too
        await pilot.press("pagedown", "pageup", "pageup")
        await pilot.pause()
        assert ins.highlighted == rows[0] and ins.scroll_y == 0


async def test_closing_a_dialog_returns_focus_where_it_was():
    app = build_app()
    async with app.run_test(size=NARROW) as pilot:
        await search_for(pilot, "cache")
        browser = app.browser
        query = browser.query_box.input
        assert app.focused is query and query.selected_text == ""
        for key in ("f2", "f3", "f1"):
            await pilot.press(key)
            await pilot.pause()
            assert app.screen is not browser
            await pilot.press("escape")
            await pilot.pause()
            await pilot.pause()
            assert app.focused is query
            assert query.selected_text == "", key  # typing goes on, it does not replace the query
        await pilot.press("2")  # a digit in the query box is text
        assert query.value == "cache2"
        await pilot.press("backspace", "down", "2")
        await pilot.pause()
        assert app.focused is browser.inspector
        await pilot.press("f3")
        await pilot.pause()
        await pilot.press("f3")  # the same key closes it
        await pilot.pause()
        await pilot.pause()
        assert app.focused is browser.inspector
        await pilot.press("3")  # a pane key works at once
        await pilot.pause()
        assert browser.pane == "journey" and app.focused is browser.journey
        assert query.value == "cache"


async def test_the_footer_offers_pane_keys_only_outside_the_query_box():
    """(Textual leaves out bindings of keys the focused input takes as text.)"""
    app = build_app()
    async with app.run_test(size=NARROW) as pilot:
        await search_for(pilot, "cache")
        await pilot.pause()
        keys = app.screen.active_bindings
        assert not {"1", "2", "3"} & set(keys)  # digits are text in the query box
        await pilot.press("down")
        await pilot.pause()
        keys = app.screen.active_bindings
        assert {"1", "2", "3"} <= set(keys)
