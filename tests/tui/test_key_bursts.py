"""Keys that arrive in one burst (a paste, a fast typist, tmux send-keys)
land where the keys before them moved the focus: Tab, shift+Tab, ctrl+l and
Down from the query change focus at once, not after the keys behind them
have already been delivered to the widget that had focus."""

from __future__ import annotations

from textual import events

from .conftest import build_app, search_for, settle

WIDE = (120, 40)
NARROW = (80, 24)


async def burst(pilot, *keys: str) -> None:
    """Send ``keys`` to the app back to back, as a terminal does, then wait."""
    app = pilot.app
    for key in keys:
        event = events.Key(key, key if len(key) == 1 else None)
        event.set_sender(app)
        app._driver.send_message(event)
    await pilot.pause()
    await pilot.pause()


async def test_tab_then_keys_go_to_the_newly_focused_widget():
    app = build_app()
    async with app.run_test(size=NARROW) as pilot:
        await search_for(pilot, "cache")
        browser = app.browser
        await burst(pilot, "tab", "2")  # Tab to the results, then pane key 2
        assert browser.query_box.value == "cache"
        assert browser.pane == "stages" and app.focused is browser.inspector
        await burst(pilot, "shift+tab", "x", "y")  # back to the query, then typing
        await settle(pilot)
        assert app.focused is browser.query_box.input
        assert "xy" in browser.query_box.value


async def test_ctrl_l_then_typing_replaces_the_query():
    app = build_app()
    async with app.run_test(size=WIDE) as pilot:
        await search_for(pilot, "cache")
        browser = app.browser
        await pilot.press("down", "2")
        await pilot.pause()
        assert app.focused is browser.inspector
        await burst(pilot, "ctrl+l", "h", "e", "a", "r", "t", "b", "e", "a", "t", "enter")
        await settle(pilot)
        assert app.focused is browser.query_box.input
        assert browser.query_box.value == "heartbeat"
        assert browser.trace.params.query == "heartbeat"


async def test_down_from_the_query_then_a_pane_key():
    app = build_app()
    async with app.run_test(size=NARROW) as pilot:
        await search_for(pilot, "cache")
        browser = app.browser
        await burst(pilot, "down", "3")
        assert browser.query_box.value == "cache"
        assert browser.pane == "journey" and app.focused is browser.journey
