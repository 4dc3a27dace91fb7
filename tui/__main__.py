"""``python -m tui``: the same command as ``rankscope``."""

from .cli.main import main

main()
