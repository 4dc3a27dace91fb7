"""``rankscope serve``: the browser in a web page, through textual-serve.

Each browser tab starts its own ``rankscope [PATH]`` process. The server
binds to loopback (127.0.0.1) unless ``--host`` says otherwise; binding
beyond loopback needs ``--public``, prints a warning, and requires a random
token in the URL. Websockets are accepted only from the served page's own
origin (:mod:`tui.cli.webserve`).
"""

from __future__ import annotations

import os
import secrets
import shlex
import socket
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from engine.files.reading import InputFileError, require_regular_file

from .base import OPENS_STORE_OR_FOLDER, fail


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
    host: str = typer.Option(
        "127.0.0.1", "--host", help="Address to listen on (loopback by default; anything else needs --public)."
    ),
    port: int = typer.Option(8000, "--port", help="TCP port to listen on."),
    path: Annotated[Optional[str], OPENS_STORE_OR_FOLDER] = typer.Option(
        None,
        "--path",
        help="What each browser tab opens: a .db store (read-only) or a folder (indexed first); "
        "default: the bundled sample corpus.",
    ),
    public: bool = typer.Option(
        False,
        "--public",
        help="Allow a --host beyond loopback: the session is then served to the network, "
        "guarded by a random token in the URL.",
    ),
) -> None:
    """Serve the browser to a web browser (textual-serve), on loopback unless --host and --public say otherwise.

    Only pages from the served address may open the session (the websocket's
    Origin is checked); beyond loopback every request needs the token printed
    at start-up.
    """
    if path is not None and not Path(path).expanduser().exists():
        fail(f"no such file or folder: {path}")
    if path is not None and not Path(path).expanduser().is_dir():
        try:  # each tab opens it: a FIFO or a device is refused here, once
            require_regular_file(Path(path).expanduser(), "--path")
        except InputFileError as exc:
            fail(str(exc))
    if not 0 < port < 65536:
        fail(f"port must be between 1 and 65535; got {port}")
    from tui.cli.webserve import LOOPBACK_NAMES, GuardedServer, is_loopback

    loopback = is_loopback(host)
    if not loopback and not public:
        fail(
            f"--host {host} serves beyond this machine: whoever reaches {host}:{port} could drive rankscope and "
            "read every store it opens; add --public to do that (a token in the URL then guards the session)"
        )
    check_port(host, port)
    if loopback:
        token = None
        allowed = set(LOOPBACK_NAMES) | {host.lower()}
        url = f"http://{_url_host(host)}:{port}/"
    else:
        token = secrets.token_urlsafe(24)
        allowed = None
        shown = socket.gethostname() if host in ("0.0.0.0", "::", "") else host
        url = f"http://{_url_host(shown)}:{port}/?token={token}"
        print(
            f"rankscope: warning: serving to the network on {host}:{port}: anyone with the URL below can drive "
            "rankscope and read the stores it opens; traffic is not encrypted (plain http)",
            file=sys.stderr,
        )
    print(f"rankscope: serving on {url} (ctrl+c stops)", file=sys.stderr)
    server = GuardedServer(
        command=serve_command(path), host=host, port=port, title="rankscope", token=token, allowed_hosts=allowed
    )
    try:
        server.serve()
    except OSError as exc:  # lost the port between the check and the bind
        fail(f"cannot serve on {host}:{port}: {exc.strerror or exc}")


def _url_host(host: str) -> str:
    """``host`` as it goes in a URL (IPv6 addresses in brackets)."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host
