"""The CLI's human output never sends store text to the terminal raw.

Titles, labels and session ids come from arbitrary files: control characters
are shown as control pictures (tui/safe.py) and Rich markup in them is shown
literally. ``--json`` keeps the exact text.
"""

from __future__ import annotations

import json

import pytest
from rich.console import Console
from typer.testing import CliRunner

import tui.cli
import tui.cli_lab
import tui.cli_stores
from tui.cli import app

HEADING = "Intro \x1b[2J [bold]x[/bold]"
SESSION = "s\x1b]0;pwned\x07"
runner = CliRunner()


@pytest.fixture(autouse=True)
def plain_console(monkeypatch):
    """A wide console that never styles, whatever the environment (FORCE_COLOR
    etc.): any ESC in the output then comes from the store."""
    console = Console(color_system=None, force_terminal=False, width=200)
    for module in (tui.cli, tui.cli_lab, tui.cli_stores):
        monkeypatch.setattr(module, "console", console)


@pytest.fixture
def db(tmp_path):
    """Two chunks titled ``HEADING`` (a fusion-key collision doctor lists),
    a log labelled and filled with BEL, every chunk in session ``SESSION``."""
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "notes.md").write_text(f"# {HEADING}\nzebra crossing one\n# {HEADING}\nzebra crossing two\n", "utf-8")
    (folder / "bell\x07.log").write_text("first line\nzebra alarm \x07 rang\n", "utf-8")
    path = tmp_path / "s.db"
    r = runner.invoke(app, ["index", str(folder), "--db", str(path), "--session", SESSION])
    assert r.exit_code == 0, r.output
    return str(path)


def _check(output: str) -> None:
    assert "\x1b" not in output and "\x07" not in output
    assert "\x9b" not in output


@pytest.mark.parametrize(
    "args",
    [
        ["search", "zebra"],
        ["why", "zebra", "--chunk", f"notes.md::{HEADING}"],
        ["why", "zebra", "--rowid", "3"],
        ["compare", "zebra", "--b", "key=rowid"],
        ["doctor"],
    ],
    ids=["search", "why-key", "why-rowid", "compare", "doctor"],
)
def test_human_output_is_terminal_safe(db, args):
    r = runner.invoke(app, [*args, "--db", db])
    assert r.exit_code == 0, r.output
    _check(r.output)
    if args[0] != "why" or "--chunk" in args:
        assert "[bold]x[/bold]" in r.output and "␛[2J" in r.output


def test_search_shows_labels_and_sessions_safely(db):
    r = runner.invoke(app, ["search", "zebra", "--db", db])
    _check(r.output)
    assert "bell␇.log" in r.output and "s␛]0;pwned␇" in r.output


def test_compare_query_file_is_terminal_safe(db, tmp_path):
    queries = tmp_path / "q.json"
    queries.write_text(json.dumps([{"id": "x\x1b[2J", "query": "zebra [bold]y[/bold]"}]), "utf-8")
    r = runner.invoke(app, ["compare", "--queries", str(queries), "--db", db, "--b", "key=rowid"])
    assert r.exit_code == 0, r.output
    _check(r.output)
    assert "x␛[2J" in r.output and "[bold]y[/bold]" in r.output


def test_sessions_are_terminal_safe(db):
    r = runner.invoke(app, ["sessions", "--db", db])
    assert r.exit_code == 0, r.output
    _check(r.output)
    assert "s␛]0;pwned␇" in r.output


def test_index_skip_list_is_terminal_safe(tmp_path):
    folder = tmp_path / "big"
    folder.mkdir()
    (folder / "huge\x1b[2J[red]z.txt").write_text("x" * 500, "utf-8")
    r = runner.invoke(app, ["index", str(folder), "--db", str(tmp_path / "b.db"), "--max-file-bytes", "100"])
    assert r.exit_code == 0, r.output
    _check(r.output)
    assert "huge␛[2J[red]z.txt: 500 bytes is over the 100-byte limit" in r.output


def test_json_keeps_the_exact_text(db):
    r = runner.invoke(app, ["search", "zebra", "--db", db, "--json"])
    d = json.loads(r.output)
    assert HEADING in {f["title"] for f in d["final"]}
    assert {f["session_id"] for f in d["final"]} == {SESSION}
    r = runner.invoke(app, ["doctor", "--db", db, "--json"])
    assert json.loads(r.output)["collisions"][0]["title"] == HEADING
    r = runner.invoke(app, ["sessions", "--db", db, "--json"])
    assert json.loads(r.output) == [{"session_id": SESSION, "chunks": 3}]
