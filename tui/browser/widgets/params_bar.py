"""The parameters bar: one line saying what the next search uses."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from engine import SearchParams

from tui.present import safe
from tui.browser.cmdline import describe_sessions


class ParamsBar(Static):
    """``limit 3 · source any · type any · sessions off`` and the store, with
    the keys that change them. Clicking it opens the parameters dialog."""

    def __init__(self, store_label: str, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.store_label = store_label
        self.params: SearchParams | None = None

    def show(self, params: SearchParams) -> None:
        """Show ``params``."""
        self.params = params
        t = Text()

        def part(name: str, value: str, changed: bool) -> None:
            if len(t):
                t.append(" · ", style="dim")
            t.append(name + " ", style="dim")
            t.append(value, style="bold underline" if changed else "bold")

        part("limit", str(params.limit), params.limit != 3)
        src = "any"
        if params.source:
            src = safe.line(params.source) + (" (exact)" if params.source_match == "exact" else " (substr)")
        part("source", src, bool(params.source))
        part("type", params.content_type or "any", params.content_type is not None)
        part("sessions", safe.line(describe_sessions(params.sessions)), params.sessions is not None)
        t.append(" · ", style="dim")  # a visible separator: with spaces alone a new user read "offF2/F3 change"
        t.append("F2/F3 change", style="dim italic")
        self.update(t)
        self.tooltip = f"Store: {safe.line(self.store_label)}"

    async def on_click(self) -> None:
        await self.run_action("app.edit_params")
