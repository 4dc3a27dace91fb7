"""Every text the browser draws is readable, on a 256-colour terminal and
with ``NO_COLOR``.

The check walks the cells the screen's compositor draws (what the terminal
receives: Textual has already blended ``dim`` and alpha colours into plain
colours, converted ANSI colour names through the app's ANSI theme and, with
``NO_COLOR``, turned every colour into a grey with its Monochrome filter),
reduces each foreground and background to the xterm 256-colour palette as a
256-colour terminal shows them (Rich's ``Color.downgrade(EIGHT_BIT)``, which
Textual's output goes through when the terminal has no truecolor), and
requires the WCAG 2.x contrast ratio of AA for body text, 4.5:1
(https://www.w3.org/TR/WCAG21/#contrast-minimum; relative luminance and
ratio as defined there).

Scenes: the start screen, the browser after a search (the query focused,
so every pane is drawn unfocused: the case where the pane titles and the
layer line were 1.4:1), each pane focused, the parameters dialog with an
error, the session dialog, the help, the compare screen with ``gone`` / ``↓n``
/ ``new`` rows (table and form focused), why not?, doctor and the agent
view; at 80x24 and 120x40.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from rich.cells import cell_len
from rich.color import Color, ColorSystem
from textual.widgets import DataTable, Input, OptionList, Select

from engine import SearchParams
from tui.browser.screens.agent import AgentViewScreen
from tui.browser.screens.compare import CompareScreen
from tui.browser.screens.doctor import DoctorScreen
from tui.browser.screens.flow import FlowScreen
from tui.browser.screens.help import HelpScreen
from tui.browser.screens.params import ParamsScreen
from tui.browser.screens.sessions import SessionsScreen
from tui.browser.screens.why import WhyScreen

from .conftest import (
    browsing,
    focus_left_the_query,
    press,
    rendered,
    screen_strips,
    search_for,
    settle,
    wait_for,
    wait_screen,
)
from .test_lab_screens import settle_lab

#: WCAG 2.x AA for text (success criterion 1.4.3).
TEXT_MIN = 4.5

#: Glyphs that are not text, exempt from the text contrast: box drawing
#: (U+2500-U+257F: pane and dialog borders, whose panes carry a readable
#: title) and block elements (U+2580-U+259F: the tall input border, scroll
#: bars, the inspector's ``▌`` heading marker, the footer's ``▏``). They
#: frame and decorate; none is the only carrier of a meaning.
DECORATIVE = frozenset(chr(c) for c in range(0x2500, 0x25A0))


def relative_luminance(rgb: tuple[int, int, int]) -> float:
    """WCAG 2.x relative luminance of an sRGB colour (0-255 channels)."""

    def channel(c: int) -> float:
        s = c / 255
        return s / 12.92 if s <= 0.03928 else ((s + 0.055) / 1.055) ** 2.4

    r, g, b = rgb
    return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b)


def contrast_ratio(a: tuple[int, int, int], b: tuple[int, int, int]) -> float:
    """WCAG 2.x contrast ratio, 1 (none) to 21 (black on white)."""
    hi, lo = sorted((relative_luminance(a), relative_luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def on_256_colours(color: Color) -> tuple[int, int, int]:
    """The colour a 256-colour terminal shows for ``color``."""
    c = color.downgrade(ColorSystem.EIGHT_BIT).get_truecolor()
    return (c.red, c.green, c.blue)


@dataclass(frozen=True)
class Cell:
    """A run of text as drawn: position, text, 256-colour fg and bg, bold."""

    x: int
    y: int
    text: str
    fg: tuple[int, int, int]
    bg: tuple[int, int, int]
    bold: bool

    @property
    def contrast(self) -> float:
        return contrast_ratio(self.fg, self.bg)


def drawn_cells(app) -> list[Cell]:
    """Every run of text on the screen as the terminal receives it (the
    compositor's full update, as ``App.export_screenshot`` renders it),
    reverse video resolved. Under a modal dialog only the dialog's own
    widgets count: the screen behind it is faded on purpose."""
    screen = app.screen
    strips = screen_strips(app)
    regions = [w.region for w in screen.children] if screen.is_modal else None
    cells = []
    for y, line in enumerate(strips):
        x = 0
        for strip in line:
            for text, style, control in strip:
                if control:
                    continue
                width = cell_len(text)
                if style is not None and text.strip() and (regions is None or any(r.contains(x, y) for r in regions)):
                    fg, bg = style.color, style.bgcolor
                    if style.reverse:
                        fg, bg = bg, fg
                    assert fg is not None and bg is not None, f"{text!r} at {x},{y} has no colour to measure"
                    cells.append(Cell(x, y, text, on_256_colours(fg), on_256_colours(bg), bool(style.bold)))
                x += width
    return cells


def unreadable(app, where: str) -> list[str]:
    """The runs of text under 4.5:1, as ``where: 'text' ratio at x,y``."""
    out = []
    for c in drawn_cells(app):
        text = "".join(ch for ch in c.text if ch not in DECORATIVE).strip()
        if text and c.contrast < TEXT_MIN:
            out.append(
                f"{where}: {text[:40]!r} {c.contrast:.2f}:1 at {c.x},{c.y} "
                f"(#{'%02x%02x%02x' % c.fg} on #{'%02x%02x%02x' % c.bg})"
            )
    return out


async def walk_screens(pilot, wide: bool) -> list[str]:
    """Visit every scene; return what was unreadable where."""
    app = pilot.app
    found: list[str] = []

    async def look(where: str) -> None:
        await rendered(pilot)
        found.extend(unreadable(app, where))

    await settle(pilot)
    await look("start screen")
    await search_for(pilot, "example")
    await look("after a search, typing")
    await press(pilot, "tab")
    await look("results focused")
    if wide:
        await press(pilot, "tab")
        await look("stages focused")
        await press(pilot, "tab")
        await look("journey focused")
    else:
        await press(pilot, "s")
        await look("stages pane")
        await press(pilot, "j")
        await look("journey pane")
        await press(pilot, "r")
    await press(pilot, "f2")
    await wait_screen(pilot, ParamsScreen)
    await press(pilot, "end", "x")
    await look("parameters dialog with an error")
    await press(pilot, "escape", "f3")
    await wait_screen(pilot, SessionsScreen)
    await look("session dialog")
    await press(pilot, "escape", "f1")
    await wait_screen(pilot, HelpScreen)
    await look("help")
    await press(pilot, "escape", "f7")
    screen = await wait_screen(pilot, CompareScreen)
    await settle_lab(pilot)
    screen.query_one("#b-key", Select).value = "rowid"
    await wait_for(pilot, lambda: screen.comparison.params_b.variant.fusion_key == "rowid")
    await settle_lab(pilot)
    screen.table.focus()
    await look("compare, table focused")
    screen.table.move_cursor(row=screen.table.row_count - 1)
    await look("compare, cursor on a gone row")
    screen.query_one("#b-key", Select).focus()
    await look("compare, form focused")
    await press(pilot, "escape", "f8")
    await wait_screen(pilot, WhyScreen)
    await settle_lab(pilot)
    await look("why not?")
    await press(pilot, "escape", "f9")
    doctor = await wait_screen(pilot, DoctorScreen)
    await settle_lab(pilot)
    await wait_for(pilot, lambda: doctor.report is not None)
    await look("doctor")
    await press(pilot, "escape", "f12")
    agent = await wait_screen(pilot, AgentViewScreen)
    await wait_for(pilot, lambda: agent.trace is not None and agent._shown_seq == agent._seq)
    await settle(pilot)
    await look("agent view")
    return found


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
@pytest.mark.parametrize("no_color", [False, True], ids=["256-colours", "NO_COLOR"])
async def test_every_text_is_readable(size, no_color, monkeypatch):
    if no_color:
        monkeypatch.setenv("NO_COLOR", "1")  # read when the app is built (Textual's Monochrome filter)
    else:
        monkeypatch.delenv("NO_COLOR", raising=False)
    async with browsing(size, params=SearchParams("", limit=5)) as (app, pilot):
        assert app.no_color == no_color
        problems = await walk_screens(pilot, wide=size[0] >= 110)
    assert not problems, "text under 4.5:1:\n" + "\n".join(problems)


# ─── bad news at least as visible as good news ───────────────────────────


def test_bad_news_roles_are_bold_and_never_dim():
    """Rich keeps bold and dim with NO_COLOR (the CLI), so the roles alone
    decide what stands out there: bad news is bold, never dim; good news is
    not bolder."""
    from rich.style import Style

    from tui.present.describe import ROLES

    for bad in ("bad", "down", "gone"):
        style = Style.parse(ROLES[bad])
        assert style.bold and not style.dim, bad
    for good in ("up", "new", "same"):
        assert not Style.parse(ROLES[good]).bold, good


def _cells_in(app, widget) -> list[Cell]:
    region = widget.region
    return [c for c in drawn_cells(app) if region.contains(c.x, c.y)]


@pytest.mark.parametrize("no_color", [False, True], ids=["256-colours", "NO_COLOR"])
async def test_compare_bad_news_is_at_least_as_visible_as_good_news(no_color, monkeypatch):
    """In the compare screen (B: fusion key rowid on "example": rows gone,
    moved down and new), ``gone``, ``↓n`` and the worsened / only-in-A
    counts are bold and contrast at least as much as ``new`` and the
    improved / only-in-B counts."""
    if no_color:
        monkeypatch.setenv("NO_COLOR", "1")
    else:
        monkeypatch.delenv("NO_COLOR", raising=False)
    async with browsing((120, 40), "example", params=SearchParams("", limit=5)) as (app, pilot):
        await press(pilot, "f7")
        screen = await wait_screen(pilot, CompareScreen)
        await settle_lab(pilot)
        screen.query_one("#b-key", Select).value = "rowid"
        await wait_for(pilot, lambda: screen.comparison.params_b.variant.fusion_key == "rowid")
        await settle_lab(pilot)
        screen.query_one("#b-key", Select).focus()
        await rendered(pilot)
        table = [c for c in _cells_in(app, screen.table) if c.y > screen.table.region.y + 1]  # not the cursor row
        markers = {c.text.strip(): c for c in table if c.text.strip() in ("gone", "↓1", "new")}
        assert set(markers) == {"gone", "↓1", "new"}, [c.text for c in table]
        counts = _cells_in(app, screen.query_one("#compare-counts"))
        after = {counts[i - 1].text.strip(): counts[i] for i in range(1, len(counts))}
        # like with like: the table's markers, the counts line's numbers (same background each)
        pairs = [
            ([markers["gone"], markers["↓1"]], markers["new"]),
            ([after["worsened"], after["only in A"]], after["only in B"]),
        ]
    assert [[c.text for c in bad] + [good.text] for bad, good in pairs] == [["gone", "↓1", "new"], ["2", "2", "2"]]
    for bad, good in pairs:
        for c in bad:
            assert c.bold and not good.bold, (c, good)
            assert c.contrast >= TEXT_MIN, c
            assert c.contrast >= good.contrast or not no_color, (c, good)


# ─── the selected row stands out, with NO_COLOR too ──────────────────────
#
# With NO_COLOR the block cursor's navy and grey become greys next to the
# panel's own, so a selected row differed from the rest by bold alone (and
# titles are bold anyway). With NO_COLOR tables draw their cursor row in
# reverse video and lists underline their highlighted option (Textual drops
# reverse from an option list's styles); with colour the theme's cursor stays.

#: Least contrast between a table's cursor row background and the other rows' with NO_COLOR.
SELECTION_MIN = 3.0


@dataclass(frozen=True)
class Run:
    """A run of text as drawn: its row, reverse video and underline, and
    its background (reverse video resolved)."""

    y: int
    text: str
    reverse: bool
    underline: bool
    bg: tuple[int, int, int]


def runs_in(app, widget) -> list[Run]:
    """The runs of text (not blank) drawn in ``widget``'s content region."""
    region = widget.content_region
    out = []
    for y, line in enumerate(screen_strips(app)):
        x = 0
        for text, style, control in (segment for strip in line for segment in strip):
            if control:
                continue
            if style is not None and text.strip() and region.contains(x, y):
                bg = style.color if style.reverse else style.bgcolor
                assert bg is not None, f"{text!r} at {x},{y} has no colour"
                out.append(Run(y, text, bool(style.reverse), bool(style.underline), on_256_colours(bg)))
            x += cell_len(text)
    return out


def cursor_lines(table: DataTable) -> set[int]:
    """The screen rows a table's cursor row takes."""
    top = table.content_region.y + table.header_height - round(table.scroll_y)
    rows = table.ordered_rows
    start = top + sum(r.height for r in rows[: table.cursor_row])
    return set(range(start, start + rows[table.cursor_row].height))


def highlighted_line(options: OptionList) -> set[int]:
    """The screen row of an option list's highlighted option (one-line options)."""
    assert options.highlighted is not None
    return {options.content_region.y + options.highlighted - round(options.scroll_y)}


def check_selection(app, widget, selected: set[int], where: str) -> None:
    """With NO_COLOR, the ``selected`` lines of ``widget``, and no other, are
    marked: a table's in reverse video, their background :data:`SELECTION_MIN`
    from the other rows'; a list's underlined. With colour nothing is
    reversed or underlined (the theme's cursor)."""
    runs = runs_in(app, widget)
    on = [r for r in runs if r.y in selected]
    off = [r for r in runs if r.y not in selected]
    assert on and off, (where, selected, runs)
    if not app.no_color:
        assert not any(r.reverse or r.underline for r in runs), (where, [r for r in runs if r.reverse or r.underline])
        return
    mark = "reverse" if isinstance(widget, DataTable) else "underline"
    assert all(getattr(r, mark) for r in on), (where, mark, [r.text for r in on if not getattr(r, mark)])
    assert not any(getattr(r, mark) for r in off), (where, mark, [r.text for r in off if getattr(r, mark)])
    if mark == "reverse":
        for a in on:
            for b in off:
                assert contrast_ratio(a.bg, b.bg) >= SELECTION_MIN, (where, a, b)


@pytest.mark.parametrize("no_color", [False, True], ids=["256-colours", "NO_COLOR"])
async def test_the_selected_row_stands_out(no_color, monkeypatch):
    """The results table (focused and not), the rank flow's table and the
    why-not? matches (focused and not): with NO_COLOR the selected row is
    marked by more than bold."""
    if no_color:
        monkeypatch.setenv("NO_COLOR", "1")
    else:
        monkeypatch.delenv("NO_COLOR", raising=False)
    async with browsing((80, 24), params=SearchParams("", limit=5)) as (app, pilot):
        assert app.no_color == no_color
        await search_for(pilot, "example")
        table = app.browser.results.table
        await press(pilot, "down", "down")
        await wait_for(pilot, lambda: app.focused is table and table.cursor_row == 1)
        await rendered(pilot)
        check_selection(app, table, cursor_lines(table), "results, focused")
        await press(pilot, "ctrl+l")
        await rendered(pilot)
        check_selection(app, table, cursor_lines(table), "results, the query focused")
        await press(pilot, "f5")
        flow = await wait_screen(pilot, FlowScreen, focused=False)
        await press(pilot, "down", "down")
        await rendered(pilot)
        flow_table = flow.query_one("#flow-table-0", DataTable)
        check_selection(app, flow_table, cursor_lines(flow_table), "rank flow")
        await press(pilot, "escape")
        # the lab rule puts focus on the pane; / takes it back to the query box, where F8
        # opens the finder, not a chunk
        await focus_left_the_query(pilot)
        await press(pilot, "/")
        await wait_for(pilot, lambda: isinstance(app.focused, Input) and app.focused.id == "query")
        await press(pilot, "f8")
        why = await wait_screen(pilot, WhyScreen)
        await settle_lab(pilot)
        await press(pilot, "down", "down")
        options = why.query_one("#why-list", OptionList)
        await wait_for(pilot, lambda: app.focused is options and options.highlighted == 1)
        await rendered(pilot)
        check_selection(app, options, highlighted_line(options), "why not? matches, focused")
        why.query_one("#why-find").focus()
        await rendered(pilot)
        check_selection(app, options, highlighted_line(options), "why not? matches, the finder focused")
