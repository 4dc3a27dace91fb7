"""The evaluation lab in the browser: query history (↑↓, ctrl+r), grading
(keys 0-3 in any pane), per-stage metrics, saved cases and their export."""

from __future__ import annotations

import json

import pytest

from engine import Store
from engine.lab.compare import params_for_entry
from engine.pipeline.variants import Variant
from engine.lab.qrels import default_qrels_path, read_qrels
from engine.store.userdata import store_file
from textual.widgets import DataTable, Static

from tui.browser.screens.params import ParamsChange
from tui.browser.screens.cases import CasesScreen
from tui.browser.screens.flow import FlowScreen
from tui.browser.screens.history import HistorySearchScreen

from .conftest import (
    browsing,
    screen_lines,
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


@pytest.fixture
def db(sample_file):
    """The sample corpus in a store file (per-store files need a path)."""
    return sample_file


def app_for(db, **kwargs):
    return build_app(store=Store.open_readonly(db), store_label="sample", **kwargs)


async def test_history_up_down_and_persisted(db):
    async with browsing((120, 40), app=app_for(db)) as (app, pilot):
        for q in ("write quorum", "retention", "throttling"):
            await search_for(pilot, q)
        box = app.browser.query_box
        await press(pilot, "ctrl+l", "up")
        assert box.value == "retention"  # the newest entry is the text already there
        await press(pilot, "up", "up")
        assert box.value == "write quorum"
        await press(pilot, "up")  # the oldest: stays
        assert box.value == "write quorum"
        await press(pilot, "down")
        assert box.value == "retention"
        await press(pilot, "down", "down")
        assert box.value == "throttling" and not app.browser.history_cursor.browsing
        await press(pilot, "down")  # not stepping: Down leaves the query box as before
        assert app.focused is app.browser.results.table
    data = json.loads(store_file(db, "history.json").read_text())
    assert data["queries"] == ["write quorum", "retention", "throttling"]
    again = app_for(db)
    async with again.run_test(size=(120, 40)) as pilot:
        await press(pilot, "up")
        assert again.browser.query_box.value == "throttling"


async def test_history_steps_through_the_history_as_it_was_while_each_step_is_searched(db):
    """Up with a pause after each step (longer than the debounce, so each
    query stepped to is searched): the search of a stepped query remembered
    the one shown before it, which reset the cursor and moved that query to
    the newest place, so Up alternated between the two newest queries.
    Stepping now walks the history as it was when stepping began."""
    queries = ("publish partition-key example", "consume example 2", "consumer lag")
    async with browsing((120, 40), app=app_for(db)) as (app, pilot):
        for q in queries:
            await search_for(pilot, q)
        browser = app.browser
        box = browser.query_box

        def searched(query: str) -> bool:
            return browser.trace is not None and browser.trace.params.query == query

        await press(pilot, "ctrl+l")
        seen = []
        for _ in range(3):
            await press(pilot, "up")
            await wait_for(pilot, lambda: searched(box.value), what="the stepped query's search")
            await settle(pilot)
            seen.append(box.value)
        assert seen == ["consume example 2", "publish partition-key example", "publish partition-key example"]
        for expected in ("consume example 2", "consumer lag", "consumer lag"):  # then the draft
            await press(pilot, "down")
            assert box.value == expected
            await wait_for(pilot, lambda: searched(box.value), what="the stepped query's search")
            await settle(pilot)
        assert not browser.history_cursor.browsing
        assert browser.state.history.entries == list(queries)  # stepping reordered nothing
        await press(pilot, "up", "up")
        assert box.value == "publish partition-key example"
        await press(pilot, "enter")  # the query kept is the newest now
        await settle(pilot)
        assert browser.state.history.entries == ["consume example 2", "consumer lag", "publish partition-key example"]


async def test_ctrl_r_searches_the_history(db):
    async with browsing((120, 40), app=app_for(db)) as (app, pilot):
        for q in ("write quorum", "retention", "consumer lag"):
            await search_for(pilot, q)
        await press(pilot, "ctrl+l", "ctrl+r")
        screen = await wait_screen(pilot, HistorySearchScreen)
        assert screen.matches == ["consumer lag", "retention", "write quorum"]  # all of them, newest first
        await press(pilot, *"wqm")  # fzf-style: the letters in order
        assert screen.matches == ["write quorum"]
        await press(pilot, "enter")
        await settle(pilot)
        assert app.browser.query_box.value == "write quorum"
        assert app.browser.trace.params.query == "write quorum"


async def test_the_history_keeps_queries_searched_as_typed(db, monkeypatch):
    """Issue 24: ctrl+r kept 2 of 8 queries searched (only Enter and leaving
    the box remembered one; searches run as you type) and opened with the
    box's text, "No match." for a query not remembered. A shown query is
    remembered once the box moves on to another (not while typing on or
    cutting it back), or when a dialog or ctrl+r opens over it."""
    from textual.widgets import Input

    import tui.browser.widgets.query_box as query_box

    monkeypatch.setattr(query_box, "DEBOUNCE_S", 0.01)  # 63 prefixes searched one by one: no pause needed
    app = app_for(db)
    queries = ["write quorum", "retention", "consumer lag", "throttling", "inflight", "kafka", "tombstone", "cache"]
    async with app.run_test(size=(80, 24)) as pilot:
        box = app.browser.query_box
        for q in queries:
            await press(pilot, "ctrl+l")
            for n in range(1, len(q) + 1):  # searched as typed: every prefix is shown on the way
                await type_text(pilot, q[n - 1])
                shown = q[:n]
                await wait_for(
                    pilot, lambda shown=shown: app.browser.trace is not None and app.browser.trace.params.query == shown
                )
            assert app.browser.trace.params.query == q
        await press(pilot, "ctrl+r")
        screen = await wait_screen(pilot, HistorySearchScreen)
        assert screen.query_one("#history-filter", Input).value == ""
        assert screen.matches == list(reversed(queries))
        assert box.value == "cache"


async def test_grading_in_every_pane_with_metrics(db):
    async with browsing((140, 45), "write quorum", app=app_for(db)) as (app, pilot):
        browser = app.browser
        await press(pilot, "down")  # results; the journey follows the top result
        top = browser.trace.final[0].candidate
        key = f"{top.source}::{top.title}"
        footer_keys = {b.key for _, b, enabled, *_ in app.active_bindings.values() if enabled}
        assert {"0", "1", "2", "3", "x"} <= footer_keys
        await press(pilot, "3")
        await wait_for(pilot, lambda: browser.judged is not None and browser.judged.grades, what="grades")
        # the query id is named as such, beside the query (an id such as "rerank" reads like a stage)
        assert (
            notifications(app)[-1].message
            == f"{top.title} · graded 3 highly relevant for query 'write quorum' (id write-quorum)"
        )
        qrels = read_qrels(default_qrels_path(db))
        assert qrels.judgments == {"write-quorum": {key: 3}}
        assert qrels.queries == {"write-quorum": "write quorum"}
        assert browser.focused is browser.results.table  # the digit graded, it did not switch panes
        # the badge is in the results and the inspector, the grade in the journey pane
        cell = browser.results.table.get_cell("1", "title")
        assert cell.plain.startswith("★3 ")
        rows = [o.prompt.plain for o in browser.inspector.options if not o.disabled]
        assert any(r.startswith("★3 ") for r in rows) and any(r.startswith("   ") for r in rows)
        assert browser.journey.border_subtitle == "graded 3 highly relevant"
        # the per-stage metrics table opens the inspector
        head = [browser.inspector.get_option_at_index(i).prompt.plain for i in range(10)]
        assert head[0].startswith("Judged: 1 chunk (1 relevant)")
        assert "nDCG@10" in head[1] and head[2].split()[0] == "porter"
        assert browser.judged.metrics["final"]["RR"] == 1.0
        # in the journey pane the digits grade the chunk it follows
        await press(pilot, "j")
        await wait_for(pilot, lambda: browser.focused is browser.journey)
        await press(pilot, "2")
        await wait_for(pilot, lambda: browser.journey.border_subtitle == "graded 2 relevant", what="grade 2")
        assert read_qrels(default_qrels_path(db)).judgments["write-quorum"][key] == 2
        await press(pilot, "x")
        await wait_for(pilot, lambda: browser.judged is not None and not browser.judged.grades, what="grade removed")
        assert not read_qrels(default_qrels_path(db)).judgments
        assert notifications(app)[-1].message.endswith("· grade removed for query 'write quorum' (id write-quorum)")
        # in the stage inspector: the highlighted candidate
        await press(pilot, "s")
        await wait_for(pilot, lambda: browser.focused is browser.inspector)
        await press(pilot, "down")
        await wait_for(pilot, lambda: browser.inspector.highlighted is not None)
        subject = browser.selected_chunk()
        assert subject is not None
        await press(pilot, "1")
        await wait_for(pilot, lambda: browser.judged is not None and browser.judged.grades, what="grade 1")
        assert browser.judged.grades == {subject.rowid: 1}
        assert browser.focused is browser.inspector


async def test_graded_chunks_carry_their_badge_in_the_flow_view(db):
    async with browsing((140, 45), "write quorum", app=app_for(db)) as (app, pilot):
        browser = app.browser
        await press(pilot, "down", "down")  # the second result
        second = browser.trace.final[1].candidate
        await press(pilot, "2")
        await wait_for(pilot, lambda: browser.judged is not None and browser.judged.grades, what="grade")
        await press(pilot, "f5")
        screen = await wait_screen(pilot, FlowScreen, focused=False)
        table = screen.query_one("#flow-table-0", DataTable)
        titles = {row.rowid: table.get_cell(f"0:{n}", "title").plain for n, row in enumerate(screen.flows[0].rows)}
        assert titles[second.rowid].startswith("★2 ")
        assert all(t.startswith("   ") for rowid, t in titles.items() if rowid != second.rowid)
        n = next(i for i, row in enumerate(screen.flows[0].rows) if row.rowid == second.rowid)
        table.move_cursor(row=n)
        detail = screen.query_one("#flow-detail", Static)
        await wait_for(pilot, lambda: "graded 2 relevant for this query" in str(detail.render()), what="the grade")


async def test_saved_cases_reopen_and_export(db, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    async with browsing((140, 45), "write quorum", app=app_for(db)) as (app, pilot):
        browser = app.browser
        await press(pilot, "down", "down")  # the second result is the pinned chunk
        second = browser.trace.final[1].candidate
        await press(pilot, "2")
        await wait_for(pilot, lambda: browser.judged is not None and browser.judged.grades, what="grade")
        browser.update_params(ParamsChange(limit=5))
        await settle(pilot)
        assert app.focused is browser.results.table
        await press(pilot, "down")  # the table's cursor went back to the top: the second row again
        await run_command(pilot, "Save this case")
        await wait_for(pilot, lambda: store_file(db, "cases.json").exists(), what="the saved case")
        cases = json.loads(store_file(db, "cases.json").read_text())["cases"]
        assert [(c["id"], c["query"], c["limit"]) for c in cases] == [("write-quorum", "write quorum", 5)]
        assert cases[0]["pinned"] == f"{second.source}::{second.title}"
        assert cases[0]["judgments"] == {f"{second.source}::{second.title}": 2}
        await search_for(pilot, "retention")
        browser.update_params(ParamsChange(limit=3))
        await settle(pilot)
        await run_command(pilot, "Saved cases")
        await wait_screen(pilot, CasesScreen)
        await press(pilot, "e")  # export
        exported = json.loads((tmp_path / "rankscope-cases.json").read_text())
        assert exported == [{"id": "write-quorum", "query": "write quorum", "limit": 5}]
        params_for_entry(exported[0], Variant())  # what rankscope batch / eval read
        assert read_qrels(tmp_path / "rankscope-cases.qrels.json").judgments == {
            "write-quorum": {f"{second.source}::{second.title}": 2}
        }
        await press(pilot, "enter")  # reopen
        await settle(pilot)
        await wait_for(
            pilot,
            lambda: browser.journey.subject is not None and browser.journey.subject.rowid == second.rowid,
            what="the pinned chunk",
        )
        assert browser.params.limit == 5 and browser.query_box.value == "write quorum"
        # reopened, the case's chunk is pinned (the line follows it) and selected (the cursor is on it)
        assert browser.pinned_rowid == second.rowid
        await wait_for(pilot, lambda: f"pinned row {second.rowid} " in plain(browser.pinned_line), what="pinned line")
        assert browser.results.table.cursor_row == 1


async def test_judgments_go_to_the_qrels_option_file(db, tmp_path):
    target = tmp_path / "mine.txt"
    async with browsing((120, 40), "throttling", app=app_for(db, qrels_path=target)) as (app, pilot):
        await press(pilot, "down", "1")
        await wait_for(pilot, lambda: target.exists(), what="the qrels file")
    assert target.read_text().startswith("throttling 0 docs/backpressure.md::")
    assert not default_qrels_path(db).exists()


async def test_an_unreadable_qrels_file_is_never_overwritten(db, tmp_path):
    target = tmp_path / "bad.txt"
    target.write_text("this is not qrels\n")
    async with browsing((120, 40), "throttling", app=app_for(db, qrels_path=target)) as (app, pilot):
        await press(pilot, "down", "1")
        await wait_for(
            pilot,
            lambda: any("not saved" in n.message for n in notifications(app)),
            what="the 'not saved' notification",
        )
    assert target.read_text() == "this is not qrels\n"


async def test_x_on_an_ungraded_chunk_writes_nothing(db):
    app = app_for(db)
    path = default_qrels_path(db)
    async with app.run_test(size=(120, 40)) as pilot:
        await search_for(pilot, "kafka broker")
        browser = app.browser
        await press(pilot, "down", "x")
        top = browser.trace.final[0].candidate
        await wait_for(pilot, lambda: any(n.title == "Not graded" for n in notifications(app)), what="the notice")
        assert notifications(app)[-1].message == (
            f"{top.title} · not graded for query 'kafka broker': no grade to remove"
        )
        assert not path.exists()  # no file with an empty entry for the query
        # with other judgments in the file, it is left as it was, byte for byte
        await press(pilot, "down", "1")  # the second result graded
        await wait_for(pilot, lambda: path.exists(), what="the judgments file")
        before = path.read_bytes()
        await press(pilot, "up", "x")  # the first result: not graded
        await wait_for(pilot, lambda: sum(n.title == "Not graded" for n in notifications(app)) == 2)
        await settle(pilot)
        assert path.read_bytes() == before
        assert read_qrels(path).judgments == {"kafka-broker": {browser.trace.final[1].candidate.key: 1}}


async def test_a_case_pins_the_p_pinned_chunk_and_reopening_follows_it(db, tmp_path, monkeypatch):
    """The p pin, not the selected chunk, is the case's chunk; reopened (from
    another pin), the case's chunk is pinned and selected, and on a narrow
    screen r then j keep the journey on it."""
    monkeypatch.chdir(tmp_path)
    async with browsing((80, 24), "write quorum", app=app_for(db)) as (app, pilot):
        browser = app.browser
        third = browser.trace.final[2].candidate
        await press(pilot, "down", "down", "down")  # the third result
        await wait_for(pilot, lambda: browser.selected_chunk().rowid == third.rowid)
        await press(pilot, "p")
        await press(pilot, "up", "up")  # the first result selected, the third one pinned
        await wait_for(pilot, lambda: browser.selected_chunk().rowid == browser.trace.final[0].candidate.rowid)
        await run_command(pilot, "Save this case")
        await wait_for(pilot, lambda: store_file(db, "cases.json").exists(), what="the saved case")
        [case] = json.loads(store_file(db, "cases.json").read_text())["cases"]
        assert case["pinned"] == third.key
        # another query, another pin
        await search_for(pilot, "retention")
        await press(pilot, "down")
        await wait_for(pilot, lambda: browser.selected_chunk() is not None)
        await press(pilot, "p")
        other = browser.pinned_rowid
        assert other != third.rowid
        await run_command(pilot, "Saved cases")
        await wait_screen(pilot, CasesScreen)
        await press(pilot, "enter")
        await settle(pilot)
        await wait_for(pilot, lambda: browser.pinned_rowid == third.rowid, what="the case's chunk pinned")
        line = browser.pinned_line
        await wait_for(pilot, lambda: f"pinned row {third.rowid} " in plain(line), what="the pinned line")
        assert f"row {other} " not in plain(line)
        assert browser.journey.subject.rowid == third.rowid
        assert browser.results.table.cursor_row == 2
        # narrow: the results, then the journey: still the case's chunk
        await press(pilot, "r")
        await wait_for(pilot, lambda: app.focused is browser.results.table)
        await press(pilot, "j")
        await wait_for(pilot, lambda: app.focused is browser.journey)
        await processed(pilot)
        assert browser.journey.subject.rowid == third.rowid


async def test_exporting_cases_never_overwrites(db, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "rankscope-cases.json").write_text("mine\n")
    (tmp_path / "rankscope-cases-2.qrels.json").write_text("mine too\n")
    (tmp_path / "rankscope-cases-3.json").symlink_to(tmp_path / "nowhere")  # a dangling link is a taken name
    async with browsing((120, 40), "write quorum", app=app_for(db)) as (app, pilot):
        await run_command(pilot, "Save this case")
        await wait_for(pilot, lambda: store_file(db, "cases.json").exists(), what="the saved case")
        await run_command(pilot, "Saved cases")
        await wait_screen(pilot, CasesScreen)
        await press(pilot, "e")
        await wait_for(pilot, lambda: any(n.title.startswith("Exported") for n in notifications(app)))
        note = notifications(app)[-1]
        queries, qrels = tmp_path / "rankscope-cases-4.json", tmp_path / "rankscope-cases-4.qrels.json"
        assert note.title == "Exported 1 case"
        assert f"wrote {queries} and {qrels}" in note.message
        # the command judges the export on this very store: its path, not a placeholder
        assert note.message.endswith(
            f"rankscope eval rankscope-cases-4.json --db {db} --qrels rankscope-cases-4.qrels.json"
        )
        assert json.loads(queries.read_text()) == [{"id": "write-quorum", "query": "write quorum"}]
        assert read_qrels(qrels).queries == {"write-quorum": "write quorum"}
        assert (tmp_path / "rankscope-cases.json").read_text() == "mine\n"
        assert (tmp_path / "rankscope-cases-2.qrels.json").read_text() == "mine too\n"
        assert not (tmp_path / "nowhere").exists()
        await press(pilot, "e")  # again: the next pair
        await wait_for(pilot, lambda: (tmp_path / "rankscope-cases-5.qrels.json").exists(), what="the next pair")
        assert (tmp_path / "rankscope-cases-5.json").exists()


async def test_grading_in_the_stages_pane_keeps_the_highlighted_row_in_view(db):
    async with browsing((80, 24), "throttling", app=app_for(db)) as (app, pilot):
        browser = app.browser
        ins = browser.inspector
        await press(pilot, "down", "s")
        await wait_for(pilot, lambda: browser.focused is ins)
        await press(pilot, "down", "down", "down")
        await wait_for(pilot, lambda: ins.highlighted is not None)
        before = browser.selected_chunk()
        await press(pilot, "2")
        await wait_for(pilot, lambda: browser.judged is not None and browser.judged.grades, what="the grade")
        await wait_for(pilot, lambda: ins.get_option_at_index(0).prompt.plain.startswith("Judged"), what="metrics")
        assert browser.selected_chunk() == before
        first_line = ins.get_option_at_index(ins.highlighted).prompt.plain.splitlines()[0]
        assert first_line.startswith("★2 ")
        await rendered(pilot)
        assert any(first_line.strip()[:30] in line for line in screen_lines(app)), "the graded row is off screen"


async def test_grading_in_the_flow_raises_no_notices_over_its_table(db):
    """Issue 24: three grades in the rank flow at 80x24 raised three
    "Judged" notices that covered half its table for about 5 s. The flow
    shows each grade in place (the badge, the detail line)."""
    async with browsing((80, 24), "write quorum", app=app_for(db)) as (app, pilot):
        await press(pilot, "f5")
        screen = await wait_screen(pilot, FlowScreen, focused=False)
        await settle(pilot)
        before = len(notifications(app))
        detail = screen.query_one("#flow-detail", Static)
        for grade in ("3", "2", "1"):
            await press(pilot, grade)
            await wait_for(pilot, lambda grade=grade: f"graded {grade} " in str(detail.render()), what="the grade")
            await press(pilot, "down")
        await settle(pilot)
        assert [n.title for n in notifications(app)[before:]] == []
        assert sorted(app.browser.judged.grades.values()) == [1, 2, 3]


# ─── what to grade next ──────────────────────────────────────────────────


async def test_u_steps_through_the_ungraded_queue_and_eval_counts_the_grades(db):
    """`qrels query-file` names the store's query file; the browser grades a query typed
    with one of its texts under that file's id, through the ungraded queue
    (u), and eval with that query file counts the grades."""
    from typer.testing import CliRunner

    from engine.lab.evaluation import ranked_ids, ungraded_in
    from engine.store.chunkids import chunk_ids
    from tui.cli import app as cli

    from ..conftest import DEMO_QUERIES_FILE as queries

    runner = CliRunner()
    first = runner.invoke(cli, ["eval", str(queries), "--db", str(db), "--ungraded", "--json"])
    assert first.exit_code == 0, first.output  # no judgments yet: --ungraded still lists the queue
    rerank_queue = [u for u in json.loads(first.output)["queue"] if u["query_id"] == "rerank"]
    assert rerank_queue
    assert runner.invoke(cli, ["qrels", "query-file", str(queries), "--db", str(db)]).exit_code == 0
    async with browsing((120, 40), app=app_for(db)) as (app, pilot):
        await search_for(pilot, "write quorum")  # the text of query 'rerank' in demo-queries.json
        browser = app.browser
        with Store.open_readonly(db) as store:
            ids = chunk_ids(store)
        expected = [u.chunk_id for u in ungraded_in([("", ranked_ids(browser.trace, ids))], {})]
        assert expected == [u["chunk_id"] for u in sorted(rerank_queue, key=lambda u: (-u["lists"], u["best_rank"]))]
        await press(pilot, "down", "u")  # leave the query box (there u is text), then step
        await wait_for(pilot, lambda: notifications(app), what="the queue's first")
        assert ids.by_rowid.get(browser.selected_chunk().rowid) == expected[0]
        assert "to grade): 0-3 grades it, u goes on" in notifications(app)[-1].message
        await press(pilot, "2")
        await wait_for(pilot, lambda: browser.judged is not None and browser.judged.grades, what="graded")
        assert notifications(app)[-1].message.endswith("(id rerank)")
        await press(pilot, "u")  # the graded chunk left the queue: the next one
        await wait_for(pilot, lambda: ids.by_rowid.get(browser.selected_chunk().rowid) == expected[1], what="second")
        await press(pilot, "0")
        await wait_for(pilot, lambda: len(browser.judged.grades) == 2, what="two grades")
    qrels = read_qrels(default_qrels_path(db))
    assert qrels.judgments == {"rerank": {expected[0]: 2, expected[1]: 0}}
    r = runner.invoke(cli, ["eval", str(queries), "--db", str(db), "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert [q["id"] for q in doc["queries"]] == ["rerank"]
    assert doc["queries"][0]["stages"]["final"]["RR"] > 0  # grade 2 on a chunk in the answer's top 10
    again = json.loads(runner.invoke(cli, ["eval", str(queries), "--db", str(db), "--ungraded", "--json"]).output)
    left = {u["chunk_id"] for u in again["queue"] if u["query_id"] == "rerank"}
    assert left == set(expected[2:])


def test_the_metrics_table_shows_judged_at_10_as_ir_measures_computes_it(db):
    """The browser's per-stage table ends with Judged@10 (ir-measures' own
    value for each stage's list) and marks a value resting on fewer than
    half judged results, with a legend."""
    import ir_measures

    from engine import SearchParams, search
    from engine.lab.evaluation import ranked_ids
    from engine.store.chunkids import chunk_ids
    from tui.browser.judging import judge_trace, metrics_lines

    with Store.open_readonly(db) as store:
        trace = search(store, SearchParams("write quorum"))
        ids = chunk_ids(store)
        lists = ranked_ids(trace, ids)
        judgments = {lists["final"][0]: 2}
        judged = judge_trace(store, trace, "wq", judgments, ids=ids)
    measure = ir_measures.parse_measure("Judged@10")
    for stage, ranked in lists.items():
        run = {"wq": {d: float(len(ranked) - i) for i, d in enumerate(ranked)}}
        want = ir_measures.calc_aggregate([measure], {"wq": judgments}, run)[measure] if ranked else None
        assert judged.judged_share(stage) == (None if want is None else pytest.approx(want)), stage
    lines = [t.plain for t in metrics_lines(judged, 200)]
    assert lines[1].split()[-1] == "Judged@10"
    final = next(line.split() for line in lines if line.split()[:1] == ["final"])
    assert final[-1] == f"{judged.judged_share('final'):.2f}"
    assert judged.judged_share("final") < 0.5 and any(v.endswith("?") for v in final[1:-1])
    assert lines[-1].startswith("? rests on fewer than half judged results")


async def test_a_grade_or_a_lab_screen_waits_for_the_typed_querys_results(db):
    """A grade pressed right after typing a new query was saved under the
    previous query (the panes still showed its results), and F5 / F6 / F7
    acted on it too. While the query box's results are pending, they are
    refused with a warning naming both queries; once shown, grading works."""
    import threading

    from engine import search

    gate = threading.Event()

    def held_search(store, params, conn=None):
        if params.query == "consumer lag":
            gate.wait(20)  # released by the test
        return search(store, params, conn=conn)

    async with browsing((140, 45), "write quorum", app=app_for(db, search_fn=held_search)) as (app, pilot):
        browser = app.browser
        await press(pilot, "ctrl+l")
        await type_text(pilot, "consumer lag")
        try:
            await press(pilot, "down")
            for key in ("3", "f5", "f7", "f6"):
                before = len(notifications(app))
                await press(pilot, key)
                await wait_for(pilot, lambda n=before: len(notifications(app)) > n, what=f"a refusal of {key}")
                said = notifications(app)[-1].message
                assert said.startswith(
                    "The results for 'consumer lag' are not shown yet (the panes still show 'write quorum')"
                )
                assert app.screen is browser
            assert not default_qrels_path(db).exists()
        finally:
            gate.set()
        await wait_for(pilot, lambda: browser.trace is not None and browser.trace.params.query == "consumer lag")
        await press(pilot, "down")
        await press(pilot, "3")
        await wait_for(pilot, lambda: default_qrels_path(db).exists(), what="the judgments file")
        assert list(read_qrels(default_qrels_path(db)).judgments) == ["consumer-lag"]
