"""SVG snapshots of the browser at 80x24 and 120x40.

Regenerate after an intended change with
``pytest tests/tui/test_snapshots.py --snapshot-update`` and commit
``tests/tui/__snapshots__``. Timings are hidden (``show_timings=False``) and
the cursor does not blink, so the pictures are deterministic.
"""

from __future__ import annotations

import pytest

from engine import SearchParams

from .conftest import build_app, press, processed, rendered, search_for, wait_for

SIZES = pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])


def run(query: str, *, pane: str | None = None, stage: str | None = None, row_of: str | None = None):
    """A ``run_before`` that searches ``query``, then optionally shows a pane,
    scrolls the inspector to ``stage`` and highlights its first row whose
    text contains ``row_of``."""

    async def run_before(pilot) -> None:
        await search_for(pilot, query)
        browser = pilot.app.browser
        if pane:
            await press(pilot, "down", {"results": "r", "stages": "s", "journey": "j"}[pane])
            await wait_for(pilot, lambda: browser.pane == pane)
            await processed(pilot)
        if stage:
            assert browser.inspector.show_stage(stage), stage
            await processed(pilot)
        if row_of:
            ins = browser.inspector
            index = next(
                i
                for i in range(ins.option_count)
                if ins.stage_of(i) == stage and row_of in str(ins.get_option_at_index(i).prompt)
            )
            ins.highlighted = index
        await rendered(pilot)

    return run_before


@SIZES
def test_start_screen(snap_compare, size):
    assert snap_compare(build_app(), terminal_size=size)


@SIZES
def test_normal_query(snap_compare, size):
    assert snap_compare(build_app(), terminal_size=size, run_before=run("cache"))


@SIZES
def test_fuzzy_query(snap_compare, size):
    assert snap_compare(build_app(), terminal_size=size, run_before=run("artifcats", pane="stages", stage="fuzzy"))


@SIZES
def test_session_filtered_query(snap_compare, size):
    app = build_app(params=SearchParams("", sessions=("sess-A",)))
    assert snap_compare(
        app, terminal_size=size, run_before=run("cache", pane="stages", stage="filter", row_of="removed")
    )


@SIZES
def test_empty_result_explanation(snap_compare, size):
    assert snap_compare(build_app(), terminal_size=size, run_before=run("deployment"))
