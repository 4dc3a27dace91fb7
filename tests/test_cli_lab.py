"""``rankscope compare``, ``why`` and ``doctor`` (tui/cli/lab.py)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from engine import Store
from tui.cli import CliError, app, main

from .helpers import index_zebra

runner = CliRunner()


@pytest.fixture
def db(tmp_path):
    """A store file: rows 1-2 show a rerank swap for "zebra crossing" (row 1
    fused #1, row 2 wins the rerank), rows 3-4 share ``guide.md::Guide >
    Example`` (4 is merged into 3), row 5 belongs to session ``ops``."""
    path = tmp_path / "lab.db"
    with Store.create(path) as s:
        index_zebra(s, others=0)
        s.index_text("guide.md", "## Example\nalpha widget one\n## Example\nalpha widget two\n", "markdown")
        s.index_text("ops.md", "# Ops zebra\nzebra runbook\n", "markdown", session_id="ops")
    return str(path)


@pytest.fixture
def queries(tmp_path):
    path = tmp_path / "q.json"
    path.write_text(
        json.dumps(
            [
                {"id": "swap", "query": "zebra crossing", "limit": 2},
                {"id": "widget", "query": "widget"},
                {"id": "typo", "query": "zebar"},
            ]
        ),
        "utf-8",
    )
    return str(path)


def invoke(*args):
    return runner.invoke(app, list(args))


def error_of(result) -> str:
    assert isinstance(result.exception, CliError), result.output
    return str(result.exception)


def test_commands_are_registered():
    names = {c.name for c in app.registered_commands}
    assert {"compare", "why", "doctor"} <= names


# ─── compare ─────────────────────────────────────────────────────────────


def test_compare_one_query(db):
    r = invoke("compare", "zebra crossing", "--db", db, "--b", "rerank=off", "--limit", "2")
    assert r.exit_code == 0, r.output
    assert "A reference" in r.output and "B rerank=off" in r.output
    assert "↑1" in r.output and "↓1" in r.output
    assert "improved 1 · worsened 1 · unchanged 0 · only in A 0 · only in B 0 · overlap 1.00" in r.output
    assert "A vs B for 'zebra crossing' (2 chunks)" in r.output  # the count says what it counts


def test_compare_one_query_json(db):
    r = invoke("compare", "widget", "--db", db, "--b", "key=rowid", "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert d["b"]["spec"] == "key=rowid" and d["a"]["spec"] == "reference"
    assert [(row["marker"], row["rowid_b"]) for row in d["rows"]] == [("same", 3), ("new", 4)]
    assert d["counts"]["only_in_b"] == 1 and d["overlap"] == 0.5
    assert d["traces"]["a"]["variant"] == "reference" and d["traces"]["b"]["variant"] == "key=rowid"
    # the divergence the text form shows beside its table is in the JSON too (it was missing)
    text = invoke("compare", "widget", "--db", db, "--b", "key=rowid").output
    assert f"RBO {d['rbo']:.2f} · J@{d['jaccard_k']} {d['jaccard']:.2f}" in text
    assert d["rbo_p"] == 0.9 and 0 <= d["rbo"] <= 1


def test_compare_with_filters_and_a_variant_a(db):
    r = invoke(
        "compare",
        "zebra",
        "--db",
        db,
        "--a",
        "rerank=off",
        "--b",
        "rerank=off,retrievers=trigram",
        "--session",
        "nobody",
        "--json",
    )
    d = json.loads(r.stdout)  # stderr warns that no chunk has session 'nobody'
    assert d["a"]["spec"] == "rerank=off" and d["traces"]["a"]["params"]["sessions"] == ["nobody"]
    assert all(row["source"] != "ops.md" for row in d["rows"])


def test_compare_query_file(db, queries):
    r = invoke("compare", "--queries", queries, "--db", db, "--b", "rerank=off,fuzzy=never")
    assert r.exit_code == 0, r.output
    assert "swap" in r.output and "rrf-fuzzy→none" in r.output
    assert "2 of 3 queries changed (1 changed layer)" in r.output and "mean overlap 0.67" in r.output


def test_compare_query_file_json(db, queries):
    r = invoke("compare", "--queries", queries, "--db", db, "--b", "rerank=off,fuzzy=never", "--json")
    d = json.loads(r.output)
    assert [q["id"] for q in d["queries"]] == ["swap", "widget", "typo"]
    assert d["totals"]["improved"] == 1 and d["totals"]["worsened"] == 1
    assert d["mean_overlap"] == pytest.approx(2 / 3) and d["layer_changes"] == 1


@pytest.mark.parametrize(
    "args, message",
    [
        (["zebra", "--b", "key=row"], "--b: bad value 'row' for key: allowed values are source-title, rowid"),
        (["zebra", "--b", "rerank=off", "--a", "nope=1"], "--a: unknown variant key 'nope'"),
        (["--b", "rerank=off"], "give either a QUERY or --queries FILE"),
        (["zebra", "--queries", "q.json", "--b", "rerank=off"], "give either a QUERY or --queries FILE"),
        (["--queries", "QFILE", "--b", "rerank=off", "--limit", "5"], "--limit apply to a single QUERY"),
        (["zebra", "--b", "rerank=off", "--limit", "-1"], "limit must be 0 or more"),
        (["zebra", "--b", "rerank=off", "--content-type", "video"], "--content-type must be code or prose"),
    ],
)
def test_compare_errors(db, queries, args, message):
    args = [queries if a == "QFILE" else a for a in args]
    assert message in error_of(invoke("compare", *args, "--db", db))


def test_compare_missing_store(tmp_path):
    assert "no database at" in error_of(invoke("compare", "x", "--db", str(tmp_path / "none.db"), "--b", "rerank=off"))


# ─── why ─────────────────────────────────────────────────────────────────


def test_why_by_rowid(db):
    r = invoke("why", "zebra crossing", "--db", db, "--rowid", "1", "--limit", "2")
    assert r.exit_code == 0, r.output
    assert "row 1" in r.output and "✓ in the answer at #2 · reason outranked" in r.output
    assert "moved it down from fused #1" in r.output


def test_why_by_key_explains_every_chunk_sharing_it(db):
    r = invoke("why", "widget", "--db", db, "--chunk", "guide.md::Example", "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert d["variant"] == "reference"
    assert [(e["rowid"], e["reason"], e["stage"]) for e in d["explanations"]] == [
        (3, "returned", "final"),
        (4, "merged", "fusion"),
    ]
    assert d["explanations"][1]["details"]["kept_rowid"] == 3


def test_why_with_filters_and_variant(db):
    r = invoke("why", "zebra", "--db", db, "--chunk", "ops.md::Ops zebra", "--session", "dev", "--json")
    assert json.loads(r.stdout)["explanations"][0]["reason"] == "session-filter"  # stderr: no chunk has 'dev'
    r = invoke("why", "zebra", "--db", db, "--chunk", "ops.md::Ops zebra", "--source", "a.md")
    assert "source-filter" in r.output
    r = invoke("why", "widget", "--db", db, "--rowid", "4", "--variant", "key=rowid", "--json")
    d = json.loads(r.output)
    assert d["variant"] == "key=rowid" and d["explanations"][0]["reason"] == "returned"


@pytest.mark.parametrize(
    "args, message",
    [
        (["zebra"], "either --chunk SOURCE::TITLE or --rowid N"),
        (["zebra", "--rowid", "1", "--chunk", "a.md::x"], "either --chunk SOURCE::TITLE or --rowid N"),
        (["zebra", "--rowid", "999"], "no chunk has rowid 999"),
        (["zebra", "--chunk", "a.md::Nope"], "source 'a.md' has titles: 'Zebra crossing guide'"),
        (["zebra", "--rowid", "1", "--variant", "fuzzy=sometimes"], "--variant: bad value 'sometimes' for fuzzy"),
    ],
)
def test_why_errors(db, args, message):
    assert message in error_of(invoke("why", *args, "--db", db))


# ─── doctor ──────────────────────────────────────────────────────────────


def test_doctor(db):
    r = invoke("doctor", "--db", db)
    assert r.exit_code == 0, r.output
    assert "4 sources · 5 chunks" in r.output
    assert "1 fusion key shared by several chunks" in r.output
    assert "guide.md::Example" in r.output and "3, 4" in r.output


def test_doctor_json(db):
    r = invoke("doctor", "--db", db, "--json")
    d = json.loads(r.output)
    assert d["collisions"] == [{"source": "guide.md", "title": "Example", "count": 2, "rowids": [3, 4]}]
    assert d["chunks"] == 5 and d["vocabulary_size"] > 0 and d["ok"] is False


def test_doctor_clean_store(tmp_path):
    path = tmp_path / "clean.db"
    with Store.create(path) as s:
        s.index_text("a.md", "# A\ntext\n", "markdown")
    r = invoke("doctor", "--db", str(path))
    assert "No problems found." in r.output


def test_doctor_errors(tmp_path):
    assert "no database at" in error_of(invoke("doctor", "--db", str(tmp_path / "none.db")))
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"not sqlite at all")
    assert "not an SQLite database" in error_of(invoke("doctor", "--db", str(junk)))


def test_errors_through_main_are_one_line(db, capsys):
    with pytest.raises(SystemExit) as info:
        main(["compare", "zebra", "--db", db, "--b", "key=row"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("rankscope: error: --b: bad value 'row'") and "Traceback" not in err


def test_doctor_shows_counts_that_disagree(tmp_path):
    path = tmp_path / "miscounted.db"
    with Store.create(path) as s:
        s.index_text("a.md", "# A\ntext\n# B\n```\ncode\n```\n", "markdown")
        s.conn.execute("UPDATE sources SET chunk_count = 5 WHERE label = 'a.md'")
    r = invoke("doctor", "--db", str(path))
    assert r.exit_code == 0, r.output
    assert "1 source whose recorded chunk counts disagree with their chunks" in r.output
    assert "Counts that disagree with the rows stored" in r.output
    row = next(line for line in r.output.splitlines() if "chunk_count" in line)
    assert row.split() == ["1", "a.md", "chunk_count", "5", "2"]


def test_why_unknown_title_hints_the_closest_titles_and_counts_the_rest(sample_db):
    """``config/broker.json`` has 13 titles: the hint names the 6 closest to
    the title typed (the real one among them) and says how many more."""
    msg = error_of(invoke("why", "retention", "--db", sample_db, "--chunk", "config/broker.json::adminport"))
    assert "source 'config/broker.json' has 13 titles; the 6 closest to 'adminport': 'listen > adminPort';" in msg
    assert msg.endswith("; and 7 more")
    msg = error_of(invoke("why", "retention", "--db", sample_db, "--chunk", "config/broker.json::retension"))
    assert "closest to 'retension': 'retention';" in msg
    msg = error_of(invoke("why", "retention", "--db", sample_db, "--chunk", "config/broker.json::"))
    assert "has 13 titles; the first 6: 'node'; " in msg and msg.endswith("; and 7 more")
