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
