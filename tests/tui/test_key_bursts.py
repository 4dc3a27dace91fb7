"""Keys that arrive in one burst (a paste, a fast typist, tmux send-keys)
land where the keys before them moved the focus: Tab, shift+Tab, ctrl+l and
Down from the query change focus at once, not after the keys behind them
have already been delivered to the widget that had focus."""

from __future__ import annotations

from .conftest import browsing, press, processed, send_keys, settle, wait_for

WIDE = (120, 40)
NARROW = (80, 24)


async def burst(pilot, *keys: str) -> None:
    """Send ``keys`` to the app back to back, as a terminal does, then wait
    until the app has handled them all."""
    send_keys(pilot, *keys)
    await processed(pilot)


async def test_tab_then_keys_go_to_the_newly_focused_widget():
    async with browsing(NARROW, "cache") as (app, pilot):
        browser = app.browser
        await burst(pilot, "tab", "s")  # Tab to the results, then pane key s
        await wait_for(pilot, lambda: browser.pane == "stages" and app.focused is browser.inspector)
        assert browser.query_box.value == "cache"
        await burst(pilot, "shift+tab", "x", "y")  # back to the query, then typing
        await wait_for(pilot, lambda: "xy" in browser.query_box.value)
        await settle(pilot)
        assert app.focused is browser.query_box.input


async def test_ctrl_l_then_typing_replaces_the_query():
    async with browsing(WIDE, "cache") as (app, pilot):
        browser = app.browser
        await press(pilot, "down", "s")
        await wait_for(pilot, lambda: app.focused is browser.inspector)
        await burst(pilot, "ctrl+l", "h", "e", "a", "r", "t", "b", "e", "a", "t", "enter")
        await settle(pilot)
        assert app.focused is browser.query_box.input
        assert browser.query_box.value == "heartbeat"
        assert browser.trace.params.query == "heartbeat"


async def test_down_from_the_query_then_a_pane_key():
    async with browsing(NARROW, "cache") as (app, pilot):
        browser = app.browser
        await burst(pilot, "down", "j")
        await wait_for(pilot, lambda: browser.pane == "journey" and app.focused is browser.journey)
        assert browser.query_box.value == "cache"
