"""Import hygiene, read from the source (``ast``), not from what happens to
be loaded: no import cycle among rankscope's own modules (imports inside
functions and under ``if TYPE_CHECKING:`` count too: a lazy or type-only
import only hides a cycle), and loading the engine loads neither ``textual``
nor ``rich``. The layers themselves are
import-linter's contracts in ``pyproject.toml`` (``tests/test_quality.py``)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import REPO
from .helpers import fresh_python

PACKAGES = ("engine", "tui", "benchmarks")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for path in sorted((REPO / pkg).rglob("*.py")):
            out[_module_name(path)] = path
    return out


MODULES = _modules()


def _imports(name: str, path: Path) -> set[str]:
    """Every project module ``name`` imports, at any depth of the file.
    ``from pkg import x`` counts as ``pkg.x`` when that is a module, else ``pkg``."""
    is_pkg = path.name == "__init__.py"
    package = name if is_pkg else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            targets = [
                f"{prefix}.{alias.name}" if f"{prefix}.{alias.name}" in MODULES else prefix for alias in node.names
            ]
        else:
            continue
        for target in targets:
            while target and target not in MODULES:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _is_ancestor_edge(a: str, b: str) -> bool:
    """``a`` is a package containing ``b`` (importing a submodule runs its
    package's ``__init__`` first; that edge is not a cycle of ours)."""
    return b.startswith(a + ".")


def test_no_import_cycle():
    graph = {
        name: {t for t in _imports(name, path) if not _is_ancestor_edge(t, name)} for name, path in MODULES.items()
    }
    assert _cycles(graph) == []


def test_cycle_finder_finds_a_cycle():
    """The check can fail: a two-module and a three-module cycle are found."""
    assert _cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]
    assert _cycles({"x": {"y"}, "y": {"z"}, "z": {"x"}}) == [["x", "y", "z"]]


ENGINE_MODULES = sorted(n for n in MODULES if n == "engine" or n.startswith("engine."))


def test_engine_loads_without_ui_libraries():
    """Importing every engine module pulls in neither library, transitively."""
    code = (
        "import importlib, sys\n"
        f"for m in {ENGINE_MODULES!r}: importlib.import_module(m)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich')))\n"
    )
    assert fresh_python(code).strip() == "[]"


#: Run in a fresh interpreter: each subcommand's ``--help`` the way ``python -m PACKAGE`` runs
#: it (``runpy`` with ``run_name="__main__"``, as ``-m`` does), one after the other, each
#: one's output after a ``\0NAME`` line and its exit code last. One interpreter for all of them:
#: a ``python -m`` per subcommand cost about 4 s of CPU per entry point.
_EACH_HELP = """
import runpy, sys
package, names = sys.argv[1], sys.argv[2:]
codes = {}
for name in names:
    print("\\0" + name, flush=True)
    sys.argv = [package, name, "--help"]
    try:
        runpy.run_module(package, run_name="__main__", alter_sys=True)
        codes[name] = 0
    except SystemExit as exc:
        codes[name] = exc.code or 0
    sys.stdout.flush()
print("\\0", codes, flush=True)
"""


@pytest.mark.parametrize("package", ["tui.cli", "tui"])
def test_python_m_runs_every_subcommand(package):
    """``python -m tui.cli`` and ``python -m tui`` list every subcommand and
    each one's ``--help`` works (it failed before: commands were registered by
    import side effect on a second copy of the app)."""
    from tui.cli.main import COMMANDS

    env = {"COLUMNS": "200", "PATH": "/usr/bin:/bin"}
    listing = subprocess.run(
        [sys.executable, "-m", package, "--help"], cwd=REPO, capture_output=True, text=True, timeout=120, env=env
    )
    assert listing.returncode == 0, listing.stderr
    names = [name for name, _ in COMMANDS]
    for name in names:
        assert f" {name} " in listing.stdout
    each = subprocess.run(
        [sys.executable, "-c", _EACH_HELP, package, *names],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert each.returncode == 0, each.stderr
    *parts, last = each.stdout.split("\0")
    assert last.strip() == str({name: 0 for name in names}), (last, each.stderr)
    helps = dict(part.split("\n", 1) for part in parts[1:])
    assert list(helps) == names
    for name, text in helps.items():
        assert f"Usage: rankscope {name}" in text or "Usage: python -m" in text, (name, text)


def modules_after(code: str) -> list[str]:
    """The names in ``sys.modules`` once ``code`` ran in a new interpreter (exit 0)."""
    return eval(fresh_python(f"{code}import sys\nprint('MODULES', sorted(sys.modules))\n").rsplit("MODULES ", 1)[1])


#: What ``rankscope search`` must not load (issue 25): the agent layer, the
#: evaluation code and its libraries, the browser; the edit distance library
#: when no word needs correcting; pydantic (40-60 ms: Typer 0.29 parses every
#: value through it, hence the pin below 0.29; the file reader loads it only
#: for a JSON input).
NOT_FOR_SEARCH = (
    "pydantic",
    "engine.agent",
    "rapidfuzz",
    "engine.lab.evaluation",
    "scipy",
    "ir_measures",
    "pytrec_eval",
    "textual",
    "tui.browser",
)


@pytest.mark.parametrize("extra", [[], ["--json"]])
def test_search_imports_only_what_it_needs(sample_db, extra):
    """A ``rankscope search`` run in a fresh process, on a store with an
    answer, loads none of :data:`NOT_FOR_SEARCH`; the other subcommands'
    modules are not imported either."""
    db = sample_db
    code = (
        "from tui.cli.main import main\n"
        "try:\n"
        f"    main(['search', 'quorum', '--db', {str(db)!r}, *{extra!r}])\n"
        "except SystemExit as exc:\n"
        "    assert exc.code == 0, exc.code\n"
    )
    loaded = modules_after(code)
    assert "engine.pipeline.run" in loaded and "tui.cli.search" in loaded  # it did search
    assert [m for m in loaded if m.startswith(NOT_FOR_SEARCH)] == []
    assert [
        m for m in loaded if m.startswith("tui.cli.") and m not in ("tui.cli.main", "tui.cli.base", "tui.cli.search")
    ] == []


#: What the browser's first paint must not load (issue 25): the agent layer,
#: the evaluation code, and the screens not shown until asked.
NOT_FOR_FIRST_PAINT = (
    "engine.agent",
    "engine.lab.evaluation",
    "engine.lab.compare",
    "engine.lab.doctor",
    "scipy",
    "ir_measures",
    "tui.browser.screens.agent",
    "tui.browser.screens.compare",
    "tui.browser.screens.doctor",
    "tui.browser.screens.flow",
    "tui.browser.screens.help",
    "tui.browser.screens.sessions",
    "tui.browser.screens.stores",
    "tui.browser.screens.why",
)


def test_the_browser_imports_its_other_screens_when_opened():
    """The modules ``rankscope`` (no argument) loads up to ``app.run()`` include
    none of :data:`NOT_FOR_FIRST_PAINT`; opening a screen loads its module."""
    code = (
        "from tui.cli.launch import app_arguments\n"
        "from tui.browser.app import RankscopeApp\n"
        "app = RankscopeApp(app_arguments(None))\n"
    )
    loaded = modules_after(code)
    assert "tui.browser.screens.browser" in loaded  # it did build the app
    assert [m for m in loaded if m.startswith(NOT_FOR_FIRST_PAINT)] == []
