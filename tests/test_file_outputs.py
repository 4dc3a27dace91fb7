"""Every file rankscope writes goes through the one writer (issue 26, class 2).

The cases are derived from the CLI's declaration of its output parameters
(:func:`tui.cli.main.file_parameters`, role ``writes``), each run with
``--force``: the output is never a FIFO (opening it waited for a reader
forever), a link to a pipe (``--out >(wc -c)``), a character device
(``--force`` replaced the node with a file), a folder, an SQLite database,
or another database's ``-wal``/``-shm``/``-journal`` file (``--force`` onto
a committed WAL destroyed its rows); two outputs of one command are never
the same file; a new file gets ``0o666`` less the umask and a replaced one
keeps its mode; a SIGTERM or SIGINT during the write, or a failing disk,
leaves no temporary file. The browser's two exports are checked the same way.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from engine.files.writing import OutputRefused, given, write_text_file
from tui.cli.base import STORE_FORMS, declared_store
from tui.cli.main import BROWSER_FILES, command_functions, file_parameters

from .command_lines import LONG_RUNNING, command_line, fresh_factory, umask, valid_value
from .test_file_inputs import assert_refused, run

REPO = Path(__file__).resolve().parent.parent
PARAMS = list(file_parameters())
WRITES = [p for p in PARAMS if p.role.use == "writes" and p.command not in LONG_RUNNING]


def _id(p) -> str:
    return " ".join(p.command) + " " + (p.flag or p.name.upper())


def committed_wal(folder: Path) -> Path:
    """``other.db`` with a row committed to its WAL only (its writer was
    killed before a checkpoint): the row lives in ``other.db-wal``."""
    db = folder / "other.db"
    code = (
        "import os, sqlite3, sys\n"
        "c = sqlite3.connect(sys.argv[1])\n"
        "c.execute('PRAGMA journal_mode=WAL'); c.execute('PRAGMA wal_autocheckpoint=0')\n"
        "c.execute('CREATE TABLE t (x)'); c.execute(\"INSERT INTO t VALUES ('kept')\"); c.commit()\n"
        "os._exit(0)\n"
    )
    subprocess.run([sys.executable, "-c", code, str(db)], check=True)
    assert (folder / "other.db-wal").stat().st_size > 0
    return db


def rows(db: Path) -> list:
    with sqlite3.connect(db) as c:
        return c.execute("SELECT x FROM t").fetchall()


def make_target(kind: str, folder: Path) -> tuple[Path, str, object]:
    """An existing target of ``kind``, what the refusal says, and a
    fingerprint of it to compare after."""
    if kind == "fifo":
        p = folder / "out.fifo"
        os.mkfifo(p)
        return p, "is a FIFO; rankscope writes regular files only", stat.S_ISFIFO
    if kind == "pipe-link":  # what `--out >(wc -c)` gives: /dev/fd/63, a link to a pipe
        pipe = folder / "pipe"
        os.mkfifo(pipe)
        p = folder / "63"
        p.symlink_to(pipe)
        return p, "is a symbolic link to a FIFO", stat.S_ISLNK
    if kind == "char-device":
        p = folder / "null"
        try:
            os.mknod(p, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # a /dev/null of our own
        except PermissionError:
            pytest.skip("making a device node needs root")
        return p, "is a character device", stat.S_ISCHR
    if kind == "dev-null-link":  # the /dev rule is said first: where the link leads, not what it names
        p = folder / "out.json"
        p.symlink_to(os.devnull)
        return p, "leads into /dev, a folder of the system; rankscope never writes there", stat.S_ISLNK
    if kind == "folder":
        p = folder / "sub"
        p.mkdir()
        return p, "is a folder", stat.S_ISDIR
    if kind == "database":
        p = folder / "other.sqlite"
        with sqlite3.connect(p) as c:
            c.execute("CREATE TABLE t (x)")
            c.execute("INSERT INTO t VALUES ('kept')")
        c.close()
        return p, "is an SQLite database; rankscope never overwrites a database or its files", stat.S_ISREG
    if kind in ("wal", "shm"):
        db = committed_wal(folder)
        return Path(f"{db}-{kind}"), f"is the {kind} file of the SQLite database {db}", stat.S_ISREG
    if kind == "journal-to-be":  # not there yet: SQLite would read one made beside its database
        db = folder / "other.db"
        with sqlite3.connect(db) as c:
            c.execute("CREATE TABLE t (x)")
        c.close()
        return Path(f"{db}-journal"), "is the journal file of the SQLite database", lambda mode: mode is None
    if kind == "wal-by-magic":  # a WAL renamed away from its database
        db = committed_wal(folder)
        p = folder / "renamed.log"
        shutil.copy2(f"{db}-wal", p)
        return p, "is an SQLite write-ahead log", stat.S_ISREG
    raise AssertionError(kind)


def state(p: Path) -> object:
    try:
        st = os.lstat(p)
    except FileNotFoundError:
        return None
    return (st.st_mode, st.st_size, p.read_bytes() if stat.S_ISREG(st.st_mode) else None)


TARGETS = [
    "fifo",
    "pipe-link",
    "char-device",
    "dev-null-link",
    "folder",
    "database",
    "wal",
    "shm",
    "journal-to-be",
    "wal-by-magic",
]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
@pytest.mark.parametrize("kind", TARGETS)
@pytest.mark.parametrize("param", WRITES, ids=_id)
def test_an_output_is_never_written_over_what_must_not_be(param, kind, world, fresh, tmp_path, capsys):
    folder = tmp_path / "t"
    folder.mkdir()
    target, message, _ = make_target(kind, folder)
    before = state(target)
    argv = command_line(param.command, PARAMS, world, fresh, {param.name: str(target)}) + ["--force"]
    code, out, err = run(capsys, argv)
    assert_refused(code, err, str(target), message)
    assert state(target) == before
    if kind in ("wal", "shm"):
        assert rows(folder / "other.db") == [("kept",)]  # the committed row is still there
    assert sorted(p.name for p in folder.iterdir() if p.name.startswith(".")) == []  # no temporary file


#: What creating a store at each target says (``index --db``: no --force there).
CREATE_REFUSALS = {
    "fifo": "it is a FIFO, not a database file",
    "pipe-link": "it is a FIFO, not a database file",
    "char-device": "it is a character device, not a database file",
    "dev-null-link": "it leads into /dev, a folder of the system; rankscope never writes there",
    "folder": "it is a folder, not a database file",
    "database": "it is not a rankscope store",
    "wal": "it is the wal file of the SQLite database",
    "shm": "it is the shm file of the SQLite database",
    "journal-to-be": "it is the journal file of the SQLite database",
    "wal-by-magic": "it is an SQLite write-ahead log",
}
CREATES = [p for p in PARAMS if p.role.use == "creates"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
@pytest.mark.parametrize("kind", TARGETS)
@pytest.mark.parametrize("param", CREATES, ids=_id)
def test_a_store_is_never_created_over_what_must_not_be(param, kind, world, fresh, tmp_path, capsys):
    """The store a command creates is an output too: never a FIFO, device
    or folder, another program's database, or another database's
    ``-wal``/``-shm``/``-journal`` (``index --db other.db-journal`` made a
    store there, which SQLite would then take for other.db's journal)."""
    folder = tmp_path / "t"
    folder.mkdir()
    target, _, _ = make_target(kind, folder)
    before = state(target)
    code, out, err = run(capsys, command_line(param.command, PARAMS, world, fresh, {param.name: str(target)}))
    assert_refused(code, err, str(target), CREATE_REFUSALS[kind])
    assert state(target) == before
    if kind in ("wal", "shm"):
        assert rows(folder / "other.db") == [("kept",)]
    assert sorted(p.name for p in folder.iterdir() if p.name.startswith(".")) == []


#: The browser's ``--qrels``: read when it exists, created at the first grade
#: when it does not (so checked as an output then).
BROWSER_QRELS = next(p for p in BROWSER_FILES if p.name == "qrels")


def _outputs_of_store_commands() -> list[tuple[object, object]]:
    """``(output, store parameter)`` for every output of every command that
    takes a store (declared: :data:`tui.cli.base.STORE_FORMS`), the
    browser's ``--qrels`` (``rankscope PATH --qrels FILE``) included."""
    stores = {p.command: p for p in PARAMS if p.role.form in STORE_FORMS}
    outputs = [p for p in PARAMS if p.role.use == "writes"] + [BROWSER_QRELS]
    return [(out, stores[out.command]) for out in outputs if out.command in stores]


def test_the_commands_with_a_store_and_an_output_are_all_here():
    """The parameter below covers what it should: a new command with both
    is added by itself."""
    pairs = {(" ".join(o.command), o.label, s.label) for o, s in _outputs_of_store_commands()}
    assert {("", "--qrels", "PATH"), ("batch", "--out", "--db"), ("snapshot save", "--out", "--db")} <= pairs


@pytest.mark.parametrize("out, store", _outputs_of_store_commands(), ids=lambda p: _id(p).strip())
def test_the_store_and_its_side_files_are_refused_naming_how_the_store_was_given(
    out, store, world, fresh, tmp_path, capsys
):
    """An output onto the store, or onto its ``-wal``/``-shm``/``-journal``
    (existing or not), is refused naming the parameter that gave the store:
    ``the store given with --db`` for a command's ``--db``, ``as PATH`` for
    the browser's ``rankscope PATH``; from the parameter's declaration, never
    a wording shared by all."""
    copy = tmp_path / "mine.db"
    shutil.copy2(world["store"], copy)
    before = copy.read_bytes()
    said = f"store given {given(store.label)}; give another file name"
    for suffix in ("", "-wal", "-shm", "-journal"):
        if out is BROWSER_QRELS and not suffix:
            continue  # an existing --qrels is read as judgments (and refused as not UTF-8 here), never written
        target = f"{copy}{suffix}"
        argv = command_line(out.command, PARAMS, world, fresh, {store.name: str(copy), out.name: target})
        code, _, err = run(capsys, argv + (["--force"] if out.role.use == "writes" else []))
        side = f"the {suffix[1:]} file of the " if suffix else "the "
        assert_refused(code, err, f" {target} is {side}{said}")
        assert not os.path.lexists(f"{copy}{suffix}") or not suffix
    assert copy.read_bytes() == before


@pytest.mark.parametrize("words, fn", command_functions(), ids=[" ".join(w) for w, _ in command_functions()])
def test_a_commands_store_is_named_as_its_declaration_says(words, fn):
    """:func:`tui.cli.base.declared_store` (what the refusals name) reads
    the store parameter's name from the command's Typer declaration: the
    same name Click registered (:func:`tui.cli.main.file_parameters`)."""
    registered = {p.name: p.label for p in PARAMS if p.command == words and p.role.form in STORE_FORMS}
    values = {name: Path("x.db") for name in registered}
    expected = [(label, Path("x.db")) for label in registered.values()][:1]
    assert [declared_store(fn, values)] == (expected or [None])


def _outputs_onto_inputs() -> list[tuple[object, object]]:
    """Every output parameter of every command with every input parameter
    of the same command (declared: :attr:`tui.cli.base.FileRole.is_input`)."""
    return [
        (out, inp)
        for out in WRITES
        for inp in PARAMS
        if inp.command == out.command and inp.role.is_input and inp.role.form not in ("corpus", "folder")
    ]


@pytest.mark.parametrize("how", ["same-name", "symlink", "hard-link"])
@pytest.mark.parametrize("out, inp", _outputs_onto_inputs(), ids=lambda p: _id(p).strip())
def test_an_output_is_never_one_of_the_commands_inputs(out, inp, how, world, fresh, tmp_path, capsys):
    """``batch Q.json --out Q.json --force`` replaced the query file (as did
    ``--trec-run``, ``snapshot save -o`` and ``qrels convert``): an output
    that is, by any name, a file the same command reads is refused even
    with ``--force``, naming what the file is; it is left as it was."""
    folder = tmp_path / "in"
    folder.mkdir()
    source = Path(valid_value(inp, world, fresh))
    copy = folder / source.name
    shutil.copy2(source, copy)
    before = copy.read_bytes()
    target = copy
    if how != "same-name":
        target = folder / ("alias" + source.suffix)
        target.symlink_to(copy) if how == "symlink" else os.link(copy, target)
    argv = command_line(out.command, PARAMS, world, fresh, {inp.name: str(copy), out.name: str(target)})
    code, _, err = run(capsys, argv + ["--force"])
    said = (
        f"is the store given {given(inp.label)}"
        if inp.role.form in STORE_FORMS
        else f"is {inp.role.noun}; give another name"
    )
    assert_refused(code, err, f" {target} {said}")
    assert copy.read_bytes() == before and (how != "symlink" or target.is_symlink())
    assert sorted(p.name for p in folder.iterdir() if p.name.startswith(".")) == []


@pytest.mark.parametrize("how", ["under", "link-into"])
@pytest.mark.parametrize("param", WRITES, ids=_id)
def test_nothing_under_a_system_folder_is_written_even_with_force(
    param, how, world, fresh, tmp_path, capsys, monkeypatch
):
    """``batch --out /dev/stdout`` with stdout redirected to a file: the
    link leads to a regular file, and ``--force`` would have replaced the
    link ``/dev/stdout`` itself. Nothing under ``/dev``, ``/proc`` or
    ``/sys`` (nor through a link leading there) is written. Tried on a
    stand-in system folder (``SYSTEM_FOLDERS`` patched), never on the real one."""
    import engine.files.writing as writing

    system = tmp_path / "sysdev"
    system.mkdir()
    real = tmp_path / "redirected.txt"
    real.write_text("the terminal's log\n")
    (system / "stdout").symlink_to(real)  # what /dev/stdout is when stdout goes to a file
    (system / "plain").write_text("kernel state\n")
    monkeypatch.setattr(writing, "SYSTEM_FOLDERS", (str(system),))
    if how == "under":
        target, said = system / "stdout", f"is under {system}, a folder of the system; rankscope never writes there"
    else:
        target = tmp_path / "mine.txt"
        target.symlink_to(system / "plain")
        said = f"leads into {system}, a folder of the system; rankscope never writes there"
    code, _, err = run(
        capsys, command_line(param.command, PARAMS, world, fresh, {param.name: str(target)}) + ["--force"]
    )
    assert_refused(code, err, f" {target} {said}")
    assert (system / "stdout").is_symlink() and os.readlink(system / "stdout") == str(real)
    assert target.is_symlink() and real.read_text() == "the terminal's log\n"
    assert (system / "plain").read_text() == "kernel state\n"
    assert sorted(p.name for p in system.iterdir()) == ["plain", "stdout"]


@pytest.mark.parametrize("how", ["under", "link-into", "existing-store"])
@pytest.mark.parametrize("param", CREATES, ids=_id)
def test_no_store_is_created_or_updated_under_a_system_folder(param, how, world, fresh, tmp_path, capsys, monkeypatch):
    """``index --db /dev/shm/x.db`` made a store under ``/dev`` (its target
    checks were its own): the writer's rule applies to a store too, by its
    name, through a link, and to a store of ours already there. Tried on a
    stand-in system folder (``SYSTEM_FOLDERS`` patched)."""
    import engine.files.writing as writing

    system = tmp_path / "sysdev"
    system.mkdir()
    monkeypatch.setattr(writing, "SYSTEM_FOLDERS", (str(system),))
    if how == "under":
        target, said = system / "new.db", f"is under {system}"
    elif how == "link-into":
        target, said = tmp_path / "mine.db", f"leads into {system}"
        target.symlink_to(system / "new.db")
    else:
        target, said = system / "ours.db", f"is under {system}"
        shutil.copy2(world["store"], target)
    before = {p.name: p.read_bytes() for p in system.iterdir()}
    code, _, err = run(capsys, command_line(param.command, PARAMS, world, fresh, {param.name: str(target)}))
    assert_refused(code, err, f"store {target}: it {said}, a folder of the system; rankscope never writes there")
    assert {p.name: p.read_bytes() for p in system.iterdir()} == before


def test_store_targets_under_the_real_system_folders_are_refused_by_name():
    """Looked at by name only (nothing is written): the store's own checks."""
    from engine.store.errors import StoreError
    from engine.store.opening import check_new_store, check_target

    for path, folder in (("/dev/shm/rankscope-test.db", "/dev"), ("/proc/x.db", "/proc"), ("/sys/x.db", "/sys")):
        for check in (check_target, check_new_store):
            with pytest.raises(StoreError, match=f"it is under {folder}, a folder of the system"):
                check(path)


@pytest.mark.parametrize("force", [False, True])
@pytest.mark.parametrize("param", WRITES, ids=_id)
def test_dev_stdout_on_a_pipe_is_refused_as_under_dev(param, force, world, fresh, tmp_path):
    """``--out /dev/stdout`` with stdout a pipe (``| cat``) was refused as "a
    symbolic link to a FIFO": true, but the rule that refuses it whatever it
    is is ``/dev``'s, and that is what the message says. A real pipe."""
    argv = command_line(param.command, PARAMS, world, fresh, {param.name: "/dev/stdout"})
    r = subprocess.run(
        [sys.executable, "-m", "tui.cli", *argv, *(["--force"] if force else [])],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        cwd=tmp_path,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert r.returncode == 2 and r.stdout == "", r.stderr
    assert r.stderr.startswith("rankscope: error: ") and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.rstrip("\n").endswith(
        " /dev/stdout is under /dev, a folder of the system; rankscope never writes there"
    ), r.stderr


def test_the_writer_knows_the_real_system_folders(tmp_path):
    """Looked at by name only: nothing is written under them."""
    from engine.files.writing import kind_refusal, system_folder_of

    assert system_folder_of("/dev/stdout") == ("/dev", False)
    assert system_folder_of("/proc/self/fd/1") == ("/proc", False)
    assert system_folder_of("/sys/kernel/x") == ("/sys", False)
    assert system_folder_of(tmp_path / "x.json") is None and system_folder_of("/devices/x") is None
    link = tmp_path / "null.json"
    link.symlink_to(os.devnull)
    with pytest.raises(OutputRefused, match="leads into /dev, a folder of the system"):
        write_text_file(link, "x", overwrite=True)
    assert link.is_symlink() and kind_refusal(link) is not None


def _commands_with_outputs() -> list[tuple[str, ...]]:
    counts: dict[tuple[str, ...], int] = {}
    for p in WRITES:
        counts[p.command] = counts.get(p.command, 0) + 1
    return [c for c, n in counts.items() if n > 1]


@pytest.mark.parametrize("how", ["same-name", "symlink", "hard-link"])
@pytest.mark.parametrize("command", _commands_with_outputs(), ids=" ".join)
def test_two_outputs_of_one_command_are_never_one_file(command, how, world, fresh, tmp_path, capsys):
    outputs = [p for p in WRITES if p.command == command]
    first = tmp_path / "one.txt"
    if how == "same-name":
        names = [str(first)] * len(outputs)
    else:
        first.write_text("keep me\n")
        alias = tmp_path / "alias.txt"
        alias.symlink_to(first) if how == "symlink" else os.link(first, alias)
        names = [str(first), str(alias)] + [str(first)] * (len(outputs) - 2)
    given = {p.name: n for p, n in zip(outputs, names)}
    code, out, err = run(capsys, command_line(command, PARAMS, world, fresh, given) + ["--force"])
    assert_refused(code, err, "are the same file")
    assert not first.exists() or first.read_text() == "keep me\n"


@pytest.mark.parametrize("param", WRITES, ids=_id)
def test_modes_new_and_replaced(param, world, fresh, tmp_path, capsys):
    """A new file: 0o666 less the umask (0644 under umask 022), as any
    program makes one; a replaced file keeps its mode."""
    old = os.umask(0o022)
    try:
        new = tmp_path / "new.out"
        code, out, err = run(capsys, command_line(param.command, PARAMS, world, fresh, {param.name: str(new)}))
        assert code == 0, err
        assert stat.S_IMODE(new.stat().st_mode) == 0o644
        kept = tmp_path / "kept.out"
        kept.write_text("old\n")
        kept.chmod(0o600)
        argv = command_line(param.command, PARAMS, world, fresh, {param.name: str(kept)}) + ["--force"]
        code, out, err = run(capsys, argv)
        assert code == 0, err
        assert stat.S_IMODE(kept.stat().st_mode) == 0o600 and kept.read_text() != "old\n"
    finally:
        os.umask(old)
    assert umask() == old


#: Run a command with os.fsync replaced: the write is interrupted by the
#: signal (or fails like a full disk) after the temporary file is written.
INTERRUPTED = """
import os, signal, sys
how = sys.argv[1]
def fsync(fd):
    if how == "ENOSPC":
        raise OSError(28, "No space left on device")
    os.kill(os.getpid(), getattr(signal, how))
os.fsync = fsync
from tui.cli.main import main
main(sys.argv[2:])
"""


def interrupted(
    script: str, how: str, param, world, tmp_path: Path, name: str
) -> tuple[Path, subprocess.CompletedProcess]:
    """Run ``param``'s command under ``script`` (signal or error ``how``),
    its output ``param`` at ``name`` in an empty folder: ``(the folder, the run)``."""
    folder = tmp_path / "target"
    folder.mkdir()
    argv = command_line(
        param.command, PARAMS, world, fresh_factory(tmp_path / "fresh"), {param.name: str(folder / name)}
    )
    r = subprocess.run(
        [sys.executable, "-c", script, how, *argv],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    return folder, r


@pytest.mark.parametrize("how", ["SIGTERM", "SIGINT", "SIGHUP", "ENOSPC"])
@pytest.mark.parametrize("param", WRITES, ids=_id)
def test_an_interrupted_write_leaves_nothing(param, how, world, tmp_path):
    folder, r = interrupted(INTERRUPTED, how, param, world, tmp_path, "out.txt")
    expected = {"SIGTERM": -signal.SIGTERM, "SIGHUP": -signal.SIGHUP, "SIGINT": 130, "ENOSPC": 2}[how]
    assert r.returncode == expected, r.stderr
    assert "Traceback" not in r.stderr
    if how == "ENOSPC":
        assert r.stderr.startswith("rankscope: error: ") and "No space left on device" in r.stderr, r.stderr
    assert list(folder.iterdir()) == []  # neither the target nor a temporary file


#: Run a command with os.link replaced: the signal arrives when the new
#: store, built under a temporary name, is about to be put in place.
INTERRUPTED_CREATE = """
import os, signal, sys
how = sys.argv[1]
def link(src, dst, **kw):
    os.kill(os.getpid(), getattr(signal, how))
os.link = link
from tui.cli.main import main
main(sys.argv[2:])
"""


@pytest.mark.parametrize("how", ["SIGTERM", "SIGINT", "SIGHUP"])
@pytest.mark.parametrize("param", CREATES, ids=_id)
def test_an_interrupted_store_creation_leaves_nothing(param, how, world, tmp_path):
    folder, r = interrupted(INTERRUPTED_CREATE, how, param, world, tmp_path, "new.db")
    expected = {"SIGTERM": -signal.SIGTERM, "SIGHUP": -signal.SIGHUP, "SIGINT": 130}[how]
    assert r.returncode == expected, r.stderr
    assert "Traceback" not in r.stderr
    assert list(folder.iterdir()) == []  # neither the store nor its temporary files


# ── the writer itself, and the browser's exports ─────────────────────────


def test_write_text_file_refuses_what_it_must_not_write(tmp_path):
    fifo = tmp_path / "f"
    os.mkfifo(fifo)
    with pytest.raises(FileExistsError):  # an existing name of any kind: the caller moves on
        write_text_file(fifo, "x")
    with pytest.raises(OutputRefused, match="is a FIFO"):
        write_text_file(fifo, "x", overwrite=True)
    db = tmp_path / "d.db"
    with sqlite3.connect(db) as c:
        c.execute("CREATE TABLE t (x)")
    c.close()
    with pytest.raises(OutputRefused, match="journal file of the SQLite database"):
        write_text_file(tmp_path / "d.db-journal", "x")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.db", "f"]


@pytest.mark.parametrize("kind", ["fifo", "database", "dev-null-link"])
def test_the_case_export_never_writes_over_anything(kind, tmp_path):
    from tui.browser.userstate import Case, CaseBook

    book = CaseBook(None)
    book.cases.append(Case("c", "zebra", judgments={"a.md::Zebra": 2}))
    target, _, _ = make_target(kind, tmp_path)
    before = state(target)
    with pytest.raises(FileExistsError):
        book.export(target)
    assert state(target) == before
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


async def test_the_trace_export_moves_past_a_fifo(tmp_path, monkeypatch):
    """F6 writes ``rankscope-trace-QUERY-TIME.json``; a FIFO at that name is
    left alone (it waited for a reader before) and the next name is used."""
    import datetime as _dt

    import tui.browser.app
    from tui.browser.cmdline import export_path

    from .tui.conftest import browsing

    now = _dt.datetime(2026, 1, 2, 3, 4, 5)
    monkeypatch.setattr(tui.browser.app, "export_path", lambda q, folder=None: export_path(q, folder, now))
    monkeypatch.chdir(tmp_path)
    trap = tmp_path / "rankscope-trace-cache-20260102-030405.json"
    os.mkfifo(trap)
    async with browsing((120, 40), "cache") as (app, pilot):
        path = app.action_export_trace()
        await pilot.pause()
    assert stat.S_ISFIFO(os.lstat(trap).st_mode)
    assert path is not None and path.name == "rankscope-trace-cache-20260102-030405-2.json"
    assert json.loads(path.read_text("utf-8"))["query"] == "cache"
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask()


def test_data_folder_saves_keep_their_mode(tmp_path):
    """The data folder's files are written by the same writer: a replaced
    history keeps its mode (it was 0600 through mkstemp before)."""
    from tui.browser.userstate import QueryHistory

    path = tmp_path / "data" / "history.json"
    h = QueryHistory(path)
    h.add("zebra")
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask()
    path.chmod(0o640)
    h.add("crossing")
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert json.loads(path.read_text())["queries"] == ["zebra", "crossing"]
