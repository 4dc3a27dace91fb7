"""Output files never destroy anything (issue 13, item 1).

``batch --out`` onto the store (or any database, or any existing file)
replaced it with JSON; the F6 trace export wrote through a dangling symlink
at its file name to a file outside the folder.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tui.cli import app, main
from engine.files.writing import write_text_file

from .helpers import indexed_by_cli

runner = CliRunner()


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    return indexed_by_cli(tmp_path_factory.mktemp("out"))


@pytest.fixture
def queries(tmp_path):
    q = tmp_path / "q.json"
    q.write_text(json.dumps([{"id": "z", "query": "zebra"}]))
    return q


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _refused(capsys, args: list[str], contains: str) -> None:
    with pytest.raises(SystemExit) as exc:
        main(args)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("rankscope: error: ") and contains in err and err.count("\n") == 1, err


def test_out_onto_the_store_itself_is_refused(db, queries, tmp_path, capsys):
    """The reproduction: ``batch Q.json --db S.db --out S.db``."""
    copy = tmp_path / "s.db"
    shutil.copy2(db, copy)
    before = _digest(copy)
    _refused(capsys, ["batch", str(queries), "--db", str(copy), "--out", str(copy)], "is the store given with --db")
    _refused(capsys, ["batch", str(queries), "--db", str(copy), "--out", str(copy), "--force"], "is the store given")
    # the same file under another name (a symlink) is the store too
    alias = tmp_path / "alias.db"
    alias.symlink_to(copy)
    _refused(capsys, ["batch", str(queries), "--db", str(copy), "--out", str(alias), "--force"], "is the store given")
    assert _digest(copy) == before
    with sqlite3.connect(copy) as conn:
        assert conn.execute("SELECT COUNT(*) FROM sources").fetchone()[0] == 1


def test_out_onto_another_database_is_refused_even_with_force(db, queries, tmp_path, capsys):
    other = tmp_path / "other.sqlite"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()
    before = _digest(other)
    for extra in ([], ["--force"]):
        _refused(
            capsys,
            ["batch", str(queries), "--db", str(db), "--out", str(other), *extra],
            "is an SQLite database; rankscope never overwrites a database or its files",
        )
    assert _digest(other) == before


def test_out_onto_the_stores_wal_is_refused(db, queries, tmp_path, capsys):
    copy = tmp_path / "w.db"
    shutil.copy2(db, copy)
    wal = tmp_path / "w.db-wal"
    wal.write_bytes(b"")
    _refused(
        capsys, ["batch", str(queries), "--db", str(copy), "--out", str(wal), "--force"], "the wal file of the store"
    )


def test_existing_file_needs_force(db, queries, tmp_path, capsys):
    out = tmp_path / "notes.txt"
    out.write_text("my notes\n")
    _refused(
        capsys, ["batch", str(queries), "--db", str(db), "--out", str(out)], "exists; give another name or add --force"
    )
    assert out.read_text() == "my notes\n"
    r = runner.invoke(app, ["batch", str(queries), "--db", str(db), "--out", str(out), "--force"])
    assert r.exit_code == 0, r.output
    assert json.loads(out.read_text())[0]["id"] == "z"


def test_new_file_is_written_whole(db, queries, tmp_path):
    out = tmp_path / "traces.json"
    r = runner.invoke(app, ["batch", str(queries), "--db", str(db), "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert json.loads(out.read_text())[0]["query"] == "zebra"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["q.json", "traces.json"]  # no temporary file left


def test_out_through_a_symlink_never_writes_its_target(db, queries, tmp_path, capsys):
    outside = tmp_path / "outside"
    outside.mkdir()
    target = outside / "victim.txt"
    link = tmp_path / "out.json"
    link.symlink_to(target)  # dangling
    _refused(capsys, ["batch", str(queries), "--db", str(db), "--out", str(link)], "is a symbolic link")
    assert not target.exists()
    target.write_text("keep me\n")
    r = runner.invoke(app, ["batch", str(queries), "--db", str(db), "--out", str(link), "--force"])
    assert r.exit_code == 0, r.output
    assert target.read_text() == "keep me\n"  # --force replaced the link, not the file it named
    assert not link.is_symlink() and json.loads(link.read_text())[0]["id"] == "z"


def test_write_text_file_never_follows_or_overwrites(tmp_path):
    target = tmp_path / "elsewhere.txt"
    link = tmp_path / "x.json"
    link.symlink_to(target)
    with pytest.raises(FileExistsError):
        write_text_file(link, "data")
    assert not target.exists() and os.path.islink(link)
    plain = tmp_path / "p.json"
    plain.write_text("old")
    with pytest.raises(FileExistsError):
        write_text_file(plain, "new")
    assert plain.read_text() == "old"
    write_text_file(plain, "new", overwrite=True)
    assert plain.read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.json", "x.json"]


# ── F6: the trace export ─────────────────────────────────────────────────


async def test_export_never_writes_through_a_dangling_symlink(tmp_path, monkeypatch):
    """A dangling symlink sits at the export's file name and points outside
    the folder: the export takes the next free name; the target is never
    created."""
    import tui.browser.app
    from tui.browser.cmdline import export_path

    from .tui.conftest import browsing

    now = _dt.datetime(2026, 1, 2, 3, 4, 5)
    monkeypatch.setattr(tui.browser.app, "export_path", lambda q, folder=None: export_path(q, folder, now))
    folder = tmp_path / "work"
    folder.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = outside / "stolen.json"
    trap = folder / "rankscope-trace-cache-20260102-030405.json"
    trap.symlink_to(victim)
    monkeypatch.chdir(folder)
    async with browsing((120, 40), "cache") as (app, pilot):
        path = app.action_export_trace()
        await pilot.pause()
    assert not victim.exists()
    assert trap.is_symlink()
    assert path is not None and path.name == "rankscope-trace-cache-20260102-030405-2.json"
    assert not path.is_symlink() and json.loads(path.read_text("utf-8"))["query"] == "cache"
