"""The pinned chunk's line under the query box: its fate in the current
search, and beneath it the smallest change that returns it, fitted to the
width (again on every resize)."""

from __future__ import annotations

from dataclasses import dataclass

from rich.cells import cell_len
from rich.text import Text
from textual.widgets import Static

from tui.present import safe
from tui.present.cut import end_cut, middle_cut
from tui.present.flowtext import PIN_MARK


@dataclass(frozen=True)
class PinnedParts:
    """What the pinned line says, as plain text.

    Attributes:
        rowid: the pinned chunk's row id.
        fate: its fate (``#2 in the answer``, ``left at Trim: ...``), or
            why it could not be followed.
        title: the chunk's title (``None`` when not known yet).
        second: the second line (the counterfactual, or that it is being
            looked for); ``""`` for none.
        second_style: the second line's style.
    """

    rowid: int
    fate: str
    title: str | None = None
    second: str = ""
    second_style: str = ""


def first_line(parts: PinnedParts, width: int) -> str:
    """``▸ pinned row 57 Guide > Example: left at Trim: cut by the trim (#5 >
    limit 3)`` in ``width`` cells: the title is cut in the middle
    (:func:`tui.present.cut.middle_cut`, its last heading kept) so that the row id
    and the whole fate fit; when not even that fits, the title is ``…``
    and the end is cut (:func:`tui.present.cut.end_cut` does that part)."""
    head = f"{PIN_MARK} pinned row {parts.rowid}"
    tail = f": {safe.line(parts.fate)}"
    if parts.title is None:
        return head + tail
    title = safe.line(parts.title)
    room = width - cell_len(head) - 1 - cell_len(tail)
    return f"{head} {middle_cut(title, max(room, 1))}{tail}"


def pinned_text(parts: PinnedParts | None, width: int) -> Text:
    """The pinned line's one or two lines for ``width`` cells (0 or less:
    uncut); empty for ``None``."""
    if parts is None:
        return Text()
    wide = width if width > 0 else 10**6
    text = end_cut(Text(first_line(parts, wide), style="bold"), wide, words=True)
    if parts.second:
        text.append("\n")
        text.append_text(end_cut(Text("  " + safe.line(parts.second), style=parts.second_style), wide, words=True))
    return text


class PinnedLine(Static):
    """The pinned chunk's fate and counterfactual (:func:`pinned_text`);
    hidden while nothing is pinned."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.parts: PinnedParts | None = None

    def on_mount(self) -> None:
        self.display = False

    def show(self, parts: PinnedParts | None) -> None:
        """Show ``parts`` (``None``: nothing pinned, the line hides)."""
        self.parts = parts
        self.display = parts is not None
        self.refit()

    def refit(self) -> None:
        """Lay the parts out for the current width."""
        self.update(pinned_text(self.parts, self.size.width))

    def on_resize(self) -> None:
        self.refit()
