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

import sys

import pytest
from aiohttp import WSServerHandshakeError
from aiohttp.test_utils import TestClient, TestServer

import tui.cli.webserve
from tui.cli import main
from tui.cli.webserve import TOKEN_COOKIE, GuardedServer, host_name, is_loopback, same_origin

QUICK_EXIT = f"{sys.executable} -c pass"


class FakeAppService:
    """Stands in for textual-serve's AppService: records that a session
    started, runs nothing."""

    started: list = []

    def __init__(self, command, **kwargs):
        self.command = command

    async def start(self, width, height):
        FakeAppService.started.append(self.command)

    async def stop(self):
        pass


@pytest.fixture(autouse=True)
def no_sessions(monkeypatch):
    import textual_serve.server

    FakeAppService.started = []
    monkeypatch.setattr(textual_serve.server, "AppService", FakeAppService)


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
