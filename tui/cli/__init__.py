"""The ``rankscope`` command line, a front-end beside the browser on the same
engine API.

Modules: :mod:`.base` (errors, store opening, shared options), one module per
area of subcommands (:mod:`.search` index/search/batch, :mod:`.lab`
compare/why/doctor, :mod:`.stores` stores/sessions, :mod:`.serve`), and
:mod:`.main`, which registers them all on the Typer application and holds
the console-script entry point :func:`main`.
"""

from typing import Any

from .base import CliError
from .main import main

__all__ = ["CliError", "app", "main"]


def __getattr__(name: str) -> Any:
    """``app``: the application with every subcommand (built on first use,
    see :func:`tui.cli.main.build_app`)."""
    if name == "app":
        import importlib

        return importlib.import_module("tui.cli.main").__getattr__("app")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
