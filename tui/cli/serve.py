"""``rankscope serve``: the browser in a web page, through textual-serve.

Each browser tab starts its own ``rankscope [PATH]`` process. The server
binds to loopback (127.0.0.1) unless ``--host`` says otherwise.
"""

from __future__ import annotations

import os
import shlex
import socket
import sys
from pathlib import Path
from typing import Optional

import typer

from .base import fail


def serve_command(path: Optional[str]) -> str:
    """The shell command textual-serve runs for each session."""
    parts = [sys.executable, "-m", "tui.cli"]
    if path:
        parts.append(str(Path(path).expanduser().resolve()))
    return shlex.join(parts)


def check_port(host: str, port: int) -> None:
    """Fail with one line when ``host:port`` cannot be bound (taken, not a
    local address, unknown host); the socket is closed again at once."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        family, kind, proto, _, address = infos[0]
        with socket.socket(family, kind, proto) as sock:
            if os.name != "nt":
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as aiohttp does
            sock.bind(address)
    except OSError as exc:
        fail(f"cannot serve on {host}:{port}: {exc.strerror or exc}")


def serve(
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on (loopback by default)."),
    port: int = typer.Option(8000, "--port", help="TCP port to listen on."),
    path: Optional[str] = typer.Option(
        None, "--path", help="What each browser tab opens: a .db store (read-only) or a folder (indexed first); "
        "default: the bundled sample corpus."
    ),
) -> None:
    """Serve the browser to a web browser (textual-serve), on loopback unless --host is given."""
    if path is not None and not Path(path).expanduser().exists():
        fail(f"no such file or folder: {path}")
    if not 0 < port < 65536:
        fail(f"port must be between 1 and 65535; got {port}")
    check_port(host, port)
    from textual_serve.server import Server

    print(f"rankscope: serving on http://{host}:{port} (ctrl+c stops)", file=sys.stderr)
    try:
        Server(command=serve_command(path), host=host, port=port, title="rankscope").serve()
    except OSError as exc:  # lost the port between the check and the bind
        fail(f"cannot serve on {host}:{port}: {exc.strerror or exc}")
