"""Hostile inputs never give a traceback or a hang (issue 13, item 4).

Each case is a reproduction from the break-it run: before the fix it ended
in OverflowError, UnicodeEncodeError, RecursionError, MemoryError or a hang;
now each is one ``rankscope: error: ...`` line with exit status 2, and
nothing is written. The FIFO and /dev/zero cases run in a subprocess with a
generous timeout that only guards the test run against the old hang (no
speed is asserted).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine import SearchParams, Store, index_paths
from engine.store.corpus import collect_files, load_sessions_map
from engine.files.reading import InputFileError, load_json_input, read_input_text
from engine.store.gitignore import gitignore_matcher
from tui.cli import main

from .helpers import cli_error, indexed_by_cli

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    return indexed_by_cli(tmp_path_factory.mktemp("inputs"))


def one_line_error(capsys, args, contains: str) -> str:
    err = cli_error(args, capsys)
    assert contains in err, err
    return err


# ── why --rowid beyond SQLite's integer range ────────────────────────────


@pytest.mark.parametrize("rowid", [str(2**63), str(2**70), str(-(2**63) - 1)])
def test_why_rowid_overflow(db, capsys, rowid):
    one_line_error(capsys, ["why", "zebra", "--db", str(db), "--rowid", rowid], "outside SQLite's row id range")


def test_why_rowid_at_the_limit_is_just_not_found(db, capsys):
    one_line_error(capsys, ["why", "zebra", "--db", str(db), "--rowid", str(2**63 - 1)], "no chunk has rowid")


# ── undecodable bytes and lone surrogates ────────────────────────────────

#: What Python makes of the argv bytes ``a\xff`` (surrogateescape).
UNDECODABLE = os.fsdecode(b"a\xff")


@pytest.mark.parametrize("extra", [[], ["--source-exact"]], ids=["like", "exact"])
def test_undecodable_source(db, capsys, extra):
    one_line_error(
        capsys,
        ["search", "zebra", "--db", str(db), "--source", UNDECODABLE, *extra],
        "source 'a\\udcff' contains an undecodable character U+DCFF at position 1",
    )


def test_undecodable_session_filter(db, capsys):
    one_line_error(
        capsys, ["search", "zebra", "--db", str(db), "--session", UNDECODABLE], "undecodable character U+DCFF"
    )


def test_undecodable_index_session_writes_nothing(tmp_path, capsys):
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "a.md").write_text("# A\nx\n")
    out = tmp_path / "new.db"
    one_line_error(
        capsys,
        ["index", str(tmp_path / "c"), "--db", str(out), "--session", UNDECODABLE],
        "--session contains an undecodable character U+DCFF",
    )
    assert not out.exists()


def test_lone_surrogate_in_a_sessions_map(tmp_path, capsys):
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "a.md").write_text("# A\nx\n")
    smap = tmp_path / "map.json"
    smap.write_text('{"a.md": "\\ud800"}')
    out = tmp_path / "new.db"
    one_line_error(
        capsys,
        ["index", str(tmp_path / "c"), "--db", str(out), "--sessions-map", str(smap)],
        "the string at $.a.md holds a lone surrogate (\\ud800)",  # the one reader refuses it
    )
    assert not out.exists()


def test_engine_refuses_unstorable_session_ids(tmp_path):
    (tmp_path / "a.md").write_text("# A\nx\n")
    with Store.create(":memory:") as s:
        with pytest.raises(ValueError, match="undecodable"):
            index_paths(s, [tmp_path], default_session="\udcff")
        with pytest.raises(ValueError, match="label 'a.md'"):
            index_paths(s, [tmp_path], sessions={"a.md": "x\ud800"})
    with pytest.raises(ValueError, match="session id 'x\\\\ud800'"):
        SearchParams("zebra", sessions=("x\ud800",))


# ── query files and sessions maps: deep, FIFO, /dev/zero ─────────────────


def _deep_list(path: Path, depth: int = 100_000) -> Path:
    path.write_text("[" * depth + "]" * depth)
    return path


def _deep_object(path: Path, depth: int = 100_000) -> Path:
    path.write_text('{"a":' * depth + "1" + "}" * depth)
    return path


def test_deep_query_file(db, tmp_path, capsys):
    q = _deep_list(tmp_path / "deep.json")
    one_line_error(capsys, ["batch", str(q), "--db", str(db)], "nested more than 64 levels deep")
    one_line_error(capsys, ["compare", "--queries", str(q), "--db", str(db), "--b", "key=rowid"], "nested more than")


def test_query_nested_below_the_recursion_limit_is_refused_too(db, tmp_path, capsys):
    """900 levels parse without RecursionError, but printing the entry in an
    error message would recurse: the depth cap refuses it first."""
    q = tmp_path / "q.json"
    q.write_text('[{"query": "zebra", "id": ' + "[" * 900 + "]" * 900 + "}]")
    one_line_error(capsys, ["batch", str(q), "--db", str(db)], "nested more than 64 levels deep")


def test_deep_sessions_map(tmp_path, capsys):
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "a.md").write_text("# A\nx\n")
    m = _deep_object(tmp_path / "map.json")
    one_line_error(
        capsys,
        ["index", str(tmp_path / "c"), "--db", str(tmp_path / "n.db"), "--sessions-map", str(m)],
        "cannot read sessions map",
    )
    with pytest.raises(ValueError, match="nested more than 64 levels deep"):
        load_sessions_map(m)


def _run_cli(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tui.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
@pytest.mark.parametrize("command", ["batch", "compare", "sessions-map"])
def test_special_files_are_refused_unread(db, tmp_path, kind, command):
    special = tmp_path / "input.json"
    if kind == "fifo":
        os.mkfifo(special)
    else:
        if not os.path.exists("/dev/zero"):
            pytest.skip("no /dev/zero")
        special.symlink_to("/dev/zero")
    args = {
        "batch": ["batch", str(special), "--db", str(db)],
        "compare": ["compare", "--queries", str(special), "--db", str(db), "--b", "key=rowid"],
        "sessions-map": ["index", str(tmp_path), "--db", str(tmp_path / "n.db"), "--sessions-map", str(special)],
    }[command]
    r = _run_cli(args, tmp_path)
    assert r.returncode == 2, r.stderr
    what = "a FIFO" if kind == "fifo" else "a character device"
    assert r.stderr.startswith("rankscope: error: cannot read ") and f"{what}, not a regular file" in r.stderr
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr


def test_input_reader_caps_size_and_kind(tmp_path):
    big = tmp_path / "big.json"
    big.write_text("[" + " " * 200 + "]")
    with pytest.raises(InputFileError, match="202 bytes is over the 100-byte limit"):
        read_input_text(big, "query file", max_bytes=100)
    with pytest.raises(InputFileError, match="a folder, not a regular file"):
        read_input_text(tmp_path, "query file")
    with pytest.raises(InputFileError, match="No such file"):
        read_input_text(tmp_path / "nope.json", "query file")
    bom = tmp_path / "bom.json"
    bom.write_bytes(b"\xef\xbb\xbf[1]")
    assert load_json_input(bom, "query file") == [1]
    bad = tmp_path / "bad.json"
    bad.write_bytes(b'["\xff"]')
    with pytest.raises(InputFileError, match="not UTF-8"):
        read_input_text(bad, "query file")


# ── a folder nested 1,000 deep ───────────────────────────────────────────


def _nested(root: Path, depth: int) -> None:
    """``root/d/d/.../d/x.txt`` with ``depth`` folders below ``root``,
    created through directory descriptors (os.makedirs itself recurses)."""
    root.mkdir()
    fd = os.open(root, os.O_RDONLY)
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=fd)
            child = os.open("d", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = child
        f = os.open("x.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.write(f, b"hello from the bottom\n")
        os.close(f)
    finally:
        os.close(fd)


def _remove_tree(root: Path) -> None:
    """Remove ``root`` and everything below it without recursion, holding one
    directory descriptor at a time (down by name, back up through ``..``).

    ``shutil.rmtree`` recurses once per level: on Python 3.11 a folder
    1,000 deep overflows the interpreter stack. Left to pytest, the folder
    outlives the run; a later pytest run, removing old temporary folders at
    exit, then prints a RecursionError and leaves them behind, in every later
    run again."""
    flags = os.O_RDONLY | os.O_DIRECTORY
    fd = os.open(root, flags | os.O_NOFOLLOW)
    below: list[str] = []  # folder names from root down to the open one
    try:
        while True:
            with os.scandir(fd) as it:
                entries = list(it)
            sub = next((e.name for e in entries if e.is_dir(follow_symlinks=False)), None)
            if sub is not None:
                child = os.open(sub, flags | os.O_NOFOLLOW, dir_fd=fd)
                os.close(fd)
                fd = child
                below.append(sub)
                continue
            for entry in entries:
                os.unlink(entry.name, dir_fd=fd)
            if not below:
                break
            parent = os.open("..", flags, dir_fd=fd)
            os.close(fd)
            fd = parent
            os.rmdir(below.pop(), dir_fd=fd)
    finally:
        os.close(fd)
    os.rmdir(root)


@pytest.fixture
def deep_folder(tmp_path):
    """``tmp_path/deep``, nested 1,000 deep (:func:`_nested`); removed at
    teardown by :func:`_remove_tree`, never by pytest's recursive cleanup."""
    root = tmp_path / "deep"
    try:
        _nested(root, 1000)
        yield root
    finally:
        if root.exists():
            _remove_tree(root)


def test_remove_tree_removes_a_deep_folder_iteratively(tmp_path):
    root = tmp_path / "deep"
    _nested(root, 1000)
    (root / "top.txt").write_text("a file beside the folder")
    os.symlink(tmp_path / "outside", root / "link")  # removed as a link, never followed
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "kept.txt").write_text("kept")
    _remove_tree(root)
    assert not root.exists() and (tmp_path / "outside" / "kept.txt").exists()


def test_folder_nested_1000_deep(deep_folder, tmp_path, capsys):
    root = deep_folder
    label = "/".join(["d"] * 1000) + "/x.txt"
    assert [lbl for lbl, _ in collect_files(root, gitignore_matcher(root))] == [label]
    assert [lbl for lbl, _ in collect_files(root)] == [label]
    with pytest.raises(SystemExit) as exc:
        main(["index", str(root), "--db", str(tmp_path / "deep.db")])
    assert exc.value.code in (0, None)
    assert "indexed 1 file," in capsys.readouterr().out


def test_gitignore_under_a_deep_folder(tmp_path):
    """The matcher decides a deep folder's ancestors iteratively, even when
    asked out of walk order (no recursion through 1,000 parents)."""
    (tmp_path / ".gitignore").write_text("skip/\n")
    ignored = gitignore_matcher(tmp_path)
    deep = "/".join(["d"] * 1500)
    assert ignored(f"skip/{deep}/x.txt") and not ignored(f"{deep}/x.txt")
    assert ignored(f"skip/{deep}/")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
@pytest.mark.parametrize(
    "args",
    [["search", "x", "--db", "F"], ["doctor", "--db", "F"], ["F"], ["index", "c", "--db", "F"]],
    ids=["search", "doctor", "browse", "index"],
)
def test_a_fifo_as_the_store_is_refused_unread(tmp_path, args):
    """Opening a FIFO to read its header waited for a writer forever."""
    fifo = tmp_path / "store.db"
    os.mkfifo(fifo)
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "a.md").write_text("# A\nx\n")
    r = _run_cli([str(fifo) if a == "F" else a for a in args], tmp_path)
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith("rankscope: error: ") and r.stderr.count("\n") == 1, r.stderr
    assert "FIFO" in r.stderr
