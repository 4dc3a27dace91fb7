"""SVG snapshots of the rank flow (F5) and the pinned chunk's line at 80x24
and 120x40 (issue 9). Regenerate after an intended change with
``pytest tests/tui/test_flow_snapshots.py --snapshot-update``."""

from __future__ import annotations

import pytest

from engine import SearchParams
from tui.browser.screens.flow import FlowScreen

from .conftest import build_app, plain, press, rendered, search_for, settle, wait_for, wait_screen

SIZES = pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])


def flow_of(query: str):
    async def run_before(pilot) -> None:
        await search_for(pilot, query)
        await press(pilot, "f5")
        await wait_screen(pilot, FlowScreen, focused=False)
        await rendered(pilot)

    return run_before


def pinned(query: str, rowid: int):
    async def run_before(pilot) -> None:
        await search_for(pilot, query)
        browser = pilot.app.browser
        browser.pin(rowid)
        await settle(pilot)
        line = browser.query_one("#pinned-line")
        await wait_for(pilot, lambda: "would return it" in plain(line), what="the counterfactual")
        await rendered(pilot)

    return run_before


@SIZES
def test_flow_view(snap_compare, size):
    app = build_app(params=SearchParams("", limit=3, sessions=("sess-A",)))
    assert snap_compare(app, terminal_size=size, run_before=flow_of("cache hook"))


@SIZES
def test_pinned_line(snap_compare, size):
    app = build_app(params=SearchParams("", limit=3, sessions=("sess-A",)))
    assert snap_compare(app, terminal_size=size, run_before=pinned("cache hook", 73))
