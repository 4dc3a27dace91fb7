"""Usage errors (Click's: a bad option value, an unknown or missing option,
an option without its value) are printed like the errors rankscope raises
itself: ``rankscope: error: <message>`` on one line, exit status 2, and at
most one hint line; never Click's usage block or Typer's boxed panel
(tui/cli/main.py runs the app with ``standalone_mode=False``)."""

from __future__ import annotations

import pytest

from tui.cli import main
from tui.cli.main import GROUPS

from .conftest import REPO


def run_main(capsys, args: list[str]) -> tuple[int, str, str]:
    """``main(args)``: its exit status (0 when it returned), stdout, stderr."""
    try:
        main(args)
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize(
    ("args", "message", "hint"),
    [
        (
            ["search", "x", "--db", "DB", "--limit", "abc"],
            "invalid value for '--limit' / '-n': 'abc' is not a valid int",
            "(rankscope search --help shows the options)",
        ),
        (
            ["why", "x", "--db", "DB", "--rowid", "1.5"],
            "invalid value for '--rowid': '1.5' is not a valid int",
            "(rankscope why --help shows the options)",
        ),
        (
            ["search", "x", "--db", "DB", "--bogus"],
            "no such option: --bogus. A query that begins with '-' goes after '--'",
            "(rankscope search --help shows the options)",
        ),
        (["search", "x"], "missing option '--db'", "(rankscope search --help shows the options)"),
        (
            ["batch", "Q", "--db", "DB", "--trec-run"],
            "option '--trec-run' requires an argument",
            "(rankscope batch --help shows the options)",
        ),
        (
            ["snapshot", "check", "SNAP", "--db"],
            "option '--db' requires an argument",
            "(rankscope snapshot check --help shows the options)",
        ),
        (
            ["snapshot", "bogus"],
            "no such command 'bogus'",
            "(rankscope snapshot --help shows the subcommands: save, check)",
        ),
        (["snapshot"], "missing command", "(rankscope snapshot --help shows the subcommands: save, check)"),
        (["qrels"], "missing command", "(rankscope qrels --help shows the subcommands: convert, path, query-file)"),
        (
            ["search", "replicaton", "quorom", "--db", "DB"],
            "got unexpected extra argument(s) (quorom). A query of several words goes in quotes",
            "(rankscope search --help shows the options)",
        ),
        (
            ["doctor", "--db", "DB", "--bogus"],
            "no such option: --bogus",
            "(rankscope doctor --help shows the options)",
        ),
    ],
    ids=lambda a: " ".join(a) if isinstance(a, list) else None,
)
def test_usage_errors_are_one_line_and_a_hint(sample_db, capsys, args, message, hint):
    args = [str(sample_db) if a == "DB" else a for a in args]
    code, out, err = run_main(capsys, args)
    assert code == 2
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 2, err
    assert lines[0].startswith(f"rankscope: error: {message}"), err
    assert lines[1] == hint
    for noise in ("Usage:", "╭", "Error ─", "Try '", "Traceback"):
        assert noise not in err


@pytest.mark.parametrize("group", [name for name, _ in GROUPS])
def test_every_group_without_a_subcommand_is_a_usage_error(capsys, group):
    """Every subcommand group (not only snapshot): one error line, exit 2,
    and a hint naming --help and listing the group's subcommands (generated
    from the group, in its order); no help block printed instead."""
    names = [info.name for info in dict(GROUPS)[group].registered_commands]
    code, out, err = run_main(capsys, [group])
    assert code == 2 and out == ""
    assert err.splitlines() == [
        "rankscope: error: missing command",
        f"(rankscope {group} --help shows the subcommands: {', '.join(names)})",
    ]


def test_the_query_hint_only_for_commands_that_take_a_query(sample_db, capsys):
    code, _, err = run_main(capsys, ["doctor", "--db", str(sample_db), "--bogus"])
    assert code == 2 and "goes after" not in err


def test_help_version_and_exit_statuses_are_kept(sample_db, capsys, tmp_path):
    code, out, err = run_main(capsys, ["search", "--help"])
    assert code == 0 and "Usage: rankscope search" in out and err == ""
    code, out, _ = run_main(capsys, ["--version"])
    assert code == 0 and out.startswith("rankscope ")
    # a group's --help is its help, exit 0
    code, out, err = run_main(capsys, ["snapshot", "--help"])
    assert code == 0 and "Usage: rankscope snapshot" in out and err == ""
    # a command's own exit status (snapshot check: 1 on a change) comes through
    queries = REPO / "docs" / "demo-queries.json"
    snap = tmp_path / "snap.json"
    assert run_main(capsys, ["snapshot", "save", str(queries), "--db", str(sample_db), "-o", str(snap)])[0] == 0
    text = snap.read_text("utf-8").replace('"final": [', '"final": ["nope::nope", ', 1)
    snap.write_text(text, "utf-8")
    code, out, _ = run_main(capsys, ["snapshot", "check", str(snap), "--db", str(sample_db), "--stages", "final"])
    assert code == 1 and "changed: 1 of" in out
    # and a successful command returns normally
    assert run_main(capsys, ["search", "quorum", "--db", str(sample_db), "--json"])[0] == 0
