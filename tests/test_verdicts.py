"""Verdicts that say what is true (issue 26, class 6).

* ``snapshot check`` is a CI gate: it fails (exit 2, one line) when it would
  compare nothing or an unknown stage. A snapshot with ``"stage_ids": []``
  passed with "unchanged: 10 queries, every stage" and exit 0.
* ``doctor`` expects the shadow tables each FTS5 table's own options call
  for: a store FTS5's ``integrity-check`` accepts is not called damaged; a
  foreign schema is "not a context-mode content store", not "damaged"; a
  store really missing a shadow table still is damaged.
* ``why --rowid`` on a chunk with no ``sources`` row, on an empty store and
  on a row id past the end each say which it is (they said "no chunk has
  rowid 1 (… rowids 1..123)" and "rowids None..None").
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.store import sql
from engine.store.schema import SCHEMA_SQL

from tui.cli.main import file_parameters

from .command_lines import LONG_RUNNING, command_line, fresh_factory
from .test_file_inputs import assert_refused, run


# ── snapshot check ───────────────────────────────────────────────────────


def _snapshot(world, tmp_path: Path, change) -> Path:
    data = json.loads(Path(world["snapshot"]).read_text("utf-8"))
    change(data)
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(data), "utf-8")
    return path


def _set(key, value):
    return lambda d: d.__setitem__(key, value)


SNAPSHOTS = {
    "no stage recorded": (_set("stage_ids", []), [], "'stage_ids' is empty"),
    "an unknown stage": (_set("stage_ids", ["final", "answer"]), [], "'stage_ids' names an unknown stage 'answer'"),
    "only unknown stages": (_set("stage_ids", ["answer"]), [], "'stage_ids' names an unknown stage 'answer'"),
    "no query": (_set("queries", []), [], "the snapshot holds no query"),
    "none of --stages recorded": (
        _set("stage_ids", ["porter"]),
        ["--stages", "final"],
        "recorded none of the stages asked for (final)",
    ),
}


@pytest.mark.parametrize("case", list(SNAPSHOTS))
def test_a_snapshot_check_that_compares_nothing_fails(case, world, tmp_path, capsys):
    change, extra, message = SNAPSHOTS[case]
    snap = _snapshot(world, tmp_path, change)
    for json_flag in ([], ["--json"]):
        code, out, err = run(capsys, ["snapshot", "check", str(snap), "--db", str(world["store"]), *extra, *json_flag])
        assert_refused(code, err, message)
        assert out == ""


def test_a_snapshot_that_compares_something_still_passes(world, capsys):
    code, out, err = run(capsys, ["snapshot", "check", str(world["snapshot"]), "--db", str(world["store"])])
    assert code == 0 and out.startswith("unchanged: 2 queries, every stage"), err


# ── doctor ───────────────────────────────────────────────────────────────

#: FTS5 options a content store may have been made with (context-mode's own
#: schema has none; FTS5 accepts each): appended to both tables' arguments.
FTS5_OPTIONS = {
    "reference": "",
    "columnsize=0": ", columnsize=0",
    "detail=none": ", detail=none",
    "detail=column": ", detail=column",
    "prefix": ", prefix='2 3'",
    "contentless": ", content=''",
    "contentless-delete": ", content='', contentless_delete=1",
    "unicode61-remove-diacritics": None,  # tokenize differs: see _make
}


def _make(path: Path, options: str | None, name: str) -> Path:
    schema = SCHEMA_SQL
    if options is None:  # another tokenizer argument on the Porter table
        schema = schema.replace("tokenize='porter unicode61'", "tokenize='porter unicode61 remove_diacritics 2'")
    else:
        schema = schema.replace("tokenize='porter unicode61'", "tokenize='porter unicode61'" + options)
        schema = schema.replace("tokenize='trigram'", "tokenize='trigram'" + options)
    conn = sql.connect(str(path))
    try:
        conn.executescript(schema)
        conn.execute("INSERT INTO sources(label, chunk_count) VALUES ('a.md', 1)")
        for t in ("chunks", "chunks_trigram"):
            conn.execute(
                f"INSERT INTO {t}(title, content, source_id, content_type) VALUES ('Zebra', 'zebra crossing', 1, 'prose')"
            )
        for t in ("chunks", "chunks_trigram"):  # the premise: FTS5 itself accepts the store
            conn.execute(f"INSERT INTO {t}({t}) VALUES('integrity-check')")
    finally:
        conn.close()
    return path


@pytest.mark.parametrize("name", list(FTS5_OPTIONS))
def test_doctor_accepts_what_fts5_accepts(name, tmp_path, capsys):
    db = _make(tmp_path / "s.db", FTS5_OPTIONS[name], name)
    code, out, err = run(capsys, ["doctor", "--db", str(db), "--json"])
    assert code == 0, out + err
    report = json.loads(out)
    assert report["damaged"] is False
    assert all(not c["problems"] for c in report["integrity"]), report["integrity"]


FOREIGN = {
    "ordinary tables": "CREATE TABLE sources(x); CREATE TABLE chunks(a, b); CREATE TABLE chunks_trigram(a, b);",
    "fts4 tables": "CREATE TABLE sources(x); CREATE VIRTUAL TABLE chunks USING fts4(a); "
    "CREATE VIRTUAL TABLE chunks_trigram USING fts4(a);",
    "another application": "CREATE TABLE users(name);",
    "FTS5 without the columns": "CREATE TABLE sources(x); CREATE VIRTUAL TABLE chunks USING fts5(a); "
    "CREATE VIRTUAL TABLE chunks_trigram USING fts5(a);",
}


#: Every parameter naming a content store a command opens (the browser and
#: serve are left out: they do not end by themselves).
STORE_OPENERS = [
    p
    for p in file_parameters()
    if p.role.use == "opens" and p.role.form in ("store", "store-or-folder") and p.command not in LONG_RUNNING
]


@pytest.mark.parametrize("name", list(FOREIGN))
@pytest.mark.parametrize("param", STORE_OPENERS, ids=lambda p: " ".join(p.command) + " " + (p.flag or p.name))
def test_a_foreign_schema_is_not_called_damaged(param, name, world, tmp_path, capsys):
    db = tmp_path / "foreign.db"
    conn = sql.connect(str(db))
    conn.executescript(FOREIGN[name])
    conn.close()
    argv = command_line(
        param.command, list(file_parameters()), world, fresh_factory(tmp_path / "out"), {param.name: str(db)}
    )
    code, out, err = run(capsys, argv)
    assert_refused(code, err, "is not a context-mode content store")
    assert "damaged" not in err


#: Every parameter naming a store a command opens or creates.
STORE_PATHS = [
    p
    for p in file_parameters()
    if p.role.form in ("store", "store-or-folder")
    and p.role.use in ("opens", "creates")
    and p.command not in LONG_RUNNING
]


@pytest.mark.parametrize("param", STORE_PATHS, ids=lambda p: " ".join(p.command) + " " + (p.flag or p.name))
def test_a_store_name_that_is_not_utf8_is_one_line(param, world, tmp_path, capsys):
    """A store whose file name is not UTF-8 (bytes Python reads as lone
    surrogates) cannot be reached by SQLite: every command says so in one
    line (it was an internal error: UnicodeEncodeError), and creates nothing."""
    import os

    db = Path(os.fsdecode(os.fsencode(str(tmp_path)) + b"/\xfe.db"))
    if param.role.use == "opens":
        os.link(world["store"], db)
    argv = command_line(
        param.command, list(file_parameters()), world, fresh_factory(tmp_path / "out"), {param.name: str(db)}
    )
    code, out, err = run(capsys, argv)
    assert_refused(code, err, "its name is not UTF-8 text")
    if param.role.use == "creates":
        assert not os.path.lexists(db)


@pytest.mark.parametrize("shadow", ["docsize", "content", "idx"])
def test_a_missing_shadow_table_is_still_damage(shadow, tmp_path, capsys):
    db = _make(tmp_path / "s.db", "", "reference")
    conn = sql.connect(str(db))
    conn.execute(f"DROP TABLE chunks_{shadow}")
    conn.close()
    code, out, err = run(capsys, ["doctor", "--db", str(db), "--json"])
    assert code == 1, err
    report = json.loads(out)
    assert report["damaged"] is True
    assert any(f"shadow table chunks_{shadow} is missing" in p for c in report["integrity"] for p in c["problems"])


# ── why ──────────────────────────────────────────────────────────────────


def _emptied(world, tmp_path: Path, sql_text: str) -> Path:
    import shutil

    db = tmp_path / "s.db"
    shutil.copy2(world["store"], db)
    conn = sql.connect(str(db))
    conn.executescript(sql_text)
    conn.close()
    return db


WHY = {
    "orphan chunk": (
        "DELETE FROM sources;",
        "1",
        "chunk rowid 1 ('Zebra') has no source row (source_id 1 is not in sources): the retrievers join chunks on "
        "sources, so it can never be returned",
    ),
    "empty store": (
        "DELETE FROM chunks; DELETE FROM chunks_trigram; DELETE FROM sources;",
        "1",
        "no chunk has rowid 1: the store has no chunks",
    ),
    "past the end": ("", "9", "no chunk has rowid 9 (the store has 2 chunks, rowids 1..2)"),
}


@pytest.mark.parametrize("case", list(WHY))
def test_why_says_what_is_true(case, world, tmp_path, capsys):
    statements, rowid, message = WHY[case]
    db = _emptied(world, tmp_path, statements)
    for extra in ([], ["--json"], ["--agent"], ["--agent", "--json"]):
        code, out, err = run(capsys, ["why", "zebra", "--db", str(db), "--rowid", rowid, *extra])
        assert_refused(code, err, message)
        assert "None" not in err
