"""SVG snapshots of the score's anatomy and X versus Y in the journey, at
80x24 and 120x40 (regenerate an intended change with ``pytest
tests/tui/test_explain_snapshots.py --snapshot-update`` and look at the SVG)."""

from __future__ import annotations

import pytest

from .conftest import build_app, press, rendered, search_for, settle, wait_for

SIZES = pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])


def _to(widget_id: str, versus: bool):
    """A ``run_before``: search ``cache``; with ``versus``, mark the top
    result with v and select the second one; then show the journey scrolled
    to ``widget_id``."""

    async def run_before(pilot) -> None:
        await search_for(pilot, "cache")
        app = pilot.app
        browser = app.browser
        await press(pilot, "down")
        await wait_for(pilot, lambda: app.focused is browser.results.table)
        if versus:
            await press(pilot, "v", "down")
            second = browser.trace.final[1].candidate.rowid
            await wait_for(pilot, lambda: browser.journey.subject.rowid == second)
        await settle(pilot)
        await press(pilot, "j")
        await wait_for(pilot, lambda: browser.pane == "journey")
        await settle(pilot)
        journey = browser.journey
        journey.scroll_to_widget(journey.query_one(widget_id), animate=False, top=True)
        app.clear_notifications()  # "Row 17 marked: …" would cover the pane's corner
        await rendered(pilot)

    return run_before


@SIZES
def test_journey_score(snap_compare, size):
    assert snap_compare(build_app(), terminal_size=size, run_before=_to("#journey-score", versus=False))


@SIZES
def test_journey_versus(snap_compare, size):
    assert snap_compare(build_app(), terminal_size=size, run_before=_to("#journey-versus", versus=True))
