"""The score's anatomy and X versus Y in the browser (issue 21): the journey
and the stage inspector show the selected chunk's bm25 phrase by phrase,
computed in a worker; ``v`` marks a chunk and the journey of another one
says which stage put one above the other, and the change that would flip
them; the rank flow's detail line names what holds the row at its place."""

from __future__ import annotations

import threading

import pytest

import engine.lab.explain
from engine import SearchParams
from engine.lab.explain import decide, explain_chunk, explained_run
from tui.browser.actions import ACTION_BY_ID, help_keys, palette_rows
from tui.browser.screens.flow import FlowScreen

from .conftest import (
    browsing,
    plain,
    press,
    processed,
    query_input,
    search_for,
    settle,
    type_text,
    wait_for,
    wait_screen,
)

WIDE = (120, 40)
NARROW = (80, 24)


@pytest.fixture
def held_scores(monkeypatch):
    """The score's worker waits in :func:`engine.lab.explain.explain_chunk`
    until the test sets ``release`` (``entered`` is set once it is there);
    released at the end whatever happens, so the worker thread ends."""
    entered, release = threading.Event(), threading.Event()
    real = engine.lab.explain.explain_chunk

    def held(*args, **kwargs):
        entered.set()
        release.wait(30)
        return real(*args, **kwargs)

    monkeypatch.setattr(engine.lab.explain, "explain_chunk", held)
    yield entered, release
    release.set()


async def search_shown(pilot, text: str) -> None:
    """Search ``text`` and wait until its trace is shown, and only that (the
    score's worker may still run: :func:`search_for` waits for every worker)."""
    app = pilot.app
    await wait_for(pilot, lambda: query_input(app) is not None, what="the browser's query box")
    await press(pilot, "ctrl+l")
    await wait_for(pilot, lambda: app.focused is app.browser.query_box.input)
    await type_text(pilot, text)
    await press(pilot, "enter")
    browser = app.browser
    await wait_for(
        pilot,
        lambda: browser._shown_seq >= browser._seq and browser.trace is not None and browser.trace.params.query == text,
        what=f"the search for {text!r} shown",
    )


def _score(browser) -> str:
    return plain(browser.query_one("#journey-score"))


def _versus(browser) -> str:
    return plain(browser.query_one("#journey-versus"))


def inspector_text(browser) -> str:
    ins = browser.inspector
    return "\n".join(str(ins.get_option_at_index(i).prompt) for i in range(ins.option_count))


@pytest.mark.parametrize("size", [NARROW, WIDE], ids=["80x24", "120x40"])
async def test_the_journey_and_the_inspector_show_the_selected_chunks_score(size):
    async with browsing(size, "cache") as (app, pilot):
        browser = app.browser
        await wait_for(pilot, lambda: browser.anatomy is not None, what="the score worker")
        await processed(pilot)
        top = browser.trace.final[0].candidate.rowid
        want = explain_chunk(browser.store, browser.trace, top)
        assert browser.anatomy == want
        score = _score(browser)
        for r in want.retrievers:
            assert f"bm25 {r.bm25:.6f}" in score and "(the parts add up to it exactly)" in score
            for p in r.phrases:
                assert f"{p.part:.4f}" in score
        # the inspector: the parts under the chunk's retriever rows
        text = inspector_text(browser)
        porter = want.retriever("porter")
        assert f"= {porter.phrases[0].phrase} {porter.phrases[0].part:.4f} (title" in text


async def test_the_score_is_not_on_the_searchs_path(held_scores):
    """The search is shown, and the browser answers keys, while the score is
    still being read (in its own worker, after the search); then it comes."""
    entered, release = held_scores
    async with browsing(NARROW) as (app, pilot):
        await search_shown(pilot, "cache")
        browser = app.browser
        await wait_for(pilot, lambda: entered.is_set(), what="the score's worker")
        assert browser.trace is not None and browser.trace.final and browser.anatomy is None
        assert "Score: reading its phrases" in _score(browser)
        assert browser.trace.first.path(browser.trace.final[0].candidate.rowid) is not None
        await press(pilot, "down")  # the UI answers meanwhile
        await wait_for(pilot, lambda: app.focused is browser.results.table)
        await press(pilot, "s")
        await wait_for(pilot, lambda: browser.pane == "stages")
        assert browser.anatomy is None and not release.is_set()
        release.set()
        await wait_for(pilot, lambda: browser.anatomy is not None, what="the score once released")
        assert browser.anatomy.rowid == browser.trace.final[0].candidate.rowid


async def test_a_score_read_for_a_search_replaced_by_an_empty_one_is_dropped(held_scores):
    """A search with no result clears the journey: the score still being
    read for the previous search's top chunk never shows up there."""
    entered, release = held_scores
    async with browsing(NARROW) as (app, pilot):
        await search_shown(pilot, "cache")
        browser = app.browser
        await wait_for(pilot, lambda: entered.is_set(), what="the score's worker")
        await search_shown(pilot, "deployment")  # no result
        assert not browser.trace.final and browser.journey.subject is None
        release.set()
        await settle(pilot)
        assert browser.anatomy is None
        assert not browser.query_one("#journey-score").display
        assert "(the parts add up to it exactly)" not in inspector_text(browser)


async def test_a_newer_selection_wins_and_the_score_follows_it():
    async with browsing(WIDE, "cache") as (app, pilot):
        browser = app.browser
        await press(pilot, "down")
        await wait_for(pilot, lambda: app.focused is browser.results.table)
        await press(pilot, "down", "down", "up")  # three selections in a row: the last one is shown
        second = browser.trace.final[1].candidate.rowid
        await wait_for(pilot, lambda: browser.anatomy is not None and browser.anatomy.rowid == second)
        await settle(pilot)
        assert browser.anatomy.rowid == browser.journey.subject.rowid == second


async def test_v_marks_a_chunk_and_the_journey_of_another_says_why_one_is_above():
    async with browsing(WIDE, "cache") as (app, pilot):
        browser = app.browser
        first, second = (r.candidate.rowid for r in browser.trace.final[:2])
        await press(pilot, "down")
        await wait_for(pilot, lambda: app.focused is browser.results.table)
        await press(pilot, "v")
        assert browser.versus_rowid == first
        assert f"v: versus row {first}" in browser.journey.border_subtitle
        await press(pilot, "down")
        await wait_for(pilot, lambda: browser.journey.subject.rowid == second)
        await settle(pilot)
        trace = browser.trace
        x, y = (explain_chunk(browser.store, trace, r) for r in (second, first))
        d = decide(explained_run(trace), x, y)
        text = _versus(browser)
        assert f"Versus row {first}" in text
        assert f"row {d.above} is above row {d.below} · decided at Fusion (RRF)" in text
        assert "proven by re-running" in text or "No single change" in text
        # the mark does not compare a chunk with itself
        await press(pilot, "up")
        await wait_for(pilot, lambda: browser.journey.subject.rowid == first)
        await settle(pilot)
        assert not browser.query_one("#journey-versus").display
        # v on the marked chunk unmarks it
        await press(pilot, "v")
        assert browser.versus_rowid is None and "versus" not in browser.journey.border_subtitle


async def test_v_without_a_selection_says_what_to_do():
    async with browsing(NARROW) as (app, pilot):
        await search_for(pilot, "deployment")  # no result: nothing is selected
        browser = app.browser
        await press(pilot, "down")
        await processed(pilot)
        browser.action_mark_versus()
        await processed(pilot)
        assert browser.versus_rowid is None


async def test_the_rank_flow_names_what_holds_the_row_in_place():
    async with browsing(NARROW, "cache", params=SearchParams("", limit=3)) as (app, pilot):
        await press(pilot, "f5")
        screen = await wait_screen(pilot, FlowScreen)
        await press(pilot, "down")
        await processed(pilot)
        detail = " ".join(plain(screen.query_one("#flow-detail")).split())
        # row 92 (#2): under row 17 by fusion, over row 91 by the rerank; the numbers in the text below
        assert "#2 in the answer: under row 17 (fusion), over row 91 (rerank)" in detail
        text = " ".join(plain(screen.query_one("#flow-text")).split())
        assert "why #2: under row 17 by Fusion (RRF) (fused" in text and "over row 91 by Rerank (boost" in text


def test_the_key_is_in_the_action_table():
    row = ACTION_BY_ID["versus"]
    assert [k.key for k in row.keys] == ["v"] and row.keys[0].owner == "browser"
    assert row in palette_rows() and row.needs == "subject"
    assert any(key == "v" and "X vs Y" in text for key, text in help_keys())
