"""CLI: ``stores``, ``sessions`` and ``index`` on real folders."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from engine import Store
from engine.store import indexing
from engine.store.discovery import store_name_for_project
from tui.cli import app

from .helpers import cli_error
from .conftest import LEGACY, MODERN

runner = CliRunner()


@pytest.fixture(autouse=True)
def wide(monkeypatch):
    """Tables wide enough that no store name or status is folded."""
    monkeypatch.setenv("COLUMNS", "160")


# ─── stores ──────────────────────────────────────────────────────────────


def test_stores_table_and_json(home):
    folder = home / ".claude" / "context-mode" / "content"
    folder.mkdir(parents=True)
    name = store_name_for_project("/work/p")
    shutil.copy2(MODERN, folder / f"{name}.db")
    (folder / "broken.db").write_text("nope")
    before = hashlib.sha256((folder / f"{name}.db").read_bytes()).hexdigest()

    r = runner.invoke(app, ["stores"])
    assert r.exit_code == 0, r.output
    for text in (f"{name}.db", "Claude Code", "123", "8 cols", "broken.db", "not an SQLite database"):
        assert text in r.output

    r = runner.invoke(app, ["stores", "--json"])
    rows = json.loads(r.output)
    assert [(row["path"].endswith(f"{name}.db"), row["chunks"]) for row in rows if row["error"] is None] == [
        (True, 123)
    ]
    assert {"path", "size_bytes", "sources", "chunks", "code_chunks", "last_indexed_at", "schema", "error"} <= set(
        rows[0]
    )

    r = runner.invoke(app, ["stores", "--project", "/work/p", "--json"])
    assert [row["project_hash"] for row in json.loads(r.output)] == [name]
    assert hashlib.sha256((folder / f"{name}.db").read_bytes()).hexdigest() == before


def _stores_home(home):
    folder = home / ".claude" / "context-mode" / "content"
    folder.mkdir(parents=True)
    name = store_name_for_project("/work/p")
    shutil.copy2(MODERN, folder / f"{name}.db")
    (folder / f"{name}.db-wal").write_bytes(b"")  # a live writer
    (folder / "broken.db").write_text("nope")
    legacy = home / ".codex" / "context-mode" / "content"
    legacy.mkdir(parents=True)
    shutil.copy2(LEGACY, legacy / "fedcba9876543210.db")
    return folder, name


def test_stores_fit_80_columns(home, monkeypatch):
    from tui.present.fmt import human_bytes

    folder, name = _stores_home(home)
    monkeypatch.setenv("COLUMNS", "80")
    r = runner.invoke(app, ["stores"])
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert max(len(line) for line in lines) <= 80, r.output
    assert "…" not in r.output
    size = human_bytes(MODERN.stat().st_size)
    assert size.endswith(" KiB")
    block = "\n".join(lines)
    assert (
        f"  ~/.claude/context-mode/content/{name}.db  live: -wal present\n    {size} · 11 sources · 123 chunks (36 code) · 2 sessions"
        in block
    )
    assert "~/.claude/context-mode/content/broken.db  unreadable\n    4 B · the file is not an SQLite database" in block
    assert "0 sessions\n" in block and "FTS 4 cols (old)" in block and "indexed 20" in block


def test_stores_table_when_wide_uses_the_same_units(home):
    from tui.present.fmt import human_bytes

    _stores_home(home)
    r = runner.invoke(app, ["stores"])  # COLUMNS=160: the table
    assert "last indexed (UTC)" in r.output and "sessions" in r.output
    assert human_bytes(MODERN.stat().st_size) in r.output and " kB" not in r.output


def test_human_bytes_and_pack():
    from tui.present.fmt import human_bytes, pack

    assert [human_bytes(n) for n in (0, 5, 1023, 1024, 610304, 5 * 1024**2 + 1, 3 * 1024**4)] == [
        "0 B",
        "5 B",
        "1023 B",
        "1.0 KiB",
        "596.0 KiB",
        "5.0 MiB",
        "3.0 TiB",
    ]
    assert pack(["aaaa", "bb", "cc"], 8) == ["aaaa", "bb · cc"]
    assert pack(["a" * 12, "b"], 8) == ["a" * 12, "b"]
    assert pack([], 8) == []


def test_stores_for_a_project_without_one(home):
    r = runner.invoke(app, ["stores", "--project", "/nonexistent"])
    assert r.exit_code == 0
    assert r.output.startswith("No context-mode content store for project /nonexistent found. Looked in:")


def test_stores_none_found_says_where_it_looked(home):
    r = runner.invoke(app, ["stores"])
    assert r.exit_code == 0
    assert "No context-mode content stores found" in r.output
    assert ".claude/context-mode/content" in r.output and ".codex/context-mode/content" in r.output


# ─── sessions ────────────────────────────────────────────────────────────


def test_sessions(capsys):
    r = runner.invoke(app, ["sessions", "--db", str(MODERN)])
    assert r.exit_code == 0, r.output
    assert "(unattributed)" in r.output and "s-beta" in r.output and "37" in r.output
    r = runner.invoke(app, ["sessions", "--db", str(MODERN), "--json"])
    assert json.loads(r.output) == [
        {"session_id": "", "chunks": 71},
        {"session_id": "s-beta", "chunks": 37},
        {"session_id": "s-alpha", "chunks": 15},
    ]
    r = runner.invoke(app, ["sessions", "--db", str(LEGACY)])
    assert "122" in r.output and "4-column" in r.output
    err = cli_error(["sessions", "--db", "/nonexistent/x.db"], capsys)
    assert "no database at /nonexistent/x.db" in err


# ─── index ───────────────────────────────────────────────────────────────


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "proj"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "guide.md").write_text("# Guide\ninstall steps\n")
    (root / "notes.txt").write_text("plain notes\n")
    (root / "logo.png").write_bytes(b"\x89PNG\x00\x00")
    (root / "big.log").write_text("y" * 3000)
    (root / "build").mkdir()
    (root / "build" / "out.txt").write_text("generated\n")
    (root / ".gitignore").write_text("build/\n")
    return root


@pytest.mark.parametrize("limit", ["9223372036854775807", "10000000000000"])
def test_a_huge_max_file_bytes_reads_only_what_the_files_hold(project, tmp_path, limit):
    """Each file read allocated the limit: 2**63 - 1 ended in OverflowError,
    10 TB in MemoryError."""
    db = tmp_path / "s.db"
    r = runner.invoke(app, ["index", str(project), "--db", str(db), "--max-file-bytes", limit])
    assert r.exit_code == 0, r.output
    assert "indexed 3 files" in r.output  # docs/guide.md, notes.txt, big.log


def test_a_file_that_grows_while_read_is_read_to_the_limit(tmp_path):
    from engine.store.corpus import _read_at_most

    f = tmp_path / "g.txt"
    f.write_bytes(b"x" * 100)
    with open(f, "rb") as fh:
        assert len(_read_at_most(fh, 10, 1000)) == 100  # stat said 10, the file holds 100
    with open(f, "rb") as fh:
        assert len(_read_at_most(fh, 10, 50)) == 51  # one past the limit tells it grew past it


def test_index_reports_skips_and_unchanged(project, tmp_path):
    db = tmp_path / "s.db"
    r = runner.invoke(app, ["index", str(project), "--db", str(db), "--max-file-bytes", "2048"])
    assert r.exit_code == 0, r.output
    assert "indexed 2 files" in r.output  # docs/guide.md, notes.txt
    assert "skipped 3 (1 over 2048 bytes, 1 binary, 1 vcs-metadata):" in r.output
    assert ".gitignore: version-control metadata, not content" in r.output
    assert "big.log: 3000 bytes is over the 2048-byte limit" in r.output
    assert "logo.png: binary file" in r.output
    assert "build/out.txt" not in r.output  # ignored by .gitignore, silently

    r = runner.invoke(app, ["index", str(project), "--db", str(db), "--max-file-bytes", "2048"])
    assert r.exit_code == 0, r.output
    assert "indexed 0 files, 0 chunks, 0 bytes" in r.output and "2 unchanged" in r.output

    (project / "notes.txt").unlink()
    r = runner.invoke(app, ["index", str(project), "--db", str(db), "--max-file-bytes", "2048", "--no-gitignore"])
    assert "1 removed" in r.output  # notes.txt
    with Store.open_readonly(db) as store:
        labels = {s.label for s in store.sources()}
    assert labels == {"docs/guide.md", "build/out.txt"}


def test_index_full_reindexes(project, tmp_path):
    db = tmp_path / "s.db"
    runner.invoke(app, ["index", str(project), "--db", str(db)])
    r = runner.invoke(app, ["index", str(project), "--db", str(db), "--full"])
    assert "indexed 3 files" in r.output and "unchanged" not in r.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["index", "/nonexistent/folder", "--db", "DB"], "no such file or folder: /nonexistent/folder"),
        (["index", "PROJECT", "--db", "/nonexistent/dir/s.db"], "does not exist"),
        (["index", "PROJECT", "--db", "NOTADB/s.db"], "notadb.db is not a folder"),  # was "folder ... does not exist"
        (["index", "PROJECT", "--db", "DB", "--max-file-bytes", "-1"], "--max-file-bytes must be 0 or more"),
        (["index", "PROJECT", "--db", "LEGACY"], "it is not a rankscope store"),
        (["index", "PROJECT", "--db", "NOTADB"], "not an SQLite database"),
    ],
)
def test_index_errors_are_one_line(project, tmp_path, capsys, args, message):
    legacy = tmp_path / "legacy.db"
    shutil.copy2(LEGACY, legacy)
    (tmp_path / "notadb.db").write_text("text")
    subs = {
        "DB": str(tmp_path / "new.db"),
        "PROJECT": str(project),
        "LEGACY": str(legacy),
        "NOTADB": str(tmp_path / "notadb.db"),
        "NOTADB/s.db": str(tmp_path / "notadb.db" / "s.db"),
    }
    before = legacy.read_bytes()
    err = cli_error([subs.get(a, a) for a in args], capsys)
    assert message in err
    assert legacy.read_bytes() == before


def test_index_refuses_a_context_mode_store(project, home, capsys):
    folder = home / ".claude" / "context-mode" / "content"
    folder.mkdir(parents=True)
    target = folder / "0123456789abcdef.db"
    shutil.copy2(MODERN, target)
    before = target.read_bytes()
    err = cli_error(["index", str(project), "--db", str(target)], capsys)
    assert "refusing to write" in err and "never writes to stores it did not create" in err
    assert target.read_bytes() == before
    err = cli_error(["index", str(project), "--db", str(folder / "new.db")], capsys)  # not even a new file there
    assert "refusing to write" in err
    assert sorted(p.name for p in folder.iterdir()) == ["0123456789abcdef.db"]


def _digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("fixture", [MODERN, LEGACY], ids=["1.0.169", "1.0.22"])
@pytest.mark.parametrize("name", ["copy.db", "context-mode-123.db"])
def test_index_never_writes_to_a_store_it_did_not_create(project, home, capsys, fixture, name):
    """A context-mode store anywhere (here: a copy outside the content
    folders, and the legacy temp-folder name) is refused before any write:
    same bytes, no -wal/-shm, no rankscope_files table."""
    import tempfile

    folder = Path(tempfile.gettempdir()) if name.startswith("context-mode-") else home
    target = folder / name
    shutil.copy2(fixture, target)
    os.chmod(target, 0o644)
    before = _digest(target)
    err = cli_error(["index", str(project), "--db", str(target)], capsys)
    assert f"refusing to write to {target}: it is not a rankscope store" in err
    assert "looks like a context-mode content store" in err and "index into a new --db instead" in err
    assert _digest(target) == before
    assert sorted(p.name for p in folder.iterdir()) == [name]


def test_index_refuses_an_unknown_sqlite_database(project, tmp_path, capsys):
    target = tmp_path / "app.db"
    conn = sqlite3.connect(target)
    conn.execute("CREATE TABLE notes (x)")
    conn.commit()
    conn.close()
    before = _digest(target)
    err = cli_error(["index", str(project), "--db", str(target)], capsys)
    assert "it is not a rankscope store (it is an SQLite database of unknown origin)" in err
    assert _digest(target) == before and sorted(p.name for p in tmp_path.iterdir()) == ["app.db", "proj"]


def test_index_refuses_an_existing_empty_file(project, tmp_path, capsys):
    """``index --db notes.md`` where notes.md is empty turned it into a store
    (SQLite reads an empty file as an empty database): it is not a store
    rankscope made. One line, exit 2, the file untouched, nothing beside it."""
    target = tmp_path / "notes.md"
    target.write_bytes(b"")
    mtime = target.stat().st_mtime_ns
    err = cli_error(["index", str(project), "--db", str(target)], capsys)
    assert err == (
        f"rankscope: error: cannot create store {target}: it is an empty file, not a store rankscope made; "
        "remove it or give another name"
    )
    assert target.read_bytes() == b"" and target.stat().st_mtime_ns == mtime
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.md", "proj"]


def test_index_updates_its_own_store(project, tmp_path):
    db = tmp_path / "s.db"
    assert runner.invoke(app, ["index", str(project), "--db", str(db)]).exit_code == 0
    (project / "more.md").write_text("# More\ntext\n")
    r = runner.invoke(app, ["index", str(project), "--db", str(db)])
    assert r.exit_code == 0, r.output
    assert "indexed 1 file," in r.output


def test_index_interrupt_exits_130(project, tmp_path, monkeypatch):
    import engine.store.corpus as corpus

    real = corpus.index_paths

    def interrupted(*a, **kw):
        progress = kw["progress"]

        def boom(label, n):
            progress(label, n)
            raise KeyboardInterrupt

        kw["progress"] = boom
        return real(*a, **kw)

    monkeypatch.setattr(corpus, "index_paths", interrupted)  # `rankscope index` imports it when it runs
    db = tmp_path / "s.db"
    Store.create(db).close()  # an existing store is updated in place, one transaction per file
    r = runner.invoke(app, ["index", str(project), "--db", str(db)])
    assert r.exit_code == 130
    assert "interrupted after 1 indexed" in r.output and "consistent" in r.output
    with Store.open_readonly(db) as store:
        assert len(store.sources()) == 1


@pytest.mark.parametrize("after", [1, 2])
def test_an_interrupted_index_into_a_new_store_leaves_nothing(project, tmp_path, monkeypatch, after):
    """The README: the store ``index --db`` creates is built under a
    temporary name and removed on an interrupt. It was built in place, and
    Ctrl+C left a store with the files indexed so far."""
    real = indexing.insert
    calls = []

    def commit_then_interrupt(*a, **kw):
        result = real(*a, **kw)
        calls.append(result.label)
        if len(calls) == after:
            raise KeyboardInterrupt
        return result

    monkeypatch.setattr(indexing, "insert", commit_then_interrupt)
    db = tmp_path / "new.db"
    r = runner.invoke(app, ["index", str(project), "--db", str(db)])
    assert r.exit_code == 130
    assert f"interrupted after {after} indexed and 0 unchanged files: the new store {db} was not created" in " ".join(
        r.output.split()
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["proj"]  # neither the store nor a temporary file


def test_a_new_store_gets_its_name_only_when_complete(project, tmp_path, monkeypatch):
    """While a new store is indexed, nothing is at its name; then it is put
    there whole. Another run's store that appeared meanwhile is indexed
    into (tests/engine/test_store_creation.py); anything else is refused
    and left as it is."""
    real = indexing.insert
    seen = []
    db = tmp_path / "new.db"

    def watch(*a, **kw):
        seen.append(sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith(".")))
        return real(*a, **kw)

    monkeypatch.setattr(indexing, "insert", watch)
    r = runner.invoke(app, ["index", str(project), "--db", str(db)])
    assert r.exit_code == 0, r.output
    assert seen and all(names == ["proj"] for names in seen)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new.db", "proj"]
    with Store.open_readonly(db) as store:
        assert len(store.sources()) == len(seen)

    other = tmp_path / "other.db"

    def squatter(*a, **kw):
        if not other.exists():
            other.write_bytes(b"someone else's")
        return real(*a, **kw)

    monkeypatch.setattr(indexing, "insert", squatter)
    r = runner.invoke(app, ["index", str(project), "--db", str(other)])
    assert r.exit_code != 0 and "not an SQLite database" in str(r.exception)
    assert other.read_bytes() == b"someone else's"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new.db", "other.db", "proj"]


# ─── read-only files and folders (needs a process without root's rights to write) ───


def _without_write_override() -> list[str] | None:
    """Command prefix that runs a process which file modes bind: nothing when
    we are not root; as root, ``setpriv`` dropping ``CAP_DAC_OVERRIDE`` (so a
    0444 file or a 0555 folder refuses writes) while keeping
    ``CAP_DAC_READ_SEARCH`` (so the checkout and its venv are read wherever
    the clone lies: a ``mktemp -d`` folder is 0700); ``None`` without setpriv."""
    if not hasattr(os, "geteuid"):
        return None
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    return [setpriv, "--inh-caps=-dac_override", "--bounding-set=-dac_override"] if setpriv else None


@pytest.mark.skipif(_without_write_override() is None, reason="needs a non-root user (or setpriv)")
def test_index_into_a_read_only_store_is_one_line(tmp_path):
    import subprocess
    import sys

    from .conftest import SAMPLE_CORPUS

    base = tmp_path / "ro"
    base.mkdir()
    corpus = base / "corpus"
    shutil.copytree(SAMPLE_CORPUS, corpus)
    (corpus / "new.md").write_text("# New\nfresh\n")
    rodir = base / "rodir"
    rodir.mkdir()
    for db in (base / "rofile.db", rodir / "s.db"):
        with Store.create(db) as s:
            s.index_text("a.md", "# A\nalpha", "markdown")
    os.chmod(base / "rofile.db", 0o444)
    os.chmod(rodir, 0o555)
    try:
        before = {p: p.read_bytes() for p in (base / "rofile.db", rodir / "s.db")}
        cases = [
            (base / "rofile.db", f"cannot write to {base / 'rofile.db'}: the file is read-only"),
            (rodir / "s.db", f"cannot write to {rodir / 's.db'}: its folder {rodir} is not writable"),
            (rodir / "new.db", f"cannot create store {rodir / 'new.db'}: its folder {rodir} is not writable"),
        ]
        for db, message in cases:
            r = subprocess.run(
                [*_without_write_override(), sys.executable, "-m", "tui.cli", "index", str(corpus), "--db", str(db)],
                capture_output=True,
                text=True,
                timeout=60,
                env={**os.environ, "HOME": str(base)},
            )
            assert r.returncode == 2, r.stderr
            assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
            assert r.stderr.startswith(f"rankscope: error: {message}"), r.stderr
        assert {p: p.read_bytes() for p in before} == before
        assert sorted(p.name for p in rodir.iterdir()) == ["s.db"]
    finally:
        os.chmod(rodir, 0o755)


def test_index_interrupt_after_a_commit_reports_every_stored_file(project, tmp_path, monkeypatch):
    """Ctrl-C landing just after a file's COMMIT: the message counts that file."""
    real = indexing.insert
    calls = []

    def commit_then_interrupt(*a, **kw):
        result = real(*a, **kw)
        calls.append(result.label)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return result

    monkeypatch.setattr(indexing, "insert", commit_then_interrupt)
    db = tmp_path / "s.db"
    Store.create(db).close()  # an existing store keeps what was committed
    r = runner.invoke(app, ["index", str(project), "--db", str(db)])
    assert r.exit_code == 130
    monkeypatch.setattr(indexing, "insert", real)
    with Store.open_readonly(db) as store:
        assert len(store.sources()) == 2
    assert "interrupted after 2 indexed and 0 unchanged files" in r.output


def test_index_warns_when_another_folder_loses_labels(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    for folder, text in ((a, "alpha"), (b, "beta")):
        folder.mkdir()
        (folder / "README.md").write_text(f"# Readme\n{text}\n")
        (folder / "guide.md").write_text(f"# Guide\n{text}\n")
    (a / "own.md").write_text("# Own\nonly in a\n")
    db = tmp_path / "s.db"
    r = runner.invoke(app, ["index", str(a), "--db", str(db)])
    assert "replaced" not in r.output
    r = runner.invoke(app, ["index", str(b), "--db", str(db)])
    assert r.exit_code == 0, r.output
    text = " ".join(r.output.split())
    assert (
        "warning: replaced 2 labels that another folder had indexed: README.md, guide.md "
        f"(previously from {os.path.realpath(a)};"
    ) in text
    assert "index each folder into its own --db to keep both" in text


# ─── stores paired with their session DB ─────────────────────────────────


def test_stores_show_the_paired_session_db(home):
    from .conftest import SESSION_DB

    root = home / ".claude" / "context-mode"
    (root / "content").mkdir(parents=True)
    (root / "sessions").mkdir()
    name = store_name_for_project("/tmp/agentview/public/project")
    assert name == "5399b2ea68c12e92"
    shutil.copy2(MODERN, root / "content" / f"{name}.db")
    shutil.copy2(MODERN, root / "content" / "0123456789abcdef.db")
    shutil.copy2(SESSION_DB, root / "sessions" / f"{name}.db")
    before = hashlib.sha256((root / "sessions" / f"{name}.db").read_bytes()).hexdigest()

    r = runner.invoke(app, ["stores", "--json"])
    rows = {Path(row["path"]).name: row for row in json.loads(r.output)}
    paired = rows[f"{name}.db"]
    assert paired["session_db"] == str(root / "sessions" / f"{name}.db")
    assert (paired["session_db_sessions"], paired["session_db_events"], paired["session_db_searches"]) == (3, 75, 13)
    assert rows["0123456789abcdef.db"]["session_db"] is None

    r = runner.invoke(app, ["stores"])
    assert r.exit_code == 0, r.output
    assert "3 sessions, 75 events" in r.output and "13 recorded ctx_search calls" in r.output
    assert hashlib.sha256((root / "sessions" / f"{name}.db").read_bytes()).hexdigest() == before
    assert not list((root / "sessions").glob("*-wal")) and not list((root / "sessions").glob("*-shm"))


def test_unreadable_session_db_is_reported(home):
    root = home / ".claude" / "context-mode"
    (root / "content").mkdir(parents=True)
    (root / "sessions").mkdir()
    shutil.copy2(MODERN, root / "content" / "0123456789abcdef.db")
    (root / "sessions" / "0123456789abcdef.db").write_text("not sqlite")
    rows = json.loads(runner.invoke(app, ["stores", "--json"]).output)
    assert rows[0]["session_db"] and rows[0]["session_db_error"] and rows[0]["session_db_events"] is None
    assert "unreadable" in runner.invoke(app, ["stores"]).output


def test_store_picker_line_names_the_session_db(home):
    from engine.store.discovery import read_store_info
    from tui.browser.screens.stores import store_line

    from .conftest import SESSION_DB

    root = home / ".claude" / "context-mode"
    (root / "content").mkdir(parents=True)
    (root / "sessions").mkdir()
    shutil.copy2(MODERN, root / "content" / "0123456789abcdef.db")
    shutil.copy2(SESSION_DB, root / "sessions" / "0123456789abcdef__1a2b3c4d.db")  # a linked worktree's DB
    line = store_line(read_store_info(root / "content" / "0123456789abcdef.db")).plain
    assert "session DB: 3 sessions, 75 events (plugin scope available)" in line
