"""Fixtures and helpers for the browser tests: a fixed small corpus in a
fresh store, an app built with the same factory the CLI uses, and ways to
drive it with Pilot that wait on conditions, never on time.

* :func:`press` sends keys one at a time (each handled before the next),
  :func:`send_keys` sends a burst, :func:`type_text` types into the focused
  input and waits until it shows the text;
* :func:`wait_for` polls a condition with a deadline; :func:`wait_screen`
  waits for a screen; :func:`settle` for searches and workers to finish and
  be painted; :func:`processed` is a message barrier for checks that
  something did *not* happen; :func:`rendered` waits for the screen's refresh;
* :func:`notifications` lists what the app notified (recorded through the
  public ``App.notify``).

Only public Textual API is used (``call_later``, ``post_message``,
``events.Key``, ``Screen.wait_for_refresh``, ``app.workers``, queries).
"""

from __future__ import annotations

import asyncio
import inspect
import time
import unicodedata
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from textual import events
from textual.keys import ASCII_KEY_NAMES, KEY_NAME_REPLACEMENTS, REPLACED_KEYS, key_to_character
from textual.notifications import Notification

from ..conftest import PARITY

#: The parity corpus (24 files, 129 chunks, sessions sess-A/B/C/D), vendored in tests/golden.
CORPUS = PARITY / "stages" / "corpus"


_TEMPLATE = []


def stages_store():
    """A fresh in-memory store holding the parity corpus: a byte copy (SQLite's
    backup) of one indexed once per session, so each test gets its own store
    without indexing the corpus again."""
    from engine import Store, index_corpus
    from engine.store import sql

    if not _TEMPLATE:
        template = Store.create(":memory:")
        index_corpus(template, CORPUS)
        _TEMPLATE.append(template)
    store = Store.create(":memory:")
    sql.backup(_TEMPLATE[0].conn, store.conn)
    return store


def damaged_store(path: Path, tables: tuple[str, ...], keep_first: bool = False) -> Path:
    """The parity corpus indexed into ``path``, then every page of ``tables``
    (but the first, with ``keep_first``) overwritten with junk, the way a bad
    disk block damages a file in the middle. ``("sources",)`` breaks the
    store's counts; ``("chunks_trigram_data",)`` with ``keep_first`` (its
    first page holds the index structure the table needs to open) leaves them
    readable and breaks searching."""
    import shutil
    import sqlite3

    from engine import Store, index_corpus

    clean = path.with_name(path.stem + "-clean.db")
    store = Store.create(clean)
    index_corpus(store, CORPUS)
    store.close()
    conn = sqlite3.connect(clean)
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    marks = ",".join("?" * len(tables))
    pages = [p for (p,) in conn.execute(f"SELECT pageno FROM dbstat WHERE name IN ({marks}) ORDER BY pageno", tables)]
    conn.close()
    pages = pages[1:] if keep_first else pages
    assert pages, f"no pages to damage in {tables}"
    shutil.copy(clean, path)
    with open(path, "r+b") as fh:
        for page in pages:
            fh.seek((page - 1) * page_size)
            fh.write(b"\xaa" * page_size)
    return path


def build_app(**kwargs):
    """The browser on the parity corpus, deterministic (no timings, no blink),
    its notifications recorded (:func:`notifications`)."""
    from tui.browser.app import RankscopeApp
    from tui.browser.options import AppOptions

    store = kwargs.pop("store", None) or stages_store()
    kwargs.setdefault("store_label", "stages corpus")
    kwargs.setdefault("show_timings", False)
    kwargs.setdefault("cursor_blink", False)
    return record_notifications(RankscopeApp(AppOptions(store=store, **kwargs)))


@asynccontextmanager
async def browsing(size: tuple[int, int], query: str | None = None, app=None, **kwargs) -> AsyncIterator[tuple]:
    """``(app, pilot)``: ``app`` (default: :func:`build_app` with ``kwargs``)
    running at ``size`` (columns, rows) and, given ``query``, searched for
    (:func:`search_for`)."""
    app = build_app(**kwargs) if app is None else app
    async with app.run_test(size=size) as pilot:
        if query is not None:
            await search_for(pilot, query)
        yield app, pilot


def failing_index_app(tmp_path: Path):
    """The browser started on a one-file corpus whose indexing fails (its
    store's folder is a file): the loading screen stays and an "Indexing
    failed" error is notified; notifications recorded."""
    from tui.browser.app import RankscopeApp
    from tui.browser.corpus_cache import CacheEntry
    from tui.browser.options import AppOptions

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.md").write_text("# A\n")
    blocker = tmp_path / "file"
    blocker.write_text("x")
    entry = CacheEntry(corpus, blocker / "x.db", blocker / "x.fingerprint")  # parent is a file
    return record_notifications(RankscopeApp(AppOptions(index_job=entry, store_label="corpus")))


# ── notifications ─────────────────────────────────────────────────────────


def record_notifications(app):
    """Record every ``app.notify`` call of ``app`` (Textual's public way to
    raise a notification; screens call it on the app) as a
    :class:`textual.notifications.Notification`. Returns ``app``."""
    seen: list[Notification] = []
    notify = app.notify

    def recording_notify(message, *, title="", severity="information", timeout=None, markup=True):
        seen.append(Notification(message, title, severity, 5 if timeout is None else timeout, markup))
        notify(message, title=title, severity=severity, timeout=timeout, markup=markup)

    recording_notify.seen = seen
    app.notify = recording_notify
    return app


def notifications(app) -> list[Notification]:
    """Every notification ``app`` raised so far, oldest first (expired ones included)."""
    seen = getattr(app.notify, "seen", None)
    assert seen is not None, "build the app with build_app() or pass it to record_notifications()"
    return seen


# ── waiting on conditions ────────────────────────────────────────────────
#
# No sleeps and no "wait until the CPU looks idle": a test waits for the state
# it is about to check, polling every POLL seconds, and fails after TIMEOUT
# seconds naming what it waited for. The deadline only bounds a failure; a
# passing test waits exactly as long as the app needs.

#: Longest wait for one condition (a search, an indexing run, a screen) before the test fails.
TIMEOUT = 20.0
#: Polling interval of :func:`wait_for` (seconds).
POLL = 0.005


def _describe(condition) -> str:
    try:
        return inspect.getsource(condition).strip()
    except (OSError, TypeError):
        return repr(condition)


async def wait_for(pilot, condition, *, timeout: float = TIMEOUT, what: str | None = None) -> None:
    """Return as soon as ``condition()`` is true; poll every :data:`POLL`
    seconds (the app runs in between). Raises AssertionError after
    ``timeout`` seconds, or at once if the app stopped, naming ``what``
    (default: the condition's source line)."""
    app = pilot.app
    deadline = time.monotonic() + timeout
    while not condition():
        if not app.is_running:
            raise AssertionError(f"the app stopped while waiting for {what or _describe(condition)}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what or _describe(condition)}")
        await asyncio.sleep(POLL)


async def _barrier(pilot, nodes, rounds: int, timeout: float) -> None:
    """``rounds`` times: put a callback behind the message queue of every node
    ``nodes()`` returns (``call_later``) and wait until all have run."""
    app = pilot.app
    deadline = time.monotonic() + timeout
    for _ in range(rounds):
        waiting = {}
        for node in nodes():
            done = asyncio.Event()
            if node.call_later(done.set):
                waiting[asyncio.ensure_future(done.wait())] = node
        try:
            while waiting:
                finished, _ = await asyncio.wait(waiting, timeout=0.05)
                # a widget removed meanwhile never runs its callback
                waiting = {t: node for t, node in waiting.items() if t not in finished and node.is_attached}
                if waiting and not app.is_running:
                    raise AssertionError("the app stopped while handling its queued messages")
                if waiting and time.monotonic() > deadline:
                    raise AssertionError(
                        f"timed out after {timeout:g} s waiting for {list(waiting.values())} "
                        "to handle their queued messages"
                    )
        finally:
            for task in waiting:
                task.cancel()


def _depth(app) -> int:
    focused = app.focused
    return len(focused.ancestors_with_self) if focused is not None else 2


async def processed(pilot, timeout: float = TIMEOUT) -> None:
    """A message barrier: return once the app and every widget of the current
    screen have handled the messages queued to them, and the messages those
    handlers posted in turn. Each round puts a callback behind every queue
    and waits for all of them; a message moves at least one queue per round,
    and the longest path one takes is a key going app → screen → focused
    widget, then bubbling up the focused widget's ancestors, so there are
    that many rounds, plus two. Use it before checking that something did
    *not* happen; wait for what does happen with :func:`wait_for`."""
    app = pilot.app
    await _barrier(pilot, lambda: (app, *app.screen.walk_children(with_self=True)), _depth(app) + 2, timeout)


async def key_handled(pilot, timeout: float = TIMEOUT) -> None:
    """The barrier after one key: the app, the screen on top and the focused
    widget with its ancestors (where a key and the messages it causes travel)
    have handled their queues, one round per hop. Cheaper than
    :func:`processed`, which also drains every other widget."""
    app = pilot.app

    def path():
        focused = app.focused
        chain = focused.ancestors_with_self if focused is not None else [app.screen, app]
        return (app, app.screen, *(n for n in chain if n is not app and n is not app.screen))

    await _barrier(pilot, path, _depth(app) + 2, timeout)


def _tables_sized(app) -> bool:
    from textual.widgets import DataTable

    return all(
        t.virtual_size.height >= t.row_count + (1 if t.show_header else 0)
        for t in app.screen.query(DataTable)
        if t.display and t.row_count
    )


async def rendered(pilot, timeout: float = TIMEOUT) -> None:
    """Wait until the screen on top is drawn and stays drawn: its messages
    handled, no layout or repaint outstanding (``Screen.wait_for_refresh``),
    every data table's rows sized (a table measured later paints blank), and
    two composited frames in a row (:func:`screen_strips`, what
    ``App.export_screenshot`` draws, without its SVG: a tenth of the cost)
    identical, since painting can queue more work (a table sizes its rows on
    idle, then repaints)."""
    await wait_for(pilot, lambda: _tables_sized(pilot.app), timeout=timeout, what="the data tables to size their rows")
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    previous = None
    while True:
        await processed(pilot, timeout=timeout)
        try:
            await asyncio.wait_for(pilot.app.screen.wait_for_refresh(), timeout)
        except asyncio.TimeoutError:
            raise AssertionError(f"timed out after {timeout:g} s waiting for the screen to refresh") from None
        shot = [list(line) for line in screen_strips(pilot.app)]
        if shot == previous:
            return
        if loop.time() > deadline:
            raise AssertionError(f"the screen kept changing for {timeout:g} s")
        previous = shot


def key_event(key: str) -> events.Key:
    """The :class:`~textual.events.Key` a terminal sends for ``key``: a single
    character types itself (named as Textual's driver names it: ``/`` is
    ``slash``, `` `` is ``space``); a longer string is a key name
    (``enter``, ``ctrl+l``, ``shift+tab``, ``slash``)."""
    if len(key) == 1:
        char = key
        if char.isalnum():
            name = char
        else:
            try:
                name = unicodedata.name(char).lower().replace("-", "_").replace(" ", "_")
            except ValueError:
                name = ASCII_KEY_NAMES.get(char, char)
            name = KEY_NAME_REPLACEMENTS.get(name, name)
        return events.Key(name, char)
    return events.Key(key, key_to_character(REPLACED_KEYS.get(key, key)))  # slash → solidus → /


def send_keys(pilot, *keys: str) -> None:
    """Post ``keys`` to the app back to back, as a terminal delivers a burst
    (a paste, a fast typist, tmux send-keys); does not wait."""
    app = pilot.app
    for key in keys:
        event = key_event(key)
        event.set_sender(app)
        app.post_message(event)


async def focus_left_the_query(pilot) -> None:
    """A lab screen opened from the query box closed: once the browser is
    back on top, focus is on the pane ↓ goes to (``r`` / ``s`` / ``j``
    typed next are not typed into the query), and stays there."""
    app = pilot.app
    browser = app.browser
    await wait_for(pilot, lambda: app.screen is browser and app.focused is browser.pane_widget(browser.leave_target()))
    await settle(pilot)
    assert app.focused is browser.pane_widget(browser.leave_target())


async def press(pilot, *keys: str) -> None:
    """Press ``keys`` one at a time; each is handled (:func:`key_handled`)
    before the next is sent, as with a person at the keyboard."""
    for key in keys:
        send_keys(pilot, key)
        await key_handled(pilot)


async def type_text(pilot, text: str) -> None:
    """Type ``text`` into the focused :class:`~textual.widgets.Input` in one
    burst of key events, then wait until the input shows it (replacing the
    selected text, as typing does)."""
    from textual.widgets import Input

    field = pilot.app.focused
    assert isinstance(field, Input), f"typing needs a focused Input, not {field!r}"
    start, end = sorted(field.selection)
    expected = field.value[:start] + text + field.value[end:]
    send_keys(pilot, *text)
    await wait_for(pilot, lambda: field.value == expected, what=f"{field!r} to read {expected!r}")


async def wait_screen(pilot, cls, *, focused: bool = True, timeout: float = TIMEOUT):
    """Wait until a ``cls`` screen is on top and mounted and (``focused``)
    holds the focus it gives itself on mount; returns it."""
    app = pilot.app

    def ready() -> bool:
        screen = app.screen
        if not isinstance(screen, cls) or not screen.is_mounted:
            return False
        return not focused or (app.focused is not None and app.focused.screen is screen)

    await wait_for(
        pilot, ready, timeout=timeout, what=f"a {cls.__name__} on top" + (" with the focus" if focused else "")
    )
    return app.screen


def _searches_shown(app) -> bool:
    browser = app.browser
    return browser is None or browser._shown_seq >= browser._seq


async def settle(pilot) -> None:
    """Wait until every queued message is handled, every worker (search,
    compare, indexing) has finished, the browser shows its latest search, and
    the screen has painted it (:func:`rendered`)."""
    app = pilot.app
    for _ in range(2):  # handling a result can start more work (a lab screen follows the browser)
        await processed(pilot)
        await wait_for(
            pilot,
            lambda: all(w.is_finished for w in app.workers) and _searches_shown(app),
            what="the searches to finish and be shown",
        )
    await rendered(pilot)


def query_input(app):
    """The browser's query input once it is mounted, else None."""
    browser = app.browser
    found = browser.query("#query") if browser is not None else None
    return found.first() if found and found.first().is_mounted else None


async def search_for(pilot, text: str) -> None:
    """Replace the query with ``text`` by typing it, press Enter, wait until
    its search is shown."""
    app = pilot.app
    await wait_for(pilot, lambda: query_input(app) is not None, what="the browser's query box")
    await press(pilot, "ctrl+l")
    await wait_for(pilot, lambda: app.focused is app.browser.query_box.input, what="the query box to have focus")
    if text:
        await type_text(pilot, text)
    else:
        await press(pilot, "backspace")
    await press(pilot, "enter")
    await settle(pilot)
    assert app.browser.trace is None or app.browser.trace.params.query == text


def _palette_ready(app, typed: str) -> bool:
    """The command palette is open, shows ``typed`` and has finished
    gathering its matches (its worker is done, the first hit is highlighted)."""
    from textual.command import CommandInput, CommandList, CommandPalette

    palette = app.screen
    if not isinstance(palette, CommandPalette):
        return False
    if palette.query_one(CommandInput).value != typed:
        return False
    if any(w.node is palette and not w.is_finished for w in app.workers):
        return False
    return palette.query_one(CommandList).highlighted is not None


async def run_command(pilot, typed: str) -> None:
    """Open the command palette, type ``typed``, wait for its matches, press Enter."""
    from textual.command import CommandPalette

    app = pilot.app
    await press(pilot, "ctrl+p")
    await wait_for(
        pilot, lambda: isinstance(app.screen, CommandPalette) and app.screen.is_mounted, what="the command palette"
    )
    await type_text(pilot, typed)
    await processed(pilot)
    await wait_for(pilot, lambda: _palette_ready(app, typed), what=f"the palette's matches for {typed!r}")
    await press(pilot, "enter")
    await wait_for(pilot, lambda: not isinstance(app.screen, CommandPalette), what="the palette to close")


@pytest.fixture
def corpus() -> Path:
    """Path of the parity corpus (vendored: never skipped)."""
    assert CORPUS.is_dir(), f"parity corpus missing at {CORPUS} (see tests/golden/README.md)"
    return CORPUS


def plain(widget) -> str:
    """The text a Static shows, rendered without styles."""
    import io

    from rich.console import Console

    console = Console(width=200, file=io.StringIO(), record=True, color_system=None)
    console.print(widget.content)
    return console.export_text()


def screen_strips(app) -> list:
    """The composited screen as the terminal receives it: one list of strips
    (Rich segments) per row, modal dialogs over the screens behind them.
    Textual has no public API for the composited frame; this reads the same
    two attributes ``App.export_screenshot`` reads, in this one place (the
    hygiene test allows it here and nowhere else)."""
    update = app.screen._compositor.render_update(full=True, screen_stack=app._background_screens)
    return list(update.strips)


def screen_lines(app) -> list[str]:
    """The screen's text, row by row, as the terminal receives it
    (:func:`screen_strips` without the control segments); each row is as wide
    as the screen."""
    from rich.cells import cell_len

    rows = []
    for line in screen_strips(app):
        text = "".join(seg.text for strip in line for seg in strip if not seg.control)
        assert cell_len(text) == app.size.width
        rows.append(text)
    return rows
