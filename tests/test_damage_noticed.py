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


def test_doctor_quick_says_damage_with_exit_status_1(damaged_db):
    """Issue 24: ``doctor --quick`` exited 2 (a usage error) on a store it
    could not read, while its help says damage is exit status 1. Without the
    integrity checks, the damage it met while reading is the report."""
    path = damaged_db
    before = _fingerprint(path)
    r = runner.invoke(app, ["doctor", "--db", str(path), "--quick", "--json"])
    assert r.exit_code == 1, r.output
    data = json.loads(r.output)
    assert data["damaged"] and data["read_error"] and data["integrity"] == []
    r = runner.invoke(app, ["doctor", "--db", str(path), "--quick"])
    assert r.exit_code == 1, r.output
    assert "the store is damaged" in " ".join(r.output.split())
    assert _fingerprint(path) == before


def stale_wal_beside(sample_db: Path, folder: Path, shm: bool) -> Path:
    """``folder/store.db``: a small store put on disk in place of a bigger
    one (the sample corpus) whose last transaction was still in its
    ``-wal`` (copied while its connection was open), that ``-wal`` (and,
    with ``shm``, its ``-shm``) left beside it. SQLite applies the old
    ``-wal`` to the new file, which then reads as damaged."""
    from engine.store import sql

    old = _copy(sample_db, folder, "old.db")
    path = folder / "store.db"
    conn = sql.connect(str(old))
    try:
        conn.execute("PRAGMA wal_autocheckpoint=0")
        conn.execute("INSERT INTO chunks(title, content, source_id, content_type) VALUES ('Late', 'zebra', 1, 'prose')")
        shutil.copyfile(f"{old}-wal", f"{path}-wal")
        if shm:
            shutil.copyfile(f"{old}-shm", f"{path}-shm")
    finally:
        conn.close()
    old.unlink()
    new = folder.parent / f"{folder.name}-new.db"
    with Store.create(new) as s:
        s.index_text("b.md", "# Beta\nzebra beta words\n", "markdown")
    shutil.copyfile(new, path)
    new.unlink()
    return path


def _files(folder: Path) -> dict[str, bytes]:
    return {name: (folder / name).read_bytes() for name in sorted(os.listdir(folder))}


@pytest.mark.parametrize("shm", [False, True], ids=["wal", "wal+shm"])
def test_a_stale_wal_beside_a_damaged_store_is_named_in_the_error(sample_db, tmp_path, shm, capsys):
    """A store replaced on disk while the old one's ``-wal`` (and ``-shm``)
    stayed beside it: SQLite applies the old WAL and the store reads as
    damaged. The one-line error names those files and says moving them
    away may help; the exit status is still 2; nothing is written, moved
    or removed. (Before: no word of them; with the ``-wal`` alone, 'a
    private copy ... could not be made in /tmp', blaming the temporary
    folder.)"""
    from .helpers import cli_error

    folder = tmp_path / "stores"
    folder.mkdir()
    path = stale_wal_beside(sample_db, folder, shm)
    before = _files(folder)
    names = f"{path}-wal and {path}-shm are" if shm else f"{path}-wal is"
    line = cli_error(["search", "zebra", "--db", str(path)], capsys)
    assert line.startswith(f"rankscope: error: {path} is damaged: SQLite says 'database disk image is malformed'. ")
    assert f"{names} beside it: a -wal or -shm file left by another database" in line
    assert "no program is using the database, moving " in line and "away may help" in line
    assert line.endswith(f"Check it with: rankscope doctor --db {path} (or sqlite3 {path} 'PRAGMA integrity_check')")
    after = _files(folder)
    assert sorted(after) == sorted(before)  # nothing created or removed
    # not one byte of the store or of the -wal changed (SQLite's read rewrites the -shm's index)
    assert {k: v for k, v in after.items() if not k.endswith("-shm")} == {
        k: v for k, v in before.items() if not k.endswith("-shm")
    }
    # doctor: damaged (exit 1), and the same hint among its findings
    r = runner.invoke(app, ["doctor", "--db", str(path), "--json"])
    assert r.exit_code == 1, r.output
    report = json.loads(r.output)
    assert report["damaged"] and report["side_files"] == [f"{path}-wal", f"{path}-shm"][: 2 if shm else 1]
    assert any(f.startswith(f"{names} beside it:") for f in report["findings"]), report["findings"]
    # the store picker and 'rankscope stores' (discovery) say it too
    from engine.store.discovery import read_store_info

    error = read_store_info(path).error
    assert error is not None and f"{names} beside it:" in error, error
    assert sorted(os.listdir(folder)) == sorted(before)


def test_no_side_file_no_hint(damaged_db):
    """A damaged store with no ``-wal`` or ``-shm`` beside it gets no word of them."""
    with pytest.raises(CorruptStoreError) as caught:
        with Store.open_readonly(damaged_db) as s:
            diagnose(s, integrity=False)
    assert "beside it" not in str(caught.value) and caught.value.side_files == ()
