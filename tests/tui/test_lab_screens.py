"""The what-if lab in the browser: compare (F7), why not? (F8) and doctor
(F9), with Pilot on the parity corpus, plus SVG snapshots at 80x24.

Regenerate the snapshots after an intended change with
``pytest tests/tui/test_lab_screens.py --snapshot-update``.
"""

from __future__ import annotations

import pytest
from textual.widgets import DataTable, Input, OptionList, Select

from engine import SearchParams
from engine.pipeline.variants import Variant
from tui.browser.screens.params import ParamsChange
from tui.present.describe import marker_label
from tui.browser.screens.compare import CompareScreen, counts_text, variant_from_form
from tui.browser.screens.doctor import DoctorScreen
from tui.browser.link import ChunkEntry
from tui.browser.screens.why import WhyScreen, match_chunks

from .conftest import (
    focus_left_the_query,
    browsing,
    build_app,
    notifications,
    plain,
    press,
    processed,
    rendered,
    run_command,
    search_for,
    settle,
    type_text,
    wait_for,
    wait_screen,
)

WIDE = (120, 40)
NARROW = (80, 24)


async def settle_lab(pilot, strict: bool = True) -> None:
    """Wait until every worker has finished and (``strict``) the lab
    screen on top shows the result of its latest request."""
    app = pilot.app
    await settle(pilot)
    screen = app.screen
    for attr in ("_seq", "_find_seq") if strict else ():
        shown = {"_seq": "_shown_seq", "_find_seq": "_find_shown"}[attr]
        if hasattr(screen, attr):
            await wait_for(
                pilot,
                lambda shown=shown, attr=attr: getattr(screen, shown) >= getattr(screen, attr),
                what=f"{type(screen).__name__}.{attr} to be shown",
            )


def table_rows(screen: CompareScreen) -> list[list[str]]:
    table = screen.query_one("#compare-table", DataTable)
    return [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]


async def open_compare(pilot, query: str) -> CompareScreen:
    await search_for(pilot, query)
    await press(pilot, "f7")
    screen = await wait_screen(pilot, CompareScreen)
    await settle_lab(pilot)
    return screen


# ─── compare ─────────────────────────────────────────────────────────────


async def test_compare_rowid_key_brings_back_merged_rows():
    async with browsing(NARROW, params=SearchParams("", limit=5)) as (app, pilot):
        screen = await open_compare(pilot, "example")
        # B = the reference: both runs agree
        screen.query_one("#b-key", Select).value = "source-title"
        await settle_lab(pilot)
        assert screen.comparison.counts.identical
        assert "same answer, same order" in plain(screen.query_one("#compare-notes"))
        # B = key=rowid: the rows merged by the source::title collision come back as "new"
        screen.query_one("#b-key", Select).value = "rowid"
        await settle_lab(pilot)
        cmp = screen.comparison
        assert cmp.params_b.variant == Variant(fusion_key="rowid") and cmp.params_a.variant.is_reference
        assert cmp.params_b.query == "example" and cmp.params_b.limit == 5
        rows = table_rows(screen)
        markers = [r[2] for r in rows]
        assert markers.count("new") == 2 and "gone" in markers and "=" in markers
        new_rows = {r[3] for r in rows if r[2] == "new"}
        assert new_rows == {"46", "51"}
        assert any(m.startswith("↓") for m in markers)
        counts = plain(screen.query_one("#compare-counts"))
        assert "improved 0 · worsened 2 · unchanged 1 · only in A 2 · only in B 2" in counts
        assert "B key=rowid" in plain(screen.query_one("#compare-title"))
        assert "overlap 0.60" in plain(screen.query_one("#compare-notes"))


async def test_compare_number_fields_and_a_spec():
    async with browsing(NARROW) as (app, pilot):
        screen = await open_compare(pilot, "cache")
        screen.query_one("#b-key", Select).value = "source-title"
        screen.query_one("#b-rerank", Select).value = "before-trim"
        await settle_lab(pilot)
        pool = screen.query_one("#b-pool", Input)
        pool.focus()
        await wait_for(pilot, lambda: app.focused is pool)
        await type_text(pilot, "20")
        # the fields are read 0.2 s after typing stops
        await wait_for(pilot, lambda: screen.comparison.params_b.variant.pool_size == 20)
        await settle_lab(pilot)
        assert screen.comparison.params_b.variant == Variant(rerank="before-trim", pool_size=20)
        assert screen.comparison.trace_b.pool_size == 20
        # a bad A spec is refused in words and nothing is re-run
        shown = screen.comparison
        spec = screen.query_one("#a-spec", Input)
        spec.value = "rerank=sideways"
        error = screen.query_one("#compare-error")
        await wait_for(pilot, lambda: error.display)
        await settle_lab(pilot)
        assert error.display and "A not applied" in plain(error) and "sideways" in plain(error)
        assert screen.comparison is shown and screen.comparison.params_a.variant.is_reference
        spec.value = "rrf_k=10"
        await wait_for(pilot, lambda: not error.display)
        await wait_for(pilot, lambda: screen.comparison.params_a.variant == Variant(rrf_k=10))
        await settle_lab(pilot)
        # the variants are kept for the next opening
        await press(pilot, "escape")
        await wait_for(pilot, lambda: app.screen is app.browser)
        assert app.compare_variants == (Variant(rrf_k=10), Variant(rerank="before-trim", pool_size=20))


async def test_compare_row_opens_why_under_the_run_that_lacks_it():
    async with browsing(NARROW, params=SearchParams("", limit=5)) as (app, pilot):
        screen = await open_compare(pilot, "example")
        screen.query_one("#b-key", Select).value = "rowid"
        await settle_lab(pilot)
        table = screen.query_one("#compare-table", DataTable)
        new_index = next(i for i, r in enumerate(screen.comparison.rows) if r.marker == "new")
        table.focus()
        table.move_cursor(row=new_index)
        await wait_for(pilot, lambda: app.focused is table and table.cursor_row == new_index)
        await press(pilot, "enter")
        why = await wait_screen(pilot, WhyScreen)
        await settle_lab(pilot)
        assert why.params.variant.is_reference  # a "new" chunk is explained under A
        assert why.explanations and why.explanations[0].reason == "merged"
        assert "merged" in plain(why.query_one("#why-text"))
        await press(pilot, "escape")
        await wait_for(pilot, lambda: app.screen is screen and app.focused is table)


async def test_compare_opens_on_the_table_and_enter_asks_why():
    """F7 opens with the table focused: Enter on a row asks why at once (it
    used to open on B's first dropdown, where Enter did nothing)."""
    async with browsing(NARROW, params=SearchParams("", limit=5)) as (app, pilot):
        screen = await open_compare(pilot, "example")
        assert app.focused is screen.table and screen.table.cursor_row == 0
        await press(pilot, "enter")
        why = await wait_screen(pilot, WhyScreen)
        await settle_lab(pilot)
        assert why.explanations and why.explanations[0].chunk.rowid == screen.comparison.rows[0].rowid
        await press(pilot, "escape")
        await wait_for(pilot, lambda: app.screen is screen and app.focused is screen.table)


@pytest.mark.parametrize("size", [NARROW, WIDE], ids=["80x24", "120x40"])
async def test_compare_cuts_titles_in_the_middle_and_shows_boosts_when_wide(size):
    """Titles are cut in the middle and keep their last heading; every row
    reads differently; at 120 columns the fused scores and the rerank
    boosts of A and B are there, as in the CLI."""
    async with browsing(size, params=SearchParams("", limit=5)) as (app, pilot):
        screen = await open_compare(pilot, "installing linux verify")
        screen.query_one("#b-rerank", Select).value = "off"
        await wait_for(pilot, lambda: screen.comparison.params_b.variant.rerank == "off")
        await settle_lab(pilot)
        await rendered(pilot)
        table = screen.table
        columns = [str(c.label) for c in table.columns.values()]
        details = ["rrf A", "rrf B", "boost A", "boost B"]
        if size == WIDE:
            assert columns[-4:] == details
            boosts = {r[3]: r[-1] for r in table_rows(screen)}
            assert boosts["64"] == "—" or float(boosts["64"]) == 0.0  # rerank off: no boost in B
        else:
            assert not set(details) & set(columns)
        rows = table_rows(screen)
        title = columns.index("title")
        full = {str(r.rowid): r.title for r in screen.comparison.rows}
        for r in rows:
            shown = r[title]
            last = full[r[3]].split(" > ")[-1]
            assert shown == full[r[3]] or ("…" in shown and shown.endswith("> " + last)), shown
        assert any("…" in r[title] for r in rows)  # the 81-character title of row 64 is cut at both sizes
        assert len({tuple(r) for r in rows}) == len(rows)


async def test_compare_follows_a_palette_parameter_change():
    async with browsing(NARROW) as (app, pilot):
        screen = await open_compare(pilot, "example")
        app.browser.update_params(ParamsChange(limit=5))
        await wait_for(pilot, lambda: screen.comparison.params_a.limit == 5)
        await settle_lab(pilot)
        assert screen.comparison.params_a.limit == 5 and screen.comparison.params_b.limit == 5
        assert "limit 5" in plain(screen.query_one("#compare-title"))


async def test_compare_empty_query_says_why():
    async with browsing(NARROW) as (app, pilot):
        await press(pilot, "f7")
        screen = await wait_screen(pilot, CompareScreen)
        await settle_lab(pilot)
        assert not screen.table.display
        text = plain(screen.query_one("#compare-empty"))
        assert "Neither run returned anything" in text and "A:" in text


async def test_compare_failure_becomes_a_notification():
    from engine import search

    calls = []

    def flaky(store, params, conn=None):
        calls.append(params)
        if not params.variant.is_reference:
            raise RuntimeError("variant exploded")
        return search(store, params, conn=conn)

    async with browsing(NARROW, "cache", search_fn=flaky) as (app, pilot):
        await press(pilot, "f7")
        screen = await wait_screen(pilot, CompareScreen)
        await settle_lab(pilot, strict=False)
        await wait_for(
            pilot, lambda: any("variant exploded" in n.message and n.severity == "error" for n in notifications(app))
        )
        assert app.screen is screen and app.is_running
        assert screen.query_one("#compare-box").border_subtitle == "compare failed"
        assert "Compare failed: variant exploded" in plain(screen.query_one("#compare-empty"))


# ─── compare: the query file, most changed first ─────────────────────────


@pytest.fixture
def sample_queried(sample_file):
    """The sample corpus in a store file, docs/demo-queries.json named as its query file."""
    from engine.store.userdata import remember_query_file

    from ..conftest import DEMO_QUERIES_FILE

    remember_query_file(sample_file, DEMO_QUERIES_FILE)
    return sample_file


async def test_compare_f6_sorts_the_query_file_by_divergence_and_enter_opens_one(sample_queried):
    """F6 lists the store's query file under A and B, lowest RBO first (then
    Jaccard, then file order), with the numbers ``compare --queries --json``
    gives; Enter on a query shows its chunks; F6 goes back to the queries."""
    import json

    from typer.testing import CliRunner

    from engine import Store
    from tui.cli import app as cli

    from ..conftest import DEMO_QUERIES_FILE as queries

    r = CliRunner().invoke(
        cli, ["compare", "--queries", str(queries), "--db", str(sample_queried), "--b", "pool=40", "--json"]
    )
    assert r.exit_code == 0, r.output
    per_query = json.loads(r.output)["queries"]
    want = sorted(range(len(per_query)), key=lambda i: (per_query[i]["rbo"], per_query[i]["jaccard"], i))
    assert per_query[want[0]]["rbo"] < 1  # pool=40 changes some answers: the order is not the file's
    app = build_app(store=Store.open_readonly(sample_queried), store_label="sample")
    app.compare_variants = (Variant(), Variant(pool_size=40))
    async with app.run_test(size=WIDE) as pilot:
        screen = await open_compare(pilot, "write quorum")
        await press(pilot, "f6")
        await wait_for(pilot, lambda: screen.queries_table.display, what="the queries table")
        table = screen.queries_table
        rows = [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]
        assert [row[0] for row in rows] == [per_query[i]["id"] for i in want]
        assert [row[-2:] for row in rows] == [
            [f"{per_query[i]['rbo']:.2f}", f"{per_query[i]['jaccard']:.2f}"] for i in want
        ]
        assert screen.query_one("#compare-box").border_title == "Queries, most changed first"
        await wait_for(pilot, lambda: table.has_focus, what="the queries table to take the focus")
        await press(pilot, "down", "enter")  # the second most changed
        second = per_query[want[1]]
        await wait_for(pilot, lambda: screen.view == "chunks" and screen.table.display, what="its chunks")
        assert screen.comparison.params_a.query == second["query"]
        assert screen.params.query == second["query"] and repr(second["query"]) in plain(
            screen.query_one("#compare-title")
        )
        assert f"RBO {second['rbo']:.2f}" in plain(screen.query_one("#compare-notes"))
        await press(pilot, "f6")
        await wait_for(pilot, lambda: screen.queries_table.display, what="the queries again")
        assert screen.queries_table.cursor_row == 1


async def test_compare_f6_without_a_query_file_says_how_to_name_one():
    async with browsing(NARROW) as (app, pilot):
        screen = await open_compare(pilot, "example")
        await press(pilot, "f6")
        await wait_for(pilot, lambda: "No query file" in plain(screen.query_one("#compare-empty")), what="the notice")
        assert not screen.queries_table.display and not screen.table.display
        await press(pilot, "f6")
        await wait_for(pilot, lambda: screen.table.display, what="the chunks again")


def test_marker_labels_and_counts_are_words():
    from engine.lab.compare import ChunkComparison, CompareCounts

    def row(a, b, marker):
        return ChunkComparison(1, 1, "s", "t", "prose", a, b, marker)

    assert [
        marker_label(row(3, 1, "up")),
        marker_label(row(1, 4, "down")),
        marker_label(row(2, 2, "same")),
        marker_label(row(None, 1, "new")),
        marker_label(row(1, None, "gone")),
    ] == ["↑2", "↓3", "=", "new", "gone"]
    text = counts_text(CompareCounts(1, 2, 3, 4, 5), 0.5).plain
    assert text == "improved 1 · worsened 2 · unchanged 3 · only in A 4 · only in B 5 · overlap 0.50"
    assert variant_from_form(
        {"key": "rowid", "rerank": "on", "fuzzy": "fallback", "retrievers": "both"},
        {"rrf_k": "", "fts_limit": "", "pool": "7", "pool_sessions": ""},
    ) == Variant(fusion_key="rowid", pool_size=7)
    with pytest.raises(ValueError, match="fts_limit"):
        variant_from_form({}, {"fts_limit": "-3"})


# ─── why not? ────────────────────────────────────────────────────────────


async def test_why_not_for_a_chunk_removed_by_the_session_filter():
    async with browsing(NARROW, "cache", params=SearchParams("", sessions=("sess-A",))) as (app, pilot):
        removed = app.browser.trace.first.filter.removed[0]
        await press(pilot, "f8")
        screen = await wait_screen(pilot, WhyScreen)
        await settle_lab(pilot)
        assert app.focused is screen.query_one("#why-find", Input)
        await type_text(pilot, removed.title)
        await settle_lab(pilot)
        options = screen.query_one("#why-list", OptionList)
        index = next(i for i, e in enumerate(screen.matches) if e.rowid == removed.rowid)
        assert index < 5  # typing the title finds it near the top
        await press(pilot, "down")
        await wait_for(pilot, lambda: app.focused is options)
        options.highlighted = index
        await press(pilot, "enter")
        await settle_lab(pilot)
        (exp,) = screen.explanations
        assert exp.chunk.rowid == removed.rowid
        assert exp.reason == "session-filter" and exp.stage == "filter"
        text = plain(screen.query_one("#why-text"))
        assert "reason session-filter" in text and "Session filter" in text
        assert "removed by the session filter" in text and "sess-A" in text
        await press(pilot, "escape")
        await focus_left_the_query(pilot)


async def test_why_finder_pins_the_highlighted_match_or_the_explained_chunk():
    async with browsing(NARROW, "cache") as (app, pilot):
        await press(pilot, "f8")
        screen = await wait_screen(pilot, WhyScreen)
        await settle_lab(pilot)
        await type_text(pilot, "row 46")  # p in the finder is text: nothing pinned
        await settle_lab(pilot)
        assert app.browser.pinned_rowid is None
        assert screen.query_one("#why-find", Input).value == "row 46"
        assert "p" not in app.active_bindings  # in the finder p is text: the footer does not offer it
        await press(pilot, "down")
        options = screen.query_one("#why-list", OptionList)
        await wait_for(pilot, lambda: app.focused is options)
        await wait_for(pilot, lambda: "p" in app.active_bindings and app.active_bindings["p"].enabled, what="p Pin")
        assert screen.matches[options.highlighted].rowid == 46
        await press(pilot, "p")
        await wait_for(pilot, lambda: app.browser.pinned_rowid == 46, what="row 46 pinned")
        assert any("Pinned" in n.title for n in notifications(app))
        # on the answer, p pins the chunk explained
        screen.explain(17)
        await settle_lab(pilot)
        await wait_for(pilot, lambda: [e.chunk.rowid for e in screen.explanations] == [17], what="row 17 explained")
        screen.query_one("#why-box").focus()
        await press(pilot, "p")
        await wait_for(pilot, lambda: app.browser.pinned_rowid == 17, what="row 17 pinned")
        await press(pilot, "escape")
        await wait_for(pilot, lambda: app.screen is app.browser)
        line = app.browser.query_one("#pinned-line")
        await settle(pilot)
        await wait_for(pilot, lambda: "pinned row 17" in plain(line), what="the pinned line")


async def why_of_the_second_result(pilot, focused: bool = True):
    """Select the second result, press F8: ``(its candidate, the why screen)``
    once the screen (``focused``: holding the focus) shows its answer."""
    app = pilot.app
    await press(pilot, "down", "down")  # query → results, second result
    second = app.browser.trace.final[1].candidate
    await wait_for(pilot, lambda: app.browser.journey.subject.key == second.key)
    await press(pilot, "f8")
    screen = await wait_screen(pilot, WhyScreen, focused=focused)
    await settle_lab(pilot)
    return second, screen


async def test_why_opened_on_a_chunk_focuses_the_answer_so_p_pins_it():
    async with browsing(NARROW, "cache") as (app, pilot):
        second, screen = await why_of_the_second_result(pilot, focused=False)
        assert app.focused is screen.query_one("#why-box")
        await press(pilot, "p")
        await wait_for(pilot, lambda: app.browser.pinned_rowid == second.rowid, what="the explained chunk pinned")
        assert screen.query_one("#why-find", Input).value == f"row {second.rowid}"  # not typed into


async def test_why_not_explains_the_selected_chunk_from_a_pane():
    async with browsing(NARROW, "cache") as (app, pilot):
        second, screen = await why_of_the_second_result(pilot)
        (exp,) = screen.explanations
        assert exp.chunk.rowid == second.rowid and exp.reason in ("returned", "outranked")
        assert "✓ in the answer at #2" in plain(screen.query_one("#why-text"))


async def test_why_finder_accepts_a_row_id_and_enter():
    async with browsing(NARROW, "heartbeat") as (app, pilot):
        await press(pilot, "f8")
        await wait_screen(pilot, WhyScreen)
        await settle_lab(pilot)
        await type_text(pilot, "row 46")
        await settle_lab(pilot)
        await press(pilot, "enter")
        await settle_lab(pilot)
        screen = app.screen
        assert screen.matches[0].rowid == 46
        assert screen.explanations[0].chunk.rowid == 46
        assert screen.explanations[0].reason == "no-term"


def test_match_chunks_ranks_words_anywhere_and_typos():
    entries = [
        ChunkEntry(1, "docs/configuration.md", "Configuration > Options > Example", "prose", ""),
        ChunkEntry(2, "config/tidewright.json", "name", "code", ""),
        ChunkEntry(3, "docs/faq.md", "FAQ > Why is my build slow?", "prose", "s"),
    ]
    assert [e.rowid for e in match_chunks("", entries)] == [1, 2, 3]
    assert match_chunks("config exmple", entries)[0].rowid == 1
    assert match_chunks("faq slow", entries)[0].rowid == 3
    assert match_chunks("#2", entries)[0].rowid == 2
    assert match_chunks("zzzz qqqq", entries) == []


# ─── doctor ──────────────────────────────────────────────────────────────


async def test_doctor_lists_fusion_key_collisions():
    async with browsing(NARROW) as (app, pilot):
        await press(pilot, "f9")
        screen = await wait_screen(pilot, DoctorScreen)
        await settle_lab(pilot)
        await wait_for(pilot, lambda: screen.report is not None)
        report = screen.report
        assert report is not None and len(report.collisions) == 8
        text = plain(screen.query_one("#doctor-text"))
        assert "⚠ 8 fusion keys shared by several chunks (12 chunks can be merged away" in text
        assert "Fusion-key collisions (8)" in text
        assert "docs/configuration.md::Configuration > Options > Example" in text and "46, 48, 51" in text
        assert "Chunks over 4096 bytes (3)" in text and "Empty or Untitled titles (5)" in text
        await press(pilot, "escape")
        await focus_left_the_query(pilot)


def test_doctor_renderable_shows_every_kind_of_finding():
    import io

    from rich.console import Console

    from engine import Store
    from engine.lab.doctor import diagnose
    from tui.browser.screens.doctor import doctor_renderable

    store = Store.create(":memory:")
    store.index_text("a.md", "# A\ntext\n# A\nagain\n# Untitled\nx\n", "markdown")
    store.index_text("b.md", "# B\n" + "word " * 1000 + "\n", "markdown")
    store.conn.execute("UPDATE sources SET chunk_count = 9 WHERE label = 'a.md'")
    for t in ("chunks",):
        store.conn.execute(
            f"INSERT INTO {t} (title, content, source_id, content_type, session_id) "
            "VALUES ('Lost', 'no source row', 99, 'prose', '')"
        )
    console = Console(width=100, file=io.StringIO(), record=True, color_system=None)
    console.print(doctor_renderable(diagnose(store), "test store"))
    text = console.export_text()
    assert "test store" in text
    assert "Fusion-key collisions (1)" in text and "a.md::A" in text
    assert "Chunks over 4096 bytes (1)" in text
    assert "Empty or Untitled titles (1)" in text
    assert "Counts that disagree with the rows stored" in text and "chunk_count" in text
    assert "orphan chunks" in text
    assert "⚠ 1 chunk without a source row" in text

    clean = Store.create(":memory:")
    clean.index_text("c.md", "# C\ntext\n", "markdown")
    console = Console(width=100, file=io.StringIO(), record=True, color_system=None)
    console.print(doctor_renderable(diagnose(clean)))
    assert "✓ No problems found." in console.export_text()


# ─── palette, keys, safety ───────────────────────────────────────────────


@pytest.mark.parametrize(
    "typed, screen_type",
    [
        ("compare with a variant", CompareScreen),
        ("why is chunk", WhyScreen),
        ("store diagnostics", DoctorScreen),
    ],
)
async def test_palette_opens_the_lab_screens(typed, screen_type):
    async with browsing(NARROW, "cache") as (app, pilot):
        await run_command(pilot, typed)
        await wait_screen(pilot, screen_type)
        await settle_lab(pilot)
        await press(pilot, "escape")
        await wait_for(pilot, lambda: app.screen is app.browser)


async def test_palette_compare_with_a_typed_spec():
    async with browsing(NARROW, "cache") as (app, pilot):
        await run_command(pilot, "compare rrf_k=5,rerank=off")
        screen = await wait_screen(pilot, CompareScreen)
        await settle_lab(pilot)
        assert screen.comparison.params_b.variant == Variant(rrf_k=5, rerank="off")
        assert screen.query_one("#b-rrf_k", Input).value == "5"
        assert screen.query_one("#b-rerank", Select).value == "off"


async def test_lab_keys_toggle_and_browser_keys_wait():
    async with browsing(NARROW, "cache") as (app, pilot):
        for key, cls in (("f7", CompareScreen), ("f8", WhyScreen), ("f9", DoctorScreen)):
            await press(pilot, key)
            await wait_screen(pilot, cls)
            await settle_lab(pilot)
            await press(pilot, "f2")  # browser keys are off on the lab screens
            await processed(pilot)
            assert isinstance(app.screen, cls)
            await press(pilot, key)  # the same key closes
            await wait_for(pilot, lambda: app.screen is app.browser)


async def test_lab_bindings_have_ids_and_tooltips():
    async with browsing(NARROW) as (app, pilot):
        await wait_for(pilot, lambda: app.browser is not None)
        for cls in (CompareScreen, WhyScreen, DoctorScreen):
            for b in cls.BINDINGS:
                assert b.id and b.tooltip, (cls.__name__, b)


async def test_a_key_pressed_right_after_closing_a_lab_screen_keeps_its_focus(monkeypatch):
    """Esc closes the rank flow, then Ctrl+L puts the query box in focus
    before the lab rule (focus to the pane) gets to run, as on a loaded
    machine: the rule must not take the focus away again (it did: typing then
    went to the results). The rule's check is held back until the key is
    handled, to make that order certain."""
    async with browsing(WIDE, "cache") as (app, pilot):
        browser = app.browser
        await press(pilot, "f5")
        await wait_for(pilot, lambda: app.screen is not browser, what="the rank flow to open")
        await settle_lab(pilot, strict=False)
        held = []
        real = app.call_after_refresh

        def holding(callback, *args, **kwargs):
            if getattr(callback, "__qualname__", "").endswith("_restore_focus.<locals>.check"):
                held.append((callback, args, kwargs))
                return True
            return real(callback, *args, **kwargs)

        monkeypatch.setattr(app, "call_after_refresh", holding)
        await press(pilot, "escape")
        await wait_for(pilot, lambda: app.screen is browser and held, what="the flow to close, its focus rule held")
        await press(pilot, "ctrl+l")
        await wait_for(pilot, lambda: app.focused is browser.query_box.input, what="Ctrl+L to focus the query")
        monkeypatch.setattr(app, "call_after_refresh", real)
        for callback, args, kwargs in held:
            callback(*args, **kwargs)
        await settle(pilot)
        assert app.focused is browser.query_box.input, app.focused
        # with no key after the close, the rule still applies
        await press(pilot, "f5")
        await wait_for(pilot, lambda: app.screen is not browser, what="the rank flow to open again")
        await settle_lab(pilot, strict=False)
        await press(pilot, "escape")
        await focus_left_the_query(pilot)


async def test_lab_screens_never_send_store_control_characters():
    from engine import Store

    store = Store.create(":memory:")
    store.index_text(
        "evil\x1b]0;title\x07.md",
        "# Cache \x1b[2J heading\n\ncache body\n\n# Cache \x1b[2J heading\n\nmore cache\n",
        "markdown",
        session_id="s\x1b[1m",
    )
    async with browsing(WIDE, store=store, store_label="evil") as (app, pilot):
        screen = await open_compare(pilot, "cache")
        shown = "\n".join(" ".join(r) for r in table_rows(screen))
        await press(pilot, "escape")
        # closing a lab screen puts focus on the pane (the lab rule); / takes it back to the
        # query box, where F8 opens the finder, not a chunk (waiting for the query's focus
        # right after Escape caught it only in passing, before the rule moved it: a flake)
        await focus_left_the_query(pilot)
        await press(pilot, "/")
        await wait_for(pilot, lambda: isinstance(app.focused, Input) and app.focused.id == "query")
        await press(pilot, "f8")
        why = await wait_screen(pilot, WhyScreen)
        await settle_lab(pilot)
        await type_text(pilot, "cache")
        await settle_lab(pilot)
        await press(pilot, "enter")
        await settle_lab(pilot)
        shown += plain(why.query_one("#why-text")) + "\n".join(
            str(why.query_one("#why-list", OptionList).get_option_at_index(i).prompt)
            for i in range(why.query_one("#why-list", OptionList).option_count)
        )
        await press(pilot, "escape", "f9")
        doctor = await wait_screen(pilot, DoctorScreen)
        await settle_lab(pilot)
        await wait_for(pilot, lambda: doctor.report is not None)
        shown += plain(doctor.query_one("#doctor-text"))
        assert "\x1b" not in shown and "\x07" not in shown
        assert "␛[2J" in shown


# ─── snapshots (80x24, no timings, fixed corpus) ─────────────────────────


def _compare_before(pilot_query: str, spec_key: str):
    async def run_before(pilot) -> None:
        await search_for(pilot, pilot_query)
        await press(pilot, "f7")
        screen = await wait_screen(pilot, CompareScreen)
        await settle_lab(pilot)
        screen.query_one("#b-key", Select).value = spec_key
        await wait_for(pilot, lambda: screen.comparison.params_b.variant.fusion_key == spec_key)
        await settle_lab(pilot)
        await rendered(pilot)

    return run_before


def test_compare_screen_snapshot(snap_compare):
    app = build_app(params=SearchParams("", limit=5))
    assert snap_compare(app, terminal_size=NARROW, run_before=_compare_before("example", "rowid"))


def test_doctor_screen_snapshot(snap_compare):
    async def run_before(pilot) -> None:
        await press(pilot, "f9")
        screen = await wait_screen(pilot, DoctorScreen)
        await settle_lab(pilot)
        await wait_for(pilot, lambda: screen.report is not None)
        await rendered(pilot)

    assert snap_compare(build_app(), terminal_size=NARROW, run_before=run_before)
