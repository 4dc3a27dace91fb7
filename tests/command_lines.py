"""A valid command line for every command, and valid files of every form:
what the parametrised tests of the reader, the writer, terminal output and
memory start from (``tests/test_file_inputs.py``, ``test_file_outputs.py``,
``test_terminal_output.py``, ``test_out_of_memory.py``).

The commands and their file parameters come from the CLI itself
(:func:`tui.cli.main.command_functions`, :func:`tui.cli.main.file_parameters`);
this module only says how to call each command validly. A command added to
the CLI without a line here fails ``test_every_command_has_a_command_line``.
In :data:`COMMAND_LINES`, ``{name}`` stands for the value of the parameter
``name`` (a file parameter: :func:`valid_value` gives it by its role); a
file parameter without a placeholder is an option appended when fed.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Callable, Mapping

from engine import Store, index_paths
from engine.lab.snapshot import take_snapshot
from tui.cli.main import FileParameter

from .conftest import SESSION_DB

#: One valid invocation per command (``()`` is the browser: ``rankscope PATH``).
COMMAND_LINES: dict[tuple[str, ...], list[str]] = {
    (): ["{path}"],
    ("index",): ["index", "{paths}", "--db", "{db}"],
    ("search",): ["search", "zebra", "--db", "{db}"],
    ("batch",): ["batch", "{queries}", "--db", "{db}"],
    ("compare",): ["compare", "--queries", "{queries}", "--db", "{db}", "--b", "key=rowid"],
    ("why",): ["why", "zebra", "--db", "{db}", "--rowid", "1"],
    ("explain",): ["explain", "zebra", "--db", "{db}", "--rowid", "1"],
    ("doctor",): ["doctor", "--db", "{db}"],
    ("stores",): ["stores"],
    ("sessions",): ["sessions", "--db", "{db}"],
    ("ctx-search",): ["ctx-search", "--db", "{db}", "--params-json", "{params_json}"],
    ("agent-log",): ["agent-log", "--sessions-db", "{sessions_db}", "--replay", "--db", "{db}"],
    ("serve",): ["serve", "--path", "{path}", "--port", "0"],
    ("eval",): ["eval", "{queries}", "--db", "{db}", "--qrels", "{qrels}"],
    ("snapshot", "save"): ["snapshot", "save", "{queries}", "--db", "{db}", "-o", "{out}"],
    ("snapshot", "check"): ["snapshot", "check", "{snapshot}", "--db", "{db}"],
    ("qrels", "convert"): ["qrels", "convert", "{source}", "{target}"],
    ("qrels", "path"): ["qrels", "path", "--db", "{db}"],
    ("qrels", "query-file"): ["qrels", "query-file", "{queries}", "--db", "{db}"],
}
#: Commands that do not end by themselves when called validly (they are fed
#: only inputs that must be refused before they start).
LONG_RUNNING = {(), ("serve",)}

#: The query file and the corpus behind the store.
QUERIES = [{"id": "q1", "query": "zebra"}, {"id": "q2", "query": "crossing guide"}]
CORPUS = {"a.md": "# Zebra\nzebra crossing\n", "b.md": "# Crossing\ncross the zebra crossing guide here\n"}
ARGUMENTS = json.dumps({"queries": ["zebra"]})


def make_world(
    root: Path, corpus: Mapping[str, str] = CORPUS, queries: list | None = None, tag: str = ""
) -> dict[str, Path | str]:
    """Valid files of every form under ``root``: ``corpus`` (a folder),
    ``store``, ``queries``, ``qrels`` (TREC: each query judges the first
    chunk of the first file), ``snapshot``, ``sessions-map``, ``session-db``
    (a copy of the 1.0.169 fixture), ``arguments`` (JSON text), ``folder``
    (an empty folder). ``tag`` goes into every file name."""
    from engine.lab.qrels import Qrels, qrels_text
    from engine.store.chunkids import chunk_ids

    root.mkdir(parents=True, exist_ok=True)
    folder = root / f"corpus{tag}"
    folder.mkdir()
    for name, text in corpus.items():
        (folder / name).write_text(text, "utf-8")
    db = root / f"store{tag}.db"
    with Store.create(db) as s:
        index_paths(s, [folder])
    entries = QUERIES if queries is None else queries
    q = root / f"queries{tag}.json"
    q.write_text(json.dumps(entries), "utf-8")
    with Store.open_readonly(db) as s:
        first = chunk_ids(s).by_rowid[1]
        snapshot = take_snapshot(s, entries)
    qrels = root / f"qrels{tag}.txt"
    qrels.write_text(qrels_text(Qrels({str(e["id"]): {first: 1} for e in entries}), "trec"), "utf-8")
    snap = root / f"snapshot{tag}.json"
    snap.write_text(json.dumps(snapshot), "utf-8")
    smap = root / f"sessions{tag}.json"
    smap.write_text(json.dumps({name: "s1" for name in corpus}), "utf-8")
    sdb = root / f"session{tag}.db"
    shutil.copy2(SESSION_DB, sdb)
    empty = root / f"empty-folder{tag}"
    empty.mkdir()
    return {
        "corpus": folder,
        "store": db,
        "queries": q,
        "qrels": qrels,
        "snapshot": snap,
        "sessions-map": smap,
        "session-db": sdb,
        "arguments": ARGUMENTS,
        "folder": empty,
    }


def valid_value(p: FileParameter, world: Mapping[str, Path | str], fresh: Callable[[str], Path]) -> str:
    """A valid value of file parameter ``p``: the world's file of its form,
    a fresh path for an output or a store to create (``fresh(name)``)."""
    role = p.role
    if role.use in ("writes", "creates"):
        suffix = ".json" if role.form in ("traces", "snapshot") else ".db" if role.form == "store" else ".txt"
        return str(fresh(f"{role.form}{suffix}"))
    form = {"store-or-folder": "store", "corpus": "corpus"}.get(role.form, role.form)
    return str(world[form])


def command_line(
    words: tuple[str, ...],
    params: list[FileParameter],
    world: Mapping[str, Path | str],
    fresh: Callable[[str], Path],
    given: Mapping[str, str] | None = None,
) -> list[str]:
    """The argv of :data:`COMMAND_LINES` ``[words]`` with every placeholder
    filled: by ``given`` (parameter name → value) first, else
    :func:`valid_value`; a parameter of ``given`` without a placeholder is
    appended as ``flag value``."""
    given = dict(given or {})
    values = {p.name: valid_value(p, world, fresh) for p in params if p.command == words}
    values.update(given)
    argv = [values[t[1:-1]] if t.startswith("{") and t.endswith("}") else t for t in COMMAND_LINES[words]]
    placed = {t[1:-1] for t in COMMAND_LINES[words] if t.startswith("{")}
    for name, value in given.items():
        if name not in placed:
            (flag,) = [p.flag for p in params if p.command == words and p.name == name]
            assert flag is not None, f"{words} {name}: an argument needs a placeholder in COMMAND_LINES"
            argv += [flag, value]
    return argv


def fresh_factory(root: Path) -> Callable[[str], Path]:
    """``fresh(name)``: a new, not yet existing path under ``root`` (a new
    subfolder per call, so names never clash)."""
    counter = iter(range(1_000_000))

    def fresh(name: str) -> Path:
        folder = root / f"fresh{next(counter)}"
        folder.mkdir(parents=True)
        return folder / name

    return fresh


def umask() -> int:
    """The process's umask (read by setting it twice)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
