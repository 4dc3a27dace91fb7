"""``rankscope serve`` and malformed requests, for real: a server process on
a free port is sent a bad request line, a bad header, bytes that are not
HTTP, an over-long header and broken websocket handshakes over raw sockets.

Before: each got its 400 (the handshakes a 500) and the console a Rich
traceback (with locals) per request. Now: each gets a 400, the console one
plain line naming what was wrong, and the server goes on serving.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

#: The repository.
ROOT = Path(__file__).resolve().parents[1]
#: The longest the server may take to start, or to log a line.
DEADLINE_S = 30.0

#: name → the bytes a client sends (``{port}`` is the server's port).
MALFORMED = {
    "bad header": b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nBad Header\r\n\r\n",
    "bad request line": b"GARBAGE\r\n\r\n",
    "bad version": b"GET / HTTP/9.Z\r\nHost: 127.0.0.1\r\n\r\n",
    "not HTTP (TLS hello)": b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + bytes(range(40)) + b"\r\n\r\n",
    "header too long": b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX: " + b"a" * 20000 + b"\r\n\r\n",
    "bad content-length": b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: abc\r\n\r\n",
    "escape sequence in path": b"GET /\x1b[31m HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    "websocket with a bad key": (
        b"GET /ws HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nOrigin: http://127.0.0.1:{port}\r\n"
        b"Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: bad\r\n\r\n"
    ),
    "websocket without key or version": (
        b"GET /ws HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nOrigin: http://127.0.0.1:{port}\r\n"
        b"Upgrade: websocket\r\nConnection: Upgrade\r\n\r\n"
    ),
}

REFUSED = re.compile(r"^rankscope serve: refused a malformed request from 127\.0\.0\.1: \S.*$")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def exchange(port: int, data: bytes) -> bytes:
    """Send ``data``, return the status line of the answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=DEADLINE_S) as sock:
        sock.sendall(data)
        answer = b""
        while b"\r\n" not in answer:
            chunk = sock.recv(4096)
            if not chunk:
                break
            answer += chunk
    return answer.split(b"\r\n", 1)[0]


def wait_for(condition, what: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


@pytest.fixture
def server(tmp_path):
    """``rankscope serve`` on a free port; yields (process, port, stdout
    file, stderr file); stopped (SIGINT, then killed) at the end."""
    port = free_port()
    out, err = tmp_path / "out.log", tmp_path / "err.log"
    env = dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="80")
    command = [sys.executable, "-m", "tui.cli", "serve", "--port", str(port)]
    with open(out, "wb") as o, open(err, "wb") as e:
        process = subprocess.Popen(command, stdout=o, stderr=e, env=env, cwd=tmp_path)
    try:

        def listening() -> bool:
            assert process.poll() is None, err.read_text()
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
            except OSError:
                return False
            return True

        wait_for(listening, "the server to listen")
        yield process, port, out, err
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(DEADLINE_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


#: What shows a traceback or an error report reached the console.
TRACEBACK_SIGNS = ("Traceback", "Error handling request", "╭", "Exception", "ERROR")


def console(out: Path, err: Path) -> str:
    return out.read_text(errors="replace") + err.read_text(errors="replace")


def traceback_in(out: Path, err: Path) -> bool:
    return any(sign in console(out, err) for sign in TRACEBACK_SIGNS)


def refusals(err: Path) -> list[str]:
    return [ln for ln in err.read_text(errors="replace").splitlines() if ln.startswith("rankscope serve: refused")]


def test_malformed_requests_get_400_and_one_plain_line_each(server):
    process, port, out, err = server
    for n, (name, data) in enumerate(MALFORMED.items(), 1):
        status = exchange(port, data.replace(b"{port}", str(port).encode()))
        assert status.split()[1:2] == [b"400"], (name, status)
        wait_for(lambda n=n: len(refusals(err)) >= n or traceback_in(out, err), f"the line on {name}")
        assert not traceback_in(out, err), (name, console(out, err))
        assert len(refusals(err)) == n, (name, refusals(err))
        line = refusals(err)[-1]
        assert REFUSED.match(line), (name, line)
        assert "\x1b" not in line and len(line) < 250, (name, line)
    # still serving
    assert exchange(port, f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode()).split()[1] == b"200"
    assert process.poll() is None
    assert not traceback_in(out, err), console(out, err)
    lines = refusals(err)
    assert lines[0].endswith(": Invalid header token: b'Bad Header'")
    assert lines[7].endswith(": Handshake error: 'bad'")


def test_a_problem_is_one_safe_short_line():
    """aiohttp's pure-Python parser quotes the raw bytes: control characters
    are shown (␛), never sent; the parser's caret line is dropped; a long
    reason is cut."""
    from aiohttp.http_exceptions import BadHttpMessage, InvalidURLError
    from aiohttp.web import HTTPBadRequest

    from tui.cli.webserve import PROBLEM_SHOWN, problem_line, request_problem

    assert request_problem(InvalidURLError("/\x1b[31m")) == "/␛[31m"
    assert request_problem(BadHttpMessage("Invalid header token:\n\n  b'Bad Header'\n       ^")) == (
        "Invalid header token: b'Bad Header'"
    )
    assert len(request_problem(BadHttpMessage("x" * 1000))) < PROBLEM_SHOWN + 30
    assert problem_line("::1", HTTPBadRequest(text="Handshake error: 'k'")) == (
        "rankscope serve: refused a malformed request from ::1: Handshake error: 'k'"
    )
    assert problem_line(None, RuntimeError("boom")) == (
        "rankscope serve: failed to answer a request from a client: RuntimeError: boom"
    )
