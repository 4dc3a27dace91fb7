"""The browser tests wait on conditions, never on time, and use only Textual's
public API (issue 8, item 6): a guard over the source of every
``tests/tui/*.py``.

Refused, outside :data:`ALLOWED_WAITS`:

* fixed pauses: ``pilot.pause(...)`` (with or without a delay; also as
  ``self.pilot.pause``), ``asyncio.sleep`` and ``time.sleep`` (also imported
  bare as ``sleep`` or through a module alias);
* ``pilot.press(...)``: it waits until the CPU looks idle after each key; use
  :func:`conftest.press` (a message barrier) or :func:`conftest.send_keys`;
* private names of Textual (and of Rich, which it draws with): importing a
  private module or name (``from textual._wait import ...``,
  ``from textual.widgets._footer import ...``, ``from textual.app import
  _x``), and reading or writing an attribute whose name is private to them
  (``app._notifications``, ``app._driver``, ``option_list._options``),
  directly or through ``getattr``/``setattr``/``hasattr``. The private names
  are collected from the installed packages' source, so a new one is caught
  without editing this file.

rankscope's own private attributes (``BrowserScreen._seq``) are not
Textual's and stay readable, unless one is named like a Textual private
(then rename it). Wait with :func:`conftest.wait_for`, :func:`conftest.processed`,
:func:`conftest.settle`, :func:`conftest.wait_screen`, :func:`conftest.rendered`;
read notifications with :func:`conftest.notifications`.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest
import rich
import textual

HERE = Path(__file__).parent
SOURCES = sorted(HERE.glob("*.py"))

#: (file name, enclosing function) → the timed waits it may make, and why.
ALLOWED_WAITS: dict[tuple[str, str], tuple[frozenset[str], str]] = {
    ("conftest.py", "wait_for"): (
        frozenset({"asyncio.sleep"}),
        "the condition poll itself: yields to the app between checks, bounded by a deadline",
    ),
    ("conftest.py", "screen_strips"): (
        frozenset({"._compositor", "._background_screens"}),
        "the composited frame (text and styles per cell, for contrast and wording checks): Textual has no public "
        "API for it; App.export_screenshot reads the same two attributes",
    ),
    ("test_browser.py", "test_search_as_you_type_is_debounced"): (
        frozenset({"asyncio.sleep"}),
        "types at a fixed cadence (20 keys a second) on purpose: the debounce is about time between keys",
    ),
}

#: Calls that wait a fixed time, by dotted name.
SLEEPS = {"asyncio.sleep", "time.sleep"}
#: Packages whose private names tests must not touch.
PRIVATE_OWNERS = (textual, rich)


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


@functools.cache
def private_names() -> frozenset[str]:
    """Every private name Textual and Rich define: attributes set on
    ``self``/``cls``, class-body and module-level functions, classes and
    assignments, across their installed source."""
    names: set[str] = set()
    for package in PRIVATE_OWNERS:
        for path in Path(package.__file__).parent.rglob("*.py"):
            tree = ast.parse(path.read_text("utf-8"))
            for node in ast.walk(tree):
                if (
                    isinstance(node, ast.Attribute)
                    and isinstance(node.ctx, ast.Store)
                    and isinstance(node.value, ast.Name)
                    and node.value.id in ("self", "cls")
                ):
                    names.add(node.attr)
                elif isinstance(node, (ast.Module, ast.ClassDef)):
                    for item in node.body:
                        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                            names.add(item.name)
                        elif isinstance(item, ast.Assign):
                            names.update(t.id for t in item.targets if isinstance(t, ast.Name))
                        elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                            names.add(item.target.id)
    return frozenset(n for n in names if _is_private(n))


def _dotted(node: ast.AST) -> str | None:
    """``a.b.c`` for a chain of names and attributes, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def _private_module(module: str) -> bool:
    parts = module.split(".")
    return parts[0] in {p.__name__ for p in PRIVATE_OWNERS} and any(_is_private(p) for p in parts[1:])


class _Scanner(ast.NodeVisitor):
    """Collects ``(line, function, what)`` for every refused construct."""

    def __init__(self) -> None:
        self.found: list[tuple[int, str, str]] = []
        self.function = "<module>"
        self.sleep_aliases: dict[str, str] = {}  # bare name → "asyncio.sleep" / "time.sleep"

    def _report(self, node: ast.AST, what: str) -> None:
        self.found.append((node.lineno, self.function, what))

    def _visit_function(self, node) -> None:
        outer, self.function = self.function, node.name
        self.generic_visit(node)
        self.function = outer

    visit_FunctionDef = visit_AsyncFunctionDef = _visit_function

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if _private_module(alias.name):
                self._report(node, f"import {alias.name}")
            if alias.name in ("asyncio", "time") and alias.asname:
                self.sleep_aliases[f"{alias.asname}.sleep"] = f"{alias.name}.sleep"
        self.generic_visit(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        if _private_module(module):
            self._report(node, f"from {module} import ...")
        elif module.split(".")[0] in {p.__name__ for p in PRIVATE_OWNERS}:
            for alias in node.names:
                if _is_private(alias.name):
                    self._report(node, f"from {module} import {alias.name}")
        if module in ("asyncio", "time"):
            for alias in node.names:
                if alias.name == "sleep":
                    self.sleep_aliases[alias.asname or "sleep"] = f"{module}.sleep"
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        name = _dotted(node.func)
        if name is not None:
            name = self.sleep_aliases.get(name, name)
            if name in SLEEPS:
                self._report(node, f"{name}(")
            elif name.split(".")[-2:] in (["pilot", "pause"], ["pilot", "press"]):
                self._report(node, f"{name}(")
        if (
            isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "setattr", "hasattr", "delattr")
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
            and node.args[1].value in private_names()
        ):
            self._report(node, f"{node.func.id}(..., {node.args[1].value!r})")
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr in private_names():
            self._report(node, f".{node.attr}")
        self.generic_visit(node)


def offences(source: str, filename: str) -> list[str]:
    """The refused constructs in ``source`` (a file named ``filename`` in
    tests/tui), as ``file:line (function): what``, minus :data:`ALLOWED_WAITS`."""
    scanner = _Scanner()
    scanner.visit(ast.parse(source, filename))
    out = []
    for line, function, what in scanner.found:
        allowed, _ = ALLOWED_WAITS.get((filename, function), (frozenset(), ""))
        if (what.endswith("(") and what[:-1] in allowed) or what in allowed:
            continue
        out.append(f"{filename}:{line} ({function}): {what}")
    return out


@pytest.mark.parametrize("path", SOURCES, ids=[p.name for p in SOURCES])
def test_tui_tests_wait_on_conditions_and_use_public_textual_api(path: Path):
    bad = offences(path.read_text("utf-8"), path.name)
    assert not bad, (
        "fixed pauses or Textual private names (see tests/tui/test_hygiene.py for what to use):\n" + "\n".join(bad)
    )


def test_every_allowed_wait_is_still_there():
    """The allow-list names functions that exist and still need it (no stale entry)."""
    for (filename, function), (calls, reason) in ALLOWED_WAITS.items():
        assert reason
        scanner = _Scanner()
        scanner.visit(ast.parse((HERE / filename).read_text("utf-8")))
        made = {what[:-1] if what.endswith("(") else what for _, fn, what in scanner.found if fn == function}
        assert made == calls, (filename, function, made)


@pytest.mark.parametrize(
    "source,expected",
    [
        ("async def t(pilot):\n    await pilot.pause()\n", "t.py:2 (t): pilot.pause("),
        ("async def t(pilot):\n    await pilot.pause(0.02)\n", "t.py:2 (t): pilot.pause("),
        ("async def t(self):\n    await self.pilot.pause()\n", "t.py:2 (t): self.pilot.pause("),
        ("import asyncio\nasync def t():\n    await asyncio.sleep(0.1)\n", "t.py:3 (t): asyncio.sleep("),
        ("import time\ndef t():\n    time.sleep(0.1)\n", "t.py:3 (t): time.sleep("),
        ("from asyncio import sleep as nap\nasync def t():\n    await nap(1)\n", "t.py:3 (t): asyncio.sleep("),
        ("import time as clock\ndef t():\n    clock.sleep(1)\n", "t.py:3 (t): time.sleep("),
        ("async def t(pilot):\n    await pilot.press('f1')\n", "t.py:2 (t): pilot.press("),
        ("def t(app):\n    return app._notifications\n", "t.py:2 (t): ._notifications"),
        ("def t(app):\n    return app._driver\n", "t.py:2 (t): ._driver"),
        ("def t(o):\n    return o._options\n", "t.py:2 (t): ._options"),
        ("def t(app):\n    return getattr(app, '_driver')\n", "t.py:2 (t): getattr(..., '_driver')"),
        (
            "from textual.widgets._footer import FooterKey\n",
            "t.py:1 (<module>): from textual.widgets._footer import ...",
        ),
        ("from textual._wait import wait_for_idle\n", "t.py:1 (<module>): from textual._wait import ..."),
        ("import textual._context\n", "t.py:1 (<module>): import textual._context"),
        ("from textual.app import _get_environ_bool\n", "t.py:1 (<module>): from textual.app import _get_environ_bool"),
    ],
)
def test_the_guard_catches(source, expected):
    assert expected in offences(source, "t.py")


@pytest.mark.parametrize(
    "source",
    [
        "def t(browser):\n    return browser._seq, browser._shown_seq\n",  # rankscope's own
        "from textual.widgets import OptionList\nfrom textual.widgets.option_list import Option\n",
        "async def t(pilot, wait_for):\n    await wait_for(pilot, lambda: True)\n",
        "async def t(pilot):\n    await pilot.click('#x')\n",
    ],
)
def test_the_guard_lets_public_use_through(source):
    assert offences(source, "t.py") == []


def test_the_allow_list_is_per_function():
    source = "import asyncio\nasync def test_other():\n    await asyncio.sleep(0.05)\n"
    assert offences(source, "test_browser.py") == ["test_browser.py:3 (test_other): asyncio.sleep("]
    allowed = source.replace("test_other", "test_search_as_you_type_is_debounced")
    assert offences(allowed, "test_browser.py") == []
