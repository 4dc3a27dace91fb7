"""Cutting text to fit, for the CLI and the browser: the one family of
truncation helpers. Widths are terminal cells (Rich's ``cell_len``), except
:func:`clip`, which counts characters (code points). What is cut away is shown as
:data:`ELLIPSIS`.

* :func:`clip`: the first characters and ``… (+N characters)`` (the
  engine's summaries cut the same way: :func:`engine.pipeline.words.abbreviate`);
* :func:`end_cut`: the start and ``…`` (store text made safe on the way;
  ``words=True`` never cuts inside a word when that can be helped);
* :func:`middle_cut`: the end kept (a title's last heading, a path's file name);
* :func:`distinct_cuts`: middle cuts of several titles that keep different titles different;
* :class:`MiddleCut`: a table cell that is middle-cut to the width it is drawn at;
* :func:`terms_cut`: whole terms from both ends (a sanitised FTS5 query);
* :func:`cut_beside`: a left text cut so that a right one fits beside it.

Rich only (no Textual).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from rich.cells import cell_len
from rich.text import Text

from engine.pipeline.words import abbreviate

from tui.present import safe

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderResult
    from rich.measure import Measurement

#: What a cut leaves in place of the text it removed.
ELLIPSIS = "…"

#: ``text`` cut to ``width`` characters plus ``… (+N characters)``, or
#: whole when that is not shorter (:func:`engine.pipeline.words.abbreviate`).
clip = abbreviate


def end_cut(text: str | Text, width: int, *, style: str = "", words: bool = False) -> Text:
    """``text`` in at most ``width`` cells: itself when it fits, else its
    start and ``…``. A ``str`` is store text: made safe
    (:func:`tui.present.safe.line`), styled ``style``, and never wrapped. With
    ``words``, a cut inside a word (a number above all: ``rank 19`` read as
    ``rank 1…``) goes back to the space before it, unless that would drop
    more than half of what fits."""
    if isinstance(text, str):
        text = Text(safe.line(text), style=style, no_wrap=True, overflow="ellipsis")
    if text.cell_len <= width:
        return text
    cut = text.copy()
    if not words:
        cut.truncate(width, overflow="ellipsis")  # the ellipsis takes the style of the text it ends
        return cut
    keep = max(width - 1, 0)
    cut.truncate(keep, overflow="crop")
    plain = cut.plain
    if len(plain) < len(text.plain) and not text.plain[len(plain)].isspace():
        space = plain.rfind(" ")
        if space >= keep // 2 and space < len(plain) - 1:  # (right_crop(0) would empty it)
            cut.right_crop(len(plain) - space - 1)
    cut.append(ELLIPSIS)
    return cut


#: The least of a title's start :func:`middle_cut` shows before the ellipsis; less is left out.
MIN_START_CELLS = 4


def middle_cut(title: str, width: int, sep: str = " > ") -> str:
    """``title`` in at most ``width`` terminal cells, cut in the middle so
    the last heading stays: ``ferryctl docs > install > publish > Example``
    at 30 → ``ferryctl … > publish > Example``. As many trailing headings as
    fit are kept whole, then as much of the start as fits (at least
    :data:`MIN_START_CELLS`, else none: ``… > Write quorum``). A last heading
    that alone is too long keeps its end (``…tail``); a title without
    ``sep`` keeps its start and its end (``[heartbeat] coo…registered``). With ``sep="/"`` a
    path keeps its file name: ``docs/plugins/hooks-reference.md`` at 24 →
    ``docs…/hooks-reference.md``."""
    if width <= 0:
        return ""
    if cell_len(title) <= width:
        return title
    if width == 1:
        return ELLIPSIS
    parts = title.split(sep)
    tail = parts[-1]
    if len(parts) == 1:  # no headings: its start and its end
        end = (width - 1) // 2
        return _cells_from_start(title, width - 1 - end).rstrip() + ELLIPSIS + _cells_from_end(title, end).lstrip()
    if cell_len(ELLIPSIS + sep + tail) > width:
        return ELLIPSIS + _cells_from_end(tail, width - 1)
    kept = [tail]
    for part in reversed(parts[1:-1]):
        if cell_len(ELLIPSIS + sep + sep.join([part] + kept)) + 2 > width:
            break
        kept.insert(0, part)
    rest = sep.join(parts[: len(parts) - len(kept)])
    back = (" " if sep.startswith(" ") else "") + ELLIPSIS + sep + sep.join(kept)
    room = width - cell_len(back)
    if room < MIN_START_CELLS:  # a stub of the first heading ("Rep … > Write quorum") says nothing
        return (ELLIPSIS + sep + sep.join(kept))[:width]
    return _cells_from_start(rest, room).rstrip() + back


def distinct_cuts(titles: Sequence[str], width: int, sep: str = " > ") -> dict[str, str]:
    """Each of ``titles`` in at most ``width`` cells (:func:`middle_cut`), with
    titles that differ kept different: when several cut alike
    (``Incident 2023-04 > What went well`` and ``Incident 2024-01 > What
    went well`` both ``I… > What went well``), each shows from the word where
    they start to differ (``…2023-04 > What went well``), its middle cut if
    needed, else as little of that start as tells them apart and the rest
    of the width from its end (``…2023…hat went well``: the last heading's
    end stays at every width). Returns title → cut."""
    import os.path

    unique = list(dict.fromkeys(titles))
    cuts = {t: middle_cut(t, width, sep) for t in unique}
    groups: dict[str, list[str]] = {}
    for t in unique:
        groups.setdefault(cuts[t], []).append(t)
    for group in groups.values():
        if len(group) < 2 or width < 2:
            continue
        common = len(os.path.commonprefix(group))
        start = group[0].rfind(" ", 0, common) + 1  # the word where they differ
        tails = {}
        for t in group:
            at = start
            if t[at:].startswith(sep.strip()):  # the other has a heading more here: from the word before
                at = t.rfind(" ", 0, max(at - 1, 0)) + 1
            tails[t] = ELLIPSIS + t[at:].lstrip() if at else t
        shown = {t: middle_cut(tail, width, sep) for t, tail in tails.items()}
        if len(set(shown.values())) < len(group):  # as little of the start as tells them apart, then the end
            for start in range(1, width - 1):
                if len({_cells_from_start(tail, start) for tail in tails.values()}) == len(group):
                    shown = {t: _both_ends(tail, width, start) for t, tail in tails.items()}
                    break
        if len(set(shown.values())) < len(group):
            shown = {t: end_cut(tail, width).plain for t, tail in tails.items()}
        cuts.update(shown)
    return cuts


def _both_ends(text: str, width: int, start: int) -> str:
    """``text`` in ``width`` cells: its first ``start`` cells, ``…``, and
    its end (``text`` itself when it fits)."""
    if cell_len(text) <= width:
        return text
    return _cells_from_start(text, start).rstrip() + ELLIPSIS + _cells_from_end(text, width - 1 - start).lstrip()


def _cells_from_start(text: str, width: int) -> str:
    out, used = [], 0
    for ch in text:
        w = cell_len(ch)
        if used + w > width:
            break
        out.append(ch)
        used += w
    return "".join(out)


def _cells_from_end(text: str, width: int) -> str:
    return _cells_from_start(text[::-1], width)[::-1]


class MiddleCut:
    """A title cut in the middle to the width of its cell, never wrapped
    (:func:`middle_cut`; a :class:`tui.present.tablefit.Shaped` cell that can
    be cut anywhere)."""

    def __init__(self, text: str, style: str = "") -> None:
        self.text, self.style = text, style

    @property
    def plain(self) -> str:
        return self.text

    @property
    def narrowest(self) -> int:
        return min(1, cell_len(self.text))

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        from rich.measure import Measurement

        return Measurement(self.narrowest, cell_len(self.text))

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield Text(middle_cut(self.text, options.max_width), style=self.style, no_wrap=True, end="")


def terms_cut(query: str, width: int) -> str:
    """``query`` (a sanitised FTS5 query) in at most ``width`` cells, cut in
    the middle: whole terms from its start and its end around ``…``
    (``"throttled" OR … OR "quorum"``; terms are separated by `` OR ``, or
    by spaces in the AND form), or, when not even one term fits, its first
    and last characters (:func:`middle_cut`)."""
    if cell_len(query) <= width:
        return query
    sep = " OR " if " OR " in query else " "
    terms = query.split(sep)
    best = ""
    for kept in range(1, len(terms)):
        front = terms[: (kept + 1) // 2]
        back = terms[len(terms) - kept // 2 :] if kept // 2 else []
        text = sep.join([*front, ELLIPSIS, *back])
        if cell_len(text) > width:
            break
        best = text
    return best or middle_cut(query, width, sep="\n")


#: Fewest cells :func:`cut_beside` leaves the left text.
BESIDE_MIN = 8


def cut_beside(left: Text, right: Text | str, width: int) -> Text:
    """One line of ``width`` cells: ``left`` (cut at its end, to no fewer
    than :data:`BESIDE_MIN` cells) and ``right`` at the right edge (``right``
    wins when space is short)."""
    right = Text(right) if isinstance(right, str) else right
    out = end_cut(left, max(width - right.cell_len - 1, BESIDE_MIN)).copy()
    out.pad_right(max(width - out.cell_len - right.cell_len, 1))
    out.append_text(right)
    return out
