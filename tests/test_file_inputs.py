"""Every file rankscope reads goes through the one reader (issue 26, class 1).

The cases are derived from the CLI's own declaration of its file parameters
(:func:`tui.cli.main.file_parameters`: each parameter annotated with a
:class:`tui.cli.base.FileRole`): every parameter that reads a file is fed a
FIFO, ``/dev/zero``, a folder, a file over the size cap, JSON nested 100,000
deep, bytes that are not UTF-8, a wrong shape and a bad number, and its valid
file with a UTF-8 BOM; every store and session-DB path a FIFO, ``/dev/zero``,
a folder and a missing file. A refusal is one ``rankscope: error:`` line
naming what is wrong, exit status 2, before anything is written; a BOM
changes nothing. Before the fix a FIFO hung, ``/dev/zero`` ended in
``MemoryError``, deep JSON in ``RecursionError``, a BOM changed a query id
or was refused, and a session DB that was a FIFO was "no such file".

Each command runs in this process (fast), guarded: an alarm turns a hang
into a failure and an address-space limit a runaway read into one.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import resource
import signal
from pathlib import Path
from typing import Iterator

import pytest

from engine.files.reading import MAX_INPUT_BYTES
from engine.store.userdata import CASES_FILE, HISTORY_FILE, QRELS_FILE, store_dir
from tui.browser.userstate import StoreState
from tui.cli.main import BROWSER_FILES, command_functions, file_parameters, main

from .command_lines import COMMAND_LINES, LONG_RUNNING, command_line

PARAMS = list(file_parameters())
READS = [p for p in PARAMS if p.role.use == "reads"]
TEXTS = [p for p in PARAMS if p.role.use == "text"]
OPENS = [p for p in PARAMS if p.role.use in ("opens", "creates")]


def _id(p) -> str:
    return " ".join(p.command or ("rankscope",)) + " " + (p.flag or p.name.upper())


class Hung(BaseException):
    """Raised by the alarm: the command did not return (a FIFO read, ...)."""


@contextlib.contextmanager
def guarded(seconds: float = 20, memory: int = 1 << 30) -> Iterator[None]:
    """Run a block with an alarm (:class:`Hung` after ``seconds``) and the
    address space limited to ``memory`` bytes more than now (a read without
    end fails with MemoryError instead of filling the machine)."""

    def ring(signum: int, frame: object) -> None:
        raise Hung(f"still running after {seconds} s")

    with open("/proc/self/status") as fh:
        now = next(int(line.split()[1]) * 1024 for line in fh if line.startswith("VmSize:"))
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = now + memory if hard == resource.RLIM_INFINITY else min(hard, now + memory)
    previous = signal.signal(signal.SIGALRM, ring)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
        signal.signal(signal.SIGALRM, previous)


def run(capsys, argv: list[str]) -> tuple[int, str, str]:
    """``main(argv)`` in this process: (exit status, stdout, stderr)."""
    capsys.readouterr()
    with guarded():
        try:
            main(argv)
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    out = capsys.readouterr()
    return code, out.out, out.err


def assert_refused(code: int, err: str, *contains: str) -> None:
    assert code == 2, err
    assert err.startswith("rankscope: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    for text in contains:
        assert text in err, err


def test_every_command_has_a_command_line():
    """A new command gets a line in tests/command_lines.py, and with it
    every case below for each of its declared file parameters."""
    assert set(COMMAND_LINES) == {words for words, _ in command_functions()} | {()}


def test_every_path_parameter_is_declared():
    """A parameter typed Path must say what is done with it (a FileRole):
    otherwise the tests below would not know to feed it anything."""
    import typing
    from pathlib import Path as P

    declared = {(p.command, p.name) for p in PARAMS}
    for words, fn in command_functions():
        for name, hint in typing.get_type_hints(fn).items():
            if "Path" in str(hint) or hint is P:
                assert (words, name) in declared, f"rankscope {' '.join(words)}: {name} has no FileRole"


def test_the_declaration_covers_every_kind_of_input():
    forms = {(p.role.use, p.role.form) for p in PARAMS}
    assert {
        ("reads", "queries"),
        ("reads", "qrels"),
        ("reads", "snapshot"),
        ("reads", "sessions-map"),
        ("text", "arguments"),
        ("opens", "store"),
        ("opens", "session-db"),
        ("creates", "store"),
    } <= forms
    assert set(BROWSER_FILES) <= set(PARAMS)


# ── what each form is fed ────────────────────────────────────────────────

DEEP = '{"a":' * 100_000 + "1" + "}" * 100_000
#: A document of the form with a field of the wrong type, and the field the message names.
WRONG_SHAPES = {
    "queries": ('[{"id": "q1", "query": 5}]', "[0].query must be a string; got an integer 5"),
    "qrels": (
        '{"format": "rankscope-qrels", "version": 1, "queries": [{"id": "q1", "judgments": [1, 2]}]}',
        "queries[0].judgments must be an object; got a list",
    ),
    "snapshot": (
        '{"format": "rankscope-snapshot", "version": 1, "queries": [{"entry": {"query": "x"}, "layer": 1, "stages": {}}]}',
        "queries[0].layer must be a string; got an integer 1",
    ),
    "sessions-map": ('{"a.md": ["s1"]}', '["a.md"] must be a string; got a list'),
}
#: A number that is not read as one (Unicode digits, out of range, NaN).
BAD_NUMBERS = {
    "queries": ('[{"id": "q1", "query": "x", "limit": 1e400}]', "number 1e400 is out of range"),
    "qrels": ("q1 0 a.md::Zebra \u0663\n", "grade must be 0, 1, 2 or 3; got '\u0663'"),
    "snapshot": ('{"format": "rankscope-snapshot", "version": NaN, "queries": []}', "NaN is not JSON"),
    "sessions-map": ('{"a.md": "s1", "n": 1' + "0" * 400 + "}", "an integer of 401 digits"),
}

FILE_CASES = [
    "fifo",
    "dev-zero",
    "folder",
    "too-large",
    "deep-json",
    "not-utf8",
    "lone-surrogate",
    "repeated-key",
    "wrong-shape",
    "bad-number",
]


def hostile(kind: str, form: str, folder: Path) -> tuple[Path, tuple[str, ...]]:
    """A file of ``kind`` for a parameter reading ``form``, and what the
    refusal must say."""
    path = folder / f"input-{kind}.json"
    if kind == "fifo":
        os.mkfifo(path)
        return path, ("a FIFO, not a regular file",)
    if kind == "dev-zero":
        path.symlink_to("/dev/zero")
        return path, ("a character device, not a regular file",)
    if kind == "folder":
        path.mkdir()
        return path, ("a folder, not a regular file",)
    if kind == "too-large":
        with open(path, "wb") as fh:
            fh.truncate(MAX_INPUT_BYTES + 1)  # sparse: nothing is really written
        return path, (f"{MAX_INPUT_BYTES + 1} bytes is over the {MAX_INPUT_BYTES}-byte limit",)
    if kind == "deep-json":
        path.write_text(DEEP)
        return path, ("JSON nested more than 64 levels deep",)
    if kind == "not-utf8":
        path.write_bytes(b'["\xff"]')
        return path, ("not UTF-8 (invalid byte at offset 2)",)
    if kind == "lone-surrogate":  # valid JSON, no Unicode text: trec_eval's C++ crashed on one (segfault)
        path.write_text('{"id": "\\ud800"}', "ascii")  # an object: JSON for every form (a list is TREC qrels)
        return path, ("holds a lone surrogate (\\ud800)",)
    if kind == "repeated-key":  # Python's parser kept the last silently: a judgment given twice lost one
        path.write_text('{"id": "a", "id": "b"}', "ascii")
        return path, ('an object names the key "id" twice',)
    text, message = (WRONG_SHAPES if kind == "wrong-shape" else BAD_NUMBERS)[form]
    path.write_text(text, "utf-8")
    return path, (message,)


@pytest.mark.skipif(not hasattr(os, "mkfifo") or not os.path.exists("/dev/zero"), reason="needs FIFOs and /dev/zero")
@pytest.mark.parametrize("kind", FILE_CASES)
@pytest.mark.parametrize("param", READS, ids=_id)
def test_an_input_file_is_read_safely_or_refused(param, kind, world, fresh, tmp_path, capsys):
    path, contains = hostile(kind, param.role.form, tmp_path)
    argv = command_line(param.command, PARAMS, world, fresh, {param.name: str(path)})
    code, out, err = run(capsys, argv)
    assert_refused(code, err, str(path), *contains)
    assert [f for f in (tmp_path / "fresh").rglob("*") if not f.is_dir()] == []  # nothing written


@pytest.mark.parametrize("param", [p for p in READS if p.command not in LONG_RUNNING], ids=_id)
def test_a_bom_changes_nothing(param, world, fresh, tmp_path, capsys):
    """The valid file with a UTF-8 BOM is read as the file without one (the
    same output, byte for byte, the same exit status)."""
    assert_bom_changes_nothing(Path(world[param.role.form]), param, world, fresh, tmp_path, capsys)


@pytest.mark.parametrize(
    "param", [p for p in READS if p.role.form == "qrels" and p.command not in LONG_RUNNING], ids=_id
)
def test_a_bom_on_json_qrels_changes_nothing(param, world, fresh, tmp_path, capsys):
    """The qrels' other form: a BOM before ``{`` made the JSON file read as
    TREC lines (a false "4 fields" error)."""
    from engine.lab.qrels import qrels_text, read_qrels

    src = tmp_path / "qrels.json"
    src.write_text(qrels_text(read_qrels(world["qrels"]), "json"), "utf-8")
    assert_bom_changes_nothing(src, param, world, fresh, tmp_path, capsys)


def assert_bom_changes_nothing(src: Path, param, world, fresh, tmp_path: Path, capsys) -> None:
    """``param`` given ``src``, then a copy of it with a UTF-8 BOM: both exit
    0 with the same output, byte for byte (but for :func:`same_output`)."""
    bom = tmp_path / ("bom-" + src.name)
    bom.write_bytes(b"\xef\xbb\xbf" + src.read_bytes())
    plain = run(capsys, command_line(param.command, PARAMS, world, fresh, {param.name: str(src)}))
    marked = run(capsys, command_line(param.command, PARAMS, world, fresh, {param.name: str(bom)}))
    assert plain[0] == 0, plain[2]
    assert marked[0] == plain[0], marked[2]
    assert same_output(marked[1].replace(str(bom), str(src))) == same_output(plain[1])
    assert same_output(marked[2].replace(str(bom), str(src))) == same_output(plain[2])


def same_output(text: str) -> str:
    """``text`` without what differs from run to run: times (decimals) and
    the fresh output folders (a long path may be wrapped inside their name: under
    pytest-xdist the temporary folder is longer)."""
    return re.sub(r"f\n?r\n?e\n?s\n?h(\n?\d)+", "fresh", re.sub(r"\d+\.\d+", "N", text))


def test_a_bom_on_trec_qrels_keeps_the_first_query_id(world, tmp_path, capsys):
    """The issue's example: the BOM became part of the first query's id, so
    that query counted as unjudged and the means changed."""
    bom = tmp_path / "qrels.txt"
    bom.write_bytes(b"\xef\xbb\xbf" + Path(world["qrels"]).read_bytes())
    a = run(
        capsys, ["eval", str(world["queries"]), "--db", str(world["store"]), "--qrels", str(world["qrels"]), "--json"]
    )
    b = run(capsys, ["eval", str(world["queries"]), "--db", str(world["store"]), "--qrels", str(bom), "--json"])
    assert a[0] == b[0] == 0, b[2]
    assert json.loads(a[1]) == json.loads(b[1])
    assert [q["id"] for q in json.loads(b[1])["queries"]] == ["q1", "q2"]


# ── the --params-json text ───────────────────────────────────────────────

#: The text, and what the refusal says (the agent layer parses it as JSON.parse does: engine.js.json).
TEXT_CASES = {
    "deep-json": ("[" * 50_000 + "]" * 50_000, "--params-json is nested more than 64 levels deep"),
    "nan": ('{"queries": ["a"], "limit": NaN}', "--params-json is not valid JSON: not JSON: NaN"),
    "not-json": ("{nope", "--params-json is not valid JSON: Expecting property name"),
}


@pytest.mark.parametrize("kind", list(TEXT_CASES))
@pytest.mark.parametrize("param", TEXTS, ids=_id)
def test_json_text_is_parsed_safely(param, kind, world, fresh, capsys):
    text, message = TEXT_CASES[kind]
    code, out, err = run(capsys, command_line(param.command, PARAMS, world, fresh, {param.name: text}))
    assert_refused(code, err, message)


# ── stores, session DBs and what the browser and serve open ──────────────

OPEN_CASES = ["fifo", "dev-zero", "folder", "missing"]


@pytest.mark.skipif(not hasattr(os, "mkfifo") or not os.path.exists("/dev/zero"), reason="needs FIFOs and /dev/zero")
@pytest.mark.parametrize("kind", OPEN_CASES)
@pytest.mark.parametrize("param", OPENS, ids=_id)
def test_a_store_path_says_what_it_is(param, kind, world, fresh, tmp_path, capsys):
    """A FIFO, a device or a folder given as a store or a session DB is named
    as what it is, never "no such file"; nothing is opened. A store to
    create (``index --db``) linked to ``/dev/zero`` is refused by the writer's
    rule, said first: nothing under ``/dev`` is written."""
    if kind == "folder" and param.role.form == "store-or-folder":
        pytest.skip("a folder is a valid value here (it is indexed)")
    if kind == "missing" and param.role.use == "creates":
        pytest.skip("a missing store is created")
    path = tmp_path / f"store-{kind}.db"
    expected = {
        "fifo": "a FIFO",
        "dev-zero": "leads into /dev" if param.role.use == "creates" else "a character device",
        "folder": "a folder",
        "missing": "",
    }[kind]
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev-zero":
        path.symlink_to("/dev/zero")
    elif kind == "folder":
        path.mkdir()
    code, out, err = run(capsys, command_line(param.command, PARAMS, world, fresh, {param.name: str(path)}))
    assert_refused(code, err, str(path), expected)
    if kind != "missing":
        assert "no such" not in err.lower() and "no database" not in err.lower(), err


# ── the data folder's own files ──────────────────────────────────────────

DATA_FILES = {HISTORY_FILE: "query history", CASES_FILE: "saved cases", QRELS_FILE: "qrels"}
DATA_SHAPES = {
    HISTORY_FILE: ('{"version": 1, "queries": ["a", 2]}', "queries[1] must be a string; got an integer 2"),
    CASES_FILE: (
        '{"version": 1, "cases": [{"id": "c", "query": "q", "judgments": [1, 2]}]}',
        "cases[0].judgments must be an object; got a list",
    ),
    QRELS_FILE: WRONG_SHAPES["qrels"],
}


@pytest.mark.skipif(not hasattr(os, "mkfifo") or not os.path.exists("/dev/zero"), reason="needs FIFOs and /dev/zero")
@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "folder", "too-large", "deep-json", "not-utf8", "wrong-shape"])
@pytest.mark.parametrize("name", list(DATA_FILES))
def test_the_data_folders_files_are_read_safely(name, kind, world, tmp_path, monkeypatch):
    """history.json, cases.json and qrels.json in the store's data folder:
    each hostile file is reported as the store's problem (the browser shows
    it and keeps the file as it is), never a hang or a crash at open."""
    monkeypatch.setenv("RANKSCOPE_DATA_DIR", str(tmp_path / "data"))
    folder = store_dir(world["store"])
    assert folder is not None
    folder.mkdir(parents=True)
    path = folder / name
    if kind == "wrong-shape":
        text, message = DATA_SHAPES[name]
        path.write_text(text, "utf-8")
        contains: tuple[str, ...] = (message,)
    else:
        made, contains = hostile(kind, "queries", tmp_path)
        os.rename(made, path) if not made.is_symlink() else path.symlink_to(os.readlink(made))
    with guarded():
        state = StoreState.load(str(world["store"]))
    (problem,) = state.problems()
    assert str(path) in problem and DATA_FILES[name] in problem
    for text in contains:
        assert text in problem, problem
    # and nothing is saved over it
    with pytest.raises(ValueError, match="not saved"):
        {HISTORY_FILE: state.history.save, CASES_FILE: state.cases.save, QRELS_FILE: state.judgments.save}[name]()


@pytest.mark.skipif(not hasattr(os, "mkfifo") or not os.path.exists("/dev/zero"), reason="needs FIFOs and /dev/zero")
@pytest.mark.parametrize("kind", FILE_CASES)
def test_eval_reads_the_stores_own_qrels_safely(kind, world, tmp_path, capsys):
    """``eval`` without ``--qrels`` reads the data folder's ``qrels.json``
    (the browser's judgments): the same reader, the same refusals."""
    folder = store_dir(world["store"])
    assert folder is not None
    folder.mkdir(parents=True)
    made, contains = hostile(kind, "qrels", tmp_path)
    path = folder / QRELS_FILE
    os.rename(made, path) if not made.is_symlink() else path.symlink_to(os.readlink(made))
    code, out, err = run(capsys, ["eval", str(world["queries"]), "--db", str(world["store"])])
    assert_refused(code, err, str(path), *contains)


def test_a_wrongly_shaped_case_never_reaches_the_export(world, tmp_path, monkeypatch):
    """The issue's example: ``"judgments": [1, 2]`` in cases.json loaded,
    then the export died in AttributeError."""
    monkeypatch.setenv("RANKSCOPE_DATA_DIR", str(tmp_path / "data"))
    folder = store_dir(world["store"])
    assert folder is not None
    folder.mkdir(parents=True)
    (folder / CASES_FILE).write_text(DATA_SHAPES[CASES_FILE][0], "utf-8")
    state = StoreState.load(str(world["store"]))
    assert state.cases.cases == [] and "cases[0].judgments must be an object" in (state.cases.problem or "")
    out = tmp_path / "export.json"
    state.cases.export(out)  # nothing loaded, nothing to fail on
    assert json.loads(out.read_text()) == []


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_named_gitignore_is_not_read(tmp_path, capsys):
    """Indexing a folder whose .gitignore is a FIFO waited for a writer forever."""
    folder = tmp_path / "c"
    folder.mkdir()
    (folder / "a.md").write_text("# A\nalpha\n")
    os.mkfifo(folder / ".gitignore")
    code, out, err = run(capsys, ["index", str(folder), "--db", str(tmp_path / "s.db")])
    assert code == 0, err
    assert "indexed 1 file" in out
