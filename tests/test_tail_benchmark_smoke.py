"""Smoke test of benchmarks/tail.py on a small store: behaviour only, never timing."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from benchmarks.tail import main
from engine import Store
from engine.pipeline.stages import kept

SESSION_DB = Path(__file__).parent / "golden" / "fixtures" / "session-1.0.169.db"


@pytest.fixture
def store_path(tmp_path):
    path = tmp_path / "npm.db"
    s = Store.create(path)
    s.index_text(
        "commands/npm-install.md", "# npm install\n\n## Synopsis\n\n```sh\nnpm install <pkg>\n```\n", "markdown"
    )
    s.index_text("using-npm/config.md", "# config\n\n## Registry\n\nSet the registry in npmrc.\n", "markdown")
    s.close()
    return path


def test_tail_reports_each_set_and_its_slowest_searches(store_path, capsys, monkeypatch):
    monkeypatch.setattr(kept, "MIN_ROWS", 0)  # the filtered searches build and use kept rows here too
    assert main(["--store", str(store_path), "--rounds", "1", "--slowest", "80"]) == 0  # every search listed
    text = capsys.readouterr().out
    assert re.match(r"\S+npm\.db: \d+ chunks; load average", text)
    for name in ("heavy", "light"):
        line = re.search(rf"^{name}: 80 searches, p50 [\d.]+ / p95 [\d.]+ / max [\d.]+ ms \((.*)\)$", text, re.M)
        assert line and line.group(1) == "the goal is set at 1,000,000 chunks"
    light = text.split("\nlight:", 1)[1]
    assert "(kept " in light  # the light set's filtered queries ranked over kept rows
    table = light.splitlines()[3:]  # after the summary, the header and the rule
    rows = [ln for ln in table if ln.startswith("  ") and not ln.startswith("  load average")]
    assert len(rows) == 80 and all(re.search(r"\s[\d.]+$", r) for r in rows)


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--sets", "medium"], "--sets must name query sets of heavy, light"),
        (["--rounds", "0"], "--rounds must be at least 1"),
        (["--store", "/nonexistent/x.db"], "--store: no such file"),
        (["--slowest", "0"], "--slowest must be at least 1"),
        (["--slowest", "-3"], "--slowest must be at least 1"),
        (["--store", "FOLDER"], "is a folder, not a store file"),
        (["--store", "TEXT"], "--store: "),
        (["--store", "SESSIONS"], "--store: "),
    ],
)
def test_tail_refuses_bad_arguments(store_path, tmp_path, capsys, args, says):
    text = tmp_path / "notes.txt"
    text.write_text("not a database\n", "utf-8")
    named = {"FOLDER": str(tmp_path), "TEXT": str(text), "SESSIONS": str(SESSION_DB)}
    args = [named.get(a, a) for a in args]
    argv = ["--store", str(store_path), *args] if args[0] != "--store" else args
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err and err.count("\n") <= 3
