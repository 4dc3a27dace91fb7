"""The browser opens whatever its data files hold (issue 26, class 1).

The store's data folder holds ``history.json``, ``cases.json`` and
``qrels.json``; ``--qrels FILE`` names another judgments file. Each is read
at open by the one reader: JSON nested 100,000 deep (``RecursionError``
crashed the browser at open), a wrong shape (``"judgments": [1, 2]``), a
FIFO (the open waited for a writer forever) or ``/dev/zero`` is reported in
one "Not read" notification naming the file, searching works, and the file
is left as it was; with a UTF-8 BOM the file is read as without one.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from engine import Store
from engine.lab.qrels import Qrels, qrels_text
from engine.store.userdata import CASES_FILE, HISTORY_FILE, QRELS_FILE, store_dir

from ..test_file_inputs import DATA_SHAPES, guarded, hostile
from .conftest import browsing, build_app, notifications, search_for, wait_for

pytestmark = pytest.mark.skipif(
    not hasattr(os, "mkfifo") or not os.path.exists("/dev/zero"), reason="needs FIFOs and /dev/zero"
)

KINDS = ["deep-json", "wrong-shape", "fifo", "dev-zero", "lone-surrogate"]
#: A valid file of each name, and what the browser holds once it is read.
VALID = {
    HISTORY_FILE: (json.dumps({"version": 1, "queries": ["write quorum"]}), "history"),
    CASES_FILE: (
        json.dumps({"version": 1, "cases": [{"id": "c1", "query": "write quorum", "judgments": {}}]}),
        "cases",
    ),
    QRELS_FILE: (qrels_text(Qrels({"q1": {"docs/a.md::A": 2}}), "json"), "judgments"),
}


@pytest.fixture
def db(sample_file):
    return sample_file


def place(kind: str, name: str, target: Path, scratch: Path) -> str:
    """Put a file of ``kind`` at ``target``; what the notification must say."""
    if kind == "wrong-shape":
        text, message = DATA_SHAPES[name]
        target.write_text(text, "utf-8")
        return message
    made, (message,) = hostile(kind, "queries", scratch)
    if made.is_symlink():
        target.symlink_to(os.readlink(made))
    else:
        os.rename(made, target)
    return message


def fingerprint(p: Path) -> tuple:
    st = os.lstat(p)
    return (st.st_mode, st.st_size, st.st_mtime_ns)


async def open_and_search(app) -> None:
    async with app.run_test(size=(120, 40)) as pilot:
        await search_for(pilot, "write quorum")
        await wait_for(pilot, lambda: any(n.title == "Not read" for n in notifications(app)), what="'Not read'")


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", [HISTORY_FILE, CASES_FILE, QRELS_FILE])
async def test_the_browser_opens_over_a_bad_data_file(name, kind, db, tmp_path):
    folder = store_dir(db)
    assert folder is not None
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / name
    message = place(kind, name, target, tmp_path)
    before = fingerprint(target)
    app = build_app(store=Store.open_readonly(db), store_label="sample")
    with guarded(seconds=60):
        await open_and_search(app)
    (note,) = [n for n in notifications(app) if n.title == "Not read"]
    assert str(target) in note.message and message in note.message, note.message
    assert fingerprint(target) == before


@pytest.mark.parametrize("kind", KINDS)
async def test_the_browser_opens_over_a_bad_qrels_option_file(kind, db, tmp_path):
    """``rankscope STORE --qrels FILE``: the CLI refuses such a file before
    the browser starts; the browser itself reads it through the same reader."""
    target = tmp_path / "judged.json"
    message = place(kind, QRELS_FILE, target, tmp_path)
    before = fingerprint(target)
    app = build_app(store=Store.open_readonly(db), store_label="sample", qrels_path=target)
    with guarded(seconds=60):
        await open_and_search(app)
    (note,) = [n for n in notifications(app) if n.title == "Not read"]
    assert str(target) in note.message and message in note.message, note.message
    assert fingerprint(target) == before


@pytest.mark.parametrize("name", [HISTORY_FILE, CASES_FILE, QRELS_FILE])
async def test_a_bom_on_a_data_file_changes_nothing(name, db, tmp_path):
    folder = store_dir(db)
    assert folder is not None
    folder.mkdir(parents=True, exist_ok=True)
    text, part = VALID[name]
    (folder / name).write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))
    async with browsing((120, 40), "write quorum", store=Store.open_readonly(db), store_label="sample") as (app, pilot):
        state = app.browser.state
        assert state is not None and state.problems() == []
        held = {
            "history": state.history.entries,
            "cases": [c.id for c in state.cases.cases],
            "judgments": state.judgments.qrels.judgments,
        }[part]
        assert held, held
    assert not any(n.title == "Not read" for n in notifications(app))


@pytest.mark.parametrize(
    "name, message",
    [
        ("nodir/q.json", "--qrels nodir/q.json: folder nodir does not exist"),
        ("store.db-wal", "--qrels store.db-wal is the wal file of the store given as PATH; give another file name"),
    ],
)
def test_a_new_qrels_file_is_refused_where_no_file_may_be_written(name, message, db, tmp_path, monkeypatch, capsys):
    """``rankscope STORE --qrels nodir/q.json``: grading then created
    ``nodir/`` and wrote the file; the CLI refuses a missing folder (and the
    store's own files) at startup, as every other output
    (:func:`engine.files.writing.check_output`), and writes nothing."""
    from tui.browser.app import RankscopeApp
    from tui.cli import main

    store = tmp_path / "store.db"
    store.write_bytes(Path(db).read_bytes())
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(RankscopeApp, "run", lambda self: pytest.fail("the browser started"))
    with pytest.raises(SystemExit) as exc:
        main([str(store.name), "--qrels", name])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and err == f"rankscope: error: {message}\n", err
    assert not (tmp_path / "nodir").exists() and not (tmp_path / "store.db-wal").exists()
