"""What the agent should have asked (``ctx-search --why``, ``why --agent``)
and the waste in what it was delivered (``ctx-search --json``'s ``waste``).

Each advice test re-runs the call with the change the advice names and
proves the chunk is then delivered where the advice says (query, position,
line and UTF-16 offset of its header in the answer)."""

from __future__ import annotations

import json

import pytest

from engine import Store
from engine.agent import AgentContext, ctx_search
from engine.agent.advice import should_have_asked
from engine.agent.waste import waste
from engine.js.strings import utf16_len
from tui.cli import main

from ..conftest import AGENT_VIEW, PLUGIN_SEARCH, PLUGIN_STORE, SESSION_DB

STORE = AGENT_VIEW / "store.db"
PROJECT = "/tmp/agentview/public/project"
PLUGIN = AgentContext(plugin_project=PROJECT, session_db=str(SESSION_DB))


def _rowid(store: Store, label: str, title_part: str) -> int:
    row = store.conn.execute(
        "SELECT c.rowid FROM chunks c JOIN sources s ON s.id = c.source_id WHERE s.label = ? AND c.title LIKE ?",
        (label, f"%{title_part}%"),
    ).fetchone()
    return int(row[0])


def _prove(store: Store, advice, rowid: int) -> None:
    """Re-run the call with the named change: the chunk is delivered where the advice says."""
    ch = advice.change
    trace = ctx_search(store, ch.arguments, ch.context, call_number=ch.call_number)
    d = advice.delivery
    q = trace.queries[d.query_position - 1]
    assert q.query == d.query and q.results[d.position - 1].rowid == rowid
    header = q.results[d.position - 1].text.split("\n", 1)[0]
    assert trace.text.split("\n")[d.line - 1] == header
    assert utf16_len(trace.text) >= d.offset
    assert (
        trace.text.encode("utf-16-le", "surrogatepass")[2 * d.offset :]
        .decode("utf-16-le", "surrogatepass")
        .startswith(header)
    )


@pytest.mark.parametrize(
    "arguments, call_number, kind, words",
    [
        # p02: another project's scope hides the session-attributed chunk (context-mode #827/#835)
        (
            {"queries": ["halyard message", "failover review"], "project": "/tmp/agentview/elsewhere"},
            1,
            "project",
            'project: "global"',
        ),
        # late in the throttle window: 1 result per query
        ({"queries": ["halyard message"]}, 5, "array-form", "call #1 of the window, not #5"),
        # a source filter that excludes it
        ({"queries": ["halyard message"], "source": "ops"}, 1, "source", "no source"),
        # limit 1
        ({"queries": ["halyard message"], "limit": 1}, 1, "limit", "limit: 2"),
    ],
)
def test_the_named_change_delivers_the_chunk(arguments, call_number, kind, words):
    with Store.open_readonly(PLUGIN_STORE) as store:
        rowid = _rowid(store, "faq-s1", "halyard")
        before = ctx_search(store, arguments, PLUGIN, call_number=call_number)
        assert all(r.rowid != rowid for q in before.queries for r in q.results)
        advice = should_have_asked(store, arguments, PLUGIN, rowid=rowid, call_number=call_number)
        assert advice.outcome == "change" and advice.change.kind == kind and words in advice.change.words
        _prove(store, advice, rowid)


def test_a_query_with_one_word_added():
    with Store.open_readonly(STORE) as store:
        rowid = _rowid(store, "corvid-guide", "")  # the guide's title chunk
        advice = should_have_asked(store, {"queries": ["backpressure stall"]}, rowid=rowid)
        assert advice.outcome == "change" and advice.change.kind == "add-word"
        assert advice.change.arguments["queries"] == ["backpressure stall Operator"]
        assert [ok for _, ok in advice.tried][-1] is True and not any(ok for _, ok in advice.tried[:-1])
        _prove(store, advice, rowid)


def test_no_change_names_the_stage_that_drops_it():
    with Store.open_readonly(STORE) as store:
        rowid = _rowid(store, "corvid-guide", "Liveness probes")
        advice = should_have_asked(store, {"queries": ["halyard message"]}, rowid=rowid)
    assert advice.outcome == "no-change" and advice.change is None and advice.tried
    assert advice.dropped_by is not None and advice.dropped_by.stage == "retrieve"
    assert "no change to the call returns it; the pipeline's retrieve stage drops it" in advice.sentence()


def test_delivered_already_says_where():
    with Store.open_readonly(STORE) as store:
        rowid = _rowid(store, "corvid-guide", "Flow control")
        advice = should_have_asked(store, {"queries": ["relay queue stall"]}, rowid=rowid)
    assert advice.outcome == "delivered" and advice.delivery.position == 1 and advice.delivery.line == 3


def test_cli_why_gives_the_change_as_data(capsys):
    args = [
        *PLUGIN_SEARCH,
        "--params-json",
        '{"queries": ["halyard message", "failover review"], "project": "/tmp/agentview/elsewhere"}',
    ]
    with pytest.raises(SystemExit):
        main([*args, "--why", "faq-s1::Frequently asked questions > What is a halyard message?", "--json"])
    [advice] = json.loads(capsys.readouterr().out)["advice"]
    assert advice["outcome"] == "change" and advice["change"]["arguments"]["project"] == "global"
    # re-run the changed call through the CLI: the chunk's header is on the line named
    with pytest.raises(SystemExit):
        main([*args[:-1], json.dumps(advice["change"]["arguments"])])
    text = capsys.readouterr().out
    assert (
        text.split("\n")[advice["delivered_at"]["line"] - 1] == "--- [current-session | 2026-12-01 02:51 | faq-s1] ---"
    )


def test_cli_why_agent(capsys):
    with pytest.raises(SystemExit):
        main(["why", "backpressure stall", "--db", str(STORE), "--rowid", "1", "--agent"])
    out = capsys.readouterr().out
    assert 'query 1 with "Operator" added: "backpressure stall Operator" would deliver it' in out


# ─── waste ───────────────────────────────────────────────────────────────


def test_waste_repeats_and_cap_share():
    with Store.open_readonly(STORE) as store:
        t = ctx_search(store, {"queries": ["quillon failover", "election timers"]})
        w = waste(t)
        [rep] = w.repeats
        assert rep.deliveries == ((1, 2), (2, 1)) and "Election timers" in rep.title
        block = t.queries[1].results[0].text
        assert rep.repeated_units == utf16_len(block) and rep.repeated_bytes == len(block.encode("utf-8"))
        assert w.cap_units_used == sum(q.block_units for q in t.queries) and w.cap_units == 40960
        capped = ctx_search(store, {"queries": ["amberjack", "bluefin", "cobia", "dorado", "escolar", "flounder"]})
        assert waste(capped).cap_share > 1 and waste(capped).queries_capped == 1


def test_waste_a_snippet_that_shows_none_of_the_matches():
    """A fuzzy row whose Porter match is in the title only: the snippet is the
    prefix, the trigram's match of the corrected query lies beyond it."""
    store = Store.create(":memory:")
    filler = " ".join(["lorem ipsum dolor"] * 120)
    store.index_text("q.md", f"# Quorum\nintro text\n## Details\n{filler} the writequorum setting\n", "markdown")
    t = ctx_search(store, {"queries": ["quorom"]})
    assert [(r.title, r.snippet.mode) for r in t.queries[0].results] == [
        ("Quorum", "whole"),
        ("Quorum > Details", "prefix"),
    ]
    assert waste(t).matches_outside == ((1, 2, 2),)
    store.close()
