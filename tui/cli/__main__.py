"""``python -m tui.cli``: the same command as ``rankscope``."""

from .main import main

main()
