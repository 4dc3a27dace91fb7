"""Quality gates (issue 8 item 5): ruff's lint, ruff's format check, mypy and
import-linter's layer contracts, configured in ``pyproject.toml``, run from the repository root and must be
clean. Each failure message carries the tool's output and the command to run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=600)


def _require(module: str) -> None:
    # The tools come with the test extra; a missing one fails the gate (never a silent skip).
    if _run(module, "--version").returncode != 0:
        pytest.fail(f"{module} is not installed in this environment: pip install -e '.[test]'")


def test_ruff_lint_is_clean():
    _require("ruff")
    r = _run("ruff", "check", ".")
    assert r.returncode == 0, (
        f"`ruff check .` found problems (fix them; `ruff check --fix .` fixes some):\n{r.stdout}{r.stderr}"
    )


def test_ruff_format_is_clean():
    _require("ruff")
    r = _run("ruff", "format", "--check", ".")
    assert r.returncode == 0, (
        f"files not formatted: run `ruff format .` from the repository root:\n{r.stdout}{r.stderr}"
    )


def test_mypy_is_clean():
    _require("mypy")
    r = _run("mypy")
    assert r.returncode == 0, f"`mypy` (files and settings from pyproject.toml) found errors:\n{r.stdout}{r.stderr}"


def test_import_contracts_are_kept():
    """The layers of docs/architecture.md, declared in ``pyproject.toml``
    (``[tool.importlinter]``): each layer imports only the layers below it,
    and the engine never imports Textual or Rich."""
    lint = Path(sys.executable).with_name("lint-imports")
    if not lint.exists():
        pytest.fail("import-linter is not installed in this environment: pip install -e '.[test]'")
    r = subprocess.run([str(lint), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"`lint-imports` found a broken contract:\n{r.stdout}{r.stderr}"
