"""Keyboard navigation at 80x24: Tab skips what is not shown, the stage
inspector's top is reachable and nothing wraps, closing a dialog returns
focus where it was, and the footer offers only keys that work."""

from __future__ import annotations

import pytest

from tui.browser.screens.help import HelpScreen
from tui.browser.screens.params import ParamsScreen
from tui.browser.screens.sessions import SessionsScreen

from .conftest import browsing, press, processed, rendered, search_for, send_keys, settle, wait_for, wait_screen

NARROW = (80, 24)


async def test_tab_from_the_query_goes_to_the_visible_pane():
    async with browsing(NARROW, "cache") as (app, pilot):
        browser = app.browser
        query = browser.query_box.input
        await press(pilot, "down", "s")  # show the stages
        await wait_for(pilot, lambda: app.focused is browser.inspector)
        await press(pilot, "ctrl+l")
        await wait_for(pilot, lambda: app.focused is query)
        await press(pilot, "tab")
        await wait_for(pilot, lambda: app.focused is not query)
        assert app.focused is browser.inspector  # not the tab bar, not a hidden pane
        await press(pilot, "tab")
        await wait_for(pilot, lambda: app.focused is not browser.inspector)
        assert app.focused is query
        await press(pilot, "shift+tab")
        await wait_for(pilot, lambda: app.focused is not query)
        assert app.focused is browser.inspector
        await press(pilot, "r", "ctrl+l", "tab")  # back on the results
        await wait_for(pilot, lambda: app.focused is browser.results.table)
        await processed(pilot)
        assert [w for w in browser.focus_chain if w.region.height == 0] == []


async def test_home_scrolls_the_stages_to_the_very_top_and_nothing_wraps():
    async with browsing(NARROW, "cache") as (app, pilot):
        browser = app.browser
        ins = browser.inspector
        await press(pilot, "down", "s")
        await wait_for(pilot, lambda: app.focused is ins)
        rows = [i for i, _ in ins.subjects()]
        assert ins.highlighted is None
        await press(pilot, "pagedown")  # a fresh trace: one page down from the top, not to the end
        await wait_for(pilot, lambda: ins.highlighted is not None)
        assert rows[0] < ins.highlighted < rows[-1]
        await press(pilot, "end")
        await wait_for(pilot, lambda: ins.highlighted == rows[-1] and ins.scroll_y > 0)
        # the scroll to the end may still be animating: let it finish, or it lands after Home
        await pilot.wait_for_scheduled_animations()
        await press(pilot, "down")  # at the last row: stays (no wrap to the top)
        await processed(pilot)
        assert ins.highlighted == rows[-1]
        await press(pilot, "home")
        await wait_for(pilot, lambda: ins.highlighted == rows[0] and ins.scroll_y == 0)
        await pilot.wait_for_scheduled_animations()
        # the total line and the first headers are on screen
        first_line = str(ins.get_option_at_index(0).prompt)
        assert first_line.strip().startswith("pool size")
        await press(pilot, "up")  # at the first row: stays (no wrap to the end)
        await processed(pilot)
        assert ins.highlighted == rows[0] and ins.scroll_y == 0
        # scrolled away with the first row highlighted, Up brings the top back
        ins.scroll_to(y=4, animate=False, immediate=True)
        assert ins.scroll_y == 4
        await press(pilot, "up")
        await wait_for(pilot, lambda: ins.scroll_y == 0)
        assert ins.highlighted == rows[0]
        # PageDown then PageUp twice returns to the very top too
        await press(pilot, "pagedown")
        await wait_for(pilot, lambda: ins.highlighted != rows[0])
        await press(pilot, "pageup", "pageup")
        await wait_for(pilot, lambda: ins.highlighted == rows[0] and ins.scroll_y == 0)


async def test_closing_a_dialog_returns_focus_where_it_was():
    async with browsing(NARROW, "cache") as (app, pilot):
        browser = app.browser
        query = browser.query_box.input
        assert app.focused is query and query.selected_text == ""
        for key, dialog in (("f2", ParamsScreen), ("f3", SessionsScreen), ("f1", HelpScreen)):
            await press(pilot, key)
            await wait_screen(pilot, dialog)
            await press(pilot, "escape")
            await wait_for(pilot, lambda: app.screen is browser and app.focused is query)
            assert query.selected_text == "", key  # typing goes on, it does not replace the query
        await press(pilot, "s")  # a letter in the query box is text
        assert query.value == "caches"
        await press(pilot, "backspace", "down", "s")
        await wait_for(pilot, lambda: app.focused is browser.inspector)
        await press(pilot, "f3")
        await wait_screen(pilot, SessionsScreen)
        await press(pilot, "f3")  # the same key closes it
        await wait_for(pilot, lambda: app.screen is browser and app.focused is browser.inspector)
        await press(pilot, "j")  # a pane key works at once
        await wait_for(pilot, lambda: browser.pane == "journey" and app.focused is browser.journey)
        assert query.value == "cache"


async def test_the_footer_offers_pane_and_grade_keys_only_outside_the_query_box():
    """(Textual leaves out bindings of keys the focused input takes as text.)"""
    async with browsing(NARROW, "cache") as (app, pilot):
        keys = app.screen.active_bindings
        assert not {"r", "s", "j", "0", "1", "2", "3"} & set(keys)  # letters and digits are text in the query box
        await press(pilot, "down")
        await wait_for(pilot, lambda: app.focused is app.browser.results.table)
        keys = app.screen.active_bindings
        assert {"r", "s", "j", "0", "1", "2", "3"} <= set(keys)


def _journey_at_end(app) -> bool:
    journey = app.browser.journey
    return (
        journey.max_scroll_y > 0
        and journey.scroll_y == journey.max_scroll_y
        and not app.animator.is_being_animated(journey, "scroll_y")
    )


@pytest.mark.parametrize("size", [NARROW, (120, 40)], ids=["80x24", "120x40"])
async def test_end_in_the_journey_reaches_the_chunks_last_line(size):
    """End right after the journey is shown (a burst: nothing measured yet,
    where End did nothing), and End kept when the text re-wraps to a
    narrower pane (where the end measured at the key press was short)."""
    async with browsing(size) as (app, pilot):
        await search_for(pilot, "network errors")  # a 5 KB chunk first
        send_keys(pilot, *(("tab", "j") if size == NARROW else ("tab", "tab", "tab")), "end")
        await settle(pilot)
        await wait_for(pilot, lambda: _journey_at_end(app), what="the journey at its end")
        assert app.focused is app.browser.journey
        await rendered(pilot)
        assert "TIDE_CA_BUNDLE." in app.export_screenshot()  # the chunk's last line is on screen
        await pilot.resize_terminal(size[0] - 10, size[1])  # narrower: the chunk wraps into more lines
        await wait_for(pilot, lambda: _journey_at_end(app), what="the journey at its new end")
        await rendered(pilot)
        assert "TIDE_CA_BUNDLE." in app.export_screenshot()
        before = app.browser.journey.scroll_y
        await press(pilot, "pagedown")
        await rendered(pilot)
        assert app.browser.journey.scroll_y == before  # nothing more below
        await press(pilot, "home")  # scrolling up lets go of the end
        await wait_for(pilot, lambda: app.browser.journey.scroll_y == 0)


def _footer_down(app) -> str | None:
    """The footer's label for ↓ (``None`` when it offers none)."""
    keys = [k for k in app.screen.query("FooterKey") if getattr(k, "key", None) == "down"]
    return keys[0].description if keys else None


async def test_the_footer_names_the_pane_down_goes_to():
    """↓ from the query box goes to the pane shown (narrow) and the footer
    says which: not ``↓ Results`` while Stages or Journey is shown."""
    async with browsing(NARROW, "cache") as (app, pilot):
        browser = app.browser
        await wait_for(pilot, lambda: _footer_down(app) == "Results")
        for key, pane, label in (("s", "stages", "Stages"), ("j", "journey", "Journey"), ("r", "results", "Results")):
            await press(pilot, "down", key)
            await wait_for(pilot, lambda pane=pane: browser.pane == pane)
            await press(pilot, "ctrl+l")
            await wait_for(pilot, lambda: app.focused is browser.query_box.input)
            await wait_for(pilot, lambda label=label: _footer_down(app) == label, what=f"↓ {label} in the footer")
            assert app.screen.active_bindings["down"].binding.description == label
            await press(pilot, "down")
            await wait_for(pilot, lambda pane=pane: app.focused is browser.pane_widget(pane))
            await press(pilot, "ctrl+l")
        await pilot.resize_terminal(120, 40)  # wide: every pane shows; ↓ goes to the results
        await press(pilot, "down", "s", "ctrl+l")
        await wait_for(pilot, lambda: _footer_down(app) == "Results")
