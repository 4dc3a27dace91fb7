"""``rankscope serve``: the browser in a web page, through textual-serve.

Each browser tab starts its own ``rankscope [PATH]`` process. The server
binds to loopback (127.0.0.1) unless ``--host`` says otherwise; binding
beyond loopback needs ``--public``, prints a warning, and requires a random
token in the URL. Websockets are accepted only from the served page's own
origin (:mod:`tui.cli.webserve`).

Sessions are bounded: at most ``--max-sessions`` at once (the next visitor
gets a page saying why), each one process, closed after ``--idle-timeout``
seconds without a key (by default 15 minutes with ``--public``, never on
loopback). ``--demo`` serves ``rankscope --demo`` (:mod:`tui.cli.demo`):
each visitor gets a temporary folder, removed when they leave, and exports
as downloads.
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

from .base import DEFAULT_MAX_SESSIONS, OPENS_STORE_OR_FOLDER, fail, parse_idle_timeout

#: The most ``--max-sessions`` accepts.
MAX_SESSIONS_LIMIT = 1000
#: ``--idle-timeout`` with ``--public`` when not given (seconds).
PUBLIC_IDLE_TIMEOUT = "900"


def serve_command(path: Optional[str], demo: bool = False, idle_timeout: Optional[float] = None) -> str:
    """The command each session runs (a shell-quoted argument list; run
    without a shell): ``rankscope [--demo] [PATH] [--idle-timeout S]``."""
    parts = [sys.executable, "-m", "tui.cli"]
    if demo:
        parts.append("--demo")
    if path:
        parts.append(str(Path(path).expanduser().resolve()))
    if idle_timeout is not None:
        parts += ["--idle-timeout", f"{idle_timeout:g}"]
    return shlex.join(parts)


def limits_line(max_sessions: int, idle_timeout: Optional[float], demo: bool) -> str:
    """What ``rankscope serve`` says at start about its bounds (one line)."""
    sessions = f"{max_sessions} session{'s' if max_sessions != 1 else ''}"
    idle = (
        f"a session idle for {idle_timeout:g} s is closed (--idle-timeout)"
        if idle_timeout is not None
        else "idle sessions stay open (--idle-timeout 0)"
    )
    line = f"rankscope: at most {sessions} at once (--max-sessions; the next visitor is told to come back); {idle}"
    if demo:
        line += "; demo: stores read-only, no store picker, each visitor's grades and exports removed when they leave"
    return line


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
    demo: bool = typer.Option(
        False,
        "--demo",
        help="Serve 'rankscope --demo': the store read-only, no store picker, each visitor's grades, history "
        "and saved cases in a temporary folder removed when they leave, exports sent as downloads.",
    ),
    max_sessions: int = typer.Option(
        DEFAULT_MAX_SESSIONS,
        "--max-sessions",
        help="Sessions at once (each is one process); the next visitor gets a page saying all are in use.",
    ),
    idle_timeout: Optional[str] = typer.Option(
        None,
        "--idle-timeout",
        metavar="SECONDS",
        help=f"Close a session after this many seconds without a key (0: never); default {PUBLIC_IDLE_TIMEOUT} "
        "with --public, never on loopback.",
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
    if not 1 <= max_sessions <= MAX_SESSIONS_LIMIT:
        fail(f"--max-sessions takes 1 to {MAX_SESSIONS_LIMIT}; got {max_sessions}")
    from tui.cli.webserve import LOOPBACK_NAMES, GuardedServer, is_loopback

    loopback = is_loopback(host)
    if not loopback and not public:
        fail(
            f"--host {host} serves beyond this machine: whoever reaches {host}:{port} could drive rankscope and "
            "read every store it opens; add --public to do that (a token in the URL then guards the session)"
        )
    timeout = parse_idle_timeout(
        idle_timeout if idle_timeout is not None else ("0" if loopback else PUBLIC_IDLE_TIMEOUT)
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
    print(limits_line(max_sessions, timeout, demo), file=sys.stderr)
    server = GuardedServer(
        command=serve_command(path, demo, timeout),
        host=host,
        port=port,
        title="rankscope demo" if demo else "rankscope",
        token=token,
        allowed_hosts=allowed,
        max_sessions=max_sessions,
        idle_timeout=timeout,
        visitor_folders=demo,
    )
    try:
        server.serve()
    except OSError as exc:  # lost the port between the check and the bind
        fail(f"cannot serve on {host}:{port}: {exc.strerror or exc}")


def _url_host(host: str) -> str:
    """``host`` as it goes in a URL (IPv6 addresses in brackets)."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host
