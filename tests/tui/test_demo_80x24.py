"""What got in the way of a first demo at 80x24 (issue 24): the footer,
focus after dialogs, the journey, the agent log, the why-not finder, the
sessions dialog, the history search, the pinned line, the rank flow's
titles and the notices while grading."""

from __future__ import annotations


import pytest

from .conftest import browsing, press, rendered, wait_for

NARROW = (80, 24)


def cut_footer_keys(screen) -> list[str]:
    """The footer keys of ``screen`` drawn cut: past the footer's right edge
    or under the command palette's key docked there."""
    from textual.widgets import Footer

    cut = []
    for footer in screen.query(Footer):
        docked = [k for k in footer.query("FooterKey") if k.has_class("-command-palette")]
        edge = min([k.region.x for k in docked] + [footer.region.right])
        for key in footer.query("FooterKey"):
            if key.display and key not in docked and key.region.width and key.region.right > edge:
                cut.append(f"{key.key} {key.description}".strip())
    return cut


async def test_the_footer_shows_only_whole_keys_at_80_columns():
    """``f4 Cop▏^p palette`` once focus left the query box: the keys that do
    not fit are left out whole (F1 and the palette list them)."""
    async with browsing(NARROW, "cache") as (app, pilot):
        await rendered(pilot)
        assert cut_footer_keys(app.screen) == []
        await press(pilot, "down")
        await wait_for(pilot, lambda: app.focused is app.browser.results.table)
        await rendered(pilot)
        assert cut_footer_keys(app.screen) == []
        assert "Grade" in app.export_screenshot()  # the keys that fit are shown
        await pilot.resize_terminal(120, 40)  # wider: the keys left out come back
        await rendered(pilot)
        shown = [k.key for k in app.screen.query("FooterKey") if k.display]
        assert "f4" in shown and cut_footer_keys(app.screen) == []
        await pilot.resize_terminal(*NARROW)
        await rendered(pilot)
        assert cut_footer_keys(app.screen) == []


async def test_the_sessions_dialog_says_what_tab_and_space_do():
    """F3: focus starts in the list; Tab then Space turned the filter on with
    nothing allowed while the dialog said "Space toggles · Tab moves" (Tab
    goes to the switch, not to the next session). The keys are named, and
    the switch's hint says when no session is allowed."""
    from textual.widgets import Label, Static, Switch

    from tui.browser.screens.sessions import SessionsScreen

    from .conftest import wait_screen

    async with browsing(NARROW, "cache") as (app, pilot):
        await press(pilot, "down", "f3")
        screen = await wait_screen(pilot, SessionsScreen)
        hints = " ".join(str(s.render()) for s in screen.query(Static) if s.has_class("hint"))
        assert "Tab moves" not in hints and "Tab the switch" in hints and "Space allows" in hints
        await press(pilot, "tab", "space")
        switch = screen.query_one("#filter-on", Switch)
        await wait_for(pilot, lambda: switch.value)
        state = screen.query_one("#filter-state", Label)
        await wait_for(pilot, lambda: "no session allowed" in str(state.render()))
        await wait_for(pilot, lambda: app.browser.params.sessions == ())
        await press(pilot, "shift+tab", "space")  # back in the list: allow the first session
        await wait_for(pilot, lambda: bool(app.browser.params.sessions))
        assert str(state.render()).startswith("on: only the allowed sessions pass")


async def test_the_journey_follows_the_pane_switched_to():
    """The journey showed the last candidate picked in Stages (a row far
    down) while the Results cursor sat on row 1, until the cursor moved."""
    async with browsing(NARROW, "cache") as (app, pilot):
        browser = app.browser
        first = browser.results.subject_at(0)
        await press(pilot, "down")
        await wait_for(pilot, lambda: app.focused is browser.results.table)
        assert browser.journey.subject.rowid == first.rowid
        await press(pilot, "s")
        await wait_for(pilot, lambda: app.focused is browser.inspector)
        await press(pilot, "end")  # the last candidate of the stages
        last = browser.inspector.subjects()[-1][1]
        assert last.rowid != first.rowid
        await wait_for(pilot, lambda: browser.journey.subject.rowid == last.rowid)
        await press(pilot, "r")
        await wait_for(pilot, lambda: app.focused is browser.results.table)
        await wait_for(pilot, lambda: browser.journey.subject.rowid == first.rowid, what="the journey on result 1")
        await press(pilot, "s")  # and back: the stages' highlighted candidate
        await wait_for(pilot, lambda: browser.journey.subject.rowid == last.rowid, what="the journey on it again")


async def test_why_not_keeps_typing_and_ctrl_l_in_its_finder():
    """F8 from a pane: typing in the answer or the list went nowhere, and
    ctrl+l closed F8 and selected (then replaced) the browser's query."""
    from textual.widgets import Input

    from tui.browser.screens.why import WhyScreen

    from .conftest import settle, type_text, wait_screen

    async with browsing(NARROW, "cache") as (app, pilot):
        await press(pilot, "down", "f8")  # opened on result 1: the answer has the focus
        screen = await wait_screen(pilot, WhyScreen)
        finder = screen.query_one("#why-find", Input)
        await settle(pilot)
        assert app.focused is not finder
        await press(pilot, "c", "a", "c")
        await wait_for(pilot, lambda: app.focused is finder and finder.value == "cac", what="'cac' in the finder")
        await wait_for(pilot, lambda: bool(screen.matches) and screen._find_shown == screen._find_seq)
        await press(pilot, "down")  # into the matches: typing goes on in the finder
        await wait_for(pilot, lambda: app.focused is not finder)
        await press(pilot, "r")
        await wait_for(pilot, lambda: app.focused is finder and finder.value == "r", what="'r' replacing it")
        await press(pilot, "ctrl+l")  # F8 stays open; its own query is selected
        await wait_for(pilot, lambda: finder.selected_text == "r")
        assert app.screen is screen
        await type_text(pilot, "write")
        assert app.browser.query_box.value == "cache"


async def test_why_not_keeps_a_burst_typed_from_a_pane():
    """Keys typed in one burst from the answer pane (a paste, or tmux
    send-keys): only the first reached the finder, the rest arrived after
    the focus moved and were dropped ("troubleshooting" became "t")."""
    from textual import events
    from textual.widgets import Input

    from tui.browser.screens.why import WhyScreen

    from .conftest import settle, wait_screen

    async with browsing(NARROW, "consumer lag") as (app, pilot):
        await press(pilot, "down", "f8")
        screen = await wait_screen(pilot, WhyScreen)
        finder = screen.query_one("#why-find", Input)
        await settle(pilot)
        assert app.focused is not finder and finder.value.startswith("row ")
        for ch in "troubleshooting":  # queued at once, as a terminal delivers a burst
            app.post_message(events.Key(ch, ch))
        await wait_for(pilot, lambda: finder.value == "troubleshooting", what="the whole burst in the finder")
        assert app.focused is finder


async def test_why_not_says_what_would_return_it_as_the_cli_does(tmp_path):
    """F8 lacked the "Would return it: …" line that ``rankscope why`` prints
    under each explanation; both take it from one description."""
    from engine.lab.counterfactual import would_return_with
    from engine.lab.why import why_not
    from tui.browser.screens.why import WhyScreen
    from tui.present.describe import would_return_line

    from .conftest import plain, settle, wait_screen

    async with browsing(NARROW, "cache") as (app, pilot):
        trace = app.browser.trace
        answer = {r.candidate.rowid for r in trace.final}
        missing = next(c.rowid for c in trace.first.fusion.candidates if c.rowid not in answer)
        app.action_why_not()
        screen = await wait_screen(pilot, WhyScreen)
        screen.explain(missing)
        text = screen.query_one("#why-text")
        await wait_for(pilot, lambda: "Would return it: " in plain(text), timeout=60)
        await settle(pilot)
        store = app.browser.store
        [e] = why_not(store, trace.params, rowid=missing, trace=trace)
        cf = would_return_with(store, trace.params, rowid=missing, trace=trace)
        expected = "".join(span.text for span in would_return_line(cf))
        assert e.chunk.rowid == missing
        assert expected in " ".join(plain(text).split())


def test_distinct_cuts_keep_look_alike_titles_apart():
    from tui.present.cut import distinct_cuts, middle_cut

    a, b = "Incident review: 2023-04 outage > What went well", "Incident review: 2024-01 outage > What went well"
    other = "Replication > Write quorum"
    assert middle_cut(a, 20) == middle_cut(b, 20)  # what the rank flow showed for both
    for width in (12, 16, 20, 24, 30):
        cuts = distinct_cuts([a, b, other, a], width)
        assert cuts[a] != cuts[b] and max(len(cuts[a]), len(cuts[b])) <= width, (width, cuts)
        assert "2023" in cuts[a] and "2024" in cuts[b]
        assert cuts[other] == middle_cut(other, width)  # a title without a look-alike is cut as before
    assert distinct_cuts([a, b], 60) == {a: a, b: b}


async def test_rank_flow_titles_that_differ_read_differently_at_80x24(tmp_path):
    """Two incident reviews' "What went well" sections both read ``I … >
    What went well`` in the rank flow's title column."""
    from textual.widgets import DataTable

    from engine import Store, index_corpus
    from tui.browser.screens.flow import FlowScreen

    from .conftest import settle, wait_screen

    folder = tmp_path / "notes"
    folder.mkdir()
    for when in ("2023-04", "2024-01"):
        (folder / f"review-{when}.md").write_text(
            f"# Incident review: {when} outage of the payments cluster\n\n## What went well\n\n"
            "Alerts fired early and the failover went well for the payments writes.\n"
        )
    store = Store.create(tmp_path / "s.db")
    index_corpus(store, folder)
    async with browsing(NARROW, "went well", store=store, store_label="notes") as (app, pilot):
        await press(pilot, "f5")
        screen = await wait_screen(pilot, FlowScreen, focused=False)
        await settle(pilot)
        table = screen.query_one(DataTable)
        titles = [str(table.get_row_at(r)[1]) for r in range(table.row_count)]
        went_well = [t for t in titles if t.endswith("well") or "202" in t]
        assert len(went_well) == 2 and went_well[0] != went_well[1], titles
        assert {"2023", "2024"} <= {w[w.index("202") : w.index("202") + 4] for w in went_well if "202" in w}


async def test_rank_flow_titles_keep_their_last_heading_before_and_after_grading(tmp_path):
    """Two "Write quorum" sections under different first headings: the rank
    flow's title column (60x18) kept their end (``…Write quorum``) at one width and,
    once a grade badge narrowed the column, their start
    (``Replication > Wr…``). Titles are cut in the middle at every width:
    as little of the start as tells them apart, and the last heading's end."""
    from textual.widgets import DataTable

    from engine import Store, index_corpus
    from tui.browser.screens.flow import FlowScreen

    from .conftest import settle, wait_for, wait_screen

    folder = tmp_path / "notes"
    folder.mkdir()
    for name, top in (("replication", "Replication"), ("consistency", "Consistency levels and their trade-offs")):
        (folder / f"{name}.md").write_text(
            f"# {top}\n\n## Write quorum\n\nA write quorum of two replicas acknowledges each write.\n"
        )
    store = Store.create(tmp_path / "s.db")
    index_corpus(store, folder)

    def quorum_titles(screen) -> list[str]:
        table = screen.query_one(DataTable)
        titles = [str(table.get_row_at(r)[1]).removeprefix("★2").strip() for r in range(table.row_count)]
        return [t for t in titles if t.startswith(("R", "C", "…"))]

    async with browsing((60, 18), "write quorum", store=store, store_label="notes") as (app, pilot):
        await press(pilot, "f5")
        screen = await wait_screen(pilot, FlowScreen, focused=False)
        await settle(pilot)
        before = quorum_titles(screen)
        await press(pilot, "2")
        await wait_for(pilot, lambda: app.browser.judged is not None and app.browser.judged.grades, what="the grade")
        await settle(pilot)
        after = quorum_titles(screen)
        for titles in (before, after):
            assert len(titles) == 2 and titles[0] != titles[1], titles
            assert all(t.endswith("quorum") for t in titles), (before, after)
        assert before != after  # the column narrowed


def test_look_alike_titles_keep_their_last_heading_at_every_width():
    from tui.present.cut import ELLIPSIS, distinct_cuts

    a, b = "Replication > Write quorum", "Consistency levels > Write quorum"
    for width in range(4, 40):
        cuts = distinct_cuts([a, b], width)
        assert cuts[a] != cuts[b] and max(len(cuts[a]), len(cuts[b])) <= width, (width, cuts)
        for title, cut in cuts.items():
            end = cut.rsplit(ELLIPSIS, 1)[-1]
            assert end and title.endswith(end), (width, cut)


@pytest.mark.parametrize(
    "size, no_color", [((80, 24), False), ((80, 24), True), ((60, 18), False)], ids=["80x24", "80x24-NO_COLOR", "60x18"]
)
async def test_the_first_screen_says_what_to_try_in_one_line_and_fits(size, no_color, monkeypatch):
    """Issue 24, item 4: the first screen says in one line what to try (type,
    the rank flow's key, the key list's key: from the action table), and
    the whole welcome text shows without scrolling at 80x24 and 60x18; at
    80 columns, with NO_COLOR too, no line of it is cut and the footer
    cuts no key. (The text needed scrolling at 60x18 and named no F5.)"""
    from tui.browser.actions import key_shown

    from .conftest import query_input, screen_lines

    if no_color:
        monkeypatch.setenv("NO_COLOR", "1")  # read when the app is built
    else:
        monkeypatch.delenv("NO_COLOR", raising=False)
    async with browsing(size) as (app, pilot):
        await wait_for(pilot, lambda: query_input(app) is not None and app.focused is query_input(app))
        await rendered(pilot)
        assert app.no_color == no_color
        browser = app.browser
        box = browser.results.note_scroll
        assert box.max_scroll_y == 0, "the welcome text scrolls"
        lines = screen_lines(app)
        one = f"Type a query · {key_shown('rank-flow')} shows its rank flow · {key_shown('help')} the keys"
        assert any(one in line for line in lines), lines
        shown = " ".join(line.strip(" │") for line in lines)
        assert " ".join(browser.welcome_text().plain.split()) in " ".join(shown.split())  # all of it, in order
        assert "…" not in "".join(line for line in lines if "│" in line)
        assert cut_footer_keys(app.screen) == []


@pytest.mark.parametrize("key", ["f5", "f7", "f8", "f9"])
async def test_after_a_lab_screen_r_s_j_show_panes_not_typed_into_the_query(key):
    """Issue 24: a query typed, F5 (the first screen says so), Esc, then s:
    the s was typed into the query box (focus went back there) and searched
    "caches". A lab screen looks at the results: closing it puts the focus
    on the pane shown, as ↓ does."""
    async with browsing(NARROW, "cache") as (app, pilot):
        browser = app.browser
        assert app.focused is browser.query_box.input
        await press(pilot, key)
        await wait_for(pilot, lambda: app.screen is not browser)
        await press(pilot, "escape")
        await wait_for(pilot, lambda: app.screen is browser and app.focused is browser.results.table)
        await press(pilot, "s")
        await wait_for(pilot, lambda: app.focused is browser.inspector)
        await press(pilot, "j")
        await wait_for(pilot, lambda: app.focused is browser.journey)
        assert browser.query_box.value == "cache"
