"""Screens post request messages that the app handles: no screen calls an
app method by name or reads the app's attributes (they get what they need
when they are built)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from textual.app import App
from textual.message import Message

import tui.browser.messages
from tui.browser.app import RankscopeApp
from tui.browser.screens.browser import BrowserScreen
from tui.browser.screens.why import WhyScreen

from .conftest import build_app, press, search_for, wait_for, wait_screen

SCREENS = Path(tui.browser.messages.__file__).parent / "screens"
WIDGETS = Path(tui.browser.messages.__file__).parent / "widgets"
SOURCES = sorted(SCREENS.glob("*.py")) + sorted(WIDGETS.glob("*.py"))
NARROW = (80, 24)


def _ids(paths):
    return [f"{p.parent.name}/{p.name}" for p in paths]


@pytest.mark.parametrize("path", sorted(SCREENS.glob("*.py")), ids=_ids(sorted(SCREENS.glob("*.py"))))
def test_no_screen_reaches_into_the_app(path: Path):
    text = path.read_text("utf-8")
    bad = [
        f"{path.name}:{n}: {line.strip()}"
        for n, line in enumerate(text.splitlines(), 1)
        if re.search(r"getattr\(\s*self\.app\b|type:\s*ignore\[[^]]*attr-defined", line)
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
    """``self.app.X`` names something every Textual ``App`` has (``post_message``,
    ``push_screen``, ``notify``...), never a rankscope app method or attribute."""
    tree = ast.parse(path.read_text("utf-8"))
    per_instance = {n for n in vars(App()) if not n.startswith("_")}  # public attributes set in __init__ (``console``)
    bad = [
        f"{path.name}:{line}: self.app.{name}"
        for line, name in _app_attributes(tree)
        if not hasattr(App, name) and name not in per_instance
    ]
    assert not bad, "\n".join(bad)


def _posted_to_app() -> dict[str, list[str]]:
    """Message class name → where a screen posts it to the app (``self.app.post_message(X(...))``)."""
    out: dict[str, list[str]] = {}
    for path in sorted(SCREENS.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "post_message"
                and isinstance(node.func.value, ast.Attribute)
                and node.func.value.attr == "app"
                and node.args
                and isinstance(node.args[0], ast.Call)
                and isinstance(node.args[0].func, ast.Name)
            ):
                out.setdefault(node.args[0].func.id, []).append(f"{path.name}:{node.lineno}")
    return out


def test_every_request_a_screen_posts_is_handled_by_the_app():
    posted = _posted_to_app()
    assert {
        "RunSearch",
        "RunCompare",
        "ExplainChunk",
        "LoadChunks",
        "FindChunks",
        "Diagnose",
        "IndexFolder",
        "DiscoverStores",
        "ApplyParams",
        "VariantsChosen",
        "RunAgentView",
        "LoadAgentLog",
        "OpenRecordedCall",
    } <= set(posted)
    for name, where in posted.items():
        cls = getattr(tui.browser.messages, name, None)
        assert isinstance(cls, type) and issubclass(cls, Message), (
            f"{name} ({where}) is not a tui.browser.messages message"
        )
        assert callable(getattr(RankscopeApp, cls.handler_name, None)), f"{name} ({where}): no {cls.handler_name}"


def test_every_request_class_has_a_handler():
    requests = [
        c
        for c in vars(tui.browser.messages).values()
        if isinstance(c, type) and issubclass(c, tui.browser.messages.Request) and c is not tui.browser.messages.Request
    ]
    assert requests
    for cls in requests:
        assert callable(getattr(RankscopeApp, cls.handler_name, None)), cls.__name__


async def test_the_why_screen_reads_the_chunk_list_once_per_store():
    """The app answers a second LoadChunks from what it kept, without a worker."""
    app = build_app()
    loads = []
    real = app.load_chunks

    def counting(target):
        loads.append(target)
        return real(target)

    app.load_chunks = counting  # type: ignore[method-assign]
    async with app.run_test(size=NARROW) as pilot:
        await search_for(pilot, "cache")
        for _ in range(2):
            await press(pilot, "f8")
            screen = await wait_screen(pilot, WhyScreen)
            await wait_for(
                pilot, lambda screen=screen: screen.entries is not None and screen.matches, what="the chunk list"
            )
            assert screen.entries and screen.matches
            await press(pilot, "escape")
            await wait_screen(pilot, BrowserScreen)
        assert len(loads) == 1
