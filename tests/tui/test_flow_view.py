"""The rank flow (F5, palette "Rank flow"), the results' movement column and
the pinned chunk's line (issue 9 items 1-4 in the browser). Pilot, waiting on
conditions."""

from __future__ import annotations

import shutil

from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey

from engine import SearchParams, Store
from tui.browser.screens.flow import HINTS, FlowScreen

from .conftest import (
    browsing,
    screen_lines,
    build_app,
    notifications,
    plain,
    press,
    processed,
    rendered,
    run_command,
    search_for,
    settle,
    wait_for,
    wait_screen,
)

NARROW, WIDE = (80, 24), (120, 40)


def cells(screen: FlowScreen, table: int = 0) -> list[list[str]]:
    """Every row of a flow table as plain cell texts."""
    t = screen.query_one(f"#flow-table-{table}", DataTable)
    return [[str(getattr(c, "plain", c)) for c in t.get_row_at(i)] for i in range(t.row_count)]


def headers(screen: FlowScreen, table: int = 0) -> list[str]:
    t = screen.query_one(f"#flow-table-{table}", DataTable)
    return [str(getattr(c.label, "plain", c.label)) for c in t.columns.values()]


async def open_flow(pilot, query: str) -> FlowScreen:
    await search_for(pilot, query)
    await press(pilot, "f5")
    screen = await wait_screen(pilot, FlowScreen, focused=False)
    await rendered(pilot)
    return screen


def column(screen: FlowScreen, name: str, table: int = 0) -> list[str]:
    i = headers(screen, table).index(name)
    return [row[i] for row in cells(screen, table)]


async def test_a_collision_shows_merged_in_the_fused_column():
    async with browsing(WIDE, params=SearchParams("", limit=5)) as (app, pilot):
        screen = await open_flow(pilot, "example")
        assert headers(screen) == [
            "row",
            "title",
            "Porter",
            "Trigram",
            "Fused",
            "Pool",
            "Filter",
            "Trim",
            "Rerank",
            "Final",
        ]
        rows = cells(screen)
        merged = [r for r in rows if r[4].startswith("merged→")]
        assert {r[0] for r in merged} >= {"46"} and all(r[4] == "merged→48" for r in merged if r[0] == "46")
        assert column(screen, "Final")[:5] == ["#1 =", "#2 =", "#3 =", "#4 =", "#5 ="]
        assert "beyond pool" in column(screen, "Pool")
        await press(pilot, "escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, FlowScreen), what="the flow to close")


async def test_a_session_removal_a_trim_cut_and_a_rerank_move():
    async with browsing(WIDE, params=SearchParams("", limit=3, sessions=("sess-A",))) as (app, pilot):
        screen = await open_flow(pilot, "cache hook")
        assert any(c.startswith("session sess-") for c in column(screen, "Filter"))
        assert column(screen, "Trim").count("cut @3") >= 3
        rerank = column(screen, "Rerank")
        assert rerank[0] == "#1 ↑1" and rerank[2] == "#3 ↓2"
        # the row under the cursor shows its fate and its text
        detail = plain(screen.query_one("#flow-detail"))
        assert "row 5" in detail and "#1 in the answer" in detail
        await press(pilot, "down", "down", "down")
        await wait_for(pilot, lambda: "left at Trim: cut by the trim" in plain(screen.query_one("#flow-detail")))
        await press(pilot, "f5")  # F5 closes it again
        await wait_for(pilot, lambda: not isinstance(app.screen, FlowScreen), what="the flow to close")


async def test_a_fuzzy_rerun_shows_both_passes_compact_at_80_columns():
    async with browsing(NARROW) as (app, pilot):
        screen = await open_flow(pilot, "cahce")
        titles = [plain(w).strip() for w in screen.query(".flow-title")]
        assert titles == ["fuzzy re-run 'cache' (the answer)", "first pass 'cahce' (not the answer)"]
        assert headers(screen)[2:] == ["~Por", "~Tri", "~Fus", "~Pool", "~Filt", "~Trim", "~Rrk", "~Fin"]
        assert cells(screen)[0][2:] == ["1", "3", "1=", "1=", "1=", "1=", "1=", "1="]
        assert "beyond" in column(screen, "~Pool")
        assert "→57 merged into row 57" in plain(screen.query_one("#flow-legend"))


async def test_on_a_short_screen_the_rows_come_first_and_the_legend_scrolls():
    """At 60x18 the legend under the tables would leave them one row each:
    every row stays in view and the legend ends the scrolling text; at 80x24
    it stands under the tables."""
    async with browsing((60, 18)) as (app, pilot):
        screen = await open_flow(pilot, "write quorum")
        table = screen.query_one("#flow-table-0", DataTable)
        assert table.row_count >= 3
        assert table.max_scroll_y == 0  # the header and every row in view
        assert not screen.query_one("#flow-legend").display
        assert "legend: 4↑3 position and move" in plain(screen.query_one("#flow-text"))
    async with build_app().run_test(size=NARROW) as pilot:
        screen = await open_flow(pilot, "write quorum")
        assert screen.query_one("#flow-legend").display
        assert "legend:" not in plain(screen.query_one("#flow-text"))


async def test_the_palette_opens_the_rank_flow():
    async with browsing(WIDE, "cache") as (app, pilot):
        await run_command(pilot, "Rank flow")
        await wait_screen(pilot, FlowScreen, focused=False)


async def test_results_show_the_movement_and_the_row_id():
    async with browsing(WIDE, "cache") as (app, pilot):
        table = app.browser.results.table
        rows = [[str(getattr(c, "plain", c)) for c in table.get_row_at(i)] for i in range(table.row_count)]
        assert [r[1:3] for r in rows] == [["1→1 =", "17"], ["3→2 ↑1", "92"], ["2→3 ↓1", "91"]]
        assert rows[1][3].endswith("> Cache hooks > …") is False and "Cache hooks" in rows[1][3]


async def test_pin_with_p_then_the_line_follows_as_you_type():
    async with browsing(WIDE, "cache", params=SearchParams("", limit=3)) as (app, pilot):
        browser = app.browser
        await press(pilot, "down")  # into the results: row 1 is selected
        await wait_for(pilot, lambda: browser.selected_chunk() is not None)
        await press(pilot, "p")
        line = browser.query_one("#pinned-line")
        await settle(pilot)
        await wait_for(pilot, lambda: "pinned row 17" in plain(line) and "#1 in the answer" in plain(line))
        # a new query: the line says where row 17 went, and what would bring it back
        await search_for(pilot, "cache hook")
        await settle(pilot)
        await wait_for(
            pilot,
            lambda: "would return it at #" in plain(line) or "no single change" in plain(line),
            what="the counterfactual",
        )
        assert "pinned row 17" in plain(line) and "left at" in plain(line)
        # p on the pinned chunk unpins it
        browser.pin(None)
        await processed(pilot)
        assert not line.display


async def test_pin_a_cut_chunk_shows_the_limit_that_returns_it():
    async with browsing(WIDE, "cache hook", params=SearchParams("", limit=3, sessions=("sess-A",))) as (app, pilot):
        browser = app.browser
        browser.pin(73)  # filtered #4, cut at limit 3
        await settle(pilot)
        line = browser.query_one("#pinned-line")
        await wait_for(pilot, lambda: "limit 4 would return it at #" in plain(line), what="the counterfactual")
        assert "left at Trim: cut by the trim (#4 > limit 3)" in plain(line)
        # the flow marks the pinned row
        await press(pilot, "f5")
        screen = await wait_screen(pilot, FlowScreen, focused=False)
        assert any(r[0] == "▸73" for r in cells(screen))


async def test_pin_a_chunk_no_retriever_returned():
    async with browsing(WIDE, "deploy runner") as (app, pilot):
        browser = app.browser
        browser.pin(17)  # "cache > dir": no query term in it
        await settle(pilot)
        line = browser.query_one("#pinned-line")
        await wait_for(pilot, lambda: "no query term is indexed in it" in plain(line), what="the outcome")
        assert "left at Retrieve" in plain(line)
        await press(pilot, "f5")
        screen = await wait_screen(pilot, FlowScreen, focused=False)
        last = cells(screen)[-1]
        assert last[0] == "▸17" and last[2] == "not retrieved"


async def test_stems_beside_the_sanitised_query():
    async with browsing(WIDE, "caching hooks") as (app, pilot):
        sanitised = plain(app.browser.query_one("#sanitised"))
        assert "caching → cach" in sanitised and "hooks → hook" in sanitised


# ── the layout at 80x24 and 120x40, pinning from the flow ────────────────
#
# The scenes of the newcomer trial, on the sample corpus the trial browsed.


def sample_app(sample_db, **kwargs):
    return build_app(store=Store.open_readonly(sample_db), store_label="sample", **kwargs)


def visible(app, text: str) -> bool:
    """Whether ``text`` is drawn on one row of the screen as the terminal gets it."""
    return any(text in line for line in screen_lines(app))


def title_cell(screen: FlowScreen, rowid: int, table: int = 0) -> str:
    n = next(i for i, row in enumerate(screen.flows[table].rows) if row.rowid == rowid)
    return cells(screen, table)[n][1]


def fills_the_width(screen: FlowScreen, table: int = 0) -> bool:
    """The table is exactly as wide as the room it has: no empty columns at
    its right, and nothing to scroll sideways to."""
    t = screen.query_one(f"#flow-table-{table}", DataTable)
    return t.virtual_size.width == t.scrollable_content_region.width


async def test_at_80x24_the_fate_line_and_the_key_hints_stay_in_view(sample_db):
    """Trial: at 80x24 "retention" then F5 showed only "row 33 retention ·
    config/broker.json" of the selected row; its fate, text and the key
    hints were cut off."""
    async with browsing(NARROW, app=sample_app(sample_db)) as (app, pilot):
        screen = await open_flow(pilot, "retention")
        assert screen.compact
        for text in (
            "row 33 retention · config/broker.json",
            "#1 in the answer",
            "Porter #1 → Trigram #1",  # the path: the first line of the scrolling text
            HINTS,  # the whole key line
        ):
            assert visible(app, text), text
        table = screen.query_one("#flow-table-0", DataTable)
        assert table.size.height < table.row_count + 1  # the table scrolls its rows to make room
        await press(pilot, "down", "down", "down")
        await rendered(pilot)
        assert visible(app, "row 153 Backup and restore > Snapshots")
        assert visible(app, "left at Candidate pool: beyond the pool (fused #4, pool 3)")
        assert visible(app, "Esc/F5 close")
        # the last row scrolls into view, its fate still shown
        last = screen.flows[0].rows[-1]
        table.move_cursor(row=table.row_count - 1)
        await rendered(pilot)
        assert visible(app, f"row {last.rowid} ") and visible(app, "left at Fusion (RRF): ")
        assert any(line.lstrip("█ ").startswith(f"{last.rowid}  ") for line in screen_lines(app))
        assert visible(app, "Esc/F5 close")


async def test_at_80x24_both_passes_and_the_fate_fit():
    async with browsing(NARROW) as (app, pilot):
        screen = await open_flow(pilot, "cahce")
        assert len(screen.flows) == 2
        for text in (
            "fuzzy re-run 'cache' (the answer)",
            "first pass 'cahce' (not the answer)",
            "(no candidate)",  # the first pass's only row, in the width its title column has
            "row 17 cache > dir",
            "#1 in the answer (after typo correction)",
            "Esc/F5 close",
        ):
            assert visible(app, text), text
        assert fills_the_width(screen, 0)


async def test_the_title_column_takes_the_width_the_other_columns_leave(sample_db):
    """Trial: at 120x40 rows 56, 60, 57 and 61 all read "ferryctl comm … >
    Example" with about 12 empty columns on the right."""
    async with browsing(WIDE, app=sample_app(sample_db)) as (app, pilot):
        screen = await open_flow(pilot, "example")
        assert not screen.compact and fills_the_width(screen)
        titles = {rowid: title_cell(screen, rowid) for rowid in (56, 60, 57, 61)}
        assert all(t.endswith(" > Example") for t in titles.values()), titles  # the middle cut
        assert titles[60] == titles[61] and titles[56] == titles[57]  # merged rows: the same title
        assert "consume" in titles[60] and "publish" in titles[56], titles
    async with browsing(NARROW, app=sample_app(sample_db)) as (app, pilot):
        screen = await open_flow(pilot, "retention")
        assert screen.compact and fills_the_width(screen)
        assert title_cell(screen, 68).endswith(" > retention")
        width = screen.query_one("#flow-table-0", DataTable).columns[ColumnKey("title")].width
        assert width > 16  # the compact title was a fixed 16 cells


async def test_p_pins_the_highlighted_row_in_the_browser_and_marks_it_at_once():
    async with browsing(NARROW, params=SearchParams("", limit=5)) as (app, pilot):
        screen = await open_flow(pilot, "example")
        browser = app.browser
        await press(pilot, "down")
        row = screen.highlighted()
        assert row is not None and row.rowid == screen.flows[0].rows[1].rowid
        await press(pilot, "p")
        # marked by the key's own handling, before the browser has done anything
        assert cells(screen)[1][0] == f"▸{row.rowid}"
        detail = plain(screen.query_one("#flow-detail"))
        assert f"▸ row {row.rowid} " in detail and "· pinned" in detail
        await processed(pilot)
        assert browser.pinned_rowid == row.rowid
        # another row: the mark moves
        await press(pilot, "down", "p")
        other = screen.flows[0].rows[2].rowid
        assert cells(screen)[1][0] == str(row.rowid) and cells(screen)[2][0] == f"▸{other}"
        await processed(pilot)
        assert browser.pinned_rowid == other
        # p on the pinned row unpins it
        await press(pilot, "p")
        assert not any(c[0].startswith("▸") for c in cells(screen))
        assert "pinned" not in plain(screen.query_one("#flow-detail"))
        await processed(pilot)
        assert browser.pinned_rowid is None
        # pin again and close: the browser's pinned line follows it
        await press(pilot, "p", "escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, FlowScreen), what="the flow to close")
        await settle(pilot)
        await wait_for(pilot, lambda: f"pinned row {other}" in plain(browser.query_one("#pinned-line")))


async def test_grade_keys_grade_the_highlighted_row_through_the_browser(sample_db, tmp_path):
    """0-3 and x in the flow: the browser grades the chunk with its own grade
    code (judgments saved, badges refreshed, its journey follows it), and the
    flow shows the badge and the grade line."""
    db = tmp_path / "sample.db"
    shutil.copy(sample_db, db)
    async with browsing(NARROW, app=sample_app(db)) as (app, pilot):
        screen = await open_flow(pilot, "retention")
        browser = app.browser
        await press(pilot, "down")
        row = screen.highlighted()
        assert row is not None and row.rowid == 68
        await press(pilot, "3")
        await wait_for(pilot, lambda: screen.grades.get(68) == 3, what="the flow to hear the grade")
        assert title_cell(screen, 68).startswith("★3 ") and title_cell(screen, 33).startswith("   ")
        assert title_cell(screen, 68).endswith(" > retention")
        await rendered(pilot)
        assert visible(app, "graded 3 highly relevant for this query")
        assert visible(app, "Esc/F5 close")  # the grade line took its row from the table
        await settle(pilot)
        assert browser.judged is not None and browser.judged.grades == {68: 3}
        assert browser.selected_chunk() is not None and browser.selected_chunk().rowid == 68
        assert browser.state.judgments.for_query("retention")  # saved
        # x removes it; the badges go
        await press(pilot, "x")
        await wait_for(pilot, lambda: 68 not in screen.grades, what="the grade to go")
        assert not title_cell(screen, 68).startswith(("★", " "))  # no grade left: no badge column
        await settle(pilot)
        assert browser.judged.grades == {}
        # a row merged into another key is graded as its own chunk
        await press(pilot, "escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, FlowScreen), what="the flow to close")
        screen = await open_flow(pilot, "example")
        merged = next(n for n, r in enumerate(screen.flows[0].rows) if r.rowid == 61)
        screen.query_one("#flow-table-0", DataTable).move_cursor(row=merged)
        await press(pilot, "1")
        await wait_for(pilot, lambda: screen.grades.get(61) == 1, what="row 61's grade")
        assert 60 not in screen.grades


async def test_grading_a_chunk_no_retriever_returned_says_why_not():
    async with browsing(WIDE, "deploy runner") as (app, pilot):
        app.browser.pin(17)  # "cache > dir": no query term in it; the flow shows it as a last row
        await settle(pilot)
        await press(pilot, "f5")
        screen = await wait_screen(pilot, FlowScreen, focused=False)
        table = screen.query_one("#flow-table-0", DataTable)
        table.move_cursor(row=table.row_count - 1)
        await processed(pilot)
        await press(pilot, "2")
        await processed(pilot)
        assert any("no retriever returned row 17" in str(n.message) for n in notifications(app))
        assert screen.grades == {}
        assert app.browser.judged is None or not app.browser.judged.grades


async def test_a_resize_lays_the_flow_out_again(sample_db):
    async with browsing(WIDE, app=sample_app(sample_db)) as (app, pilot):
        screen = await open_flow(pilot, "retention")
        assert not screen.compact and fills_the_width(screen)
        await press(pilot, "down")
        await pilot.resize_terminal(*NARROW)
        await wait_for(pilot, lambda: screen.compact, what="the compact cells")
        await rendered(pilot)
        assert fills_the_width(screen)
        assert screen.highlighted() is not None and screen.highlighted().rowid == 68  # the cursor row kept
        for text in ("row 68 ", "#2 in the answer", "Esc/F5 close"):
            assert visible(app, text), text


async def test_the_flow_opens_on_the_pinned_row():
    async with browsing(WIDE, "cache hook", params=SearchParams("", limit=3, sessions=("sess-A",))) as (app, pilot):
        browser = app.browser
        browser.pin(73)  # filtered #4, cut at limit 3: not the first row
        await settle(pilot)
        await press(pilot, "f5")
        screen = await wait_screen(pilot, FlowScreen, focused=False)
        table = screen.query_one("#flow-table-0", DataTable)
        await wait_for(pilot, lambda: app.focused is table)
        assert table.cursor_row > 0
        assert cells(screen)[table.cursor_row][0] == "▸73"
        assert "row 73" in plain(screen.query_one("#flow-detail"))
