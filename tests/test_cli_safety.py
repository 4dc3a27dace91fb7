"""The CLI's human output never sends store text to the terminal raw.

Titles, labels and session ids come from arbitrary files: control characters
are shown as control pictures (tui/present/safe.py) and Rich markup in them is shown
literally. ``--json`` keeps the exact text.
"""

from __future__ import annotations

import json

import pytest
from rich.console import Console
from typer.testing import CliRunner

import tui.cli.lab
import tui.cli.search
import tui.cli.stores
from tui.cli import app

HEADING = "Intro \x1b[2J [bold]x[/bold]"
SESSION = "s\x1b]0;pwned\x07"
runner = CliRunner()


@pytest.fixture(autouse=True)
def plain_console(monkeypatch):
    """A wide console that never styles, whatever the environment (FORCE_COLOR
    etc.): any ESC in the output then comes from the store."""
    console = Console(color_system=None, force_terminal=False, width=200)
    for module in (tui.cli.search, tui.cli.lab, tui.cli.stores):
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


# ─── query text ──────────────────────────────────────────────────────────

QUERY = "zebra \x1bc [bold]q[/bold] alarmm \x9b2J"


@pytest.mark.parametrize(
    "args",
    [
        ["search", QUERY],
        ["search", "kafkaa \x1bc"],  # no result: the empty reason quotes the query words
        ["search", "zebr \x1bc crosing"],  # fuzzy re-run: corrections and the re-run's stages
        ["compare", QUERY, "--b", "fuzzy=always"],
        ["why", QUERY, "--rowid", "1"],
    ],
    ids=["search", "empty", "fuzzy", "compare", "why"],
)
def test_query_text_is_terminal_safe(db, args):
    """Query text shown in the porter: line, stage rows, rerank terms and
    headings is made visible (␛), never sent raw."""
    r = runner.invoke(app, [*args, "--db", db])
    assert r.exit_code == 0, r.output
    _check(r.output)
    assert "␛" in r.output


def test_query_file_text_is_terminal_safe(db, tmp_path):
    queries = tmp_path / "q.json"
    queries.write_text(json.dumps([{"id": "a", "query": QUERY}]), "utf-8")
    r = runner.invoke(app, ["compare", "--queries", str(queries), "--db", db, "--b", "key=rowid"])
    _check(r.output)
    assert "␛" in r.output


def test_long_queries_are_abbreviated_in_human_output(db):
    """A 10,000-character query is not echoed in full (twice) in headings,
    stage rows and rerank terms; --json keeps it exact."""
    query = ("zebra crossing " + " ".join(f"w{i:04d}" for i in range(2000)))[:10_000]
    assert len(query) == 10_000
    for args in (["search", query], ["compare", query, "--b", "key=rowid"]):
        r = runner.invoke(app, [*args, "--db", db])
        assert r.exit_code == 0, r.output
        assert len(r.output) < 6_000, (args[0], len(r.output))  # in full: over 30,000
        assert "(10,000 characters)" in r.output
    r = runner.invoke(app, ["search", query, "--db", db])
    assert "… (+" in r.output  # porter query / rerank terms cut, with the count
    r = runner.invoke(app, ["search", query, "--db", db, "--json"])
    assert json.loads(r.output)["query"] == query
