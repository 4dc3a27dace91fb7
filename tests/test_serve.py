"""``rankscope serve`` is a safe web demo (issue 13, item 6).

Before: the websocket was accepted from any Origin (a page on another site
could drive the TUI and read the screen), and ``--host 0.0.0.0`` served an
unauthenticated session to the network without a word. Now the Origin (and,
on loopback, the Host) is checked, binding beyond loopback needs
``--public`` and prints a warning, and such a session needs a token.

The server is exercised in process with aiohttp's test client; the session
behind an accepted websocket is a stand-in (no process is started).
"""

from __future__ import annotations

import shlex
import sys

import aiohttp
import pytest
from aiohttp import WSServerHandshakeError
from aiohttp.test_utils import TestClient, TestServer

import tui.cli.base
import tui.cli.webserve
from tui.cli import main
from tui.cli.webserve import SessionProcess as RealSessionProcess
from tui.cli.webserve import TOKEN_COOKIE, GuardedServer, host_name, is_loopback, same_origin

QUICK_EXIT = f"{sys.executable} -c pass"


class FakeAppService:
    """Stands in for a session's process (:class:`tui.cli.webserve.SessionProcess`):
    records that a session started (its command and environment), runs nothing."""

    started: list = []
    environments: list = []
    stopped: int = 0

    def __init__(self, argv, *, extra_env=None, **kwargs):
        self.command = shlex.join(argv)
        self.extra_env = extra_env or {}

    async def start(self, width, height):
        FakeAppService.started.append(self.command)
        FakeAppService.environments.append(self.extra_env)

    async def stop(self):
        FakeAppService.stopped += 1

    async def send_bytes(self, data):
        pass

    async def set_terminal_size(self, width, height):
        pass

    async def blur(self):
        pass

    async def focus(self):
        pass


@pytest.fixture(autouse=True)
def no_sessions(monkeypatch):
    FakeAppService.started = []
    FakeAppService.environments = []
    FakeAppService.stopped = 0
    monkeypatch.setattr(tui.cli.webserve, "SessionProcess", FakeAppService)


@pytest.fixture
def served(monkeypatch):
    """Record what ``rankscope serve`` would start instead of serving."""
    calls: dict = {}

    def fake_serve(self):
        calls["server"] = self

    monkeypatch.setattr(tui.cli.webserve.GuardedServer, "serve", fake_serve)
    return calls


async def _client(server: GuardedServer) -> TestClient:
    client = TestClient(TestServer(await server._make_app()))
    await client.start_server()
    return client


# ── binding beyond loopback ──────────────────────────────────────────────


def test_non_loopback_host_needs_public(served, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["serve", "--host", "0.0.0.0", "--port", "8124"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("rankscope: error: --host 0.0.0.0 serves beyond this machine") and "--public" in err
    assert err.count("\n") == 1 and "server" not in served


def test_public_warns_and_requires_a_token(served, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["serve", "--host", "0.0.0.0", "--port", "8125", "--public"])
    assert exc.value.code == 0
    server = served["server"]
    err = capsys.readouterr().err
    assert "rankscope: warning: serving to the network on 0.0.0.0:8125" in err
    assert server.token and len(server.token) >= 32 and f"?token={server.token}" in err
    assert server.allowed_hosts is None


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1"])
def test_loopback_needs_no_flag_and_no_token(served, capsys, host):
    if not is_loopback(host):
        pytest.skip(f"{host} does not resolve to loopback here")
    try:
        main(["serve", "--host", host, "--port", "8126"])
    except SystemExit as exc:
        if exc.code == 2 and "cannot serve" in capsys.readouterr().err:
            pytest.skip(f"cannot bind {host} here")
        assert exc.code == 0
    server = served["server"]
    assert server.token is None and host.lower() in server.allowed_hosts
    assert "warning" not in capsys.readouterr().err


def test_helpers():
    assert is_loopback("127.0.0.1") and is_loopback("127.1.2.3") and not is_loopback("0.0.0.0")
    assert not is_loopback("no-such-host.invalid")
    assert host_name("[::1]:8000") == "::1" and host_name("LocalHost:80") == "localhost"
    assert same_origin("http://127.0.0.1:8000", "127.0.0.1:8000")
    assert same_origin("http://example.com", "example.com:80")
    assert not same_origin("http://evil.example:8000", "127.0.0.1:8000")
    assert not same_origin("http://127.0.0.1:9000", "127.0.0.1:8000")
    assert not same_origin(None, "127.0.0.1:8000") and not same_origin("null", "127.0.0.1:8000")
    assert not same_origin("file://", "127.0.0.1:8000")


# ── the Origin and Host checks (loopback) ────────────────────────────────


async def test_websocket_from_another_origin_is_refused():
    client = await _client(GuardedServer(QUICK_EXIT, allowed_hosts=["127.0.0.1", "localhost", "::1"]))
    try:
        here = f"http://{client.host}:{client.port}"
        for origin in ("http://evil.example", "http://evil.example:%d" % client.port, None):
            headers = {"Origin": origin} if origin else {}
            with pytest.raises(WSServerHandshakeError) as exc:
                await client.ws_connect("/ws", headers=headers)
            assert exc.value.status == 403
        assert FakeAppService.started == []  # no session for a refused socket
        ws = await client.ws_connect("/ws", headers={"Origin": here})  # the page's own origin: accepted
        await ws.close()
        assert FakeAppService.started == [QUICK_EXIT]
    finally:
        await client.close()


async def test_dns_rebinding_host_is_refused():
    client = await _client(GuardedServer(QUICK_EXIT, allowed_hosts=["127.0.0.1", "localhost", "::1"]))
    try:
        r = await client.get("/", headers={"Host": f"evil.example:{client.port}"})
        assert r.status == 403 and "not this machine's loopback" in await r.text()
        # the rebinding page's own origin matches its Host: still refused
        with pytest.raises(WSServerHandshakeError) as exc:
            await client.ws_connect(
                "/ws", headers={"Host": f"evil.example:{client.port}", "Origin": f"http://evil.example:{client.port}"}
            )
        assert exc.value.status == 403
        r = await client.get("/")
        assert r.status == 200
        page = await r.text()
        assert f'data-session-websocket-url="ws://{client.host}:{client.port}/ws"' in page
    finally:
        await client.close()


# ── the token (beyond loopback) ──────────────────────────────────────────


async def test_token_is_required_then_kept_in_a_cookie():
    client = await _client(GuardedServer(QUICK_EXIT, token="s3cret-token"))
    try:
        here = f"http://{client.host}:{client.port}"
        for url in ("/", "/?token=wrong", "/static/js/textual.js"):
            r = await client.get(url)
            assert r.status == 403, url
        with pytest.raises(WSServerHandshakeError) as exc:
            await client.ws_connect("/ws", headers={"Origin": here})
        assert exc.value.status == 403
        r = await client.get("/?token=s3cret-token")
        assert r.status == 200
        cookie = r.cookies[TOKEN_COOKIE]
        assert cookie.value == "s3cret-token" and cookie["httponly"] and cookie["samesite"] == "Strict"
        # the cookie jar now carries it: static files and the websocket work
        assert (await client.get("/static/js/textual.js")).status == 200
        with pytest.raises(WSServerHandshakeError):
            await client.ws_connect("/ws", headers={"Origin": "http://evil.example"})
        ws = await client.ws_connect("/ws", headers={"Origin": here})
        await ws.close()
        assert len(FakeAppService.started) == 1
    finally:
        await client.close()


# ── bounded sessions (issue 26 class 9, issue 24 item 2) ─────────────────


async def _until(condition, timeout: float = 10.0) -> None:
    """Wait (polling the event loop) until ``condition()`` holds."""
    import asyncio

    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        assert loop.time() < deadline, "condition not met in time"
        await asyncio.sleep(0.01)


async def test_sessions_past_the_cap_get_a_page_saying_why():
    server = GuardedServer(QUICK_EXIT, allowed_hosts=["127.0.0.1", "localhost", "::1"], max_sessions=2)
    client = await _client(server)
    try:
        here = {"Origin": f"http://{client.host}:{client.port}"}
        first = await client.ws_connect("/ws", headers=here)
        second = await client.ws_connect("/ws", headers=here)
        await _until(lambda: len(FakeAppService.started) == 2)
        r = await client.get("/")
        page = await r.text()
        assert r.status == 503 and r.headers["Retry-After"] == "60"
        assert "All 2 sessions of this rankscope server are in use" in page and "--max-sessions 2" in page
        with pytest.raises(WSServerHandshakeError) as exc:
            await client.ws_connect("/ws", headers=here)
        assert exc.value.status == 503
        assert len(FakeAppService.started) == 2  # no third process
        await first.close()
        await _until(lambda: len(server.sessions) == 1)  # a visitor left: the slot is free again
        assert FakeAppService.stopped >= 1
        assert (await client.get("/")).status == 200
        third = await client.ws_connect("/ws", headers=here)
        await _until(lambda: len(FakeAppService.started) == 3)
        await third.close()
        await second.close()
        await _until(lambda: not server.sessions)
    finally:
        await client.close()


async def test_static_files_are_served_but_never_listed():
    client = await _client(GuardedServer(QUICK_EXIT, allowed_hosts=["127.0.0.1", "localhost", "::1"]))
    try:
        for folder in ("/static/", "/static/js/", "/static/css/"):
            r = await client.get(folder)
            assert r.status in (403, 404), folder
            assert "textual.js" not in await r.text()
        assert (await client.get("/static/js/textual.js")).status == 200
    finally:
        await client.close()


async def test_demo_sessions_get_a_visitor_folder_removed_when_they_leave(tmp_path, monkeypatch):
    import stat
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    server = GuardedServer(QUICK_EXIT, allowed_hosts=["127.0.0.1", "localhost", "::1"], visitor_folders=True)
    client = await _client(server)
    try:
        ws = await client.ws_connect("/ws", headers={"Origin": f"http://{client.host}:{client.port}"})
        await _until(lambda: len(FakeAppService.started) == 1)
        folder = tui.cli.webserve.Path(FakeAppService.environments[0]["RANKSCOPE_VISITOR_DIR"])
        assert folder.parent == tmp_path and folder.name.startswith("rankscope-visitor-")
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
        (folder / "data").mkdir()
        (folder / "data" / "qrels.json").write_text("{}")
        await ws.close()
        await _until(lambda: not server.sessions)
        assert list(tmp_path.iterdir()) == []
    finally:
        await client.close()


async def test_an_idle_session_is_closed_by_the_server(monkeypatch):
    monkeypatch.setattr(tui.cli.webserve, "IDLE_GRACE_S", 0.0)
    server = GuardedServer(QUICK_EXIT, allowed_hosts=["127.0.0.1", "localhost", "::1"], idle_timeout=0.3)
    client = await _client(server)
    try:
        ws = await client.ws_connect("/ws", headers={"Origin": f"http://{client.host}:{client.port}"})
        await ws.send_json(["stdin", "q"])  # a key: the clock starts again
        message = await ws.receive(timeout=10)
        assert message.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.CLOSING)
        await _until(lambda: not server.sessions)
    finally:
        await client.close()


async def test_a_session_process_that_ignores_quit_is_killed_with_its_group(monkeypatch, tmp_path):
    """The session's process (and anything it started) is gone after stop(),
    even when it ignores the quit request and SIGTERM."""
    import asyncio
    import os

    from textual_serve.download_manager import DownloadManager

    monkeypatch.setattr(tui.cli.webserve, "STOP_TIMEOUT_S", 0.5)
    script = (
        "import signal, subprocess, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
        "print(child.pid, flush=True); time.sleep(60)"
    )

    async def write_bytes(data: bytes) -> None:
        pass

    async def write_str(text: str) -> None:
        pass

    async def close() -> None:
        pass

    process = RealSessionProcess(
        [sys.executable, "-c", script],
        write_bytes=write_bytes,
        write_str=write_str,
        close=close,
        download_manager=DownloadManager(),
    )
    await process._open_app_process(80, 24)
    assert process._process is not None and process._process.stdout is not None
    line = await asyncio.wait_for(process._process.stdout.readline(), 10)
    pids = [process.pid, int(line)]
    assert os.getpgid(pids[1]) == pids[0]  # the child is in the session's group
    process._task = asyncio.create_task(asyncio.sleep(60))  # as start() does: a task that never ends
    await asyncio.wait_for(process.stop(), 10)
    assert process._process.returncode is not None

    def gone(pid: int) -> bool:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        with open(f"/proc/{pid}/stat") as f:  # a zombie awaiting its parent counts as gone
            return f.read().split()[2] == "Z"

    await _until(lambda: all(gone(p) for p in pids))


# ── serve's options ──────────────────────────────────────────────────────


def test_serve_states_its_limits_and_passes_them_on(served, capsys, tmp_path):
    store = tmp_path / "store.db"
    store.write_bytes(b"")
    with pytest.raises(SystemExit) as exc:
        main(["serve", "--host", "0.0.0.0", "--port", "8127", "--public", "--demo", "--max-sessions", "2"])
    assert exc.value.code == 0
    server = served["server"]
    err = capsys.readouterr().err
    assert "at most 2 sessions at once" in err and "a session idle for 900 s is closed" in err and "demo:" in err
    assert server.max_sessions == 2 and server.idle_timeout == 900 and server.visitor_folders
    assert server.argv[1:] == ["-m", "tui.cli", "--demo", "--idle-timeout", "900"]
    with pytest.raises(SystemExit) as exc:
        main(["serve", "--port", "8128", "--path", str(store), "--idle-timeout", "30"])
    server = served["server"]
    assert server.argv[1:] == ["-m", "tui.cli", str(store.resolve()), "--idle-timeout", "30"]
    assert server.max_sessions == tui.cli.base.DEFAULT_MAX_SESSIONS and not server.visitor_folders
    assert "at most 8 sessions at once" in capsys.readouterr().err


def test_loopback_serve_has_a_cap_and_no_idle_timeout_by_default(served, capsys):
    with pytest.raises(SystemExit):
        main(["serve", "--port", "8129"])
    server = served["server"]
    assert server.max_sessions == tui.cli.base.DEFAULT_MAX_SESSIONS and server.idle_timeout is None
    assert "idle sessions stay open" in capsys.readouterr().err


@pytest.mark.parametrize(
    "args, message",
    [
        (["--max-sessions", "0"], "--max-sessions takes 1 to 1000; got 0"),
        (["--max-sessions", "5000"], "--max-sessions takes 1 to 1000; got 5000"),
        (["--idle-timeout", "soon"], "--idle-timeout takes seconds"),
        (["--idle-timeout", "-5"], "--idle-timeout takes seconds"),
        (["--idle-timeout", "1e400"], "--idle-timeout takes seconds"),
    ],
)
def test_bad_limits_are_one_line_errors(served, capsys, args, message):
    with pytest.raises(SystemExit) as exc:
        main(["serve", "--port", "8130", *args])
    assert exc.value.code == 2 and "server" not in served
    err = capsys.readouterr().err
    assert err.startswith("rankscope: error: ") and message in err and err.count("\n") == 1
