"""Screens own their work: each starts the workers it needs and receives
their results; the app keeps only what is app-wide (no workers, no relays);
every message is a dataclass; one handler reports every worker's failure;
and the UI thread never runs an SQL statement (searching, stemming, pinning,
grading, a chunk's score and X vs Y, saving and reopening cases, the lab
screens, the agent view)."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import re
import threading
import traceback
from pathlib import Path

import apsw
import pytest
from textual.app import App
from textual.message import Message

import tui.browser.app
from engine import Store, index_corpus
from tui.browser.screens.browser import BrowserScreen
from tui.browser.screens.why import WhyScreen

from ..conftest import PLUGIN_STORE
from .conftest import (
    browsing,
    CORPUS,
    build_app,
    notifications,
    press,
    run_command,
    search_for,
    settle,
    wait_for,
    wait_screen,
)

BROWSER = Path(tui.browser.app.__file__).parent
SCREENS = BROWSER / "screens"
WIDGETS = BROWSER / "widgets"
SOURCES = sorted(SCREENS.glob("*.py")) + sorted(WIDGETS.glob("*.py"))
MODULES = sorted(BROWSER.rglob("*.py"))
NARROW = (80, 24)
WIDE = (120, 40)


def _ids(paths):
    return [f"{p.parent.name}/{p.name}" for p in paths]


@pytest.mark.parametrize("path", SOURCES, ids=_ids(SOURCES))
def test_no_screen_reaches_into_the_app_or_itself_by_name(path: Path):
    text = path.read_text("utf-8")
    bad = [
        f"{path.name}:{n}: {line.strip()}"
        for n, line in enumerate(text.splitlines(), 1)
        if re.search(r"getattr\(\s*self\b|type:\s*ignore\[[^]]*attr-defined", line)
    ]
    assert not bad, "\n".join(bad)


def _app_attributes(tree: ast.AST):
    """(line, name) of every ``self.app.NAME`` in ``tree``."""
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Attribute)
            and node.value.attr == "app"
            and isinstance(node.value.value, ast.Name)
            and node.value.value.id == "self"
        ):
            yield node.lineno, node.attr


@pytest.mark.parametrize("path", SOURCES, ids=_ids(SOURCES))
def test_screens_and_widgets_use_only_textuals_app_api(path: Path):
    """``self.app.X`` names something every Textual ``App`` has (``push_screen``,
    ``screen``...), never a rankscope app method or attribute."""
    tree = ast.parse(path.read_text("utf-8"))
    per_instance = {n for n in vars(App()) if not n.startswith("_")}  # public attributes set in __init__ (``console``)
    bad = [
        f"{path.name}:{line}: self.app.{name}"
        for line, name in _app_attributes(tree)
        if not hasattr(App, name) and name not in per_instance
    ]
    assert not bad, "\n".join(bad)


def _decorated_workers(tree: ast.AST) -> list[str]:
    return [
        node.name
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        for d in node.decorator_list
        if "work" in ast.unparse(d).split("(")[0].split(".")
    ]


def test_the_app_runs_no_worker_and_relays_nothing():
    """tui/browser/app.py holds app-wide work only: no worker, no request handled for a screen."""
    tree = ast.parse(Path(tui.browser.app.__file__).read_text("utf-8"))
    assert _decorated_workers(tree) == []
    assert "run_worker" not in ast.unparse(tree)
    handlers = sorted(
        node.name
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("on_")
    )
    # a store to browse, the compare screen's variants to keep, a recorded call to open or follow; mount and unmount;
    # every input event, as someone being there (the idle timeout)
    assert handlers == [
        "on_agent_log_screen_call_followed",
        "on_agent_log_screen_call_opened",
        "on_compare_screen_variants_chosen",
        "on_event",
        "on_mount",
        "on_store_ready",
        "on_unmount",
    ]


def _message_classes():
    for path in MODULES:
        name = ".".join(path.relative_to(BROWSER.parent.parent).with_suffix("").parts)
        module = importlib.import_module(name)
        for value in vars(module).values():
            if isinstance(value, type) and value.__module__ == name:
                yield value
                for nested in vars(value).values():
                    if isinstance(nested, type) and issubclass(nested, Message):
                        yield nested


def test_every_message_is_a_dataclass_and_none_is_a_request():
    found = [c for c in _message_classes() if issubclass(c, Message)]
    assert len(found) > 10
    for cls in found:
        assert dataclasses.is_dataclass(cls), f"{cls.__qualname__} is not a @dataclass"
        fields = {f.name for f in dataclasses.fields(cls)}
        assert not fields & {"requester", "target"}, f"{cls.__qualname__} carries who to answer: a request relay"


def test_one_handler_reports_every_worker_failure():
    """Only tui/browser/screens/work.py handles Worker.StateChanged; every
    module with a worker defines its screen on WorkScreen."""
    for path in MODULES:
        text = path.read_text("utf-8")
        if path.name != "work.py":
            assert "on_worker_state_changed" not in text and "Worker.StateChanged" not in text, path.name
        if _decorated_workers(ast.parse(text)):
            assert "(WorkScreen[" in text, f"{path.name} runs workers outside a WorkScreen"


async def test_the_why_screen_reads_the_chunk_list_once_per_store(monkeypatch):
    async with browsing(NARROW, "cache") as (app, pilot):
        store = app.browser.store
        reads = []
        real = store.iter_chunks

        def counting(*args, **kwargs):
            reads.append(threading.current_thread() is threading.main_thread())
            return real(*args, **kwargs)

        monkeypatch.setattr(store, "iter_chunks", counting)
        for _ in range(2):
            await press(pilot, "f8")
            screen = await wait_screen(pilot, WhyScreen)
            await wait_for(
                pilot, lambda screen=screen: screen.entries is not None and screen.matches, what="the chunk list"
            )
            await press(pilot, "escape")
            await wait_screen(pilot, BrowserScreen)
        assert reads == [False]  # once, in a worker


# ── the UI thread runs no SQL ────────────────────────────────────────────


@pytest.fixture
def ui_thread_statements(monkeypatch):
    """Every SQL statement run on the main (UI) thread while armed (``[0]`` set),
    with where it came from: an exec tracer on every SQLite connection opened
    (``apsw.connection_hooks``)."""
    armed = [False]
    seen: list[str] = []

    def tracer(cursor, statement, bindings):
        if armed[0] and threading.current_thread() is threading.main_thread():
            seen.append(f"{statement.strip()[:80]}\n" + "".join(traceback.format_stack(limit=14)[:-1]))
        return True

    def hook(conn):
        conn.exec_trace = tracer

    monkeypatch.setattr(apsw, "connection_hooks", [*apsw.connection_hooks, hook])
    return armed, seen


async def test_nothing_runs_sql_on_the_ui_thread(tmp_path, ui_thread_statements):
    armed, seen = ui_thread_statements
    path = tmp_path / "corpus.db"
    with Store.create(path) as store:
        index_corpus(store, CORPUS)
    app = build_app(store=Store.open_readonly(path), store_label="corpus")
    armed[0] = True
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)  # the store's counts, read by the browser's worker
        await search_for(pilot, "cachng")  # the fuzzy fallback
        await search_for(pilot, "caching")  # the search, its stems and chunk ids
        browser = app.browser
        await press(pilot, "down", "p")  # pin the top result: its fate in a worker
        await settle(pilot)
        await press(pilot, "3")  # grade it: chunk ids as the search found them
        await wait_for(
            pilot,
            lambda: browser.judged is not None and browser.judged.grades,
            what=f"the grade ({[n.message for n in notifications(app)]})",
        )
        await press(pilot, "v", "down")  # X vs Y: both scores, the deciding stage, the change that flips them
        await wait_for(pilot, lambda: browser.query_one("#journey-versus").display, what="X vs Y")
        await settle(pilot)
        assert browser.anatomy is not None and browser.anatomy.rowid != browser.versus_rowid
        await run_command(pilot, "save this case")
        await settle(pilot)
        await press(pilot, "f5")  # the rank flow: grade from there
        await wait_for(pilot, lambda: type(app.screen).__name__ == "FlowScreen", what="the rank flow")
        await press(pilot, "2", "escape")
        await settle(pilot)
        for key in ("f7", "f8", "f9", "f12"):  # compare, why not?, doctor, the agent view
            await press(pilot, key)
            await wait_for(pilot, lambda: app.screen is not browser, what=f"the screen of {key}")
            await settle(pilot)
            await press(pilot, "escape")
            await wait_for(pilot, lambda: app.screen is browser, what="the browser")
        await run_command(pilot, "saved cases")
        await settle(pilot)
        await press(pilot, "enter")  # reopen the case: its pinned chunk found by id
        await settle(pilot)
        assert browser.pinned_rowid is not None
        armed[0] = False  # closing the store on exit is not a UI-thread query
    assert not seen, "SQL ran on the UI thread:\n\n" + "\n\n".join(seen[:3])


async def test_the_live_agent_log_runs_no_sql_on_the_ui_thread(tmp_path, ui_thread_statements):
    """The agent log follows the session DB, replays each new call on the
    store and, following, opens it (the agent view, the browser's search):
    all in workers."""
    import asyncio
    import shutil

    from tui.browser.screens.agent import AgentViewScreen
    from tui.browser.screens.agent_log import AgentLogScreen

    from ..conftest import SESSION_DB
    from ..helpers import append_call

    armed, seen = ui_thread_statements
    db = tmp_path / "session.db"
    shutil.copyfile(SESSION_DB, db)
    store = Store.open_readonly(PLUGIN_STORE)
    app = build_app(store=store, store_label="P01", session_db=str(db))
    armed[0] = True
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        await run_command(pilot, "Agent log")
        await wait_for(pilot, lambda: isinstance(app.screen, AgentLogScreen) and app.screen.replays, what="the log")
        log = app.screen
        await press(pilot, "f")
        await asyncio.to_thread(append_call, db)
        await wait_for(
            pilot,
            lambda: isinstance(app.screen, AgentViewScreen) and app.screen.trace is not None,
            what="the followed call's agent view",
        )
        await wait_for(  # all but the log's own, which follows the file until it closes
            pilot,
            lambda: all(w.is_finished for w in app.workers if w.group != "agent-log") and app.browser.trace,
            what="the agent view's and the browser's work",
        )
        assert len(log.replays) == 14 and app.browser.params.query == "sextant"
        armed[0] = False
    assert not seen, "SQL ran on the UI thread:\n\n" + "\n\n".join(seen[:3])


async def test_the_guard_sees_a_query_on_the_ui_thread(tmp_path, ui_thread_statements):
    """The guard itself: a statement on the main thread is caught."""
    armed, seen = ui_thread_statements
    path = tmp_path / "corpus.db"
    with Store.create(path) as store:
        index_corpus(store, CORPUS)
    with Store.open_readonly(path) as store:
        armed[0] = True
        store.stats()
        armed[0] = False
    assert seen and "SELECT" in seen[0].upper()
