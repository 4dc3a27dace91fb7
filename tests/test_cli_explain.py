"""``rankscope explain`` and ``rankscope search --explain`` (tui/cli/lab.py, tui/cli/search.py)."""

from __future__ import annotations

import json
import struct

import pytest
from typer.testing import CliRunner

from engine import Store
from engine.pipeline.export import TRACE_SCHEMA_VERSION
from tui.cli import CliError, app

from .helpers import index_zebra

runner = CliRunner()


@pytest.fixture
def db(tmp_path):
    """Rows 1-2 for "zebra crossing" (row 1 fused #1, row 2 wins the
    rerank), rows 3-4 share ``guide.md::Example`` (ids ``…Example`` and
    ``…Example#2``)."""
    path = tmp_path / "explain.db"
    with Store.create(path) as s:
        index_zebra(s, others=0)
        s.index_text("guide.md", "## Example\nalpha widget one\n## Example\nalpha widget two\n", "markdown")
    return str(path)


def invoke(*args: str):
    return runner.invoke(app, list(args), env={"COLUMNS": "80"})


def error_of(result) -> str:
    assert isinstance(result.exception, CliError), result.output
    return str(result.exception)


def _left_fold(parts: list[float]) -> float:
    total = 0.0
    for p in parts:
        total = total + p
    return total


def test_json_has_the_issues_schema_and_the_parts_add_up(db):
    r = invoke("explain", "zebra crossing", "--db", db, "--chunk", "a.md::Zebra crossing guide", "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert list(d) == ["query", "chunk", "retrievers", "stages", "vs"]
    assert d["query"] == "zebra crossing" and d["chunk"] == {"rowid": 1, "id": "a.md::Zebra crossing guide"}
    assert d["vs"] is None
    assert [s["stage"] for s in d["stages"]] == [
        "porter",
        "trigram",
        "fusion",
        "pool",
        "filter",
        "trim",
        "rerank",
        "final",
    ]
    for name in ("porter", "trigram"):
        a = d["retrievers"][name]
        assert set(a) >= {"rank", "bm25", "rows", "avg_tokens", "row_tokens", "k1", "b", "weights", "phrases"}
        assert (a["k1"], a["b"], a["weights"]) == (1.2, 0.75, {"title": 5.0, "content": 1.0})
        assert isinstance(a["rank"], int)
        for p in a["phrases"]:
            assert set(p) == {"phrase", "rows_matching", "idf", "hits", "weighted_tf", "part"}
            assert set(p["hits"]) == {"title", "content"}
        # FTS5's sign: lower is better; the same double as FTS5's bm25()
        parts = [p["part"] for p in a["phrases"]]
        assert struct.pack("<d", a["bm25"]) == struct.pack("<d", -_left_fold(parts))


def test_vs_names_the_deciding_stage_and_the_flip(db):
    r = invoke("explain", "zebra crossing", "--db", db, "--rowid", "1", "--vs-rowid", "2", "--limit", "2", "--json")
    assert r.exit_code == 0, r.output
    vs = json.loads(r.output)["vs"]
    assert vs["chunk"] == {"rowid": 2, "id": "b.md::Beta"}
    decided = vs["decided_by"]
    assert decided["stage"] == "rerank" and (decided["above"], decided["below"]) == (2, 1)
    assert decided["rerank"]["vs"]["boost"] > decided["rerank"]["chunk"]["boost"]
    flip = vs["would_flip_with"]
    assert flip["param"] and flip["positions"]["chunk"] < flip["positions"]["vs"]
    # the text says the same
    r = invoke("explain", "zebra crossing", "--db", db, "--rowid", "1", "--vs-rowid", "2", "--limit", "2")
    assert r.exit_code == 0, r.output
    assert "row 2 is above row 1 · decided at Rerank" in r.output
    assert "row 1 would be above row 2 with" in r.output and "proven by re-running" in r.output
    assert max(len(line) for line in r.output.splitlines()) <= 80


def test_text_shows_every_phrase_and_the_check(db):
    r = invoke("explain", "zebra crossing", "--db", db, "--rowid", "1")
    assert r.exit_code == 0, r.output
    out = r.output
    assert "Porter: rank #" in out and "Trigram: rank #" in out
    assert out.count("= FTS5's bm25() to the last bit") == 2
    assert "porter #" in out and "final #" in out
    assert max(len(line) for line in out.splitlines()) <= 80


def test_a_later_chunk_of_a_shared_key_is_named_by_its_id(db):
    r = invoke("explain", "widget", "--db", db, "--chunk", "guide.md::Example#2", "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert d["chunk"] == {"rowid": 4, "id": "guide.md::Example#2"}
    exits = {s["stage"]: s["position"] for s in d["stages"]}
    assert exits["fusion"] is None  # merged into the first chunk of the key


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "exactly one"),
        (("--rowid", "1", "--chunk", "a.md::Zebra crossing guide"), "exactly one"),
        (("--rowid", "99"), "--rowid: no chunk has rowid 99"),  # was "--rowid-rowid: ..."
        (("--rowid", "1", "--vs-rowid", "99"), "--vs-rowid: no chunk has rowid 99"),
        (("--rowid", str(2**63)), f"--rowid {2**63} is outside SQLite's row id range"),
        (("--rowid", "1", "--vs-rowid", str(-(2**63) - 1)), f"--vs-rowid {-(2**63) - 1} is outside"),
        (("--chunk", "a.md::Nope"), "--chunk 'a.md::Nope': no chunk has key 'a.md::Nope'; source 'a.md' has titles"),
        (("--rowid", "1", "--vs-rowid", "1"), "same chunk"),
        (("--rowid", "1", "--vs", "x::y", "--vs-rowid", "2"), "not both"),
        (("--rowid", "1", "--vs", "a.md::Zebra crossing guide"), "same chunk"),
    ],
)
def test_bad_names_are_one_line_errors(db, args, message):
    assert message in error_of(invoke("explain", "zebra", "--db", db, *args))


def test_search_json_explain_adds_the_anatomy_of_each_result(db):
    r = invoke("search", "zebra crossing", "--db", db, "--limit", "2", "--json", "--explain")
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert d["schema_version"] == TRACE_SCHEMA_VERSION >= 5
    assert [a["chunk"]["rowid"] for a in d["anatomy"]] == [f["rowid"] for f in d["final"]]
    for a in d["anatomy"]:
        for name, ret in a["retrievers"].items():
            assert ret["bm25"] == -_left_fold([p["part"] for p in ret["phrases"]])
            assert ret["bm25"] == next(h["bm25"] for h in d[name] if h["rowid"] == a["chunk"]["rowid"])
    plain = json.loads(invoke("search", "zebra crossing", "--db", db, "--json").output)
    assert plain["anatomy"] is None
    text = invoke("search", "zebra crossing", "--db", db, "--explain")
    assert text.exit_code == 0 and text.output.count("to the last bit") == 2 * len(plain["final"])
    assert "not to --flow" in error_of(invoke("search", "zebra", "--db", db, "--flow", "--explain"))


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    from .conftest import SAMPLE_CORPUS

    path = tmp_path_factory.mktemp("explain") / "sample.db"
    runner.invoke(app, ["index", str(SAMPLE_CORPUS), "--db", str(path)])
    return str(path)


@pytest.mark.parametrize("width", [60, 80, 120])
@pytest.mark.parametrize(
    ("query", "x", "y"),
    [("consumer lag", 76, 116), ("publish partition-key example", 56, 101), ("acknowledge messages", 74, 75)],
)
def test_text_fits_the_width_and_cuts_no_number(sample, width, query, x, y):
    """Every part, bm25 and position the JSON holds is printed whole, at any width."""
    for extra in ((), ("--vs-rowid", str(y))):
        r = runner.invoke(
            app,
            ["explain", query, "--db", sample, "--rowid", str(x), *extra],
            terminal_width=width,
            env={"COLUMNS": str(width)},
        )
        assert r.exit_code == 0, r.output
        assert max(len(line) for line in r.output.splitlines()) <= width, r.output
        d = json.loads(invoke("explain", query, "--db", sample, "--rowid", str(x), *extra, "--json").output)
        words = r.output.split()
        if not extra:
            for a in d["retrievers"].values():
                assert f"{a['bm25']:.6f}" in words or f"{a['bm25']:.6f}," in words, (a["bm25"], r.output)
                for p in a["phrases"]:
                    assert f"{p['part']:.6f}" in words, (p, r.output)
        else:
            decided = d["vs"]["decided_by"]
            for diff in decided.get("retrievers", {}).values():
                for p in diff["phrases"]:
                    assert f"{p['part']['chunk']:.6f}" in words and f"{p['part']['vs']:.6f}" in words
            for side in decided.get("fused", {}).values():
                assert f"{side['score']:.6f}" in words, (side, r.output)
