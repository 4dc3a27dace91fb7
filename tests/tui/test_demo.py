"""Demo mode in the browser (issue 24, item 2): no store picker, exports
delivered to the visitor (a download in a web page, the visitor's folder at
this machine's terminal, refused over SSH), idle sessions closed; and the
visitor folder's rules (:mod:`tui.cli.visitor`)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from engine import Store, index_corpus
from tui.browser.app import NO_PICKER_IN_DEMO, RankscopeApp
from tui.browser.delivery import REFUSED_OVER_SSH, TEMPORARY_NOTE
from tui.browser.options import DemoMode
from tui.browser.screens.cases import CasesScreen
from tui.browser.screens.stores import StorePickerScreen
from tui.cli import visitor
from tui.cli.visitor import (
    VisitorFolderError,
    given_visitor_folder,
    make_visitor_folder,
    remove_visitor_folder,
    sweep_stale,
)

from ..conftest import SAMPLE_CORPUS
from .conftest import (
    browsing,
    build_app,
    notifications,
    press,
    processed,
    run_command,
    search_for,
    wait_for,
    wait_screen,
)
from .test_actions import _palette_hits

WIDE = (120, 40)


@pytest.fixture
def visitor_dir(tmp_path):
    folder = make_visitor_folder(tmp_path)
    yield folder
    remove_visitor_folder(folder)


@pytest.fixture
def web(monkeypatch):
    """The app believes it runs in a web page; its downloads are recorded
    as ``(file name, bytes, MIME type)``."""
    sent: list[tuple[str, bytes, str]] = []

    def deliver_binary(self, path_or_file, *, save_filename=None, mime_type=None, open_method="download", **kw):
        assert open_method == "download"
        sent.append((save_filename, path_or_file.read(), mime_type))

    monkeypatch.setattr(RankscopeApp, "is_web", property(lambda self: True))
    monkeypatch.setattr(RankscopeApp, "deliver_binary", deliver_binary)
    return sent


# ── the store picker is off ──────────────────────────────────────────────


async def test_a_demo_never_lists_this_machines_stores(visitor_dir):
    async with browsing(WIDE, "cache", demo=DemoMode(visitor_dir)) as (app, pilot):
        assert not app.check_action("open_stores", ())
        hits = await _palette_hits(app)
        assert not any(t.startswith("Open a context-mode store") for t in hits)
        app.action_open_stores()  # asked for anyway (a stale binding): refused, saying why
        await processed(pilot)
        assert not isinstance(app.screen, StorePickerScreen)
        assert any(n.message == NO_PICKER_IN_DEMO for n in notifications(app))
    own = build_app()  # a user's own session keeps it
    async with own.run_test(size=WIDE) as pilot:
        await search_for(pilot, "cache")
        assert own.check_action("open_stores", ())
        assert any(t.startswith("Open a context-mode store") for t in await _palette_hits(own))


# ── F6: where the export goes ────────────────────────────────────────────


async def test_f6_in_a_web_page_is_a_download(web, tmp_path, monkeypatch, visitor_dir):
    monkeypatch.chdir(tmp_path)
    async with browsing(WIDE, "cache", demo=DemoMode(visitor_dir)) as (app, pilot):
        await press(pilot, "f6")
        await wait_for(pilot, lambda: len(web) == 1, what="the download")
        name, data, mime = web[0]
        assert name.startswith("rankscope-trace-cache-") and name.endswith(".json") and mime == "application/json"
        assert json.loads(data)["query"] == "cache"
        assert any("sent to your web browser as a download" in n.message for n in notifications(app))
    assert list(tmp_path.iterdir()) == [visitor_dir]  # nothing written on the server
    assert list(visitor_dir.iterdir()) == []


async def test_f6_in_a_terminal_demo_writes_into_the_visitor_folder(tmp_path, monkeypatch, visitor_dir):
    monkeypatch.chdir(tmp_path)
    async with browsing(WIDE, "cache", demo=DemoMode(visitor_dir)) as (app, pilot):
        await press(pilot, "f6")
        await wait_for(pilot, lambda: any(TEMPORARY_NOTE in n.message for n in notifications(app)), what="export")
        [written] = list((visitor_dir / "exports").glob("rankscope-trace-cache-*.json"))
        assert json.loads(written.read_text())["query"] == "cache"
        assert any(str(written) in n.message for n in notifications(app))
    assert list(tmp_path.iterdir()) == [visitor_dir]  # not the current folder


async def test_f6_in_an_ssh_demo_is_refused_saying_why(tmp_path, monkeypatch, visitor_dir):
    monkeypatch.chdir(tmp_path)
    async with browsing(WIDE, "cache", demo=DemoMode(visitor_dir, remote=True)) as (app, pilot):
        await press(pilot, "f6")
        await wait_for(pilot, lambda: any(n.message == REFUSED_OVER_SSH for n in notifications(app)), what="refusal")
        assert [n.severity for n in notifications(app) if n.message == REFUSED_OVER_SSH] == ["error"]
    assert list(tmp_path.iterdir()) == [visitor_dir] and list(visitor_dir.iterdir()) == []


# ── saved cases: where their export goes ─────────────────────────────────


@pytest.fixture
def db(sample_file):
    return sample_file


async def _saved_case_export(app, pilot) -> None:
    await search_for(pilot, "write quorum")
    await press(pilot, "down", "down", "2")  # grade the second result
    await wait_for(pilot, lambda: app.browser.judged is not None and app.browser.judged.grades, what="grade")
    await run_command(pilot, "Save this case")
    await wait_for(pilot, lambda: app.browser.state.cases.cases, what="the saved case")
    await run_command(pilot, "Saved cases")
    await wait_screen(pilot, CasesScreen)
    await press(pilot, "e")


async def test_case_export_in_a_web_page_is_one_zip_download(web, db, tmp_path, monkeypatch, visitor_dir):
    monkeypatch.chdir(tmp_path)
    async with browsing((140, 45), store=Store.open_readonly(db), store_label="sample", demo=DemoMode(visitor_dir)) as (
        app,
        pilot,
    ):
        await _saved_case_export(app, pilot)
        await wait_for(pilot, lambda: len(web) == 1, what="the download")
    name, data, mime = web[0]
    assert (name, mime) == ("rankscope-cases.zip", "application/zip")
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        assert archive.namelist() == ["rankscope-cases.json", "rankscope-cases.qrels.json"]
        assert json.loads(archive.read("rankscope-cases.json"))[0]["query"] == "write quorum"
        assert json.loads(archive.read("rankscope-cases.qrels.json"))["queries"][0]["id"] == "write-quorum"
    assert not list(tmp_path.glob("rankscope-cases*"))


async def test_case_export_in_an_ssh_demo_is_refused(db, tmp_path, monkeypatch, visitor_dir):
    monkeypatch.chdir(tmp_path)
    async with browsing(
        (140, 45), store=Store.open_readonly(db), store_label="sample", demo=DemoMode(visitor_dir, remote=True)
    ) as (app, pilot):
        await _saved_case_export(app, pilot)
        await wait_for(pilot, lambda: any(n.message == REFUSED_OVER_SSH for n in notifications(app)), what="refusal")
    assert not list(tmp_path.rglob("rankscope-cases*"))


# ── idle sessions ────────────────────────────────────────────────────────


async def test_an_idle_session_warns_then_quits():
    # the warning window is a quarter of the timeout (1 s here): wide enough
    # for a loaded machine's event loop not to step over it
    async with browsing(WIDE, idle_timeout=4.0) as (app, pilot):
        await wait_for(pilot, lambda: any(n.title == "Still there?" for n in notifications(app)), what="warning")
        await wait_for(pilot, lambda: app.return_code is not None, what="the exit")
    assert app.return_code == 0


async def test_a_key_keeps_the_session_open():
    async with browsing(WIDE, idle_timeout=4.0) as (app, pilot):
        await wait_for(pilot, lambda: any(n.title == "Still there?" for n in notifications(app)), what="warning")
        before = app.last_input
        await press(pilot, "x")
        assert app.last_input > before and app.return_code is None
        await wait_for(pilot, lambda: app.return_code is not None, what="the exit")  # idle again: it ends


# ── the visitor folder ───────────────────────────────────────────────────


def test_visitor_folders_are_private_and_only_ours_are_removed(tmp_path):
    folder = make_visitor_folder(tmp_path)
    assert folder.name.startswith(visitor.PREFIX + f"{os.getpid()}-") and oct(folder.stat().st_mode & 0o777) == "0o700"
    assert given_visitor_folder(str(folder)) == folder
    other = tmp_path / "mine"
    other.mkdir()
    assert not remove_visitor_folder(other) and other.is_dir()  # not a visitor folder: left alone
    link = tmp_path / f"{visitor.PREFIX}1-link"
    link.symlink_to(other)
    for bad in (str(other), str(link), "relative/" + folder.name):
        with pytest.raises(VisitorFolderError):
            given_visitor_folder(bad)
    os.chmod(folder, 0o755)
    with pytest.raises(VisitorFolderError, match="mode 0700"):
        given_visitor_folder(str(folder))
    (folder / "data").mkdir()
    (folder / "data" / "qrels.json").write_text("{}")
    assert remove_visitor_folder(folder) and not folder.exists()
    assert other.is_dir() and link.is_symlink()


def test_stale_folders_of_ended_sessions_are_swept(tmp_path):
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = make_visitor_folder(tmp_path, pid=int(ended.stdout))
    alive = make_visitor_folder(tmp_path)  # this process runs
    (dead / "data").mkdir()
    unrelated = tmp_path / "rankscope-other"
    unrelated.mkdir()
    assert sweep_stale(tmp_path) == [dead]
    assert not dead.exists() and alive.is_dir() and unrelated.is_dir()


def test_the_demo_sets_its_data_and_cache_folders_and_removes_them(tmp_path, monkeypatch):
    """``rankscope --demo``: grades, history and saved cases in the visitor
    folder, which is gone when the app ends (here, as if the visitor
    graded a chunk and quit)."""
    from tui.cli import demo

    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    monkeypatch.delenv(visitor.VISITOR_DIR_ENV, raising=False)
    monkeypatch.setenv("RANKSCOPE_DATA_DIR", str(tmp_path / "host-data"))
    seen: dict[str, object] = {}

    def run(self):
        seen["data"] = Path(os.environ["RANKSCOPE_DATA_DIR"])
        seen["demo"] = self.options.demo
        seen["data"].mkdir(parents=True)
        (seen["data"] / "qrels.json").write_text("{}")

    monkeypatch.setattr(RankscopeApp, "run", run)
    monkeypatch.setattr("tui.cli.launch.require_terminal", lambda: None)  # the run above needs none
    store = tmp_path / "store.db"
    with Store.create(store) as s:
        index_corpus(s, SAMPLE_CORPUS)
    monkeypatch.delenv("SSH_CONNECTION", raising=False)
    monkeypatch.delenv("SSH_CLIENT", raising=False)
    monkeypatch.delenv("SSH_TTY", raising=False)
    demo.run_demo(str(store))
    folder = seen["demo"].folder
    assert seen["data"].parent == folder and folder.parent == tmp_path and not seen["demo"].remote
    assert not folder.exists() and not (tmp_path / "host-data").exists()
    monkeypatch.setenv("SSH_CONNECTION", "10.0.0.1 5000 10.0.0.2 22")
    monkeypatch.setattr(demo, "parent_name", lambda: "sshd")  # as under the recipe's ForceCommand
    demo.run_demo(str(store))
    assert seen["demo"].remote and not seen["demo"].folder.exists()


# ── rankscope --demo's arguments ─────────────────────────────────────────


@pytest.mark.parametrize(
    "args, message",
    [
        (["--demo", "--stores"], "--demo and --stores: a demo never lists this machine's stores"),
        (["--demo", "--qrels", "q.json"], "--demo and --qrels: a demo keeps the visitor's grades"),
        (["--demo", "--idle-timeout", "soon"], "--idle-timeout takes seconds, from 0 (never) to 2592000"),
        (["--demo", "--idle-timeout"], "--idle-timeout needs a value: rankscope [PATH] --idle-timeout SECONDS"),
        (["--demo", "--idle-timeout", "10", "a", "b"], "unexpected arguments 'a b'. Usage: rankscope [PATH]"),
        (["--demo", "/no/such/store.db"], "no such file or folder: /no/such/store.db"),
    ],
)
def test_demo_argument_errors_are_one_line(capsys, monkeypatch, args, message):
    from tui.cli import main

    monkeypatch.setattr(RankscopeApp, "run", lambda self: pytest.fail("the browser started"))
    with pytest.raises(SystemExit) as exc:
        main(args)
    err = capsys.readouterr().err
    assert exc.value.code == 2 and err.startswith("rankscope: error: ") and message in err and err.count("\n") == 1


def test_the_readme_links_the_ssh_recipe():
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text("utf-8")
    assert "(docs/demo-over-ssh.md)" in readme and "rankscope --demo [PATH]" in readme


# ── may the visitor read a file written here? ────────────────────────────


@pytest.mark.parametrize(
    "environ, parent, out_of_reach",
    [
        ({}, "bash", False),  # at this machine
        ({}, "sshd", False),  # no SSH variables: not an SSH session
        ({"SSH_CONNECTION": "10.0.0.1 5000 10.0.0.2 22"}, "bash", False),  # from a shell over SSH
        ({"SSH_TTY": "/dev/pts/3"}, "tmux: server", False),
        ({"SSH_CONNECTION": "10.0.0.1 5000 10.0.0.2 22"}, "sshd", True),  # sshd's own command (ForceCommand)
        ({"SSH_CLIENT": "10.0.0.1 5000 22"}, "sshd-session", True),  # OpenSSH 9.8 on
        ({"SSH_CONNECTION": "x", "SSH_ORIGINAL_COMMAND": "id"}, "bash", True),  # a forced command replaced theirs
        ({"SSH_CONNECTION": "x"}, None, True),  # the parent unknown: refused (the safe side)
    ],
)
def test_exports_are_refused_only_where_the_visitor_cannot_read_them(environ, parent, out_of_reach):
    from tui.cli.demo import files_out_of_reach

    assert files_out_of_reach(environ, parent) is out_of_reach


def test_the_parent_process_name_is_read():
    from tui.cli.demo import parent_name

    if not Path("/proc/self/stat").exists():
        pytest.skip("needs Linux's /proc")
    child = subprocess.run(
        [sys.executable, "-c", "from tui.cli.demo import parent_name; print(parent_name())"],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert child.stdout.strip() == Path(f"/proc/{os.getpid()}/comm").read_text().strip()
    assert parent_name(2**22 + 12345) is None  # no such process
