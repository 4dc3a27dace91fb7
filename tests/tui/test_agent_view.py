"""The agent view (F12) and the agent log in the browser, with Pilot on the
recorded ``shared/agent-view`` stores; every wait is on a condition."""

from __future__ import annotations

import asyncio
import json
import os
import shutil

import pytest
from textual.containers import VerticalScroll
from textual.widgets import OptionList, Static

from engine import SearchParams, Store
from engine.agent import AgentContext, ctx_search
from tui.browser.screens.params import ParamsChange
from tui.browser.screens.agent import AgentViewScreen, chunk_with_windows
from tui.browser.screens.agent_log import AgentLogScreen
from tui.browser.widgets.footer import KeyFooter

from ..conftest import AGENT_VIEW, PLUGIN_STORE, SESSION_DB
from ..helpers import append_call
from .conftest import (
    browsing,
    build_app,
    notifications,
    plain,
    press,
    processed,
    rendered,
    run_command,
    search_for,
    wait_for,
)

NARROW = (80, 24)
WIDE = (120, 40)
#: The smallest terminal the agent view is laid out for (an outside tester's).
SMALL = (60, 20)


def agent_screen(app) -> AgentViewScreen | None:
    return app.screen if isinstance(app.screen, AgentViewScreen) else None


def answered(app) -> bool:
    s = agent_screen(app)
    return s is not None and s.trace is not None and s._shown_seq == s._seq


async def open_agent_log(pilot) -> AgentLogScreen:
    """Open the agent log from the palette; returns it once it lists its replays."""
    app = pilot.app
    await run_command(pilot, "Agent log")
    await wait_for(pilot, lambda: isinstance(app.screen, AgentLogScreen) and app.screen.replays, what="the agent log")
    return app.screen


def _app(path, **kwargs):
    return build_app(store=Store.open_readonly(path), store_label=path.name, **kwargs)


async def test_agent_view_shows_what_the_agent_receives():
    async with browsing(
        NARROW, "heartbeat interval", app=_app(AGENT_VIEW / "store.db", params=SearchParams("", limit=3))
    ) as (app, pilot):
        await press(pilot, "f12")
        await wait_for(pilot, lambda: answered(app), what="the agent view")
        screen = agent_screen(app)
        with Store.open_readonly(AGENT_VIEW / "store.db") as store:
            expected = ctx_search(store, {"queries": ["heartbeat interval"], "limit": 3})
        assert screen.trace.text == expected.text
        summary = plain(screen.query_one("#agent-summary", Static))
        assert "the agent gets 2 of your 3" in summary
        assert "call #1 of its window" in summary
        options = screen.query_one("#agent-results", OptionList)
        assert options.option_count == len(screen.trace.queries[0].results) == 1
        first = str(options.get_option_at_index(0).prompt)
        assert "matched terms outside the snippet" in first  # the 1500-unit budget cut a window
        detail = plain(screen.query_one("#agent-text", Static))
        assert "⟦" in detail and "⚠" in detail
        # the whole answer, then the third call of the window: the warning footer
        await press(pilot, "a")
        assert "> Throttle: call #1/8" in plain(screen.query_one("#agent-text", Static))
        await press(pilot, "plus", "plus")
        await wait_for(pilot, lambda: answered(app) and screen.trace.throttle.count == 3, what="call #3")
        assert screen.trace.text == expected.text.replace(expected.footer, "") + screen.trace.footer
        assert "⚠ search call #3/8" in screen.trace.footer
        await press(pilot, "plus")
        await wait_for(pilot, lambda: answered(app) and screen.trace.throttle.count == 4, what="call #4")
        assert screen.trace.effective_limit == 1
        assert "soft-capped" in plain(screen.query_one("#agent-summary", Static))
        # Escape closes; the browser is back
        await press(pilot, "escape")
        await wait_for(pilot, lambda: agent_screen(app) is None, what="the browser")


async def test_f12_opens_and_closes_the_agent_view_and_f5_is_the_rank_flow():
    async with browsing(NARROW, "relay", app=_app(AGENT_VIEW / "store.db")) as (app, pilot):
        await press(pilot, "f5")  # F5 is the rank flow (issue 9); F5 again closes it
        await wait_for(pilot, lambda: type(app.screen).__name__ == "FlowScreen", what="the rank flow")
        await press(pilot, "f5")
        await wait_for(pilot, lambda: app.screen is app.browser, what="the browser")
        assert agent_screen(app) is None
        await press(pilot, "f12")
        await wait_for(pilot, lambda: answered(app), what="the agent view")
        await press(pilot, "f12")  # the same key closes it
        await wait_for(pilot, lambda: agent_screen(app) is None, what="the browser")


async def test_agent_view_follows_parameter_changes():
    async with browsing(WIDE, "relay", app=_app(AGENT_VIEW / "store.db")) as (app, pilot):
        await press(pilot, "f12")
        await wait_for(pilot, lambda: answered(app), what="the agent view")
        screen = agent_screen(app)
        app.browser.update_params(ParamsChange(source="ops", limit=1))
        await wait_for(
            pilot, lambda: answered(app) and screen.request.arguments.get("source") == "ops", what="the change"
        )
        with Store.open_readonly(AGENT_VIEW / "store.db") as store:
            assert screen.trace.text == ctx_search(store, {"queries": ["relay"], "limit": 1, "source": "ops"}).text
        assert "the agent gets" not in plain(screen.query_one("#agent-summary", Static))


async def test_plugin_toggle_applies_the_session_allow_set():
    async with browsing(WIDE, "failover review", app=_app(PLUGIN_STORE, session_db=str(SESSION_DB))) as (app, pilot):
        await press(pilot, "f12")
        await wait_for(pilot, lambda: answered(app), what="the agent view")
        screen = agent_screen(app)
        assert screen.trace.scope.mode == "none"
        await press(pilot, "p")
        await wait_for(pilot, lambda: answered(app) and screen.trace.scope.mode == "plugin", what="plugin mode")
        project = "/tmp/agentview/public/project"
        with Store.open_readonly(PLUGIN_STORE) as store:
            expected = ctx_search(
                store,
                {"queries": ["failover review"], "limit": 3},
                AgentContext(plugin_project=project, session_db=str(SESSION_DB)),
            )
        assert screen.trace.text == expected.text
        assert len(screen.trace.scope.allow_set) == 3
        assert "as the plugin sees it" in plain(screen.query_one("#agent-summary", Static))
        assert "session-notes-s2" in screen.trace.text


async def test_plugin_toggle_without_a_session_db_says_why():
    async with browsing(NARROW, "relay", app=_app(AGENT_VIEW / "store.db")) as (app, pilot):
        await press(pilot, "f12")
        await wait_for(pilot, lambda: answered(app), what="the agent view")
        await press(pilot, "p")
        await wait_for(
            pilot,
            lambda: any("No session DB" in str(n.message) for n in notifications(app)),
            what="the 'No session DB' notification",
        )
        await processed(pilot)
        assert not agent_screen(app).plugin


async def test_agent_log_lists_and_opens_a_recorded_call():
    async with browsing(WIDE, "x", app=_app(PLUGIN_STORE, session_db=str(SESSION_DB))) as (app, pilot):
        screen = await open_agent_log(pilot)
        options = screen.query_one("#agent-log-list", OptionList)
        assert options.option_count == 13
        assert "12 of 13 give the recorded answer" in plain(screen.query_one("#agent-log-status", Static))
        assert "differs" in str(options.get_option_at_index(4).prompt)
        # the 7th call: two queries over the fetched JSON with source, contentType and limit 5
        options.highlighted = 6
        await wait_for(
            pilot,
            lambda: "call #3" in plain(screen.query_one("#agent-log-detail", Static)),
            what="the 7th call's detail",
        )
        await press(pilot, "enter")
        await wait_for(pilot, lambda: answered(app), what="the recorded call's agent view")
        view = agent_screen(app)
        replay = screen.replays[6]
        assert view.trace.text == replay.call.answer
        assert view.request.arguments == replay.call.params and view.call_number == 3
        assert "the agent gets 2 of your 5" in plain(view.query_one("#agent-summary", Static))
        assert app.screen_stack[-2] is screen  # on top of the log: Esc returns to it
        params = app.browser.params
        assert (params.query, params.limit, params.source, params.content_type) == (
            "circuitBreakers upstream-eu",
            2,
            "corvid-config",
            "code",
        )
        assert params.sessions is not None and len(params.sessions) == 3


async def test_the_agent_log_follows_the_session_db_live(tmp_path):
    """Another process appends calls to a copy of the session fixture the way
    context-mode's hooks do: the open agent log shows each one, the cursor
    stays put; with follow on, each new call opens its agent view and its
    first query in the browser; the file replaced is followed from its start."""
    folder = tmp_path / "sessions"
    folder.mkdir()
    db = folder / "5399b2ea68c12e92.db"
    shutil.copyfile(SESSION_DB, db)
    async with browsing(WIDE, "x", app=_app(PLUGIN_STORE, session_db=str(db))) as (app, pilot):
        log = await open_agent_log(pilot)
        title = log.query_one("#agent-log-title", Static)
        options = log.query_one("#agent-log-list", OptionList)
        assert "● live" in plain(title) and "follow: off" in plain(title)
        options.highlighted = 6
        await processed(pilot)
        assert sorted(os.listdir(folder)) == [db.name]  # read-only: nothing created beside it

        await asyncio.to_thread(append_call, db)
        await wait_for(pilot, lambda: len(log.replays) == 14, what="the appended call")
        new = log.replays[13]
        assert new.call.event_id == 77 and new.call.params == {"queries": ["sextant"], "source": "ops"}
        assert new.outcome == "same"
        assert options.option_count == 14 and options.highlighted == 6  # the cursor did not move
        assert "sextant" in str(options.get_option_at_index(13).prompt)
        assert "14 call(s)" in plain(log.query_one("#agent-log-status", Static))
        assert sorted(os.listdir(folder)) == [db.name]

        # follow: each new call opens on top of the log, which keeps following
        await press(pilot, "f")
        assert "follow: on" in plain(title)
        await asyncio.to_thread(append_call, db, 3)
        await wait_for(pilot, lambda: len(log.replays) == 15 and answered(app), what="the followed call's view")
        view = agent_screen(app)
        first = log.replays[14].call
        assert view.request.arguments == first.params and app.screen_stack[-2] is log
        assert app.browser.params.query == recorded_first_query(first.params)
        await asyncio.to_thread(append_call, db)
        await wait_for(
            pilot,
            lambda: len(log.replays) == 16 and agent_screen(app) not in (None, view) and answered(app),
            what="the next followed call's view",
        )
        assert app.screen_stack[-2] is log  # replaced, not stacked
        assert agent_screen(app).request.arguments == {"queries": ["sextant"], "source": "ops"}
        assert app.browser.params.query == "sextant"

        # the file replaced by another (a new inode): followed from its start, nothing opened
        fresh = tmp_path / "fresh.db"
        shutil.copyfile(SESSION_DB, fresh)
        os.replace(fresh, db)
        await wait_for(pilot, lambda: len(log.replays) == 13, what="the replaced file's calls")
        assert any("was replaced: following it from its start" in str(n.message) for n in notifications(app))
        # gone for a moment: marked, still polling; back: live again, from its start
        os.remove(db)
        await wait_for(pilot, lambda: log.live is False, what="the file gone")
        assert "○ unreadable" in plain(title) and "still following" in plain(log.query_one("#agent-log-status", Static))
        shutil.copyfile(SESSION_DB, db)
        await wait_for(pilot, lambda: log.live and "● live" in plain(title), what="the file back")
        assert len(log.replays) == 13 and "still following" not in plain(log.query_one("#agent-log-status", Static))
        await press(pilot, "l")  # from the followed view: back to the live log
        await wait_for(pilot, lambda: app.screen is log, what="the live log")


def recorded_first_query(params) -> str:
    queries = params.get("queries")
    return queries[0] if isinstance(queries, list) else params["query"]


async def test_agent_log_without_a_session_db():
    async with browsing(NARROW, "relay", app=_app(AGENT_VIEW / "store.db")) as (app, pilot):
        await press(pilot, "f12")
        await wait_for(pilot, lambda: answered(app), what="the agent view")
        await press(pilot, "l")
        await wait_for(pilot, lambda: isinstance(app.screen, AgentLogScreen), what="the agent log")
        assert "No session DB is paired" in plain(app.screen.query_one("#agent-log-status", Static))


async def _pinned_agent_view(pilot, rowid: int) -> AgentViewScreen:
    """Search "halyard message" (limit 6), pin chunk ``rowid``, open the agent view, wait for its advice."""
    app = pilot.app
    await search_for(pilot, "halyard message")
    app.browser.pin(rowid)
    await press(pilot, "f12")
    await wait_for(
        pilot, lambda: answered(app) and agent_screen(app).advice is not None, what="the pinned chunk's advice"
    )
    return agent_screen(app)


async def test_the_agent_view_says_what_the_agent_should_have_asked_for_the_pinned_chunk():
    """Chunk 18 is the browser's #3 for "halyard message"; the agent gets 2.
    The agent view names the change to the call that delivers it, and
    re-running the call with that change does deliver it; pinning a chunk
    the agent got says where it is, and marks its result."""
    from engine.agent.advice import delivery_of

    async with browsing(NARROW, app=_app(PLUGIN_STORE, params=SearchParams("", limit=6))) as (app, pilot):
        view = await _pinned_agent_view(pilot, 18)
        advice = view.advice
        assert advice.outcome == "change" and advice.change is not None
        line = plain(view.query_one("#agent-pinned", Static))
        assert "▸ pinned 18" in line and "would deliver it: Q1 #1, answer line 3" in line
        assert f"{advice.reruns} re-runs" in line
        with Store.open_readonly(PLUGIN_STORE) as store:
            asked = ctx_search(store, {"queries": ["halyard message"], "limit": 6})
            proven = ctx_search(store, advice.change.arguments, call_number=advice.change.call_number)
        assert delivery_of(asked, 18) is None
        got = delivery_of(proven, 18)
        assert got is not None and (got.query_position, got.position, got.line) == (1, 1, 3)
        # the pin moves while the agent view is open: it follows
        app.browser.pin(126)
        await wait_for(
            pilot,
            lambda: view.pinned == 126 and view.advice is not None and view.advice.outcome == "delivered",
            what="the new pin's advice",
        )
        assert "delivered: Q1 #2, answer line 10" in plain(view.query_one("#agent-pinned", Static))
        marked = str(view.query_one("#agent-results", OptionList).get_option_at_index(1).prompt)
        assert marked.startswith("▸ Q1 2.")
        app.browser.pin(None)
        await wait_for(pilot, lambda: not view.query_one("#agent-pinned", Static).display, what="no pinned line")


def test_the_agent_view_shows_the_waste_in_what_was_delivered():
    """Two queries of one call deliver chunk 14 twice: the summary says how
    many bytes repeat and the share of the cap used; the second delivery is
    marked as a repeat of the first; a snippet showing none of its matches
    is flagged."""
    from dataclasses import replace

    from engine.agent.waste import waste
    from tui.browser.screens.agent import AgentRequest, result_label, summary_text

    arguments = {"queries": ["halyard message", "halyard"], "limit": 2}
    with Store.open_readonly(PLUGIN_STORE) as store:
        trace = ctx_search(store, arguments)
    found = waste(trace)
    [repeat] = found.repeats
    assert repeat.rowid == 14 and repeat.deliveries == ((1, 1), (2, 1))
    summary = summary_text(trace, AgentRequest(arguments, AgentContext()), found).plain
    assert f"of the 40 KiB cap ({found.cap_units_used:,} of 40,960 units)" in summary
    assert f"1 chunk delivered again: {repeat.repeated_bytes:,} B repeated (14 ×2)" in summary
    first, again = trace.queries[0].results[0], trace.queries[1].results[0]
    assert "repeats" not in result_label(1, "halyard message", first, found).plain
    assert "↻ repeats Q1 #1" in result_label(2, "halyard", again, found).plain
    outside = replace(found, matches_outside=((2, 1, 14),))
    assert "the snippet shows none of its matches" in result_label(2, "halyard", again, outside).plain
    assert (
        "1 snippet shows none of the matches"
        in summary_text(trace, AgentRequest(arguments, AgentContext()), outside).plain
    )


def test_agent_view_with_a_pinned_chunk_snapshot(snap_compare):
    """80x24: the summary with the cap used, the pinned chunk's advice, the results."""

    async def run_before(pilot) -> None:
        await _pinned_agent_view(pilot, 18)
        await processed(pilot)

    app = _app(PLUGIN_STORE, params=SearchParams("", limit=6))
    assert snap_compare(app, terminal_size=NARROW, run_before=run_before)


async def test_the_summary_scrolls_and_takes_focus_only_while_it_hides_lines():
    """At 60x20 in plugin mode the summary is cut to its share: Shift+Tab
    from the results reaches it and End shows its last line; at 120x40 it
    shows whole and Tab never stops on it."""
    async with browsing(SMALL, "failover review", app=_app(PLUGIN_STORE, session_db=str(SESSION_DB))) as (app, pilot):
        await press(pilot, "f12")
        await wait_for(pilot, lambda: answered(app), what="the agent view")
        screen = agent_screen(app)
        await press(pilot, "p")
        await wait_for(pilot, lambda: answered(app) and screen.trace.scope.mode == "plugin", what="plugin mode")
        await rendered(pilot)
        head = screen.query_one("#agent-head", VerticalScroll)
        assert head.max_scroll_y > 0 and app.focused is screen.query_one("#agent-results", OptionList)
        await press(pilot, "shift+tab")
        await wait_for(pilot, lambda: app.focused is head, what="the summary focused")
        await press(pilot, "end")
        await wait_for(pilot, lambda: head.scroll_y == head.max_scroll_y, what="the summary's last line")
    async with browsing(WIDE, "failover review", app=_app(PLUGIN_STORE, session_db=str(SESSION_DB))) as (app, pilot):
        await press(pilot, "f12")
        await wait_for(pilot, lambda: answered(app), what="the agent view")
        screen = agent_screen(app)
        await rendered(pilot)
        head = screen.query_one("#agent-head", VerticalScroll)
        assert head.max_scroll_y == 0 and head not in screen.focus_chain


def test_agent_view_in_plugin_mode_at_60x20_snapshot(snap_compare):
    """60x20, plugin mode: the head scrolls (its bar shows), the results
    scroll, the chunk box shows its text (it had no row for it)."""

    async def run_before(pilot) -> None:
        app = pilot.app
        await search_for(pilot, "failover review")
        await press(pilot, "f12")
        await wait_for(pilot, lambda: answered(app), what="the agent view")
        await press(pilot, "p")
        await wait_for(
            pilot, lambda: answered(app) and agent_screen(app).trace.scope.mode == "plugin", what="plugin mode"
        )
        await rendered(pilot)

    app = _app(PLUGIN_STORE, session_db=str(SESSION_DB))
    assert snap_compare(app, terminal_size=SMALL, run_before=run_before)


def test_chunk_with_windows_marks_cut_and_unseen_text():
    with Store.open_readonly(AGENT_VIEW / "store.db") as store:
        trace = ctx_search(store, {"queries": ["heartbeat interval"], "limit": 2}, call_number=3)
    result = trace.queries[0].results[0]
    text = chunk_with_windows(result)
    assert text.plain.count("⟦") == len(result.snippet.slices) == text.plain.count("⟧")
    assert text.plain.count("⚠") == len(result.snippet.unseen_matches)
    stripped = text.plain.replace("⟦", "").replace("⟧", "").replace("⚠", "")
    assert stripped == result.content.replace("\r", "")
    assert json.dumps(result.snippet.slices)  # offsets are plain ints


def test_the_chunk_views_title_says_in_words_how_the_snippet_was_cut():
    """The snippet's codes (mode, source_of_positions) become words: the
    title read "whole, positions from none"."""
    from engine.agent.snippet import SnippetTrace
    from tui.browser.screens.agent import snippet_how

    def how(mode: str, source: str) -> str:
        return snippet_how(SnippetTrace("", 0, mode, source))

    assert how("whole", "none") == "whole content (it fits)"
    assert how("windows", "highlight") == "windows around FTS5's highlight marks"
    assert how("windows", "indexOf") == "windows around the query's words (indexOf: no highlight mark)"
    assert how("prefix", "none") == "the first 1500 units (no match position found)"


async def test_esc_from_the_agent_log_returns_to_the_agent_view():
    """Issue 24: the agent log opened with l from the agent view closed the
    view; Esc then landed on the browser, where the next p pinned a chunk."""
    async with browsing(NARROW, "x", app=_app(PLUGIN_STORE, session_db=str(SESSION_DB))) as (app, pilot):
        await press(pilot, "f12")
        await wait_for(pilot, lambda: answered(app), what="the agent view")
        view = agent_screen(app)
        plugin = view.plugin
        await press(pilot, "l")
        await wait_for(pilot, lambda: isinstance(app.screen, AgentLogScreen), what="the agent log")
        await press(pilot, "escape")
        await wait_for(pilot, lambda: app.screen is view, what="the agent view again")
        await press(pilot, "p")  # the agent view's p (plugin mode), not the browser's pin
        await wait_for(pilot, lambda: view.plugin != plugin)
        assert app.browser.pinned_rowid is None


#: Lines of chunk text the agent view's chunk box keeps at 60x20 and up:
#: a heading and two lines of the text around a window, enough to read a
#: ``⟦ … ⟧`` mark in context and page through the chunk.
CHUNK_LINES = 3


@pytest.mark.parametrize("size", [SMALL, NARROW, WIDE], ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("mode", ["plain", "plugin", "plugin-pinned"])
async def test_the_chunk_box_keeps_room_for_the_chunk(size, mode):
    """At 60x20 in plugin mode the summary (9 lines) and the results (40%)
    took every row: the chunk box got none for its text, the screen
    scrolled and the box's bottom fell below the keys. Whatever the mode,
    with a pinned chunk's line too, the box shows :data:`CHUNK_LINES` or
    more, whole, above the keys; the screen does not scroll."""
    async with browsing(size, app=_app(PLUGIN_STORE, session_db=str(SESSION_DB))) as (app, pilot):
        await search_for(pilot, "halyard message")
        if mode == "plugin-pinned":
            app.browser.pin(18)
        await press(pilot, "f12")
        await wait_for(pilot, lambda: answered(app), what="the agent view")
        screen = agent_screen(app)
        if mode != "plain":
            await press(pilot, "p")
            await wait_for(pilot, lambda: answered(app) and screen.trace.scope.mode == "plugin", what="plugin mode")
        if mode == "plugin-pinned":
            await wait_for(pilot, lambda: screen.advice is not None, what="the pinned chunk's advice")
        await rendered(pilot)
        box = screen.query_one("#agent-box", VerticalScroll)
        footer = screen.query_one(KeyFooter)
        assert box.scrollable_content_region.height >= CHUNK_LINES
        assert box.region.bottom <= footer.region.y
        assert screen.max_scroll_y == 0
