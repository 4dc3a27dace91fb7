"""Creating a store is atomic (issue 13, item 4): two ``index`` runs on a
fresh path at once both succeed on one store, a full disk leaves nothing
half-made, and a store an older version left half-made is resumed."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from engine import Store
from engine.store.errors import StoreError
from engine.store.schema import APPLICATION_ID
from tui.cli import main

from ..helpers import rounds, spans

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def corpus(tmp_path):
    folder = tmp_path / "c"
    folder.mkdir()
    for i in range(3):
        (folder / f"f{i}.md").write_text(f"# Note {i}\nzebra {i}\n", "utf-8")
    return folder


def _labels(path: Path) -> set[str]:
    with Store.open_readonly(path) as s:
        return {x.label for x in s.sources()}


def test_second_index_run_arriving_mid_creation(tmp_path, corpus, monkeypatch, capsys):
    """Run B starts while run A is creating the store (A has opened its
    connection, nothing more). Before: B found a file with no tables ("not
    an SQLite database (header b'')" / "missing table(s) chunks"). Now A
    builds under a temporary name, B creates the store itself, and A then
    uses B's store: both succeed."""
    db = tmp_path / "s.db"
    import engine.store.sql

    real_connect = engine.store.sql.connect
    state = {"nested": False, "b_code": None, "b_saw_store": None}

    def connect(target, *args, **kwargs):
        conn = real_connect(target, *args, **kwargs)
        if not state["nested"] and "rankscope" not in str(target):
            state["nested"] = True
            with pytest.raises(SystemExit) as exc:  # run B, start to end, right now
                main(["index", str(corpus), "--db", str(db)])
            state["b_code"] = exc.value.code
            state["b_saw_store"] = db.exists()
        return conn

    monkeypatch.setattr(engine.store.sql, "connect", connect)
    with pytest.raises(SystemExit) as exc:
        main(["index", str(corpus), "--db", str(db)])
    monkeypatch.undo()
    err = capsys.readouterr().err
    assert state["b_code"] in (0, None), err
    assert exc.value.code in (0, None), err
    assert _labels(db) == {"f0.md", "f1.md", "f2.md"}
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".creating")]


@pytest.mark.parametrize("seconds", spans(brief=1.0))
def test_concurrent_creation_in_threads(tmp_path, seconds):
    """Eight threads create and fill the same fresh path at once, round after
    round for ``seconds``: every one succeeds and every label lands in the one store."""
    for round_ in rounds(seconds):
        db = tmp_path / f"r{round_}" / "s.db"
        db.parent.mkdir()
        barrier = threading.Barrier(8)
        errors: list[BaseException] = []

        def worker(i: int, barrier: threading.Barrier = barrier, db=db, errors: list[BaseException] = errors) -> None:
            try:
                barrier.wait()
                with Store.create(db) as s:
                    s.index_text(f"t{i}.md", f"# T{i}\nzebra\n", "markdown")
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        assert _labels(db) == {f"t{i}.md" for i in range(8)}
        shutil.rmtree(db.parent)


@pytest.mark.parametrize("seconds", spans(brief=2.0))
def test_concurrent_index_processes(tmp_path, corpus, seconds):
    """The break-it reproduction: two ``rankscope index`` processes on a
    fresh path, round after round for ``seconds``; both always exit 0."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    for round_ in rounds(seconds):
        db = tmp_path / f"p{round_}" / "s.db"
        db.parent.mkdir()
        cmd = [sys.executable, "-m", "tui.cli", "index", str(corpus), "--db", str(db)]
        procs = [
            subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env) for _ in range(2)
        ]
        for p in procs:
            out, err = p.communicate(timeout=300)
            assert p.returncode == 0, err
        assert _labels(db) == {"f0.md", "f1.md", "f2.md"}
        shutil.rmtree(db.parent)


@pytest.mark.skipif(sys.platform == "win32", reason="needs RLIMIT_FSIZE")
@pytest.mark.parametrize("blocks", [4, 8, 16, 32])
def test_full_disk_during_creation_leaves_nothing(tmp_path, corpus, blocks):
    """A file-size limit (``ulimit -f``: writes fail as on a full disk) stops
    creation part-way. Before: a half-made ``s.db`` stayed, and every later
    ``index`` failed ("missing table(s) ...") until it was deleted by hand.
    Now nothing is left at the path and the next run just works."""
    db = tmp_path / "s.db"
    limit = blocks * 1024
    code = (
        "import resource, sys; resource.setrlimit(resource.RLIMIT_FSIZE, (%d, %d)); "
        "from tui.cli.main import main; main(sys.argv[1:])" % (limit, limit)
    )
    r = subprocess.run(
        [sys.executable, "-c", code, "index", str(corpus), "--db", str(db)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    if r.returncode == 0:
        pytest.skip(f"{limit} bytes were enough to create the store")  # the limit is for the small cases
    assert r.returncode == 2 and r.stderr.startswith("rankscope: error: "), r.stderr
    assert "Traceback" not in r.stderr
    assert not db.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c"]
    with pytest.raises(SystemExit) as exc:
        main(["index", str(corpus), "--db", str(db)])
    assert exc.value.code in (0, None)
    assert _labels(db) == {"f0.md", "f1.md", "f2.md"}


@pytest.mark.parametrize("tables", [(), ("sources",), ("sources", "chunks")])
def test_a_half_created_store_of_ours_is_resumed(tmp_path, corpus, tables):
    """A store an older version left half-made (marked as ours, some tables
    missing) is completed by the next ``index`` instead of refused."""
    from engine.store.schema import SCHEMA_SQL

    db = tmp_path / "s.db"
    conn = sqlite3.connect(db)
    conn.execute(f"PRAGMA application_id={APPLICATION_ID}")
    conn.execute("PRAGMA journal_mode=WAL")
    statements = [s for s in SCHEMA_SQL.split(";") if s.strip()]
    for name in tables:
        conn.execute(next(s for s in statements if f" {name} " in s or f" {name}(" in s))
    conn.close()
    with pytest.raises(SystemExit) as exc:
        main(["index", str(corpus), "--db", str(db)])
    assert exc.value.code in (0, None)
    assert _labels(db) == {"f0.md", "f1.md", "f2.md"}


def test_creation_failure_is_a_store_error_and_cleans_up(tmp_path, monkeypatch):
    """An SQLite failure while building (here: the schema) names the path;
    the temporary file is removed and nothing is left at the path."""
    import engine.store.schema

    monkeypatch.setattr(engine.store.schema, "SCHEMA_SQL", "CREATE TABLE sources (x); CREATE TABLE sources (y);")
    with pytest.raises(StoreError, match="s.db"):
        Store.create(tmp_path / "s.db")
    assert list(tmp_path.iterdir()) == []
