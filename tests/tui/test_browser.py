"""Pilot tests of the browser on the parity corpus."""

from __future__ import annotations

import asyncio
import json

import pytest
from textual.widgets import DataTable, Input

from engine import SearchParams
from engine.pipeline.trace import Trace
from tui.browser.screens.params import ParamsChange
from tui.browser.screens.browser import BrowserScreen
from tui.browser.screens.help import HelpScreen
from tui.browser.screens.params import ParamsScreen
from tui.browser.screens.sessions import SessionsScreen

from .conftest import (
    browsing,
    screen_lines,
    notifications,
    plain,
    press,
    processed,
    query_input,
    run_command,
    search_for,
    send_keys,
    settle,
    type_text,
    wait_for,
    wait_screen,
    TIMEOUT,
    rendered,
)

WIDE = (120, 40)
NARROW = (80, 24)


def inspector_text(app) -> str:
    """Every line of the stage inspector as plain text."""
    ins = app.browser.inspector
    return "\n".join(str(ins.get_option_at_index(i).prompt) for i in range(ins.option_count))


async def test_start_screen_shows_the_store_and_focuses_the_query():
    async with browsing(NARROW) as (app, pilot):
        await wait_for(pilot, lambda: app.browser is not None and app.focused is not None)
        browser = app.browser
        assert isinstance(app.focused, Input) and app.focused.id == "query"
        # the counts are read in a worker: the note says so until they come
        await wait_for(pilot, lambda: "24 sources, 129 chunks" in plain(browser.results.message))
        assert browser.trace is None


async def test_query_fills_results_and_inspector():
    async with browsing(WIDE, "heartbeat") as (app, pilot):
        browser = app.browser
        trace = browser.trace
        assert trace is not None and trace.params.query == "heartbeat"
        assert trace.layer == "rrf"
        table = browser.query_one("#results-table", DataTable)
        assert table.row_count == 3
        assert browser.results.border_subtitle == "3 results · layer rrf"
        sanitised = plain(browser.query_one("#sanitised"))
        assert '"heartbeat"' in sanitised
        text = inspector_text(app)
        for title in (
            "Porter",
            "Trigram",
            "Fusion (RRF)",
            "Candidate pool",
            "Session filter",
            "Trim",
            "Rerank",
            "Fuzzy",
            "Final",
        ):
            assert f"▌{title}" in text
        assert "skipped: fusion returned 3 results after the session filter" in text
        # the journey follows the top result
        assert browser.journey.subject is not None
        assert browser.journey.subject.key == trace.final[0].candidate.key


async def test_search_as_you_type_is_debounced():
    async with browsing(WIDE) as (app, pilot):
        browser = await wait_screen(pilot, BrowserScreen)
        for key in "cache":  # typed at 20 keys a second, faster than the debounce
            send_keys(pilot, key)
            await asyncio.sleep(0.05)
        await wait_for(pilot, lambda: browser.trace is not None and browser.trace.params.query == "cache")
        await settle(pilot)
        assert browser._seq < 5  # fewer searches than keystrokes


async def test_typo_query_shows_the_corrections():
    async with browsing(WIDE, "artifcats") as (app, pilot):
        trace = app.browser.trace
        assert trace.layer == "rrf-fuzzy"
        text = inspector_text(app)
        assert "artifcats → artifacts" in text
        assert "↳ re-run · Porter" in text
        assert "fuzzy artifacts" in plain(app.browser.query_one("#sanitised"))
        assert all(row == "rrf-fuzzy" for row in app.browser.query_one("#results-table", DataTable).get_column("layer"))


async def test_repeated_headings_flag_the_collision():
    async with browsing(WIDE, "example", params=SearchParams("", limit=5)) as (app, pilot):
        text = inspector_text(app)
        assert "⚠ key collision: swallowed rows 46, 51 (same source::title)" in text
        # the swallowed row's journey says where it went
        browser = app.browser
        swallowed = [s for _, s in browser.inspector.subjects() if s.by_row and s.rowid == 46]
        assert swallowed
        browser.pick(swallowed[0])
        await wait_for(pilot, lambda: browser.journey.subject is swallowed[0])
        await processed(pilot)
        journey = plain(browser.query_one("#journey-steps"))
        assert "merged into row" in journey
        assert "left the pipeline at Fusion" in journey


async def test_limit_change_reaches_pool_and_trim():
    async with browsing(WIDE, "cache") as (app, pilot):
        assert app.browser.trace.params.limit == 3
        await press(pilot, "f2")
        dialog = await wait_screen(pilot, ParamsScreen)
        assert app.focused is dialog.query_one("#limit", Input)
        await type_text(pilot, "7")  # the limit is selected on focus: typing replaces it
        await settle(pilot)
        await press(pilot, "escape")
        await wait_for(pilot, lambda: app.screen is app.browser)
        await settle(pilot)
        trace = app.browser.trace
        assert trace.params.limit == 7
        assert trace.pool_size == 7 and trace.fts_limit == 14
        assert trace.first.trim.limit == 7 and len(trace.final) == 7
        assert "limit 7" in plain(app.browser.params_bar)
        # Escape returns to the query box
        assert app.focused is app.browser.query_box.input


async def test_invalid_limit_is_refused_in_the_dialog():
    async with browsing(WIDE, "cache") as (app, pilot):
        await press(pilot, "f2")
        dialog = await wait_screen(pilot, ParamsScreen)
        dialog.query_one("#limit", Input).value = "99999"
        await wait_for(pilot, lambda: "Limit must be" in plain(dialog.query_one("#params-error")))
        await settle(pilot)
        assert app.browser.params.limit == 3


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
async def test_escape_after_an_invalid_limit_restores_the_applied_limit(size):
    """12 → Backspace → 1 → 1000000 (refused; 1, 10 ... 10000 applied on the
    way) → Escape: the search is back at 12, the limit it had when the
    dialog opened, not a half-typed one. A valid limit typed before Escape stays (changes apply
    at once)."""
    async with browsing(size, "cache") as (app, pilot):
        await press(pilot, "f2")
        dialog = await wait_screen(pilot, ParamsScreen)
        await type_text(pilot, "12")
        await settle(pilot)
        await press(pilot, "escape")
        await wait_for(pilot, lambda: app.screen is app.browser)
        await settle(pilot)
        assert app.browser.trace.params.limit == 12
        await press(pilot, "f2")
        dialog = await wait_screen(pilot, ParamsScreen)
        limit = dialog.query_one("#limit", Input)
        await press(pilot, "end", "backspace")
        await wait_for(pilot, lambda: app.browser.params.limit == 1)  # the half-typed value was applied
        await settle(pilot)
        await type_text(pilot, "000000")
        await wait_for(pilot, lambda: "Limit must be" in plain(dialog.query_one("#params-error")))
        assert limit.value == "1000000" and app.browser.params.limit == 10_000  # the last valid number on the way
        await press(pilot, "escape")
        await wait_for(pilot, lambda: app.screen is app.browser)
        await settle(pilot)
        assert app.browser.params.limit == 12 and app.browser.trace.params.limit == 12
        assert "limit 12" in plain(app.browser.params_bar)
        await press(pilot, "f2")
        dialog = await wait_screen(pilot, ParamsScreen)
        assert dialog.query_one("#limit", Input).value == "12"


async def test_session_filter_removes_candidates():
    async with browsing(WIDE, "cache") as (app, pilot):
        await press(pilot, "f3")
        await wait_screen(pilot, SessionsScreen)
        # the first session in the list is the one with most chunks: sess-A
        await press(pilot, "space")
        await settle(pilot)
        await press(pilot, "escape")
        await wait_for(pilot, lambda: app.screen is app.browser)
        await settle(pilot)
        trace = app.browser.trace
        assert trace.params.sessions == ("sess-A",)
        assert trace.pool_size == 40
        assert trace.first.filter.removed
        text = inspector_text(app)
        assert "removed (session sess-" in text
        assert "allow sess-A:" in text
        assert "sessions sess-A" in plain(app.browser.params_bar)


async def test_content_type_from_the_command_palette_filters_the_retrievers():
    async with browsing(WIDE, "cache") as (app, pilot):
        await run_command(pilot, "code only")
        await settle(pilot)
        trace = app.browser.trace
        assert trace.params.content_type == "code"
        assert trace.first.porter.hits and all(h.content_type == "code" for h in trace.first.porter.hits)
        assert all(h.content_type == "code" for h in trace.first.trigram.hits)


async def test_palette_limit_command():
    async with browsing(WIDE, "cache") as (app, pilot):
        await run_command(pilot, "limit 2")
        await settle(pilot)
        assert app.browser.trace.params.limit == 2
        assert len(app.browser.trace.final) == 2


async def test_selecting_a_cut_candidate_shows_its_journey():
    async with browsing(WIDE, "cache") as (app, pilot):
        browser = app.browser
        trace = browser.trace
        cut = trace.first.trim.cut
        assert not cut  # no session filter: the pool is the limit
        await search_for(pilot, "cache")
        browser.update_params(ParamsChange(sessions=("sess-A", "sess-B", "sess-C")))
        await settle(pilot)
        trace = browser.trace
        assert trace.first.trim.cut
        target = trace.first.trim.cut[0]
        await press(pilot, "down", "s")
        await wait_for(pilot, lambda: app.focused is browser.inspector)
        index = next(i for i, s in browser.inspector.subjects() if s.origin == "Trim" and s.key == target.key)
        browser.inspector.highlighted = index
        await wait_for(pilot, lambda: browser.journey.subject.key == target.key)
        await processed(pilot)
        steps = plain(browser.query_one("#journey-steps"))
        assert "cut by the trim" in steps
        assert "left the pipeline at Trim" in steps


async def test_selecting_a_result_row_shows_its_journey_and_preview():
    async with browsing(NARROW, "cache") as (app, pilot):
        browser = app.browser
        await press(pilot, "down")  # query box → results table
        await wait_for(pilot, lambda: app.focused is browser.results.table)
        await press(pilot, "down")
        second = browser.trace.final[1].candidate
        await wait_for(pilot, lambda: browser.journey.subject.key == second.key)
        await press(pilot, "enter")  # narrow: Enter opens the journey pane
        await wait_for(pilot, lambda: browser.pane == "journey" and browser.journey.display)
        await wait_for(pilot, lambda: not browser.results.display or not browser.results.region.height)
        assert "highlighted match" in plain(browser.query_one("#journey-preview"))


async def test_empty_result_says_why():
    async with browsing(WIDE, "deployment") as (app, pilot):
        trace = app.browser.trace
        assert trace.layer == "none" and not trace.final
        message = plain(app.browser.results.message)
        assert "No results." in message
        assert "No match in either index" in message
        assert not app.browser.results.table.display


@pytest.mark.parametrize("size", [NARROW, WIDE], ids=["80x24", "120x40"])
async def test_an_emptied_query_box_shows_the_welcome_text_again(size):
    async with browsing(size, "cache") as (app, pilot):
        browser = app.browser
        if browser.narrow:
            await press(pilot, "down", "s")  # the stages shown: the welcome text brings the results back
            await wait_for(pilot, lambda: browser.pane == "stages")
        shown = browser.trace
        # clearing the box as you type (no Enter) is enough
        await press(pilot, "ctrl+l", "backspace")
        await wait_for(pilot, lambda: browser.trace is None, what="the search to be dropped")
        await settle(pilot)
        assert str(browser.results.message.render()) == browser.welcome_text().plain
        assert browser.results.message.display and not browser.results.table.display
        assert browser.pane == "results" and browser.results.border_subtitle == ""
        assert plain(browser.query_one("#sanitised")).strip() == "porter — · trigram —"
        assert browser.inspector.trace is None and browser.journey.subject is None
        # the search that was still on its way when the box was cleared is dropped
        browser.post_message(BrowserScreen.Searched(browser._seq - 1, shown))
        await processed(pilot)
        assert browser.trace is None
        # Enter on the empty box (or on spaces) does not search either
        await search_for(pilot, "   ")
        assert browser.trace is None and "Type a query" in plain(browser.results.message)
        # and the next query searches as before
        await search_for(pilot, "cache")
        assert browser.trace.params.query == "cache" and browser.results.table.display


async def test_the_welcome_text_names_the_keys_of_the_action_table(monkeypatch):
    """The pane, grade and pin keys of the start text come from tui.browser.actions
    (once "Stages (2) … Journey (3)", when 2 and 3 had become grades)."""
    import dataclasses

    from tui.browser import actions

    async with browsing(NARROW) as (app, pilot):
        await wait_for(pilot, lambda: app.browser is not None and app.browser.is_mounted)
        text = " ".join(plain(app.browser.results.message).split())
        assert "Type a query · F5 shows its rank flow · F1 the keys" in text
        assert "↓ results · s stages · j journey · 0-3 grade · p pin" in text
        assert "(2)" not in text and "(3)" not in text
        for row in ("help", "command-palette", "lab-compare", "lab-why", "lab-doctor", "rank-flow"):
            assert f"{actions.key_shown(row)} " in text
        # generated: another key in the table is another key in the text
        row = actions.ACTION_BY_ID["pane.stages"]
        moved = dataclasses.replace(row, keys=(dataclasses.replace(row.keys[0], shown="S"),))
        monkeypatch.setitem(actions.ACTION_BY_ID, "pane.stages", moved)
        assert "· S stages ·" in app.browser.welcome_text().plain


def _note_rows(app) -> list[str]:
    """The rows of the box around the results note (the widget that scrolls
    it) as the screen shows them, the note's padding and the scroll bar left out."""
    region = app.browser.results.message.parent.scrollable_content_region
    lines = screen_lines(app)[region.y : region.y + region.height]
    return [line[region.x : region.x + region.width].strip() for line in lines]


async def test_the_whole_welcome_text_can_be_read_with_the_keyboard_at_60x14():
    """At 60x14 the welcome text is taller than the results pane (at 60x18 it
    fits): ↓ from the query box focuses it, ↓ scrolls it line by line to its
    last line, Home goes back to the first; every word is shown once, in order."""
    async with browsing((60, 14)) as (app, pilot):
        await wait_for(pilot, lambda: query_input(app) is not None and app.focused is query_input(app))
        browser = app.browser
        box = browser.results.message.parent
        await rendered(pilot)
        assert box.virtual_size.height > box.scrollable_content_region.height > 0, "the text fits: nothing to test"
        await press(pilot, "down")
        await wait_for(pilot, lambda: app.focused is browser.results.message, what="the welcome text focused")
        shown = []  # the text's line k is the first row shown at scroll offset k
        for offset in range(box.max_scroll_y + 1):
            if offset:
                await press(pilot, "down")
                await wait_for(pilot, lambda k=offset: box.scroll_y == k, what=f"the welcome text scrolled to {offset}")
            await rendered(pilot)
            rows = _note_rows(app)
            shown += rows if offset == box.max_scroll_y else rows[:1]
        assert " ".join(shown).split() == browser.welcome_text().plain.split()
        assert app.focused is browser.results.message and browser.query_box.value == ""
        await press(pilot, "home")
        await wait_for(pilot, lambda: box.scroll_y == 0, what="the welcome text back at its top")
        await rendered(pilot)
        assert _note_rows(app)[0] == "rankscope · stages corpus"


async def test_down_then_a_digit_before_the_first_search_leaves_the_query_alone():
    """60x18, fresh start: ↓ leaves the query box for the welcome text, so a
    digit typed next is a grade key (nothing to grade yet), not a search."""
    async with browsing((60, 18)) as (app, pilot):
        await wait_for(pilot, lambda: query_input(app) is not None and app.focused is query_input(app))
        browser = app.browser
        await press(pilot, "down")
        await wait_for(pilot, lambda: app.focused is browser.results.message, what="the welcome text focused")
        await press(pilot, "2")
        await wait_for(
            pilot,
            lambda: any("Search, then select a chunk" in n.message for n in notifications(app)),
            what="the nothing-to-grade notice",
        )
        await settle(pilot)
        assert browser.query_box.value == "" and browser.trace is None and browser._seq == 0
        # on a wide screen too
        await pilot.resize_terminal(120, 40)
        await press(pilot, "ctrl+l", "down")
        await wait_for(pilot, lambda: app.focused is browser.results.message, what="the welcome text focused")
        # results replace the focused text: the focus goes to the table (and back when none are left)
        browser.open_search(SearchParams("cache"))
        await settle(pilot)
        assert app.focused is browser.results.table
        browser.open_search(SearchParams("deployment"))  # no results
        await settle(pilot)
        assert app.focused is browser.results.message and not browser.results.table.display


async def test_everything_filtered_by_session_says_so():
    async with browsing(WIDE, "rescheduled", params=SearchParams("", sessions=("sess-A",))) as (app, pilot):
        trace = app.browser.trace
        message = plain(app.browser.results.message)
        assert trace.layer == "none"
        assert "removed by the session filter" in message
        assert "F3" in message


async def test_search_error_becomes_a_notification_and_the_app_stays_usable():
    from engine import search

    on_fire = [True]

    def broken(store, params, conn=None):
        if on_fire[0]:
            raise RuntimeError("disk on fire")
        return search(store, params, conn=conn)

    async with browsing(WIDE, search_fn=broken) as (app, pilot):
        await wait_screen(pilot, BrowserScreen)
        await type_text(pilot, "cache")
        await press(pilot, "enter")
        await wait_for(
            pilot, lambda: any("disk on fire" in n.message and n.severity == "error" for n in notifications(app))
        )
        assert app.is_running
        on_fire[0] = False
        await search_for(pilot, "heartbeat")
        assert app.browser.trace.params.query == "heartbeat"


async def test_stale_results_are_dropped():
    async with browsing(WIDE, "cache") as (app, pilot):
        browser = app.browser
        shown = browser.trace
        old = Trace(**{**shown.__dict__, "params": SearchParams("stale")})
        browser.post_message(BrowserScreen.Searched(0, old))
        await processed(pilot)
        assert browser.trace is shown


async def test_ctrl_l_and_slash_focus_the_query_with_text_selected():
    async with browsing(WIDE, "cache") as (app, pilot):
        await press(pilot, "s")  # in the query box a letter is text
        assert app.browser.query_box.value == "caches"
        await press(pilot, "backspace", "down", "s")
        await wait_for(pilot, lambda: app.focused is app.browser.inspector)
        await press(pilot, "slash")
        query = app.browser.query_box.input
        await wait_for(pilot, lambda: app.focused is query)
        assert query.selected_text == "cache"
        await press(pilot, "slash")  # inside the query box '/' is text
        assert query.value == "/"
        await press(pilot, "ctrl+l")
        await type_text(pilot, "heartbeat")
        await press(pilot, "enter")
        await settle(pilot)
        assert app.browser.trace.params.query == "heartbeat"


async def test_escape_from_help_returns_to_the_query():
    async with browsing(NARROW) as (app, pilot):
        await press(pilot, "f1")
        await wait_screen(pilot, HelpScreen)
        await press(pilot, "escape")
        await wait_for(pilot, lambda: app.focused is app.browser.query_box.input)


async def test_ctrl_l_closes_a_dialog():
    async with browsing(NARROW) as (app, pilot):
        await press(pilot, "f3")
        await wait_screen(pilot, SessionsScreen)
        await press(pilot, "ctrl+l")
        await wait_for(pilot, lambda: app.screen is app.browser and app.focused is app.browser.query_box.input)


async def test_copy_command_line():
    async with browsing(WIDE, "it's cache", params=SearchParams("", limit=5, sessions=("sess-A",))) as (app, pilot):
        await press(pilot, "f4")
        expected = "rankscope search 'it'\"'\"'s cache' --db '<store.db>' --limit 5 --session sess-A"
        await wait_for(pilot, lambda: app.clipboard == expected)
        await wait_for(pilot, lambda: any(n.message == expected for n in notifications(app)))


async def test_notifications_stay_up_by_severity(monkeypatch):
    """At 80x24 a toast covers the journey pane and dialogs: "Copied command
    line" stayed 8 s, the skipped-files warning 12 s. Information now goes
    after 5 s, warnings after 8, errors after 12 (the app's one table)."""
    from textual.app import App

    shown: list[tuple[str, str, float | None]] = []
    textual_notify = App.notify

    def recording(self, message, *, title="", severity="information", timeout=None, markup=True):
        shown.append((title, severity, timeout))  # what Textual is asked to show, for how long
        textual_notify(self, message, title=title, severity=severity, timeout=timeout, markup=markup)

    monkeypatch.setattr(App, "notify", recording)
    async with browsing(NARROW, "cache") as (app, pilot):
        await press(pilot, "f4")
        await wait_for(pilot, lambda: any(title == "Copied command line" for title, *_ in shown))
        app.browser._save_failed("History", OSError(28, "No space left on device", "history.json"))
        app.browser.show_failure(RuntimeError("database disk image is malformed"))
    timeouts = {title: (severity, timeout) for title, severity, timeout in shown}
    assert timeouts["Copied command line"] == ("information", 5.0)
    assert timeouts["History not saved"] == ("error", 12.0)
    assert timeouts["Search failed"] == ("error", 12.0)


async def test_export_trace(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    async with browsing(WIDE, "cache") as (app, pilot):
        await press(pilot, "f6")
        # the export says where it wrote, once written
        await wait_for(pilot, lambda: any("rankscope-trace-cache-" in n.message for n in notifications(app)))
        files = list(tmp_path.glob("rankscope-trace-cache-*.json"))
        assert len(files) == 1
        data = json.loads(files[0].read_text("utf-8"))
        assert data["query"] == "cache" and data["layer"] == "rrf"
        assert any(str(files[0]) in n.message for n in notifications(app))


async def test_narrow_panes_switch_with_keys_and_tabs():
    async with browsing(NARROW, "cache") as (app, pilot):
        browser = app.browser
        assert browser.has_class("-narrow")
        assert browser.results.region.height > 0 and browser.inspector.region.height == 0
        await press(pilot, "down", "s")
        await wait_for(pilot, lambda: browser.inspector.region.height > 0 and browser.results.region.height == 0)
        await press(pilot, "j")
        await wait_for(pilot, lambda: browser.journey.region.height > 0 and browser.inspector.region.height == 0)
        await press(pilot, "r")
        await wait_for(pilot, lambda: browser.results.region.height > 0)


async def test_wide_shows_all_panes():
    async with browsing(WIDE, "cache") as (app, pilot):
        browser = app.browser
        assert browser.has_class("-wide")
        await wait_for(
            pilot, lambda: all(p.region.height > 0 for p in (browser.results, browser.inspector, browser.journey))
        )
        assert not browser.query_one("#pane-tabs").display


@pytest.mark.parametrize("size", [NARROW, WIDE])
async def test_bindings_have_ids_and_tooltips(size):
    async with browsing(size) as (app, pilot):
        await wait_screen(pilot, BrowserScreen)
        from tui.browser.app import RankscopeApp
        from tui.browser.screens.loading import LoadingScreen
        from tui.browser.screens.skipped import SkippedScreen
        from tui.browser.screens.stores import StorePickerScreen
        from tui.browser.widgets.query_box import QueryInput

        for cls in (
            RankscopeApp,
            BrowserScreen,
            QueryInput,
            ParamsScreen,
            SessionsScreen,
            HelpScreen,
            LoadingScreen,
            StorePickerScreen,
            SkippedScreen,
        ):
            for b in cls.BINDINGS:
                assert b.id and b.tooltip, (cls.__name__, b)


async def test_palette_goes_to_a_stage():
    async with browsing(NARROW, "artifcats") as (app, pilot):
        await run_command(pilot, "go to stage: fuzzy")
        browser = app.browser
        await wait_for(pilot, lambda: browser.pane == "stages" and app.focused is browser.inspector)
        await wait_for(pilot, lambda: browser.inspector.stage_of(browser.inspector.highlighted) == "fuzzy")
        before = browser.inspector.highlighted
        await press(pilot, "down")
        await wait_for(pilot, lambda: browser.inspector.highlighted != before)
        assert (browser.inspector.stage_of(browser.inspector.highlighted) or "").startswith("fuzzy")


async def test_palette_source_substring_filter():
    async with browsing(WIDE, "cache") as (app, pilot):
        await run_command(pilot, "source docs/")
        await settle(pilot)
        trace = app.browser.trace
        assert trace.params.source == "docs/" and trace.params.source_match == "like"
        assert trace.final and all(r.candidate.source.startswith("docs/") for r in trace.final)
        assert "source docs/ (substr)" in plain(app.browser.params_bar)


async def test_clicking_a_stage_row_shows_its_journey():
    async with browsing(WIDE, "heartbeat") as (app, pilot):
        browser = app.browser
        ins = browser.inspector
        # the first Porter row: find its line on screen and click it
        index = next(i for i, s in ins.subjects() if s.origin == "Porter")
        ins.scroll_to(y=0, animate=False)
        await wait_for(pilot, lambda: ins.scroll_y == 0)
        await processed(pilot)
        # border, total line, refresh header + note, Porter header + note: the first hit is on line 6
        await pilot.click(ins, offset=(10, 6))
        await wait_for(pilot, lambda: app.focused is ins and browser.journey.subject.by_row)
        assert browser.journey.subject is not None and browser.journey.subject.by_row
        assert browser.journey.subject.origin == "Porter"
        assert index is not None


async def test_control_characters_from_the_store_never_reach_the_terminal():
    from engine import Store

    store = Store.create(":memory:")
    store.index_text(
        "evil\x1b]0;title\x07.md",
        "# Cache \x1b[2J heading\n\ncache body \x1b[31mred\x1b[0m\r\n",
        "markdown",
        session_id="s\x1b[1m",
    )
    async with browsing(WIDE, "cache", store=store, store_label="evil") as (app, pilot):
        browser = app.browser
        assert browser.trace.final
        shown = "\n".join(
            [
                inspector_text(app),
                plain(browser.query_one("#journey-steps")),
                plain(browser.query_one("#journey-preview")),
                "\n".join(str(c) for c in browser.results.table.get_row_at(0)),
            ]
        )
        assert "\x1b" not in shown and "\x07" not in shown and "\r" not in shown
        assert "␛[2J" in shown and "␛[31m" in shown


async def test_params_dialog_source_exact_and_content_type():
    from textual.widgets import Select, Switch

    async with browsing(WIDE, "cache") as (app, pilot):
        await press(pilot, "f2")
        dialog = await wait_screen(pilot, ParamsScreen)
        await press(pilot, "tab")  # limit → source
        await wait_for(pilot, lambda: app.focused is dialog.query_one("#source", Input))
        await type_text(pilot, "docs/configuration.md")
        await settle(pilot)
        assert app.browser.params.source == "docs/configuration.md"
        dialog.query_one("#exact", Switch).value = True
        await settle(pilot)
        dialog.query_one("#ctype", Select).value = "prose"
        await settle(pilot)
        await press(pilot, "escape")
        await wait_for(pilot, lambda: app.screen is app.browser)
        await settle(pilot)
        trace = app.browser.trace
        assert trace.params.source_match == "exact" and trace.params.content_type == "prose"
        assert all(
            h.source == "docs/configuration.md" and h.content_type == "prose"
            for h in trace.first.porter.hits + trace.first.trigram.hits
        )
        bar = plain(app.browser.params_bar)
        assert "docs/configuration.md (exact)" in bar and "type prose" in bar


@pytest.mark.parametrize("size", [(60, 18), (80, 24)], ids=["60x18", "80x24"])
async def test_a_narrow_results_pane_keeps_every_number_whole(size):
    """The title gives way (cut in the middle); rrf and boost stay whole on screen."""
    async with browsing(size, "consumer lag") as (app, pilot):
        await rendered(pilot)
        text = "\n".join(screen_lines(app))
        for r in app.browser.trace.final:
            assert f"{r.candidate.score:.4f}" in text and f"{r.boost:.3f}" in text, r.candidate.title


async def test_a_paste_longer_than_a_query_may_be_is_refused_with_a_warning():
    """Textual's Input drops a paste past its max_length without a word; the
    query box says why nothing was pasted. A paste that fits is pasted."""
    from textual import events

    from engine.pipeline.params import MAX_QUERY_CHARS

    async with browsing(NARROW, "quorum") as (app, pilot):
        await press(pilot, "ctrl+l")  # the query box, its text selected: a paste replaces it
        box = query_input(app)
        box.post_message(events.Paste("x" * MAX_QUERY_CHARS))
        await wait_for(pilot, lambda: box.value == "x" * MAX_QUERY_CHARS, what="the paste that fits")
        box.post_message(events.Paste("y"))  # one character too many
        await wait_for(pilot, lambda: any(n.title == "Paste too long" for n in notifications(app)))
        (warning,) = [n for n in notifications(app) if n.title == "Paste too long"]
        assert warning.severity == "warning"
        assert warning.message == (
            f"The query would be {MAX_QUERY_CHARS + 1:,} characters; a query holds at most {MAX_QUERY_CHARS:,}. "
            "Nothing was pasted."
        )
        assert box.value == "x" * MAX_QUERY_CHARS


async def test_characters_typed_past_the_query_limit_say_the_query_was_cut():
    """Keys arriving one at a time (a terminal without bracketed paste, tmux
    send-keys) stopped at the input's max_length without a word: a
    10,500-character paste was searched cut to 10,000. The first refused
    character now says the query was cut at the limit (once, until the
    query is shorter again)."""
    from engine.pipeline.params import MAX_QUERY_CHARS

    def cut_notes():
        return [n for n in notifications(app) if n.title == "Query cut"]

    async with browsing(NARROW, "quorum") as (app, pilot):
        await press(pilot, "ctrl+l")
        box = query_input(app)
        box.value = "x" * (MAX_QUERY_CHARS - 5)
        box.cursor_position = len(box.value)
        send_keys(pilot, *"quorumquorum")  # 12 keys, 5 fit
        await wait_for(pilot, lambda: len(cut_notes()) == 1, what="the 'Query cut' warning")
        await processed(pilot)
        assert box.value == "x" * (MAX_QUERY_CHARS - 5) + "quoru"
        (note,) = cut_notes()
        assert note.severity == "warning"
        assert note.message == ("Query cut to 10,000 characters (the limit): what was typed past it was not added.")
        await wait_for(pilot, lambda: app.browser.trace.params.query == box.value, what="the cut query's search")
        await press(pilot, "backspace")
        send_keys(pilot, *"mm")  # one fits, one is cut again: said again
        await wait_for(pilot, lambda: len(cut_notes()) == 2, what="a second 'Query cut' warning")
        assert box.value.endswith("quorm")


async def test_a_long_running_search_is_shown_beneath_the_query_box_in_any_pane():
    """A 9,000-character query on a large store searches for seconds: the
    panes kept the previous query's results with nothing saying a search
    was running (only the results pane's border, hidden when another pane
    is shown at 80x24). Beneath the query box, in sight in every pane, a
    search running longer than SEARCHING_SHOWN_AFTER_S now says so."""
    import threading

    from textual import events

    from engine import search

    gate = threading.Event()

    def slow_search(store, params, conn=None):
        if len(params.query) > 1000:
            gate.wait(TIMEOUT)  # released by the test
        return search(store, params, conn=conn)

    def shown() -> str:
        return "\n".join(screen_lines(app))

    async with browsing(NARROW, "write quorum", search_fn=slow_search) as (app, pilot):
        await press(pilot, "down", "j")  # the journey pane: the results pane is hidden
        await settle(pilot)
        assert app.browser.pane == "journey" and "searching" not in shown()
        await press(pilot, "ctrl+l")
        box = query_input(app)
        box.post_message(events.Paste("write quorum " * 700))
        try:
            await wait_for(pilot, lambda: "searching…" in shown(), what="the searching line")
            assert app.browser.pane == "journey"
        finally:
            gate.set()
        await settle(pilot)
        assert app.browser.trace.params.query == box.value and "searching" not in shown()


@pytest.mark.parametrize("stage", ["Porter", "Trim", "Fuzzy"])
async def test_go_to_stage_puts_its_section_at_the_top_at_80x24(stage):
    """Palette "Go to stage: …" from the results pane at 80x24: the stage
    inspector was scrolled before its pane was laid out (no height yet),
    then only far enough to show the header: "Fuzzy" sat on its last line,
    its content off-screen, and "Porter" stayed where it was. The header
    is now the inspector's first line (the last section: as high as the
    list scrolls, its content in sight)."""
    async with browsing(NARROW, "replicaton quorom") as (app, pilot):
        await run_command(pilot, f"Go to stage: {stage}")
        await settle(pilot)
        ins = app.browser.inspector
        lines = screen_lines(app)
        top = next(i for i, line in enumerate(lines) if line.startswith("╭─ Stages"))
        bottom = next(i for i, line in enumerate(lines) if line.startswith("╰") and i > top)
        content = [line.strip("│ ▁▂▃▄▅▆▇█") for line in lines[top + 1 : bottom]]
        at = [i for i, line in enumerate(content) if line == "▌" + stage]
        assert at, content
        if ins.scroll_y < ins.max_scroll_y:
            assert at[0] == 0, content
        else:  # the list's end: the section whole below its header
            assert at[0] + 1 < len(content) and not content[at[0] + 1].startswith("▌"), content
