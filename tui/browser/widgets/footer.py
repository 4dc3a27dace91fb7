"""The footer every screen shows: Textual's, with no key cut at the edge.

Textual's :class:`~textual.widgets.Footer` lays its keys out in one row and
clips what does not fit, under the command palette's key docked on the
right (``f4 Cop▏^p palette`` at 80 columns). :class:`KeyFooter` shows the
keys that fit whole, in their order, and leaves out the rest (a binding
group with its label, together); F1 and the palette still list every key.
"""

from __future__ import annotations

from textual.widget import Widget
from textual.widgets import Footer


class KeyFooter(Footer):
    """A :class:`~textual.widgets.Footer` that shows only the keys that fit whole."""

    async def recompose(self) -> None:
        await super().recompose()  # every key shown
        self.call_after_refresh(self._fit)

    def on_resize(self) -> None:
        self._show_all()
        self.call_after_refresh(self._fit)

    def _items(self) -> tuple[list[list[Widget]], list[Widget]]:
        """The footer's keys in order, a binding group with its label as one
        item; and the docked keys (the command palette's)."""
        items: list[list[Widget]] = []
        docked: list[Widget] = []
        for child in self.children:
            if child.has_class("-command-palette"):
                docked.append(child)
            elif type(child).__name__ == "FooterLabel" and items:  # a group's label follows its keys
                items[-1].append(child)
            else:
                items.append([child])
        return items, docked

    def _show_all(self) -> None:
        for child in self.children:
            child.display = True

    def _fit(self) -> None:
        """Hide, from the first key that does not end left of the docked keys,
        that key and every one after it (where each widget was laid out,
        margins included, all keys shown)."""
        items, docked = self._items()
        room = self.content_size.width - sum(w.virtual_region_with_margin.width for w in docked)
        fits = True
        for item in items:
            fits = fits and all(w.virtual_region_with_margin.right <= room for w in item)
            for widget in item:
                if widget.display != fits:
                    widget.display = fits
