"""The two lines under the query box: the sanitised Porter/trigram queries
with the stems, and the pinned chunk's line. Both fit their width: the
queries always both show (the stems go first, then each query is cut in the
middle), the pinned line keeps the fate (the title is cut in the middle),
and every cut shows "…". Pure layout functions, then Pilot on the sample
corpus at the sizes a newcomer trial found them cut."""

from __future__ import annotations

import pytest
from rich.cells import cell_len

from engine import Store
from tui.browser.screens.params import ParamsChange
from tui.browser.widgets.pinned_line import PinnedParts, first_line, pinned_text
from tui.browser.widgets.query_box import QueryParts, fit_queries
from tui.present.cut import terms_cut

from .conftest import browsing, plain, screen_lines, search_for, settle, wait_for

FIVE = '"throttled" OR "producers" OR "partition" OR "replication" OR "quorum"'
STEMS = ("throttled → throttl", "producers → produc", "partition → partit", "replication → replic")


def lines_of(text) -> list[str]:
    return text.plain.split("\n")


# ── the layout functions ─────────────────────────────────────────────────


def test_terms_cut_keeps_whole_terms_from_both_ends():
    assert terms_cut(FIVE, 200) == FIVE
    assert terms_cut(FIVE, 43) == '"throttled" OR "producers" OR … OR "quorum"'
    assert terms_cut(FIVE, 42) == '"throttled" OR … OR "quorum"'
    assert terms_cut(FIVE, 30) == '"throttled" OR … OR "quorum"'
    assert terms_cut(FIVE, 16) == '"throttled" OR …'
    short = terms_cut(FIVE, 8)  # not one term fits: its first and last characters
    assert short.startswith('"th') and short.endswith('m"') and "…" in short and cell_len(short) <= 8
    assert terms_cut('"a" "bb" "ccc" "dddd"', 14) == '"a" … "dddd"'  # the AND form: spaces between terms


def test_queries_that_fit_are_left_whole():
    parts = QueryParts('"write" OR "quorum"', '"write" OR "quorum"')
    assert lines_of(fit_queries(parts, 78)) == ['porter "write" OR "quorum" · trigram "write" OR "quorum"']


@pytest.mark.parametrize("width", [116, 78, 58, 40, 24])
def test_both_queries_always_show_and_every_cut_is_marked(width):
    parts = QueryParts(FIVE, FIVE, STEMS)
    lines = lines_of(fit_queries(parts, width))
    text = " ".join(lines)
    assert len(lines) <= 2 and all(cell_len(line) <= width for line in lines), lines
    assert "porter " in text and " · trigram " in text
    assert text.count('"throttled"') == 2 or text.count('"thr') == 2  # both queries, each cut in the middle
    if text.replace("\n", " ") != f"porter {FIVE} ({', '.join(STEMS)}) · trigram {FIVE}":
        assert "…" in text


def test_the_stems_go_before_the_queries_are_cut():
    parts = QueryParts(FIVE, FIVE, STEMS)
    text = " ".join(lines_of(fit_queries(parts, 116)))
    assert text.count(FIVE) == 2  # both queries whole
    assert "throttled → throttl" in text and "…)" in text  # the stem list ends with the cut mark
    narrower = " ".join(lines_of(fit_queries(parts, 78)))
    assert "(…)" in narrower and "→" not in narrower  # every stem gone, marked
    assert narrower.count('"quorum"') == 2  # each query keeps its last term


def test_too_narrow_even_for_the_shortest_queries_cuts_the_end():
    lines = lines_of(fit_queries(QueryParts(FIVE, FIVE, STEMS), 10))
    assert len(lines) == 2 and lines[-1].endswith("…") and all(cell_len(line) <= 10 for line in lines)


def test_the_pinned_title_is_cut_in_the_middle_so_the_fate_fits():
    parts = PinnedParts(
        57,
        "left at Fusion (RRF): merged into row 56 (same source::title)",
        "ferryctl command reference > ferryctl publish > Example",
        "fusion key rowid would return it at #3",
    )
    whole = first_line(parts, 200)
    assert whole == (
        "▸ pinned row 57 ferryctl command reference > ferryctl publish > Example: "
        "left at Fusion (RRF): merged into row 56 (same source::title)"
    )
    line = first_line(parts, 116)
    assert cell_len(line) == 116 and line.endswith(": left at Fusion (RRF): merged into row 56 (same source::title)")
    assert line.startswith("▸ pinned row 57 ferryc … > ferryctl publish > Example: ")  # the last headings stay
    text = lines_of(pinned_text(parts, 116))
    assert text == [line, "  fusion key rowid would return it at #3"]


def test_the_pinned_title_keeps_its_least_share_and_the_fates_end_is_cut():
    """Issue 24: at 80x24 a long fate left the title ``…`` (``pinned row 33
    …: left at Candidate pool …``): the title keeps at least TITLE_LEAST
    cells (a quarter of the width if less), its last heading first, and the
    fate's end is cut between words."""
    parts = PinnedParts(139, "left at Trim: cut by the trim (#2 > limit 1)", "Design decisions > Refuse writes")
    assert (
        first_line(parts, 200)
        == "▸ pinned row 139 Design decisions > Refuse writes: left at Trim: cut by the trim (#2 > limit 1)"
    )
    (line,) = lines_of(pinned_text(parts, 70))
    assert line == "▸ pinned row 139 …Refuse writes: left at Trim: cut by the trim (#2 > …"
    narrow = lines_of(pinned_text(parts, 40))
    assert narrow[0] == "▸ pinned row 139 …se writes: left at …"  # between words, within 40 cells
    pool = PinnedParts(
        33,
        "left at Candidate pool: ranked #5 by fusion, beyond the pool of 3 (the limit)",
        "Indexing > Incremental updates > What went well",
    )
    assert lines_of(pinned_text(pool, 78)) == [
        "▸ pinned row 33 …What went well: left at Candidate pool: ranked #5 by fusion,…"
    ]
    long_second = lines_of(pinned_text(PinnedParts(1, "#1 in the answer", "T", "x" * 80), 40))
    assert long_second[1] == "  " + "x" * 37 + "…"


def test_the_pinned_lines_end_is_cut_between_words_never_inside_a_number():
    """A cut inside a word misleads most in a number: "rank 19" cut to
    "rank 1…". The cut goes back to the space before the word, unless that
    would drop more than half of what fits (one long word is cut inside)."""
    fate = "left at Retrieve: not retrieved: it matches at bm25 rank 19, beyond the 10 rows fetched"
    parts = PinnedParts(69, fate)
    for width in range(30, 110):
        (first,) = lines_of(pinned_text(parts, width))
        assert cell_len(first) <= width
        if first.endswith("…"):
            kept = first[: -len("…")][len("▸ pinned row 69: ") :]
            assert fate.startswith(kept), (width, first)
            assert kept.endswith(" ") or fate[len(kept)] == " ", (width, first)  # between words
            assert "rank 1…" not in first
    assert (
        lines_of(pinned_text(parts, 76))[0]
        == "▸ pinned row 69: left at Retrieve: not retrieved: it matches at bm25 rank …"
    )
    assert lines_of(pinned_text(PinnedParts(1, "#1 in the answer", "T", "x" * 80), 40))[1] == "  " + "x" * 37 + "…"


# ── in the browser ──────────────────────────────────────────────────────


def drawn(app, widget) -> list[str]:
    """The rows of the screen ``widget`` covers, inside its padding."""
    region = widget.content_region
    rows = screen_lines(app)[region.y : region.bottom]
    return [row[region.x : region.right].rstrip() for row in rows]


@pytest.mark.parametrize(
    "size, query, last",
    [
        ((80, 24), "throttled producers partition replication quorum", '"quorum"'),
        ((120, 40), "publish partition-key example throttled producer", '"producer"'),
    ],
    ids=["80x24", "120x40"],
)
async def test_the_sanitised_queries_fit_and_both_show(sample_db, size, query, last):
    async with browsing(size, query, store=Store.open_readonly(sample_db), store_label="sample") as (app, pilot):
        line = app.browser.query_one("#sanitised")
        rows = drawn(app, line)
        assert len(rows) == 2 and rows == plain(line).rstrip("\n").split("\n")
        text = " ".join(rows)
        porter, _, trigram = text.partition(" · trigram ")
        assert porter.startswith("porter ") and trigram, text
        assert porter.split(" (")[0].endswith(last) and trigram.endswith(last)  # each query's end is there
        assert "…" in text  # something was cut, and it says so


async def test_the_sanitised_queries_follow_a_resize(sample_db):
    async with browsing((120, 40), store=Store.open_readonly(sample_db), store_label="sample") as (app, pilot):
        query = "throttled producers partition replication quorum"
        await search_for(pilot, query)
        line = app.browser.query_one("#sanitised")
        five = '"throttled" OR "producers" OR "partition" OR "replication" OR "quorum"'
        assert plain(line).replace("\n", " ").count(five) == 2  # at 120 columns both queries are whole
        await pilot.resize_terminal(60, 18)
        await wait_for(pilot, lambda: " OR … OR " in plain(line), what="the line refitted to 60 columns")
        await settle(pilot)
        rows = drawn(app, line)
        assert len(rows) == 2 and " · trigram " in " ".join(rows)


async def pin(pilot, rowid: int, shows: str):
    """Pin chunk ``rowid``; wait until the pinned line shows ``shows`` and is drawn; returns the line."""
    browser = pilot.app.browser
    browser.pin(rowid)
    await settle(pilot)
    line = browser.pinned_line
    await wait_for(pilot, lambda: shows in plain(line), what=f"the pinned line to show {shows!r}")
    await settle(pilot)
    return line


async def test_the_pinned_line_keeps_the_fate_at_120_columns(sample_db):
    async with browsing(
        (120, 40),
        "publish partition-key example throttled producer",
        store=Store.open_readonly(sample_db),
        store_label="sample",
    ) as (app, pilot):
        line = await pin(pilot, 57, "would return it")
        first, second = drawn(app, line)
        assert first.startswith("▸ pinned row 57 ferryc")
        assert first.endswith("> Example: left at Fusion (RRF): merged into row 56 (same source::title)")
        assert "…" in first  # the title's middle
        assert second == "  fusion key rowid would return it at #3"


async def test_the_pinned_line_at_60x18(sample_db):
    async with browsing(
        (60, 18), "replication quorum write", store=Store.open_readonly(sample_db), store_label="sample"
    ) as (app, pilot):
        browser = app.browser
        line = await pin(pilot, 139, "in the answer")
        [first] = drawn(app, line)  # returned: no counterfactual
        # the title is cut (its last heading alone is too long: its end stays); the fate is whole
        assert first.startswith("▸ pinned row 139 …") and first.endswith("the write quorum: #3 in the answer")
        assert cell_len(first) == line.content_region.width  # the title takes the room left, no more
        # a fate too long for 58 cells even without the title: the title keeps its least share
        # (a quarter of the width: its last heading's end), the fate's end is cut
        browser.update_params(ParamsChange(limit=2))
        await settle(pilot)
        await wait_for(pilot, lambda: "would return it" in plain(line), what="the counterfactual")
        await settle(pilot)
        first, second = drawn(app, line)
        assert first.startswith("▸ pinned row 139 … write quorum: left at Candidate pool:") and first.endswith(" …")
        assert line.content_region.width // 2 <= cell_len(first) <= line.content_region.width  # cut between words
        assert second == "  limit 3 would return it at #3"
