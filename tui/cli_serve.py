"""``rankscope serve``: the browser in a web page, through textual-serve.

Each browser tab starts its own ``rankscope [PATH]`` process. The server
binds to loopback (127.0.0.1) unless ``--host`` says otherwise.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Optional

from .cli import app, fail


def serve_command(path: Optional[str]) -> str:
    """The shell command textual-serve runs for each session."""
    parts = [sys.executable, "-m", "tui.cli"]
    if path:
        parts.append(str(Path(path).expanduser().resolve()))
    return shlex.join(parts)


@app.command()
def serve(host: str = "127.0.0.1", port: int = 8000, path: Optional[str] = None) -> None:
    """Serve the browser to a web browser (textual-serve), on loopback unless --host is given."""
    if path is not None and not Path(path).expanduser().exists():
        fail(f"no such file or folder: {path}")
    if not 0 < port < 65536:
        fail(f"port must be between 1 and 65535; got {port}")
    from textual_serve.server import Server

    print(f"rankscope: serving on http://{host}:{port} (ctrl+c stops)", file=sys.stderr)
    Server(command=serve_command(path), host=host, port=port, title="rankscope").serve()
