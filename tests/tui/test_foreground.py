"""The browser's background work yields to its searches (:class:`tui.browser.screens.work.Foreground`)."""

from __future__ import annotations

import threading
import time

from tui.browser.screens.work import Foreground


def test_wait_blocks_while_foreground_work_runs():
    fg = Foreground(settle_s=0.0)
    assert fg.wait(0)  # nothing runs
    started, finish = threading.Event(), threading.Event()

    def search() -> None:
        with fg.running():
            started.set()
            finish.wait(10)

    t = threading.Thread(target=search)
    t.start()
    assert started.wait(10)
    assert not fg.wait(0.05)  # a search runs: the background waits (here, until the timeout)
    released: list[bool] = []
    waiter = threading.Thread(target=lambda: released.append(fg.wait(10)))
    waiter.start()
    finish.set()
    t.join(10)
    waiter.join(10)
    assert released == [True] and fg.wait(0)


def test_a_failing_search_still_releases():
    fg = Foreground(settle_s=0.0)
    try:
        with fg.running():
            raise RuntimeError("boom")
    except RuntimeError:
        pass
    assert fg.wait(0)


def test_background_resumes_only_once_the_foreground_has_settled():
    """After a search ends its results are being shown: the background waits
    ``settle_s`` more before it resumes."""
    fg = Foreground(settle_s=0.2)
    with fg.running():
        pass
    ended = time.monotonic()
    assert not fg.wait(0.05)
    assert fg.wait(5)
    assert time.monotonic() - ended >= 0.2


def test_a_touch_holds_the_background_for_the_settling_time():
    """A key typed into the query marks the foreground busy (its search
    follows the debounce): the background steps aside from then on."""
    fg = Foreground(settle_s=0.2)
    assert fg.wait(0)
    fg.touch()
    touched = time.monotonic()
    assert not fg.wait(0.05)
    assert fg.wait(5)
    assert time.monotonic() - touched >= 0.2


async def test_typing_into_the_query_makes_the_warm_up_step_aside(monkeypatch):
    """Every keystroke, not only the debounced search, holds the browser's
    background warm-up (it shares the interpreter with the typing and the
    search that follows). No search runs here: the debounce outlasts the test."""
    import tui.browser.widgets.query_box as query_box

    from .conftest import build_app, type_text, wait_for

    monkeypatch.setattr(query_box, "DEBOUNCE_S", 600.0)
    app = build_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.browser is not None and app.focused is not None)
        browser = app.browser
        browser.searching.settle_s = 30.0  # a settling time no test run outlasts
        assert browser.searching.wait(0)
        await type_text(pilot, "c")
        await wait_for(pilot, lambda: not browser.searching.wait(0))
        assert browser.trace is None  # no search ran: the keystroke alone
