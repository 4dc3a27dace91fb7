"""Parity of the ``ctx_search`` layer with the real context-mode 1.0.169 server.

``calls.json`` (in :data:`AGENT_VIEW`) holds 61 answers recorded byte for
byte over MCP. Each group ran in a fresh server process, so each group is
replayed here in one :class:`AgentSession` (the throttle counts its calls
at their recorded ``sent_at`` times; nothing is given a call number):

* G, T groups search ``store.db``; T01 is the throttle run (blocked calls,
  a window that expires after 62 s, uncounted errors);
* S groups start from the state *before* the group (a writable temp copy,
  its ``file_path`` values pointed at a temp project folder), the changed
  files are written there with their recorded mtime, and the server's own
  auto-refresh re-indexes them; the resulting store must equal the
  recorded state file (``stale/…``) and the answers must be exact (the
  refreshed chunks get the recorded refresh time as their timestamp);
* P groups run in plugin mode on ``plugin/store-P01.db`` with the
  fixture session DB.

Per call: the text (exact), ``is_error``, the effective limit, the rows of
every section, and per executed query the ``searchWithFallback`` rows
(source, title, layer, session id, highlight, marker offsets) and each
snippet's windows recomputed from the recorded highlight.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import shutil
import sqlite3
from functools import lru_cache
from pathlib import Path

import pytest

import engine.store.indexing as indexing
from engine import Store
from engine.agent import AgentContext, AgentSession, ThrottleConfig, ctx_search, extract_snippet
from engine.agent.schema import SchemaError, parse_arguments
from engine.agent.snippet import marker_spans
from engine.store.schema import APPLICATION_ID

from ..conftest import AGENT_VIEW, SESSION_DB

CALLS = AGENT_VIEW / "calls.json"
#: The DB state an S group started from (the previous group's result).
PRE_STATE = {
    "S01": "store.db",
    "S02": "stale/store-after-S01.db",
    "S03": "stale/store-after-S02.db",
    "S04": "stale/store-after-S03.db",
}


@lru_cache(maxsize=None)
def golden() -> dict:
    with open(CALLS, encoding="utf-8") as fh:
        return json.load(fh)


def calls() -> list[dict]:
    return golden()["calls"]


def _ms(stamp: str) -> float:
    return dt.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1000


def _groups() -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for c in calls():
        out.setdefault(c["group"], []).append(c)
    return out


# ─── S groups: the pre-group state, the changed files, the real refresh ──


def _label_chunks(db: Path, file_path: str) -> tuple[str, list[tuple[str, str, str]]]:
    conn = sqlite3.connect(f"file:{db}?immutable=1", uri=True)
    try:
        label = conn.execute("SELECT label FROM sources WHERE file_path = ?", (file_path,)).fetchone()[0]
        rows = conn.execute(
            "SELECT c.title, c.content, c.timestamp FROM chunks c JOIN sources s ON s.id = c.source_id "
            "WHERE s.label = ? ORDER BY c.rowid",
            (label,),
        ).fetchall()
    finally:
        conn.close()
    return label, rows


def _logical_content(db: Path) -> list[tuple]:
    """(label, file_path, content_hash, title, content, content_type, session_id, timestamp), sorted."""
    conn = sqlite3.connect(f"file:{db}?immutable=1", uri=True)
    try:
        rows = conn.execute(
            "SELECT s.label, s.file_path, s.content_hash, c.title, c.content, c.content_type, c.session_id, c.timestamp "
            "FROM chunks c JOIN sources s ON s.id = c.source_id"
        ).fetchall()
    finally:
        conn.close()
    return sorted(rows)


class _Clock:
    """``engine.store.indexing.now_iso`` for a refresh: the recorded timestamp of the
    label being re-indexed (so headers show the recorded refresh minute)."""

    def __init__(self, stamps: dict[str, str]):
        self.stamps = stamps
        self.label: str | None = None

    def now(self) -> str:
        assert self.label in self.stamps, f"unexpected re-index of {self.label!r}"
        return self.stamps[self.label]


def _prepare_stale_group(group: str, members: list[dict], tmp: Path, monkeypatch) -> Path:
    project = golden()["project_dir"]
    local = tmp / "project"
    db = tmp / "store.db"
    shutil.copyfile(AGENT_VIEW / PRE_STATE[group], db)
    conn = sqlite3.connect(db)
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")  # our own temp copy: writable by rankscope
    conn.execute("UPDATE sources SET file_path = replace(file_path, ?, ?)", (project, str(local)))
    conn.commit()
    conn.close()
    post = AGENT_VIEW / members[0]["db"]
    stamps: dict[str, str] = {}
    for change in members[0]["files_changed_before_group"]:
        target = local / os.path.relpath(change["path"], project)
        target.parent.mkdir(parents=True, exist_ok=True)
        if change["op"] == "delete":
            continue
        if change["op"] == "touch":
            text = (AGENT_VIEW / "corpus" / os.path.relpath(change["path"], project)).read_text(encoding="utf-8")
        else:
            label, rows = _label_chunks(post, change["path"])
            text = "\n\n".join(r[1] for r in rows) + "\n"
            stamps[label] = rows[0][2]
        assert hashlib.sha256(text.encode("utf-8")).hexdigest() == change["sha256"], change["path"]
        target.write_text(text, encoding="utf-8", newline="")
        os.utime(target, ns=(change["mtime_ns"], change["mtime_ns"]))
    clock = _Clock(stamps)
    original = indexing.index_text

    def index_text(conns, label, *args, **kwargs):
        clock.label = label
        return original(conns, label, *args, **kwargs)

    monkeypatch.setattr(indexing, "index_text", index_text)
    monkeypatch.setattr(indexing, "now_iso", clock.now)
    return db


def _project_state(db: Path, tmp: Path) -> list[tuple]:
    project = golden()["project_dir"]
    return [
        (r[0], None if r[1] is None else r[1].replace(str(tmp / "project"), project)) + r[2:]
        for r in _logical_content(db)
    ]


# ─── the replay (once per test session) ──────────────────────────────────


@pytest.fixture(scope="module")
def replayed(tmp_path_factory) -> dict[str, object]:
    """``call id -> AgentTrace`` for all 61 calls, group by group; plus
    ``"_state:<group>"`` → (our store's content, the recorded state's)."""
    mp = pytest.MonkeyPatch()
    out: dict[str, object] = {}
    try:
        for group, members in _groups().items():
            plugin = group.startswith("P")
            ctx = AgentContext(
                plugin_project=golden()["project_dir"] if plugin else None,
                session_db=str(SESSION_DB) if plugin else None,
                throttle=ThrottleConfig(),
            )
            if group in PRE_STATE:
                tmp = tmp_path_factory.mktemp(group)
                path = _prepare_stale_group(group, members, tmp, mp)
                store = Store.open_writable(path)
            else:
                store = Store.open_readonly(AGENT_VIEW / members[0]["db"])
            with store:
                session = AgentSession(store, ctx)
                for c in members:
                    out[c["id"]] = session.call(c["params"], _ms(c["sent_at"]))
            if group in PRE_STATE:
                out[f"_state:{group}"] = (_project_state(path, tmp), _logical_content(AGENT_VIEW / members[-1]["db"]))
                mp.undo()
    finally:
        mp.undo()
    return out


IDS = [c["id"] for c in calls()]
BY_ID = {c["id"]: c for c in calls()}


def _rows_of_text(trace) -> list[dict]:
    return [
        {"query": q.query, "status": q.status, "rows": [(r.origin, r.time_shown, r.source, r.title) for r in q.results]}
        for q in trace.queries
    ]


def _rows_of_golden(call: dict) -> list[dict]:
    return [
        {
            "query": s["query"],
            "status": s["status"],
            "rows": [(r["origin"], r["time"], r["source"], r["title"]) for r in s["rows"]],
        }
        for s in call["parsed"]["sections"]
    ]


@pytest.mark.parametrize("cid", IDS)
def test_call_text_is_exact(replayed, cid):
    call, trace = BY_ID[cid], replayed[cid]
    assert trace.is_error == call["is_error"]
    assert trace.text == call["text"]
    # byte for byte on the wire (lone surrogates as JSON escapes them)
    assert hashlib.sha256(trace.text.encode("utf-8", "surrogatepass")).hexdigest() == call["text_sha256_utf8"]


@pytest.mark.parametrize("cid", IDS)
def test_call_limit_rows_and_stages(replayed, cid):
    call, trace = BY_ID[cid], replayed[cid]
    assert trace.effective_limit == call.get("effective_limit")
    if call["parsed"] and call["parsed"].get("sections"):
        assert _rows_of_text(trace) == _rows_of_golden(call)
    parsed = call["parsed"] or {}
    if parsed.get("call_count") is not None:
        assert trace.throttle.count == parsed["call_count"]
        assert trace.refresh_count == parsed["refresh_count"]
    executed = [q for q in trace.queries if not q.capped]
    assert len(executed) == len(call["stage"])
    for q, stage in zip(executed, call["stage"]):
        query, limit, source, content_type, mode, allow = stage["searchWithFallback_args"]
        sp = q.search.params
        assert (sp.query, sp.limit, sp.source, sp.content_type, sp.source_match) == (
            query,
            limit,
            source,
            content_type,
            mode,
        )
        assert (None if sp.sessions is None else sorted(sp.sessions)) == (None if allow is None else sorted(allow))
        assert q.refresh_count == stage["last_refresh_count"]
        got = [
            (
                f.candidate.source,
                f.candidate.title,
                f.candidate.content_type,
                f.layer,
                f.candidate.session_id,
                f.candidate.highlighted,
                [s for s, _ in marker_spans(f.candidate.highlighted)],
            )
            for f in q.search.final
        ]
        want = [
            (
                r["source"],
                r["title"],
                r["contentType"],
                r["matchLayer"],
                r["sessionId"],
                r["highlighted"],
                r["marker_positions_utf16"],
            )
            for r in stage["rows"]
        ]
        assert got == want
        for f, r in zip(q.search.final, stage["rows"]):
            assert f.rank == pytest.approx(r["rank"], abs=1e-15)
        if stage.get("session_events_rows") is not None:
            assert [
                {
                    "id": e.id,
                    "session_id": e.session_id,
                    "category": e.category,
                    "type": e.type,
                    "data": e.data,
                    "created_at": e.created_at,
                }
                for e in q.events
            ] == stage["session_events_rows"]


@pytest.mark.parametrize("cid", IDS)
def test_snippet_windows_match_the_recorded_highlight(replayed, cid):
    """Every snippet shown is in the recorded text, and its windows are the
    ones the recorded ``highlighted`` (or the fallback) gives."""
    call, trace = BY_ID[cid], replayed[cid]
    executed = [q for q in trace.queries if not q.capped]
    for q, stage in zip(executed, call["stage"]):
        rows = {(r["source"], r["title"]): r for r in stage["rows"]}
        for r in q.results:
            assert r.snippet.text in call["text"]
            if r.rowid is None:
                continue
            golden_row = rows[(r.source, r.title)]
            content = golden_row["highlighted"].replace("\x02", "").replace("\x03", "")
            assert r.content == content
            assert golden_row["content_len_utf16"] == r.snippet.content_units
            again = extract_snippet(content, stage["query"], golden_row["highlighted"])
            assert (r.snippet.mode, r.snippet.source_of_positions, r.snippet.slices) == (
                again.mode,
                again.source_of_positions,
                again.slices,
            )


@pytest.mark.parametrize("group", sorted(PRE_STATE))
def test_refreshed_store_equals_the_recorded_state(replayed, group):
    ours, recorded = replayed[f"_state:{group}"]
    assert ours == recorded


def test_all_61_calls_match(replayed):
    matched = [
        c["id"] for c in calls() if replayed[c["id"]].text == c["text"] and replayed[c["id"]].is_error == c["is_error"]
    ]
    print(f"\nctx_search parity: {len(matched)}/{len(calls())} calls matched exactly")
    assert len(matched) == len(calls()) == 61


# ─── rules one at a time ─────────────────────────────────────────────────


def test_schema_error_names_the_field():
    with pytest.raises(SchemaError) as err:
        parse_arguments({"queries": ["tombstone"], "contentType": "json"})
    assert "contentType" in str(err.value)
    assert err.value.issues[0].field == "contentType"
    assert err.value.text == BY_ID["c28"]["text"]


@pytest.mark.parametrize(
    "arguments, field",
    [
        ({"queries": 5}, "queries"),
        ({"queries": ["a", 3]}, "queries"),
        ({"queries": "  "}, "queries"),
        ({"queries": ["a"], "limit": "five"}, "limit"),
        ({"queries": ["a"], "limit": {}}, "limit"),
        ({"queries": ["a"], "source": 1}, "source"),
        ({"queries": ["a"], "sort": "newest"}, "sort"),
    ],
)
def test_schema_rejects_with_the_field(arguments, field):
    with pytest.raises(SchemaError) as err:
        parse_arguments(arguments)
    assert err.value.issues[0].field == field
    assert field in str(err.value)


def test_schema_coercions():
    assert parse_arguments({"queries": "x y"}).queries == ("x y",)
    assert parse_arguments({"queries": '["a", "b"]'}).queries == ("a", "b")
    assert parse_arguments({"queries": '{"a": 1}'}).queries == ('{"a": 1}',)
    assert parse_arguments({"queries": ["a"], "limit": "5"}).limit == 5
    assert parse_arguments({"queries": ["a"], "limit": " 0x10 "}).limit == 16
    assert parse_arguments({"queries": ["a"], "limit": None}).limit == 0
    assert parse_arguments({"queries": ["a"]}).limit == 3
    p = parse_arguments({"query": "x", "project": "/p"})
    assert p.queries is None and p.stripped == ("query", "project")
    assert parse_arguments({"queries": ["a"], "project": "global"}, plugin_mode=True).project == "global"


def test_fractional_limit_is_answered_like_the_server():
    """A fraction is no longer refused (it was, with "limit 1.5 makes the
    per-query limit 1.5 …"): slice(0, 1.5) keeps 1 result; the edge calls
    recorded from the server are checked in test_agent_edges.py."""
    with Store.open_readonly(AGENT_VIEW / "store.db") as store:
        trace = ctx_search(store, {"queries": ["relay"], "limit": 1.5})
        assert (trace.per_query_limit, trace.effective_limit) == (1.5, 1)
        assert len(trace.queries[0].results) == 1
        # past the soft cap the limit is 1 whatever was asked
        assert ctx_search(store, {"queries": ["relay"], "limit": 1.5}, call_number=4).effective_limit == 1


@pytest.mark.parametrize(
    "env, expected",
    [
        ({}, (60000, 3, 8)),
        (
            {
                "CONTEXT_MODE_SEARCH_WINDOW_MS": "1000",
                "CONTEXT_MODE_SEARCH_MAX_RESULTS_AFTER": "1",
                "CONTEXT_MODE_SEARCH_BLOCK_AFTER": "2",
            },
            (1000, 1, 2),
        ),
        (
            {
                "CONTEXT_MODE_SEARCH_WINDOW_MS": "",
                "CONTEXT_MODE_SEARCH_MAX_RESULTS_AFTER": "0",
                "CONTEXT_MODE_SEARCH_BLOCK_AFTER": "-3",
            },
            (60000, 3, 8),
        ),
        (
            {
                "CONTEXT_MODE_SEARCH_WINDOW_MS": "abc",
                "CONTEXT_MODE_SEARCH_MAX_RESULTS_AFTER": "Infinity",
                "CONTEXT_MODE_SEARCH_BLOCK_AFTER": " 5 ",
            },
            (60000, 3, 5),
        ),
        ({"CONTEXT_MODE_SEARCH_MAX_RESULTS_AFTER": "2.5", "CONTEXT_MODE_SEARCH_BLOCK_AFTER": "1e1"}, (60000, 2.5, 10)),
    ],
)
def test_throttle_env_like_the_server(env, expected):
    cfg = ThrottleConfig.from_env(env)
    assert (cfg.window_ms, cfg.soft_after, cfg.block_after) == expected


def test_throttle_env_changes_the_answer():
    cfg = ThrottleConfig.from_env(
        {"CONTEXT_MODE_SEARCH_MAX_RESULTS_AFTER": "1", "CONTEXT_MODE_SEARCH_BLOCK_AFTER": "2"}
    )
    with Store.open_readonly(AGENT_VIEW / "store.db") as store:
        ctx = AgentContext(throttle=cfg)
        first = ctx_search(store, {"queries": ["relay"]}, ctx, call_number=1)
        second = ctx_search(store, {"queries": ["relay"]}, ctx, call_number=2)
        third = ctx_search(store, {"queries": ["relay"]}, ctx, call_number=3)
    assert first.effective_limit == 2 and "⚠ search call #1/2" in first.text
    assert second.effective_limit == 1 and "0 call(s) remaining before block" in second.text
    assert third.is_error and third.text.startswith("BLOCKED: 3 search calls in 0s.")


def test_lone_surrogates_come_from_utf16_cuts():
    call = BY_ID["c11"]
    assert call["text_has_lone_surrogates"]
    with Store.open_readonly(AGENT_VIEW / "store.db") as store:
        trace = ctx_search(store, call["params"])
    assert trace.text == call["text"]
    lone = [ch for ch in trace.text if "\ud800" <= ch <= "\udfff"]
    assert lone


def test_snippet_of_a_title_only_match_is_the_prefix():
    """c07: the second row matched 'quillon' only through its parent heading:
    no marker, no indexOf hit, so the agent sees the first 1500 units."""
    with Store.open_readonly(AGENT_VIEW / "store.db") as store:
        trace = ctx_search(store, BY_ID["c07"]["params"], call_number=3)
    second = trace.queries[0].results[1]
    assert second.no_match_in_text and second.snippet.text.endswith("\n…")
    assert second.snippet.fallback_ran and second.snippet.source_of_positions == "none"


def test_budget_cut_hides_highlighted_matches():
    """c03: twelve highlight positions; the 1500-unit budget cuts the third
    window, so matches exist that the agent never saw."""
    with Store.open_readonly(AGENT_VIEW / "store.db") as store:
        trace = ctx_search(store, BY_ID["c03"]["params"], call_number=3)
    top = trace.queries[0].results[0]
    assert top.snippet.source_of_positions == "highlight"
    assert top.matched_outside_snippet
    assert all(not any(a <= s and e <= b for a, b in top.snippet.slices) for s, e in top.snippet.unseen_matches)


def test_read_only_store_simulates_the_refresh(tmp_path, monkeypatch):
    """On a read-only store nothing is re-indexed: the refresh line is
    simulated (s01: 1 source; s04: the count is reset by later queries, so
    no line), the trace says so, and the rows are the old content."""
    members = _groups()["S01"]
    db = _prepare_stale_group("S01", members, tmp_path, monkeypatch)
    before = db.read_bytes()
    with Store.open_readonly(db) as store:
        trace = ctx_search(store, members[0]["params"])
        assert trace.refresh_simulated and trace.refresh_count == 1
        assert trace.text.startswith("> Auto-refreshed 1 stale source (file changed since indexing).\n\n")
        assert any("read-only store" in n for n in trace.notes)
        assert trace.text != members[0]["text"]  # old rows: the agent would have seen the new note
        again = ctx_search(store, {"queries": ["mooring", "checklist"]})
        assert [q.refresh_count for q in again.queries] == [1, 0] and again.refresh_line == ""
    assert db.read_bytes() == before


def test_readme_example_returned_chunk_whose_passage_was_never_shown():
    """README's worked example: 'upgrading in place' returns the CRLF
    Windows guide first, but the windows around 'in' spend the budget and the
    'Upgrading in place' heading (units 3899-3917) is never sent."""
    with Store.open_readonly(AGENT_VIEW / "store.db") as store:
        trace = ctx_search(store, {"queries": ["upgrading in place"]})
    q = trace.queries[0]
    assert q.search.first.porter.query == '"upgrading" OR "in" OR "place"'
    top = q.results[0]
    assert (top.source, top.title, top.snippet.content_units) == ("win-setup", "Untitled", 4751)
    assert top.snippet.slices == ((0, 692), (801, 1609))
    assert top.snippet.windows == ((0, 692), (801, 2107), (2786, 3386), (3599, 4212), (4248, 4751))
    assert top.snippet.unseen_matches == (
        (1775, 1777),
        (1807, 1809),
        (3086, 3088),
        (3899, 3908),
        (3909, 3911),
        (3912, 3917),
        (4548, 4550),
    )
    assert "Upgrading in place" in top.content and "Upgrading in place" not in trace.text
    assert q.section in BY_ID["c10"]["text"]


def test_session_db_allow_set_and_event_search():
    from engine.agent import SessionDb

    before = SESSION_DB.read_bytes()
    with SessionDb(SESSION_DB) as db:
        three = db.session_ids_for_project("/tmp/agentview/public/project")
        assert len(three) == 3
        assert db.session_ids_for_project("/tmp/agentview/public/project/") == three
        assert db.session_ids_for_project("\\tmp\\agentview\\public\\project") == three
        assert db.session_ids_for_project("/tmp/agentview/elsewhere") == ()
        assert db.counts() == {"sessions": 3, "events": 75, "ctx_search_calls": 13}
        # LIKE with % and _ escaped (not matching everything), ordered by id, limited
        assert db.search_events("100%", 5, "/tmp/agentview/public/project") == []
        rows = db.search_events("backpressure", 2, "/tmp/agentview/public/project")
        assert [r.id for r in rows] == [1, 3]
        assert [r.id for r in db.search_events("backpressure", 9, "/tmp/agentview/public/project", before_id=3)] == [1]
        assert (
            db.search_events("retrieval", 9, "/tmp/agentview/public/project", source="retrieval")[0].category
            == "retrieval"
        )
        assert db.search_events("unknown", 9, None) == [r for r in db.search_events("unknown", 9, "")]
        calls = db.ctx_search_calls()
        assert [c.event_id for c in calls][:3] == [4, 10, 15] and all(c.answer for c in calls)
        assert calls[5].params == {"queries": "heartbeat interval"}
    assert SESSION_DB.read_bytes() == before
