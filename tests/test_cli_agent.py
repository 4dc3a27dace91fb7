"""CLI: ``ctx-search`` (what the agent receives) and ``agent-log`` (what it
searched), on the recorded golden data. Nothing is ever written."""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache

import pytest
from typer.testing import CliRunner

from tui.cli import app, main

from .helpers import cli_error
from .conftest import AGENT_VIEW, PLUGIN_SEARCH, PLUGIN_STORE, SESSION_DB

runner = CliRunner()
STORE = AGENT_VIEW / "store.db"


@lru_cache(maxsize=None)
def golden() -> dict:
    with open(AGENT_VIEW / "calls.json", encoding="utf-8") as fh:
        return {c["id"]: c for c in json.load(fh)["calls"]}


def _sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(autouse=True)
def no_throttle_env(monkeypatch):
    for name in (
        "CONTEXT_MODE_SEARCH_WINDOW_MS",
        "CONTEXT_MODE_SEARCH_MAX_RESULTS_AFTER",
        "CONTEXT_MODE_SEARCH_BLOCK_AFTER",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("COLUMNS", "160")


# ─── ctx-search ──────────────────────────────────────────────────────────


def test_text_is_the_recorded_answer():
    before = _sha(STORE)
    r = runner.invoke(app, ["ctx-search", "backpressure stall", "--db", str(STORE)])
    assert r.exit_code == 0, r.output
    assert r.stdout == golden()["c01"]["text"] + "\n"
    assert _sha(STORE) == before


def test_options_build_the_arguments():
    # c19: source + contentType, call #3 (the warning footer)
    c = golden()["c19"]
    r = runner.invoke(
        app,
        [
            "ctx-search",
            "advisories",
            "bulletin",
            "--db",
            str(STORE),
            "--source",
            "corvid-config",
            "--content-type",
            "code",
            "--call-number",
            "3",
        ],
    )
    assert r.exit_code == 0, r.output
    assert r.stdout == c["text"] + "\n"


@pytest.mark.parametrize("cid, call", [("c10", 3), ("c32", 3), ("c26", 1)])
def test_params_json_takes_the_raw_arguments(cid, call):
    c = golden()[cid]
    r = runner.invoke(
        app, ["ctx-search", "--db", str(STORE), "--params-json", json.dumps(c["params"]), "--call-number", str(call)]
    )
    assert r.exit_code == 0, r.output
    assert r.stdout_bytes == (c["text"] + "\n").encode("utf-8")  # bytes: c10 keeps its CRs


def test_json_shape_and_lone_surrogates():
    c = golden()["c11"]
    r = runner.invoke(app, ["ctx-search", "--db", str(STORE), "--params-json", json.dumps(c["params"]), "--json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)  # valid JSON: lone surrogates escaped
    assert data["text"] == c["text"] and data["is_error"] is False and data["effective_limit"] == 2
    assert {"query", "status", "trace", "results"} <= set(data["queries"][0])
    result = data["queries"][0]["results"][0]
    assert {"rowid", "source", "title", "snippet"} <= set(result)
    assert set(result["snippet"]) >= {"windows", "source_of_positions"}
    assert result["snippet"]["source_of_positions"] in ("highlight", "indexOf", "none")
    assert all(isinstance(w, list) and len(w) == 2 for w in result["snippet"]["windows"])
    assert data["queries"][0]["trace"]["final"][0]["source"] == result["source"]


def test_plain_text_shows_lone_surrogates_as_replacement_characters():
    c = golden()["c11"]
    r = runner.invoke(app, ["ctx-search", "--db", str(STORE), "--params-json", json.dumps(c["params"])])
    assert r.exit_code == 0
    expected = "".join("\ufffd" if "\ud800" <= ch <= "\udfff" else ch for ch in c["text"])
    assert r.stdout == expected + "\n"


def test_schema_error_prints_the_server_text_and_names_the_field(capsys):
    c = golden()["c28"]
    with pytest.raises(SystemExit) as exc:
        main(["ctx-search", "--db", str(STORE), "--params-json", json.dumps(c["params"])])
    assert exc.value.code == 1
    out, err = capsys.readouterr()
    assert out == c["text"] + "\n"
    assert "contentType" in err and "Traceback" not in err


def test_query_alone_is_stripped_like_over_mcp(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["ctx-search", "--db", str(STORE), "--params-json", '{"query": "tombstone"}'])
    assert exc.value.code == 1
    assert capsys.readouterr().out == "Error: provide query or queries.\n"


def test_call_number_and_throttle_env(monkeypatch):
    r = runner.invoke(
        app, ["ctx-search", "heartbeat interval", "--limit", "5", "--db", str(STORE), "--call-number", "4"]
    )
    assert r.exit_code == 0
    assert r.stdout == golden()["t04"]["text"] + "\n"
    r = runner.invoke(app, ["ctx-search", "tombstone", "--db", str(STORE), "--call-number", "9"])
    assert r.exit_code == 1 and r.stdout == golden()["t09"]["text"] + "\n"
    monkeypatch.setenv("CONTEXT_MODE_SEARCH_BLOCK_AFTER", "2")
    r = runner.invoke(app, ["ctx-search", "tombstone", "--db", str(STORE), "--call-number", "3"])
    assert r.exit_code == 1 and r.stdout.startswith("BLOCKED: 3 search calls")
    monkeypatch.setenv("CONTEXT_MODE_SEARCH_BLOCK_AFTER", "not a number")
    r = runner.invoke(app, ["ctx-search", "tombstone", "--db", str(STORE), "--call-number", "3", "--json"])
    assert json.loads(r.stdout)["throttle"]["block_after"] == 8


def test_plugin_mode_from_the_session_db():
    before = _sha(SESSION_DB)
    p01, p02, p03 = (golden()[k] for k in ("p01", "p02", "p03"))
    r = runner.invoke(
        app,
        [
            *PLUGIN_SEARCH,
            "halyard message",
            "failover review",
        ],
    )
    assert r.exit_code == 0, r.output
    assert r.stdout == p01["text"] + "\n"
    r = runner.invoke(
        app,
        [
            *PLUGIN_SEARCH,
            "--project",
            golden()["p01"]["params"].get("project", "/tmp/agentview/public/project"),
            "--params-json",
            json.dumps(p02["params"]),
            "--call-number",
            "2",
        ],
    )
    assert r.stdout == p02["text"] + "\n"
    r = runner.invoke(
        app,
        [
            *PLUGIN_SEARCH,
            "--params-json",
            json.dumps(p03["params"]),
            "--call-number",
            "3",
            "--json",
        ],
    )
    data = json.loads(r.stdout)
    assert data["text"] == p03["text"] and data["scope"]["allow_set"] is None
    assert _sha(SESSION_DB) == before


def test_timeline_with_session_events():
    p04 = golden()["p06"]
    r = runner.invoke(
        app,
        [
            *PLUGIN_SEARCH,
            "--params-json",
            json.dumps(p04["params"]),
            "--call-number",
            "3",
        ],
    )
    assert r.stdout == p04["text"] + "\n"


def test_hand_picked_allow_set():
    """An allow-set without the attributed sessions hides their chunks, like p02."""
    r = runner.invoke(
        app,
        [
            "ctx-search",
            "halyard message",
            "failover review",
            "--db",
            str(PLUGIN_STORE),
            "--allow-session",
            "no-such-session",
            "--call-number",
            "2",
        ],
    )
    assert r.exit_code == 0
    assert r.stdout == golden()["p02"]["text"] + "\n"


@pytest.mark.parametrize(
    "args, words",
    [
        (["ctx-search", "--db", str(STORE)], "at least one QUERY"),
        (["ctx-search", "x", "--db", str(STORE), "--params-json", '{"queries": ["y"]}'], "--params-json"),
        (["ctx-search", "--db", str(STORE), "--params-json", "{nope"], "not valid JSON"),
        (["ctx-search", "x", "--db", str(STORE), "--sort", "newest"], "--sort"),
        (["ctx-search", "x", "--db", str(STORE), "--content-type", "json"], "--content-type"),
        (["ctx-search", "x", "--db", str(STORE), "--call-number", "0"], "--call-number"),
        (
            ["ctx-search", "x", "--db", str(STORE), "--allow-session", "a", "--sessions-db", str(SESSION_DB)],
            "--allow-session",
        ),
        (["ctx-search", "x", "--db", str(STORE), "--sessions-db", "/no/such.db"], "No such file or directory"),
        (["ctx-search", "x", "--db", "/no/such/store.db"], "no database"),
        (["ctx-search", "x", "--db", str(STORE), "--limit", "1", "--params-json", "{}"], "--params-json"),
    ],
)
def test_bad_input_is_one_line(args, words, capsys):
    assert words in cli_error(args, capsys)


@pytest.mark.parametrize(
    "limit, words",
    [
        ("1.5", "--- [current-session"),  # slice(0, 1.5): one result (refused before)
        ("1e400", "## relay queue stall"),
        ("-1e400", "No results found."),
        ("9" * 400, "## relay queue stall"),
        ('"0x' + "f" * 300 + '"', "## relay queue stall"),
        ("-" + "9" * 400, "No results found."),
    ],
)
def test_params_json_limits_at_their_edges_are_answered(limit, words, capsys):
    """Huge and fractional limits answer as the server does (OverflowError
    tracebacks before; test_agent_edges.py checks the texts byte for byte)."""
    args = [
        "ctx-search",
        "--db",
        str(STORE),
        "--params-json",
        '{"queries": ["relay queue stall"], "limit": ' + limit + "}",
    ]
    with pytest.raises(SystemExit) as exc:
        main(args)
    out = capsys.readouterr().out
    assert exc.value.code == 0 and words in out


def test_deep_params_json_is_one_line(capsys):
    deep = "[" * 50_000 + "]" * 50_000
    err = cli_error(["ctx-search", "--db", str(STORE), "--params-json", deep], capsys)
    assert "nested more than 64 levels deep" in err


@pytest.mark.parametrize("name", ["CONTEXT_MODE_SEARCH_BLOCK_AFTER", "CONTEXT_MODE_SEARCH_WINDOW_MS"])
@pytest.mark.parametrize("value", ["1e400", "-1e400", "9" * 400, "0x" + "f" * 300, "1_000", "١٢"])
def test_throttle_variables_at_their_edges(name, value, monkeypatch, capsys):
    monkeypatch.setenv(name, value)
    with pytest.raises(SystemExit) as exc:
        main(["ctx-search", "--db", str(STORE), "relay"])
    assert exc.value.code == 0 and "call #1/8 in this window" in capsys.readouterr().out


# ─── agent-log ───────────────────────────────────────────────────────────


def test_agent_log_lists_the_13_calls():
    r = runner.invoke(app, ["agent-log", "--sessions-db", str(SESSION_DB), "--json"])
    assert r.exit_code == 0, r.output
    calls = json.loads(r.stdout)
    assert len(calls) == 13
    assert [c["event_id"] for c in calls] == [4, 10, 15, 22, 28, 32, 38, 46, 52, 58, 62, 67, 73]
    assert all(c["answer_recorded"] for c in calls)
    assert calls[5]["params"] == {"queries": "heartbeat interval"} and calls[5]["queries"] == ["heartbeat interval"]
    assert [c["throttle_count"] for c in calls] == [1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4, 5]
    assert calls[0]["session_id"].startswith("3f6b9c1e") and calls[0]["created_at"] == "2026-12-01 02:51:29"
    r = runner.invoke(app, ["agent-log", "--sessions-db", str(SESSION_DB)])
    assert r.exit_code == 0
    assert "13 ctx_search call(s)" in r.stdout and "failover review election timers" in r.stdout


def test_agent_log_replay_reports_the_first_difference():
    before = _sha(PLUGIN_STORE), _sha(SESSION_DB)
    r = runner.invoke(
        app, ["agent-log", "--sessions-db", str(SESSION_DB), "--replay", "--db", str(PLUGIN_STORE), "--json"]
    )
    assert r.exit_code == 0, r.output
    calls = json.loads(r.stdout)
    outcomes = [c["replay"]["outcome"] for c in calls]
    # call 5 ran before session-notes-s2 was indexed; the store as it is now answers differently
    assert outcomes == ["same"] * 4 + ["differs"] + ["same"] * 8
    diff = calls[4]["replay"]["difference"]
    assert diff["kind"] == "rows" and "session-notes-s2" in diff["replayed"]
    assert calls[10]["replay"]["text"] == calls[10]["replay"]["text"] and calls[10]["params"]["sort"] == "timeline"
    assert all(c["replay"]["plugin_mode"] for c in calls)
    r = runner.invoke(app, ["agent-log", "--sessions-db", str(SESSION_DB), "--replay", "--db", str(PLUGIN_STORE)])
    assert "12 of 13 recorded answer(s) reproduced exactly" in r.stdout
    assert "#5: the results differ" in r.stdout
    assert (_sha(PLUGIN_STORE), _sha(SESSION_DB)) == before


def test_agent_log_replay_on_an_older_store_state():
    """On the state before the session's own indexing, the calls that read
    faq-s1 / session-notes-s2 differ and call 5 is reproduced."""
    r = runner.invoke(
        app,
        [
            "agent-log",
            "--sessions-db",
            str(SESSION_DB),
            "--replay",
            "--db",
            str(AGENT_VIEW / "stale" / "store-after-S03.db"),
            "--json",
        ],
    )
    outcomes = [c["replay"]["outcome"] for c in json.loads(r.stdout)]
    assert outcomes[4] == "same" and outcomes[3] == "differs" and outcomes[7] == "differs"


def test_agent_log_project_filter():
    r = runner.invoke(app, ["agent-log", "--sessions-db", str(SESSION_DB), "--project", "/elsewhere", "--json"])
    assert json.loads(r.stdout) == []
    r = runner.invoke(
        app, ["agent-log", "--sessions-db", str(SESSION_DB), "--project", "/tmp/agentview/public/project/", "--json"]
    )
    assert len(json.loads(r.stdout)) == 13


@pytest.mark.parametrize(
    "args, words",
    [
        (["agent-log", "--sessions-db", "/no/such.db"], "No such file or directory"),
        (["agent-log", "--sessions-db", str(SESSION_DB), "--replay"], "--replay needs --db"),
        (["agent-log", "--sessions-db", str(SESSION_DB), "--db", str(STORE)], "only used with --replay"),
        (["agent-log", "--sessions-db", str(STORE)], "not a context-mode session DB"),
    ],
)
def test_agent_log_bad_input(args, words, capsys):
    assert words in cli_error(args, capsys)


def test_agent_log_at_80_columns_wraps_free_text_at_spaces_and_keeps_numbers_whole(tmp_path):
    """The queries and params columns wrap at spaces; a word too long for
    its column ends in … (never folded mid-word: ``replication-quor`` over
    ``um...``); the call number, time, session and answer stay whole."""
    import shutil
    import sqlite3

    db = tmp_path / "session.db"
    shutil.copy(SESSION_DB, db)  # a copy: the golden file is never opened for writing
    long_query = "replication-quorum-acknowledgement-timeout-configuration"
    params = {
        "queries": [long_query, "backpressure stall"],
        "source": "docs/architecture/replication-and-consensus-overview.md",
        "contentType": "prose",
        "limit": 5,
    }
    data = json.dumps({"tool_name": "mcp__plugin_context-mode_context-mode__ctx_search", "params": params})
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE session_events SET data = ? WHERE id = 38", (data,))
    conn.close()
    calls = json.loads(runner.invoke(app, ["agent-log", "--sessions-db", str(db), "--json"]).stdout)
    assert calls[6]["params"] == params
    r = runner.invoke(app, ["agent-log", "--sessions-db", str(db)], env={"COLUMNS": "80"}, terminal_width=80)
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    assert lines[0].startswith("13 ctx_search call(s) in ") and all(len(line) <= 80 for line in lines[1:])
    cells = [cell for line in lines for cell in line.split("  ") if cell.strip()]
    words = {w for c in calls for q in c["queries"] for w in q.split()}
    words |= {w for c in calls for w in json.dumps({k: v for k, v in c["params"].items() if k != "queries"}).split()}
    for word in words - {"{}"}:
        whole = any(word in cell.split() for cell in cells)
        cut = [cell.strip() for cell in cells if cell.strip().endswith("…") and word.startswith(cell.strip()[:-1])]
        assert whole or cut, (word, r.stdout)
    assert any(cell.strip() == long_query[: len(cell.strip()) - 1] + "…" for cell in cells), r.stdout
    for i, c in enumerate(calls):  # each row's first line: number, time, session (8 characters), answer
        row = next(line for line in lines[1:] if line.split()[:1] == [str(i + 1)])
        assert row.split()[1:4] == [*c["created_at"][5:].split(), c["session_id"][:8]], row
        assert row.split()[-1] == f"#{c['throttle_count']}", row


# ─── session DBs as they really are (malformed rows) ─────────────────────


def _malformed_session_db(tmp_path):
    """The fixture with rows as hooks (or a damaged disk) may leave them."""
    import sqlite3

    path = tmp_path / "session.db"
    path.write_bytes(SESSION_DB.read_bytes())
    conn = sqlite3.connect(path)
    deep = "[" * 100_000 + "]" * 100_000
    with conn:
        conn.execute("UPDATE session_events SET data = CAST(data AS BLOB) WHERE id = 4")  # a BLOB where text is
        conn.execute("UPDATE session_events SET created_at = 'yesterday' WHERE id = 10")  # an unparsable time
        conn.execute("UPDATE session_events SET data = ? WHERE id = 14", ("ctx_search: x\nresponse: " + deep,))
        conn.execute(  # an out-of-range limit, as JSON.parse reads it (Infinity)
            "UPDATE session_events SET data = ? WHERE id = 22",
            (
                '{"tool_name":"mcp__plugin_context-mode_context-mode__ctx_search","params":{"queries":'
                '["halyard message"],"source":"faq-s1","limit":1' + "0" * 5000 + "}}",
            ),
        )
        conn.execute(  # nested params
            "UPDATE session_events SET data = ? WHERE id = 28",
            ('{"tool_name":"mcp__plugin_context-mode_context-mode__ctx_search","params":' + deep + "}",),
        )
        conn.execute("UPDATE session_events SET session_id = x'00ff' WHERE id = 32")  # a BLOB session id
        conn.execute("UPDATE session_events SET data = x'2333' WHERE id = 39")  # external_ref #3 as a BLOB
    conn.close()
    return path


def test_agent_log_reports_and_skips_malformed_rows(tmp_path, capsys):
    """Each bad row is one warning line naming it; the rest are listed, replayed
    and exported (TypeError / ValueError / RecursionError / OverflowError before)."""
    db = _malformed_session_db(tmp_path)
    for extra in (
        [],
        ["--json"],
        ["--replay", "--db", str(PLUGIN_STORE)],
        ["--replay", "--db", str(PLUGIN_STORE), "--json"],
    ):
        with pytest.raises(SystemExit) as exc:
            main(["agent-log", "--sessions-db", str(db), *extra])
        captured = capsys.readouterr()
        assert exc.value.code == 0, captured.err
        warnings = captured.err.splitlines()
        assert [w.split(" skipped: ")[0] for w in warnings] == [
            "rankscope: warning: session_events row 4",
            "rankscope: warning: session_events row 10",
            "rankscope: warning: session_events row 28",
            "rankscope: warning: session_events row 32",
        ], captured.err
        assert "data is a BLOB, not text" in warnings[0]
        assert "created_at 'yesterday' is not a UTC time" in warnings[1]
        assert "nested more than 64 levels deep" in warnings[2]
        assert "session_id is a BLOB, not text" in warnings[3]
        if "--json" in extra:
            calls = json.loads(captured.out)
            assert [c["event_id"] for c in calls] == [15, 22, 38, 46, 52, 58, 62, 67, 73]
            assert calls[0]["answer_recorded"] is False and "nested more than 64" in calls[0]["answer_note"]
            assert calls[1]["params"]["limit"] is None  # Infinity prints as JSON.stringify does
            if "--replay" in extra:
                assert calls[1]["replay"]["outcome"] == "same"  # Infinity: Math.min(Infinity, 2) = 2 … soft-capped: 1
        else:
            assert "9 ctx_search call(s)" in captured.out
