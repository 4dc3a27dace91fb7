"""The small things a new user read wrong (issue 9, item 5): the chunk
heading, the header's parts run together, a stray key letter in the
footer, the why-not panel narrower than the finder. Checked on the text
the screen draws, at 80x24 and 120x40 (the footer also at 60x18)."""

from __future__ import annotations

import pytest

from tui.browser.screens.why import WhyScreen

from .conftest import browsing, plain, press, rendered, screen_lines, search_for, settle, wait_screen
from .test_lab_screens import settle_lab

SIZES = [(80, 24), (120, 40)]
IDS = ["80x24", "120x40"]


@pytest.mark.parametrize("size", SIZES, ids=IDS)
async def test_the_header_separates_its_parts(size):
    """``porter "write" OR "quorum" · trigram …`` and ``sessions off · F2/F3
    change``: a visible separator between the parts, not spaces alone
    (``"quorum"trigram``, ``offF2/F3 change``)."""
    async with browsing(size) as (app, pilot):
        await settle(pilot)
        lines = screen_lines(app)
        assert any(line.strip() == "porter — · trigram —" for line in lines)
        await search_for(pilot, "write quorum")
        lines = [line.strip() for line in screen_lines(app)]
        assert 'porter "write" OR "quorum" · trigram "write" OR "quorum"' in lines
        assert "limit 3 · source any · type any · sessions off · F2/F3 change" in lines


@pytest.mark.parametrize("size", SIZES, ids=IDS)
async def test_the_chunk_heading_reads_as_one_phrase(size):
    async with browsing(size, "cache") as (app, pilot):
        heading = plain(app.browser.query_one("#journey-preview")).splitlines()[0]
        # Porter token matches and trigram substring matches are counted apart (issue 9, item 4).
        assert heading.startswith("Chunk · highlighted matches: Porter 1 ")
        assert "  " not in heading


@pytest.mark.parametrize("size", [(60, 18), *SIZES], ids=["60x18", *IDS])
async def test_the_footer_ends_with_the_palette_key(size):
    """The palette key fills the footer's last column: the keys that do not
    fit scroll under it and none shows beside it (a stray ``f`` at 60x18)."""
    async with browsing(size) as (app, pilot):
        for step in ("start", "query", "results"):
            if step == "query":
                await search_for(pilot, "cache")
            elif step == "results":
                await press(pilot, "down")
            await rendered(pilot)
            footer = screen_lines(app)[-1]
            assert footer.rstrip().endswith("▏^p palette"), (step, footer)


@pytest.mark.parametrize("size", SIZES, ids=IDS)
async def test_the_why_panel_is_as_wide_as_the_finder(size):
    async with browsing(size, "cache") as (app, pilot):
        await press(pilot, "f8")
        screen = await wait_screen(pilot, WhyScreen)
        await settle_lab(pilot)
        found, why = screen.query_one("#why-list").region, screen.query_one("#why-box").region
        assert (why.x, why.width) == (found.x, found.width) == (0, size[0])
