"""One action table (tui.browser.actions) feeds the key bindings, the command palette
and the F1 key list: every action shows up in each with the same key, and no
binding is written by hand beside it."""

from __future__ import annotations

import io

import pytest
from rich.console import Console
from textual import actions as textual_actions
from textual.app import App
from textual.widgets import Input

from engine.store.corpus import Skip
from tui.browser.actions import ACTIONS, BINDING_OWNERS, PALETTE_KEY, Action, bindings, help_keys, palette_rows
from tui.browser.app import RankscopeApp
from tui.browser.corpus_cache import SkipList
from tui.browser.palette import RankscopeCommands
from tui.browser.screens.agent import AgentViewScreen
from tui.browser.screens.agent_log import AgentLogScreen
from tui.browser.screens.browser import BrowserScreen
from tui.browser.screens.cases import CasesScreen
from tui.browser.screens.compare import CompareScreen
from tui.browser.screens.doctor import DoctorScreen
from tui.browser.screens.flow import FlowScreen
from tui.browser.screens.help import HelpScreen, help_renderable
from tui.browser.screens.history import HistorySearchScreen
from tui.browser.screens.params import ParamsScreen
from tui.browser.screens.sessions import SessionsScreen
from tui.browser.screens.skipped import SkippedScreen
from tui.browser.screens.stores import StorePickerScreen
from tui.browser.screens.why import WhyScreen
from tui.browser.widgets.query_box import QueryInput

from .conftest import browsing, plain, press, processed, wait_screen

#: The classes whose bindings the table generates, by owner.
OWNERS = {
    "app": RankscopeApp,
    "browser": BrowserScreen,
    "query": QueryInput,
    "agent": AgentViewScreen,
    "agentlog": AgentLogScreen,
    "cases": CasesScreen,
    "why": WhyScreen,
    "flow": FlowScreen,
}
#: The screens that bind Esc themselves (owner "screens").
CLOSING_SCREENS = (
    ParamsScreen,
    SessionsScreen,
    HelpScreen,
    SkippedScreen,
    CompareScreen,
    WhyScreen,
    DoctorScreen,
    StorePickerScreen,
    AgentViewScreen,
    AgentLogScreen,
    HistorySearchScreen,
    CasesScreen,
    FlowScreen,
)
#: A dialog's own moves between its widgets, which stay on the dialog (binding ids).
DIALOG_MOVES = {"why.list"}
#: Where an action string's namespace (``screen.``, ``app.``) runs, for a key bound by each owner.
NAMESPACES = {"app": RankscopeApp, "screen": BrowserScreen}
NARROW = (80, 24)


def _own_bindings(cls) -> list:
    """The bindings ``cls`` declares itself (not inherited)."""
    return list(cls.__dict__.get("BINDINGS", []))


def _textual_binds(key: str, action: str) -> bool:
    """True when Textual itself binds ``key`` to ``action`` (the app's quit,
    the command palette, Enter in an input)."""
    if key == App.COMMAND_PALETTE_BINDING:
        return action == "command_palette" and callable(getattr(App, "action_command_palette", None))
    found = [b for b in [*App.BINDINGS, *Input.BINDINGS] if not isinstance(b, tuple) and b.key == key]
    return any(b.action == action for b in found)


def test_table_ids_are_unique_and_every_row_is_reachable():
    ids = [a.id for a in ACTIONS]
    assert len(ids) == len(set(ids))
    binding_ids = [b.id for owner in OWNERS for b in bindings(owner)]
    assert len(binding_ids) == len(set(binding_ids))
    for row in ACTIONS:
        assert row.keys or row.palette is not None, f"{row.id}: neither a key nor a palette entry"
        assert row.help and row.label and row.tooltip, row.id


def test_every_owner_with_bindings_is_checked():
    assert set(OWNERS) == set(BINDING_OWNERS)


@pytest.mark.parametrize("owner", sorted(OWNERS))
def test_bindings_are_the_tables(owner):
    """The class's own bindings are exactly the table's keys for that owner: none
    written by hand, except a dialog's own way out (Esc: the table's "close" row)."""
    own = [b for b in _own_bindings(OWNERS[owner]) if b.action != "close" and b.id not in DIALOG_MOVES]
    assert own == bindings(owner)


@pytest.mark.parametrize("row", ACTIONS, ids=lambda a: a.id)
def test_every_key_is_bound_to_its_action(row: Action):
    for key in row.keys:
        action = key.action or row.action
        if key.owner in OWNERS:
            bound = [b for b in _own_bindings(OWNERS[key.owner]) if b.key == key.key]
            # a key may run two actions, each enabled in its mode
            same_key = [
                k.action or r.action for r in ACTIONS for k in r.keys if (k.owner, k.key) == (key.owner, key.key)
            ]
            assert action in same_key and [b.action for b in bound] == same_key, (row.id, key.key)
            namespace, name, _ = textual_actions.parse(action)
            cls = NAMESPACES[namespace] if namespace else OWNERS[key.owner]
            assert callable(getattr(cls, f"action_{name}", None)), (row.id, key.key, cls.__name__, name)
        elif key.owner == "textual":
            assert _textual_binds(key.key, action), (row.id, key.key)
        else:  # every dialog and lab screen binds it itself
            for cls in CLOSING_SCREENS:
                bound = [b for b in _own_bindings(cls) if b.key == key.key]
                assert [b.action for b in bound] == [action], (cls.__name__, key.key)


@pytest.mark.parametrize("row", ACTIONS, ids=lambda a: a.id)
def test_every_action_has_a_method_where_it_runs(row: Action):
    """The palette calls ``action_<name>`` on the row's target: it must exist."""
    if row.target == "widget":
        return
    _, name, _ = textual_actions.parse(row.action)
    cls = RankscopeApp if row.target == "app" else BrowserScreen
    assert callable(getattr(cls, f"action_{name}", None)), (row.id, cls.__name__, name)


def _help_rows() -> list[tuple[str, str]]:
    """The F1 key list as shown: (key column, text) pairs of the help table,
    from its "Keys" heading on."""
    table = help_renderable()
    console = Console(width=200, file=io.StringIO(), color_system=None)

    def text(cell) -> str:
        with console.capture() as cap:
            console.print(cell, end="")
        return cap.get().strip()

    left = [text(c) for c in table.columns[0].cells]
    right = [text(c) for c in table.columns[1].cells]
    start = left.index("Keys") + 1
    return list(zip(left[start:], right[start:]))


def test_f1_lists_every_action_with_its_keys():
    shown = _help_rows()
    assert shown == list(help_keys())
    assert len(shown) == len(ACTIONS)
    for row, (keys, what) in zip(ACTIONS, shown):
        assert what == row.help
        if row.keys:
            assert keys.split("  ") == list(dict.fromkeys(k.shown for k in row.keys)), row.id  # each key once
        else:
            assert keys == PALETTE_KEY, row.id  # reached through the palette only


async def _palette_hits(app) -> dict[str, tuple[str, object]]:
    provider = RankscopeCommands(app.screen)
    return {hit.text: (hit.help, hit.command) async for hit in provider.discover()}


def _binding_for(row: Action):
    """The generated binding of the row's first key, or ``None``."""
    if not row.keys or row.keys[0].owner not in OWNERS:
        return None
    key = row.keys[0]
    return next(b for b in _own_bindings(OWNERS[key.owner]) if b.key == key.key)


async def test_palette_offers_every_palette_action_with_the_same_key():
    skipped = SkipList((Skip("logo.png", "binary file", "binary"),))
    async with browsing(NARROW, "cache", skipped=skipped) as (app, pilot):
        assert app.selected_subject() is not None  # so the "selected chunk" entry is offered
        hits = await _palette_hits(app)
        subject = app.selected_subject()
        fields = {
            "rowid": subject.rowid,
            "title": subject.title,
            "source": subject.source,
            "count": 1,
            "summary": skipped.summary(),
        }
        rows = palette_rows()
        assert {r.id for r in rows} == {r.id for r in ACTIONS if r.palette is not None}
        for row in rows:
            title = row.palette.format(**fields)
            assert title in hits, f"{row.id}: {title!r} not offered"
            help_text, command = hits[title]
            if row.keys:
                key = row.keys[0]
                assert help_text.startswith(f"{key.shown}{' ' + key.scope if key.scope else ''}: "), (row.id, help_text)
            else:
                assert not any(help_text.startswith(f"{k.shown}: ") for r in ACTIONS for k in r.keys)
            # the entry runs the same action method as the key
            _, name, params = textual_actions.parse(row.action)
            assert command.func.__name__ == f"action_{name}" and command.args == params, row.id
            target = app.browser if row.target == "browser" else app
            assert command.func.__self__ is target, row.id
            binding = _binding_for(row)
            if binding is not None:
                assert textual_actions.parse(binding.action)[1:] == (name, params), row.id


async def test_palette_hides_actions_whose_need_is_not_met():
    async with browsing(NARROW) as (app, pilot):  # no skipped files; no search yet, so no selected chunk
        await wait_screen(pilot, BrowserScreen)
        await processed(pilot)
        hits = await _palette_hits(app)
        titles = set(hits)
        for row in palette_rows():
            offered = any(t.startswith(row.palette.split("{")[0]) for t in titles)
            assert offered == (row.needs in ("", "browser")), row.id


async def test_f1_screen_shows_the_table():
    async with browsing(NARROW) as (app, pilot):
        await wait_screen(pilot, BrowserScreen)
        await press(pilot, "f1")
        await wait_screen(pilot, HelpScreen)
        text = plain(app.screen.query_one("#help-scroll Static"))
        lines = [" ".join(line.split()) for line in text.splitlines()]
        for keys, what in help_keys():
            assert any(line.startswith(" ".join(keys.split())) and line.endswith(what) for line in lines), (keys, what)
