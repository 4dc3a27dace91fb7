"""``rankscope serve --demo --public --max-sessions 2``, for real (issue 24,
item 2; issue 26, class 9): the server and its sessions run as processes,
driven at textual-serve's websocket protocol as the page drives them.

Two visitors get a session each (one process each); a third gets a page
saying why not; an F6 export reaches the visitor as a download; when the
visitors leave, their processes and temporary folders are gone and the
store is untouched.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import aiohttp
import pytest

#: The repository.
ROOT = Path(__file__).resolve().parents[1]

#: The store the sessions show (small, read-only).
STORE = ROOT / "tests" / "golden" / "agent-view" / "store.db"
#: The longest a step waits (a busy machine starts Textual slowly).
STEP_TIMEOUT = 60.0
#: F6 (export the trace) as a terminal sends it.
F6 = "\x1b[17~"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def listening(port: int) -> bool:
    """Something accepts connections on ``127.0.0.1:port``."""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


def children(pid: int) -> list[int]:
    """The child processes of ``pid`` (Linux: ``/proc``)."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except FileNotFoundError:  # a thread that ended since the listing: it has no children
            continue
    return found


async def wait_until(condition, timeout: float = STEP_TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.1)


@pytest.fixture
def demo_server(tmp_path):
    """``rankscope serve --demo --public --max-sessions 2`` on a free port,
    its temporary folder ``tmp_path / "tmp"``; yields (process, base URL,
    token, that folder); stopped (SIGINT) at the end."""
    if not Path("/proc/self/task").is_dir():
        pytest.skip("needs Linux's /proc to see the sessions' processes")
    temp = tmp_path / "tmp"
    temp.mkdir()
    store = tmp_path / "store" / "store.db"
    store.parent.mkdir()
    store.write_bytes(STORE.read_bytes())
    port = free_port()
    log = tmp_path / "serve.log"
    env = dict(os.environ, TMPDIR=str(temp), PYTHONPATH=str(ROOT))
    command = [sys.executable, "-m", "tui.cli", "serve", "--demo", "--public", "--host", "0.0.0.0"]
    command += ["--port", str(port), "--max-sessions", "2", "--path", str(store)]
    with open(log, "wb") as out:
        server = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=tmp_path)
    try:
        deadline = time.monotonic() + STEP_TIMEOUT
        while not (match := re.search(r"\?token=([A-Za-z0-9_-]+)", log.read_text())):
            assert server.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        while not listening(port):  # the URL is printed before the server binds its port
            assert server.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        yield server, f"http://127.0.0.1:{port}", match.group(1), temp, store, log
    finally:
        if server.poll() is None:
            server.send_signal(signal.SIGINT)
            try:
                server.wait(30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()


async def export_download(ws: aiohttp.ClientWebSocketResponse) -> str:
    """Type a query, press F6 until the page is told of a download; its key."""
    painted = b""
    typed = False
    last_f6 = 0.0
    deadline = time.monotonic() + STEP_TIMEOUT
    while time.monotonic() < deadline:
        try:
            message = await ws.receive(timeout=0.5)
        except asyncio.TimeoutError:
            message = None
        if message is not None:
            if message.type == aiohttp.WSMsgType.BINARY:
                painted += message.data
            elif message.type == aiohttp.WSMsgType.TEXT:
                envelope = json.loads(message.data)
                if envelope[0] == "deliver_file_start":
                    return str(envelope[1])
            else:
                raise AssertionError(f"the session ended: {message.type}")
        if not typed and len(painted) > 1000:  # the browser has painted
            await ws.send_json(["stdin", "quorum"])
            typed = True
        if typed and time.monotonic() - last_f6 > 2:  # before the trace is there, F6 only warns
            await ws.send_json(["stdin", F6])
            last_f6 = time.monotonic()
    raise AssertionError("no download offered")


async def test_public_demo_caps_visitors_delivers_exports_and_leaves_nothing(demo_server):
    server, base, token, temp, store, log = demo_server
    store_before = sorted(p.name for p in store.parent.iterdir()), store.stat().st_mtime_ns
    origin = {"Origin": base}
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:  # cookies of an IP
        page = await http.get(f"{base}/?token={token}")  # keeps the token in a cookie
        assert page.status == 200
        first = await http.ws_connect(f"{base.replace('http', 'ws')}/ws?width=80&height=24", headers=origin)
        second = await http.ws_connect(f"{base.replace('http', 'ws')}/ws?width=80&height=24", headers=origin)

        # a third visitor: a page that says why, and no session
        busy = await http.get(f"{base}/")
        text = await busy.text()
        assert busy.status == 503, text
        assert "All 2 sessions of this rankscope server are in use" in text and "--max-sessions 2" in text
        with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
            await http.ws_connect(f"{base.replace('http', 'ws')}/ws", headers=origin)
        assert refused.value.status == 503

        # one process per session (issue 26: no shell in between), each with its folder
        await wait_until(lambda: len(children(server.pid)) == 2)
        await wait_until(lambda: len(list(temp.glob("rankscope-visitor-*"))) == 2)

        # F6 in a web page: a download in the visitor's browser
        key = await export_download(first)
        download = await http.get(f"{base}/download/{key}")
        assert download.status == 200
        assert re.fullmatch(
            r"attachment; filename=rankscope-trace-quorum-\d{8}-\d{6}\.json", download.headers["Content-Disposition"]
        )
        trace = json.loads(await download.read())
        assert trace["query"] == "quorum" and trace["schema_version"] >= 1

        await first.close()
        await second.close()

    # the visitors left: no process, no folder, the store untouched
    await wait_until(lambda: not children(server.pid))
    await wait_until(lambda: not list(temp.iterdir()))
    assert (sorted(p.name for p in store.parent.iterdir()), store.stat().st_mtime_ns) == store_before
    assert not list(store.parent.parent.glob("rankscope-trace-*")) and server.poll() is None
    assert "Traceback" not in log.read_text()
