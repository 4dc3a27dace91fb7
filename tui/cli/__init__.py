"""The ``rankscope`` command line, a front-end beside the browser on the same
engine API.

Modules: :mod:`.base` (errors, store opening, shared options), one module per
area of subcommands (:mod:`.search` index/search/batch, :mod:`.lab`
compare/why/doctor, :mod:`.stores` stores/sessions, :mod:`.serve`), and
:mod:`.main`, which registers them all on the Typer application and holds
the console-script entry point :func:`main`.
"""

from .base import CliError
from .main import app, main

__all__ = ["CliError", "app", "main"]
