"""Every ``limit`` the server accepts, exactly: the edge calls recorded from
the real context-mode 1.0.169 server (``tests/golden/agent-view/edges``,
recorded by ``tests/tools/record_agent_edges.py``).

Fractions, negatives, zero and ``-0``, ±Infinity (``1e400``, a 400-digit
integer, ``"0x"`` + 300 ``f``), numeric strings and other JSON values that
``z.coerce.number()`` turns into numbers, strings it turns into NaN (the
server's schema error), the footer's ``String()`` of the effective limit,
the allow-set pool of plugin mode, timeline mode's SQLite ``LIMIT`` of the
session events, and throttle variables at their edges. Each group ran in
one fresh server process; here in one :class:`AgentSession`-like run with
the calls numbered as the server counted them (schema errors uncounted).
"""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache

import pytest

from engine import Store
from engine.agent import AgentContext, ThrottleConfig, ctx_search
from engine.agent.jsvalue import js_json_parse

from ..conftest import AGENT_VIEW, SESSION_DB

EDGES = AGENT_VIEW / "edges" / "calls.json"


@lru_cache(maxsize=None)
def golden() -> dict:
    with open(EDGES, encoding="utf-8") as fh:
        return json.load(fh)


@lru_cache(maxsize=None)
def replayed() -> dict[str, object]:
    out: dict[str, object] = {}
    counted: dict[str, int] = {}
    for c in golden()["calls"]:
        proc = c["server_process"]
        ctx = AgentContext(
            plugin_project=golden()["project_dir"] if proc["plugin_mode"] else None,
            session_db=str(SESSION_DB) if proc["plugin_mode"] else None,
            throttle=ThrottleConfig.from_env(proc["env"]),
        )
        with Store.open_readonly(AGENT_VIEW / c["db"]) as store:
            trace = ctx_search(
                store, js_json_parse(c["arguments_json"]), ctx, call_number=counted.get(c["group"], 0) + 1
            )
        if trace.counted:
            counted[c["group"]] = counted.get(c["group"], 0) + 1
        out[c["id"]] = trace
    return out


CALLS = golden()["calls"]


def test_recorded_from_the_real_server():
    made = golden()["made_with"]
    assert made["context-mode"] == "1.0.169" and made["node"].startswith("v22.")
    assert len(CALLS) >= 50


@pytest.mark.parametrize("call", CALLS, ids=[c["id"] for c in CALLS])
def test_edge_call_is_exact(call):
    trace = replayed()[call["id"]]
    assert trace.is_error == call["is_error"]
    assert trace.text == call["text"], call["note"]
    assert hashlib.sha256(trace.text.encode("utf-8", "surrogatepass")).hexdigest() == call["text_sha256_utf8"]
