"""``rankscope search --flow`` / ``--pin`` and ``rankscope why --json``'s
``would_return_with`` (issue 9 items 1, 3 and 4 in the CLI)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from engine import Store
from tui.cli import CliError, app

from .helpers import index_herd, index_zebra

runner = CliRunner()


@pytest.fixture
def db(tmp_path):
    """Rows 1-2 "zebra crossing" (row 2 wins the rerank); 3-4 share
    ``guide.md::Example`` (4 merged into 3); 5 ``Zebra`` of session
    ``other``; 6-11 ``Doc n`` mentioning zebra once."""
    path = tmp_path / "flow.db"
    with Store.create(path) as s:
        index_zebra(s, others=0)
        s.index_text("guide.md", "## Example\nalpha widget one\n## Example\nalpha widget two\n", "markdown")
        index_herd(s)
    return str(path)


def invoke(*args, width=120):
    return runner.invoke(app, list(args), env={"COLUMNS": str(width)}, terminal_width=width)


def test_flow_table_at_120_columns(db):
    r = invoke("search", "zebra widget", "--db", db, "--flow", "--session", "mine", "--limit", "3")
    assert r.exit_code == 0, r.output
    assert "no chunk in this store has this session id" in r.stderr  # 'mine': nothing indexed from it
    lines = r.stdout.splitlines()
    assert lines[0].startswith('porter "zebra" OR "widget"')
    head = next(line for line in lines if "Porter" in line)
    assert head.split() == ["row", "title", "Porter", "Trigram", "Fused", "Pool", "Filter", "Trim", "Rerank", "Final"]
    assert "merged→3" in r.stdout and "session other" in r.stdout and "cut @3" in r.stdout
    assert all(len(line) <= 120 for line in lines)


def test_flow_table_at_80_columns_is_compact_with_a_legend(db):
    r = invoke("search", "zebra widget", "--db", db, "--flow", "--session", "mine", width=80)
    assert r.exit_code == 0, r.output
    assert "Filt" in r.stdout and "→3" in r.stdout and "✗other" in r.stdout and "cut@3" in r.stdout
    assert "→57 merged into row 57" in r.stdout  # the legend
    assert all(len(line) <= 80 for line in r.stdout.splitlines())  # stderr: the warning about 'mine'


def test_flow_json_has_the_same_rows(db):
    r = invoke("search", "zebra widget", "--db", db, "--flow", "--json", "--session", "mine")
    d = json.loads(r.stdout)
    assert d["layer"] == "rrf" and [s["word"] for s in d["stems"]] == ["zebra", "widget"]
    [flow] = d["flows"]
    assert flow["stages"] == ["porter", "trigram", "fusion", "pool", "filter", "trim", "rerank", "final"]
    merged = next(row for row in flow["rows"] if row["rowid"] == 4)
    fusion = next(c for c in merged["cells"] if c["stage"] == "fusion")
    assert fusion["state"] == "left" and fusion["exit"]["reason"] == "merged" and fusion["exit"]["into_rowid"] == 3
    assert [row["final"] for row in flow["rows"][:3]] == [1, 2, 3]


def test_fuzzy_rerun_shows_both_passes(db):
    r = invoke("search", "zebar", "--db", db, "--flow", "--json")
    d = json.loads(r.output)
    assert [f["pass"] for f in d["flows"]] == ["fuzzy", "first"] and d["layer"] == "rrf-fuzzy"
    r = invoke("search", "zebar", "--db", db, "--flow")
    assert "fuzzy re-run 'zebra' (the answer)" in r.output and "~Fused" in r.output


@pytest.mark.parametrize("width", [80, 120])
def test_a_search_nothing_answered_says_so_whole(db, width):
    """``kafka`` matches nothing and fuzzy finds no correction (layer none):
    the title says there is no answer (not "not the answer"), the empty
    table says so in full, and why nothing answered follows."""
    r = invoke("search", "kafka", "--db", db, "--flow", width=width)
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert "first pass 'kafka' (no answer: nothing was returned)" in lines[1]
    assert "not the answer" not in r.output
    assert any(line.strip() == "(no candidate entered this pass)" for line in lines), r.output
    assert "No results: no match in either index" in r.output


def test_a_fuzzy_answer_keeps_the_empty_first_pass_whole(db):
    r = invoke("search", "zebar", "--db", db, "--flow", width=80)
    assert r.exit_code == 0, r.output
    assert "fuzzy re-run 'zebra' (the answer)" in r.output and "first pass 'zebar' (not the answer)" in r.output
    assert any(line.strip() == "(no candidate entered this pass)" for line in r.output.splitlines()), r.output
    assert "No results" not in r.output


def test_pin_a_session_removal(db):
    r = invoke("search", "zebra", "--db", db, "--session", "mine", "--pin", "top.md::Zebra")
    assert r.exit_code == 0, r.output
    assert "pinned row 5 Zebra: left at Session filter: removed by the session filter (session 'other')" in r.output
    assert "allowing session 'other' would return it at #1" in r.output


def test_pin_in_the_flow_marks_the_row_and_adds_a_chunk_never_retrieved(db):
    r = invoke("search", "zebra", "--db", db, "--flow", "--pin", "3", "--pin", "5")
    assert r.exit_code == 0, r.output
    assert "▸3" in r.output and "not retrieved" in r.output  # row 3 ("alpha widget one") has no zebra
    assert "no single change returns it: no query term is indexed in it" in r.output
    d = json.loads(invoke("search", "zebra", "--db", db, "--flow", "--json", "--pin", "3").output)
    [pin] = d["pinned"]
    assert pin["would_return_with"] is None and pin["counterfactual"]["reason"] == "no-term"
    assert pin["fate"]["stage"] == "retrieve" and pin["fate"]["exit"]["reason"] == "no-term"
    absent = next(row for row in d["flows"][0]["rows"] if row["rowid"] == 3)
    assert absent["entered"] is False and absent["cells"][0]["exit"]["reason"] == "no-term"


def test_pin_in_the_json_trace(db):
    d = json.loads(invoke("search", "zebra crossing", "--db", db, "--limit", "1", "--json", "--pin", "2").output)
    assert "candidates" in d and d["pinned"][0]["rowid"] == 2
    # fused #2, cut at limit 1; with limit 2 the rerank lifts it to #1
    assert d["pinned"][0]["would_return_with"] == {"param": "limit", "value": 2, "position": 1}


def test_pin_a_shared_key_pins_every_chunk(db):
    d = json.loads(invoke("search", "widget", "--db", db, "--json", "--pin", "guide.md::Example").output)
    assert [(p["rowid"], p["fate"]["position"]) for p in d["pinned"]] == [(3, 1), (4, None)]
    assert d["pinned"][1]["would_return_with"] == {"param": "fusion_key", "value": "rowid", "position": 2}


@pytest.mark.parametrize(
    "spec,message",
    [
        ("guide", "--pin: name a chunk as SOURCE::TITLE or a row id"),
        ("999", "--pin: no chunk has rowid 999"),
        ("a.md::Nope", "--pin: no chunk has key 'a.md::Nope'"),
    ],
)
def test_pin_errors(db, spec, message):
    r = invoke("search", "zebra", "--db", db, "--pin", spec)
    assert isinstance(r.exception, CliError) and message in str(r.exception)


def test_why_json_reports_would_return_with(db):
    r = invoke("why", "zebra", "--db", db, "--rowid", "5", "--session", "mine", "--json")
    [e] = json.loads(r.stdout)["explanations"]
    assert e["reason"] == "session-filter"
    assert e["would_return_with"] == {"param": "allow_session", "value": "other", "position": 1}
    r = invoke("why", "zebra", "--db", db, "--rowid", "3", "--json")
    [e] = json.loads(r.output)["explanations"]
    assert e["would_return_with"] is None and e["counterfactual"]["reason"] == "no-term"
    r = invoke("why", "zebra", "--db", db, "--rowid", "5", "--session", "mine")
    assert "Would return it: allowing session 'other' would return it at #1 (proven by re-running)" in r.output


def test_a_chunk_pinned_twice_is_followed_once(db):
    """``--pin 5 --pin 5`` (or its row id and its key) prints the pinned line
    once and lists the chunk once in the JSON."""
    r = invoke("search", "zebra", "--db", db, "--session", "mine", "--pin", "5", "--pin", "5", "--pin", "top.md::Zebra")
    assert r.exit_code == 0, r.output
    assert r.output.count("pinned row 5 Zebra") == 1
    d = json.loads(invoke("search", "zebra", "--db", db, "--json", "--pin", "3", "--pin", "guide.md::Example").output)
    assert [p["rowid"] for p in d["pinned"]] == [3, 4]
