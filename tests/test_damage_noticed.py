"""Damage never goes unnoticed (issue 13, item 3).

The break-it reproductions: a copy truncated by its last 536 bytes, and
stores with ``chunks_idx``, ``chunks_docsize`` or ``chunks_trigram_idx``
dropped, searched with exit status 0 and different answers (one retriever
silently failing, "Porter │ error: SQL logic error") while ``doctor``
reported nothing; dropped ``chunks_config`` / ``chunks_data`` were blamed on
"is FTS5 available?". Now ``doctor`` runs SQLite's and FTS5's integrity
checks on a private copy (the store is only read), a failed retriever is a
warning in the search output, and every damaged-store message says how to
check the store.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from engine import CorruptStoreError, SearchParams, Store, search
from engine.lab.doctor import check_integrity, diagnose
from engine.store.indexing import kind_for_path
from tui.cli import app, main

from .conftest import SAMPLE_CORPUS

runner = CliRunner()


@pytest.fixture(autouse=True)
def wide_console(monkeypatch):
    """A console wide enough that no long path is folded mid-word."""
    from rich.console import Console

    import tui.cli.lab
    import tui.cli.search

    console = Console(color_system=None, force_terminal=False, width=400)
    for module in (tui.cli.search, tui.cli.lab):
        monkeypatch.setattr(module, "console", console)


def _copy(sample_db: Path, folder: Path, name: str) -> Path:
    path = folder / name
    shutil.copy2(sample_db, path)
    return path


def truncated(sample_db: Path, folder: Path) -> Path:
    """The sample corpus written file by file without the FTS5 merge that
    ``index`` ends with (as the break-it run's store was: its last page
    then holds an index segment, not a page the merge freed), cut by its
    last 536 bytes."""
    path = folder / "truncated.db"
    with Store.create(path) as s:
        for f in sorted(p for p in SAMPLE_CORPUS.rglob("*") if p.is_file() and p.name != "_sessions.json"):
            kind = kind_for_path(f)
            s.index_text(f.relative_to(SAMPLE_CORPUS).as_posix(), f.read_text(encoding="utf-8"), kind)
    os.truncate(path, os.path.getsize(path) - 536)
    return path


def dropped(sample_db: Path, folder: Path, table: str) -> Path:
    path = _copy(sample_db, folder, f"no-{table}.db")
    conn = sqlite3.connect(path)
    conn.execute(f"DROP TABLE {table}")
    conn.commit()
    conn.close()
    return path


@pytest.fixture
def stores(sample_db, tmp_path):
    """Every kind of damage of the break-it run, each in its own folder."""
    out = {}
    for kind in ("truncated", "chunks_idx", "chunks_docsize", "chunks_trigram_idx", "chunks_config", "chunks_data"):
        folder = tmp_path / kind
        folder.mkdir()
        out[kind] = truncated(sample_db, folder) if kind == "truncated" else dropped(sample_db, folder, kind)
    return out


def _fingerprint(path: Path) -> tuple[str, list[str]]:
    return hashlib.sha256(path.read_bytes()).hexdigest(), sorted(os.listdir(path.parent))


@pytest.mark.parametrize("kind", ["truncated", "chunks_idx", "chunks_docsize", "chunks_trigram_idx"])
def test_doctor_finds_damage_that_searches_do_not_raise(stores, kind, capsys):
    path = stores[kind]
    before = _fingerprint(path)
    with Store.open_readonly(path) as s:
        search(s, SearchParams("zebra"))  # answers, exit 0: the damage is silent here
        report = diagnose(s)
    assert report.damaged and not report.ok
    assert any(line.startswith("the store is damaged: FTS5 integrity-check of chunks") for line in report.findings)
    if kind != "truncated":
        assert any(f"shadow table {kind} is missing" in line for line in report.findings), report.findings
    # the CLI says so, with exit status 1, and the store is only read
    with pytest.raises(SystemExit) as exc:
        main(["doctor", "--db", str(path)])
    assert exc.value.code == 1
    out = capsys.readouterr().out
    assert "the store is damaged" in " ".join(out.split())
    assert _fingerprint(path) == before


def test_doctor_json_reports_the_checks(stores):
    r = runner.invoke(app, ["doctor", "--db", str(stores["chunks_trigram_idx"]), "--json"])
    assert r.exit_code == 1, r.output
    data = json.loads(r.output)
    assert data["damaged"] is True and data["ok"] is False
    checks = {c["check"]: c for c in data["integrity"]}
    assert set(checks) == {"sqlite", "fts5:chunks", "fts5:chunks_trigram"}
    assert checks["fts5:chunks"]["ok"] and not checks["fts5:chunks_trigram"]["ok"]


@pytest.mark.parametrize("kind", ["chunks_config", "chunks_data"])
def test_a_store_that_cannot_open_is_called_damaged_not_fts5_missing(stores, kind, capsys):
    path = stores[kind]
    with pytest.raises(CorruptStoreError) as exc:
        Store.open_readonly(path)
    msg = str(exc.value)
    assert "is FTS5 available" not in msg
    assert msg.startswith(f"{path} is damaged: its FTS5 table chunks cannot be opened") and f"missing: {kind}" in msg
    assert f"Check it with: rankscope doctor --db {path}" in msg
    # search: one line, exit 2, with the hint
    with pytest.raises(SystemExit) as code:
        main(["search", "zebra", "--db", str(path)])
    assert code.value.code == 2
    err = capsys.readouterr().err
    assert "is damaged" in err and "rankscope doctor --db" in err
    # doctor still runs the integrity checks on it
    before = _fingerprint(path)
    checks = {c.check: c for c in check_integrity(str(path))}
    assert not checks["fts5:chunks"].ok and f"shadow table {kind} is missing" in checks["fts5:chunks"].problems
    with pytest.raises(SystemExit) as code:
        main(["doctor", "--db", str(path)])
    assert code.value.code == 1
    out = " ".join(capsys.readouterr().out.split())
    assert "unreadable" in out and "FTS5 integrity-check of chunks failed" in out
    assert _fingerprint(path) == before


def test_a_clean_store_passes_every_check(sample_db):
    with Store.open_readonly(sample_db) as s:
        report = diagnose(s)
    assert [(c.check, c.ok) for c in report.integrity] == [
        ("sqlite", True),
        ("fts5:chunks", True),
        ("fts5:chunks_trigram", True),
    ]
    assert not report.damaged
    r = runner.invoke(app, ["doctor", "--db", str(sample_db)])
    assert r.exit_code == 0, r.output
    assert "FTS5 integrity-check of chunks ok" in " ".join(r.output.split())


def test_doctor_on_corrupt_pages_reports_instead_of_failing(damaged_db):
    """The conftest's store with 16 KiB of garbage mid-file: the counts fail
    to read; doctor still reports what the integrity checks found."""
    r = runner.invoke(app, ["doctor", "--db", str(damaged_db), "--json"])
    assert r.exit_code == 1, r.output
    data = json.loads(r.output)
    assert data["damaged"] and data["read_error"] == "SQLite says 'database disk image is malformed'"
    assert any(not c["ok"] for c in data["integrity"])


@pytest.mark.parametrize(
    "kind, retriever", [("chunks_idx", "Porter"), ("chunks_docsize", "Porter"), ("chunks_trigram_idx", "Trigram")]
)  # stage titles (engine.pipeline.table)
def test_a_failing_retriever_is_a_warning_in_the_search_output(stores, kind, retriever):
    path = stores[kind]
    r = runner.invoke(app, ["search", "zebra", "--db", str(path)])
    assert r.exit_code == 0, r.output
    first = " ".join(r.output.split("porter:")[0].split())
    assert first.startswith(
        f"warning: the {retriever} retriever failed (CorruptError: database disk image is malformed)"
    )
    assert f"check it with: rankscope doctor --db {path}" in first
    r = runner.invoke(app, ["compare", "zebra", "--db", str(path), "--b", "key=rowid"])
    assert r.exit_code == 0 and f"A: warning: the {retriever} retriever failed" in " ".join(r.output.split())


def test_batch_warns_on_stderr(stores, tmp_path, capsys):
    q = tmp_path / "q.json"
    q.write_text(json.dumps([{"id": "z", "query": "zebra"}, {"id": "i", "query": "install"}]))
    with pytest.raises(SystemExit) as exc:
        main(["batch", str(q), "--db", str(stores["chunks_idx"])])
    assert exc.value.code in (0, None)
    out = capsys.readouterr()
    assert json.loads(out.out)[0]["retriever_errors"]
    assert " ".join(out.err.split()).startswith("warning: a retriever failed in 2 of 2 queries (z, i;")


def test_a_clean_search_has_no_warning(sample_db):
    r = runner.invoke(app, ["search", "zebra", "--db", str(sample_db)])
    assert r.exit_code == 0 and "warning" not in r.output


async def test_the_browser_warns_when_a_retriever_fails(stores):
    from .tui.conftest import build_app, search_for

    store = Store.open_readonly(stores["chunks_idx"])
    app_ = build_app(store=store)
    async with app_.run_test(size=(120, 40)) as pilot:
        await search_for(pilot, "zebra")
        browser = app_.browser
        assert "⚠ a retriever failed" in browser.results.border_subtitle
        warnings = [n for n in app_._notifications if n.severity == "warning" and n.title == "A retriever failed"]
        assert len(warnings) == 1
        assert warnings[0].message.startswith("warning: the Porter retriever failed")
        await search_for(pilot, "install")  # the same failure again: no second notification
        assert len([n for n in app_._notifications if n.title == "A retriever failed"]) == 1
    store.close()


def test_every_damaged_store_message_names_the_check(damaged_db, stores):
    """Discovery (``rankscope stores``, the store picker) and the browser's
    own read of a store's counts say how to check a damaged store too."""
    from engine.store.discovery import read_store_info
    from tui.browser.facts import read_facts

    for path in (damaged_db, stores["chunks_config"]):
        error = read_store_info(path).error
        assert error and "is damaged" in error and f"rankscope doctor --db {path}" in error, error
    with Store.open_readonly(damaged_db) as s:
        with pytest.raises(CorruptStoreError, match="Check it with: rankscope doctor"):
            read_facts(s)
