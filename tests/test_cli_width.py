"""At 80 columns (output redirected: CliRunner's terminal is 80 wide, as
Rich assumes for a file or a pipe) no number, query id, stage id or layer is
cut (``0.6…``, ``porter-stemmi…``) or wrapped, and free text wraps at word
boundaries only (``partition-ke`` / ``y example`` was Rich's folding).
Tables too wide for the terminal are split (:mod:`tui.present.tablefit`)."""

from __future__ import annotations

import io
import json
import re

import pytest
from rich.console import Console
from rich.text import Text
from typer.testing import CliRunner

from tui.cli import app
from tui.present.tablefit import Column, Table, fit_tables

from .conftest import REPO, SAMPLE_CORPUS

runner = CliRunner()
QUERIES = REPO / "docs" / "demo-queries.json"
QRELS = REPO / "docs" / "demo-qrels.json"


def invoke(*args, width: int = 80):
    r = runner.invoke(app, [str(a) for a in args], terminal_width=width, env={"COLUMNS": str(width)})
    assert r.exit_code == 0, r.output
    assert "Traceback" not in r.output
    return r.output


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    path = tmp_path_factory.mktemp("width") / "sample.db"
    runner.invoke(app, ["index", str(SAMPLE_CORPUS), "--db", str(path)])
    return path


def fmt(value) -> str:
    return "—" if value is None else f"{value:.3f}"


def pair(a, b) -> str:
    return fmt(a) if a is not None and b is not None and abs(a - b) < 1e-12 else f"{fmt(a)} → {fmt(b)}"


def cells_of_rows(output: str, key: str) -> str:
    """Every table line whose first cell is ``key``, joined (a split table
    has one such line per part)."""
    return " | ".join(line for line in output.splitlines() if line.split()[:1] == [key])


def check_fits(output: str, width: int = 80) -> None:
    assert max(len(line) for line in output.splitlines()) <= width, output


@pytest.mark.parametrize("variant", ["pool=10,rerank=before-trim", "fts_limit=0"])
def test_eval_ab_at_80_columns_cuts_no_number_id_or_layer(db, variant):
    out = invoke("eval", QUERIES, "--db", db, "--qrels", QRELS, "--b", variant)
    check_fits(out)
    data = json.loads(invoke("eval", QUERIES, "--db", db, "--qrels", QRELS, "--b", variant, "--json"))
    a_stages, b_stages = data["stages"], data["comparison"]["stages"]
    for stage in a_stages:
        row = cells_of_rows(out, stage)
        for m in data["measures"]:
            assert pair(a_stages[stage][m], b_stages.get(stage, {}).get(m)) in row, (stage, m, row)
    b_queries = {q["id"]: q for q in data["comparison"]["queries"]}
    for q in data["queries"]:
        row = cells_of_rows(out, q["id"])  # the whole id starts the row
        assert row, (q["id"], out)
        for m in data["measures"]:
            a, b = q["stages"]["final"][m], b_queries[q["id"]]["stages"]["final"][m]
            assert pair(a, b) in row, (q["id"], m, row)
    fuzzy = cells_of_rows(out, "fuzzy")
    assert re.search(r"\brrf-fuzzy(→\S+)?\s", fuzzy), fuzzy  # the layer whole
    per_query = out.split("Per query", 1)[1].split("A query whose", 1)[0]
    words = {w for e in json.loads(QUERIES.read_text()) for w in e["query"].split()}
    for cut in (c for c in per_query.split() if "…" in c):  # only a query's word (free text) may be cut
        assert cut.endswith("…") and any(w.startswith(cut[:-1]) for w in words), (cut, out)


def test_eval_query_texts_wrap_at_word_boundaries(db):
    out = invoke("eval", QUERIES, "--db", db, "--qrels", QRELS)
    check_fits(out)
    assert not re.search(r"partition-ke\s", out) and "y example" not in out
    data = json.loads(invoke("eval", QUERIES, "--db", db, "--qrels", QRELS, "--json"))
    for q in data["queries"]:
        row = cells_of_rows(out, q["id"])
        assert all(fmt(q["stages"]["final"][m]) in row for m in data["measures"]), (q["id"], row)


@pytest.mark.parametrize("width", [80, 150])
def test_eval_ab_per_query_table_shows_the_query_texts(db, width):
    """With ``--b`` the per-query table had no query column at any width
    (plain ``eval`` has one): it is free text like any other, shown where
    there is room and wrapped at spaces, the numbers whole."""
    out = invoke("eval", QUERIES, "--db", db, "--qrels", QRELS, "--b", "key=rowid", width=width)
    check_fits(out, width)
    per_query = out.split("Per query", 1)[1].split("A query whose", 1)[0]
    header = next(line for line in per_query.splitlines() if line.split()[:1] == ["id"])
    assert header.split()[:2] == ["id", "query"], out
    data = json.loads(invoke("eval", QUERIES, "--db", db, "--qrels", QRELS, "--b", "key=rowid", "--json"))
    texts = {e["id"]: e["query"] for e in json.loads(QUERIES.read_text())}
    b_queries = {q["id"]: q for q in data["comparison"]["queries"]}
    for q in data["queries"]:
        row = cells_of_rows(per_query, q["id"])
        assert words_of(row, texts[q["id"]].split()[0]), (q["id"], out)
        for m in data["measures"]:
            assert pair(q["stages"]["final"][m], b_queries[q["id"]]["stages"]["final"][m]) in row, (q["id"], m)
    if width == 150:
        assert "continued" not in per_query and "…" not in per_query
        for q in data["queries"]:
            assert words_of(cells_of_rows(per_query, q["id"]), texts[q["id"]]), (q["id"], out)


def test_compare_set_at_80_columns_keeps_ids_whole(db):
    out = invoke("compare", "--queries", QUERIES, "--db", db, "--b", "pool=10,rerank=before-trim")
    check_fits(out)
    data = json.loads(
        invoke("compare", "--queries", QUERIES, "--db", db, "--b", "pool=10,rerank=before-trim", "--json")
    )
    for q in data["queries"]:
        row = cells_of_rows(out, q["id"])
        assert row, (q["id"], out)
        assert f"{q['overlap']:.2f}" in row


@pytest.mark.parametrize("width", [80, 100])
def test_eval_ungraded_keeps_chunk_ids_readable(db, width):
    """The chunk column of ``eval --ungraded`` wraps an id after its
    ``::``, its slashes and between title words, never inside a name: at 80
    columns it cut ``docs/replication.md::Replication`` to ``…::Repl…``."""
    out = invoke("eval", QUERIES, "--db", db, "--ungraded", width=width)
    check_fits(out, width)
    lines = out.splitlines()
    head = next(n for n, line in enumerate(lines) if line.split()[:2] == ["query", "chunk"])
    left, right = lines[head].index("chunk"), lines[head].index("lists")
    ids: list[str] = []
    for line in lines[head + 2 :]:
        if not line.strip():
            break
        piece = line[left:right].strip()
        assert not piece.endswith("…"), line  # Rich's cut lost a name's end
        if line[:left].strip():  # a new row
            ids.append(piece)
        elif piece:
            ids[-1] += piece if ids[-1].endswith(("/", "::")) else " " + piece
    queue = json.loads(invoke("eval", QUERIES, "--db", db, "--ungraded", "--json"))["queue"]
    want = [u["chunk_id"] for u in queue]
    assert len(ids) == len(want), out
    for got, whole in zip(ids, want):
        if got != whole:  # only a piece wider than the column is cut, in the middle
            start, end = got.split("…")
            assert whole.startswith(start) and whole.endswith(end) and " " not in whole[len(start) : -len(end)], got


def test_chunk_id_cell_cuts_a_piece_too_wide_in_the_middle():
    from tui.present.render import ChunkIdText

    cell = ChunkIdText("config/retention-policies.json::Retention > hot")
    assert cell.narrowest == len("retention-policies.json::")
    console = Console(width=16, file=io.StringIO(), color_system=None)
    with console.capture() as cap:
        console.print(cell)
    lines = [line.rstrip() for line in cap.get().splitlines()]
    assert lines[0] == "config/" and lines[-1] == "Retention > hot", lines
    assert lines[1].startswith("retentio") and lines[1].endswith("json::") and "…" in lines[1], lines
    assert all(len(line) <= 16 for line in lines), lines


def words_of(row: str, text: str) -> bool:
    """Whether every word of ``text`` is in ``row`` whole, or cut with ``…``."""
    cells = row.split()
    return all(w in cells or any(c.endswith("…") and w.startswith(c[:-1]) for c in cells) for w in text.split())


@pytest.mark.parametrize("width", [70, 75, 80, 87, 88, 100])
def test_compare_set_keeps_the_query_column_when_a_split_makes_room(db, width):
    """At 75-87 columns the numbers fitted one table and the query column
    was left out (the total row lost "10 queries"), while at 70 the split
    table had room for it: a free column is left out only when even a
    part with one value column has no room for it."""
    args = ("compare", "--queries", QUERIES, "--db", db, "--b", "key=rowid")
    out = invoke(*args, width=width)
    check_fits(out, width)
    header = next(line for line in out.splitlines() if line.split()[:1] == ["id"])
    assert header.split()[:2] == ["id", "query"], out
    data = json.loads(invoke(*args, "--json"))
    for q in data["queries"]:
        row = cells_of_rows(out, q["id"])
        assert words_of(row, q["query"].split()[0]), (q["id"], out)
        assert f"{q['overlap']:.2f}" in row.split(), (q["id"], out)
    assert cells_of_rows(out, "total").split()[:2] == ["total", "10"], out


def test_search_at_80_columns_keeps_file_names_and_numbers_whole(db):
    args = ("search", "replication quorum acknowledgement", "--db", db, "--limit", "5")
    args += ("--session", "sess-docs", "--session", "sess-ops")  # the session column takes room
    out = invoke(*args)
    check_fits(out)
    trace = json.loads(invoke(*args, "--json"))
    text = out.split("\nStages", 1)[0].replace("│", " ")  # the results table
    for r in trace["final"]:
        name = r["source"].rsplit("/", 1)[-1]
        assert re.search(rf"[\s/]{re.escape(name)}\s", text), (name, out)
        assert f"{r['boost']:.3f}" in text
    assert "getting-started.md" in text


def row_lines(text: str) -> dict[str, list[str]]:
    """A table's lines by their first cell, as their cells' words (box rules
    dropped; a split table has one such line per part)."""
    out: dict[str, list[str]] = {}
    for line in text.splitlines():
        words = re.sub(r"[│┃]", " ", line).split()
        if words:
            out.setdefault(words[0], []).extend(words)
    return out


@pytest.mark.parametrize("width", [60, 80, 100])
@pytest.mark.parametrize("limit", ["3", "10000"])
def test_search_tables_keep_positions_session_ids_and_numbers_whole(db, width, limit):
    """``search quorum`` at 80 columns (piped) cut the boost to ``0.3…``
    (its header to ``boo…``) whenever a ``sess-build`` row widened the
    session column, and with ``--limit 10000`` the session id itself
    (``sess-bui…``); at 60 the position column went, and the fusion table
    wrapped its scores (``0.0`` / ``327`` / ``9``) and headers."""
    args = ("search", "quorum", "--db", db, "--limit", limit)
    out = invoke(*args, width=width)
    check_fits(out, width)
    trace = json.loads(invoke(*args, "--json"))
    results, rest = out.split("\nStages", 1)
    stages, fusion = rest.split("Fusion (RRF): top 10", 1)
    assert {"#", "type", "session", "rrf", "boost"} <= {w for line in results.splitlines() for w in line.split()}
    rows = row_lines(results)
    for n, r in enumerate(trace["final"], 1):
        row = rows[str(n)]
        for cell in (r["content_type"], r["session_id"] or "—", f"{-r['rank']:.5f}", f"{r['boost']:.3f}"):
            assert cell in row, (n, cell, row, out)
    assert "ms" in stages.split()
    assert {"porter", "trigram", "score"} <= set(fusion.split())
    rows = row_lines(fusion)
    for n, c in enumerate(trace["fused"][:10], 1):
        row = rows[str(n)]
        for cell in (str(c["porter_rank"] or "—"), str(c["trigram_rank"] or "—"), f"{c['score']:.5f}"):
            assert cell in row, (n, cell, row, out)


@pytest.mark.parametrize("width", [60, 80, 100, 120])
def test_flow_keeps_session_ids_and_positions_whole(db, width):
    """The compact flow cut a session id longer than 8 (``✗ses…uild``), and
    under 80 columns the table was cropped at the terminal's edge (the
    rerank and final columns lost): session ids stay whole, and a flow too
    wide is split into parts that repeat the row id."""
    from tui.present.flowtext import move_text

    args = ("search", "retention", "--db", db, "--session", "sess-docs", "--flow", "--pin", "33")
    out = invoke(*args, width=width)
    check_fits(out, width)
    [flow] = json.loads(invoke(*args, "--json"))["flows"]
    rows = row_lines(out.split("\n4↑3 position and move", 1)[0])
    for row in flow["rows"]:
        words = rows[("▸" if row["rowid"] == 33 else "") + str(row["rowid"])]
        for cell in row["cells"]:
            if cell["state"] == "at":
                mv = move_text(cell["move"])
                assert f"{cell['position']}{mv}" in words or f"#{cell['position']}" in words, (row, cell, out)
            elif cell["state"] == "left" and cell["exit"]["reason"] == "session-filter":
                sid = cell["exit"]["session_id"]
                assert f"✗{sid}" in words or sid in words, (row, sid, out)
    assert "sess-build" in out and "ses…" not in out


@pytest.mark.parametrize("width", [44, 60, 80, 100, 140])
def test_fit_tables_never_cuts_keys_or_values(width):
    """A table of ids and numbers at any width: every cell whole, each
    part as wide as the width allows (one key column and one value column
    always fit at these widths), the free text left out or wrapped at spaces."""
    cols = [Column("id", "key"), Column("text", "free", min_width=8)] + [
        Column(f"m{i}", justify="right") for i in range(6)
    ]
    rows = [
        [f"query-{n}-with-a-long-id", "several words of free text, partition-key example"]
        + [f"0.{n}{i}7 → 0.{i}{n}1" for i in range(6)]
        for n in range(4)
    ]
    console = Console(width=width, record=True, color_system=None)
    for part in fit_tables(Table("Title", cols, rows), width):
        console.print(part)
    out = console.export_text()
    assert max(len(line) for line in out.splitlines()) <= width
    for row in rows:
        found = cells_of_rows(out, row[0])
        for cell in row[2:]:
            assert cell in found, (cell, out)
    assert "partition-ke " not in out
    parts = out.count("Title")
    assert parts >= 1 and (width < 140 or parts == 1)


def test_fit_tables_keeps_styles_and_sections():
    cols = [Column("id", "key"), Column("n", justify="right")]
    rows = [["a", Text("1", style="red")], ["total", "1"]]
    console = Console(width=80, record=True, color_system=None)
    for part in fit_tables(Table("T", cols, rows), 80, sections=[1]):
        console.print(part)
    lines = console.export_text().splitlines()
    first = next(i for i, x in enumerate(lines) if x.split()[:1] == ["a"])
    assert lines[first + 1].strip() == "" and lines[first + 2].split() == ["total", "1"]  # the section's rule
    with pytest.raises(ValueError):
        fit_tables(Table("T", cols, [["only one cell"]]), 80)


@pytest.mark.parametrize("width", [50, 60, 80, 140])
def test_compare_one_query_keeps_numbers_and_file_names_whole(db, width):
    """``compare QUERY`` at 80 columns stacks the source under the title
    (file names whole) so the rrf and boost columns keep every digit;
    narrower, where it left those columns out, the table is split into
    parts that repeat the row id."""
    args = ("compare", "replicaton quorom", "--db", db, "--b", "pool=10,rerank=before-trim,rrf_k=10")
    out = invoke(*args, width=width)
    check_fits(out, width)
    data = json.loads(invoke(*args, "--json"))
    for row in data["rows"]:
        line = cells_of_rows(out, str(row["position_a"] or "—"))
        rowid = str(row["rowid_a"] or row["rowid_b"])
        words = [w for x in out.splitlines() if rowid in x.split() for w in x.split()]  # its line in every part
        for key, digits in (("score_a", 4), ("score_b", 4), ("boost_a", 3), ("boost_b", 3)):
            if row[key] is not None:
                assert f"{row[key]:.{digits}f}" in words, (key, row, out)
        assert re.search(rf"[\s/]{re.escape(row['source'].rsplit('/', 1)[-1])}\s", out), (row["source"], out)
        assert line
    assert "…" not in out


@pytest.mark.parametrize("width", [40, 50, 64, 80, 120])
def test_fit_tables_shares_the_room_between_free_columns(width):
    """Two free columns (the agent log's queries and params): ids and
    numbers whole; each free column gets at least its longest word when
    those fit (no word of it cut), else an even cut of the room (the widest
    words end in …, never folded); too narrow for both, the one with the
    smaller share is left out and the other gets the room."""
    cols = [
        Column("#", "key", justify="right"),
        Column("session"),
        Column("queries", "free", min_width=10, share=3),
        Column("params", "free", min_width=10, share=2),
        Column("n", justify="right"),
    ]
    rows = [
        ["1", "3f6b9c1e", "backpressure stall | outbound queue", '{"source": "corvid-guide", "limit": 1}', "12"],
        [
            "2",
            "8a2c4e6f",
            "replication-quorum-acknowledgement-timeout",
            '{"source": "docs/architecture/overview.md"}',
            "3",
        ],
    ]
    console = Console(width=width, record=True, color_system=None)
    for part in fit_tables(Table(None, cols, rows), width):
        console.print(part)
    out = console.export_text()
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= width and "continued" not in out
    header = next(line for line in lines if line.split()[:2] == ["#", "session"]).split()
    assert header[-1] == "n" and "queries" in header
    cells = [cell.strip() for line in lines for cell in line.split("  ") if cell.strip()]
    for row in rows:
        assert row[0] in cells and row[1] in cells and row[4] in cells
        for text in row[2:4] if "params" in header else row[2:3]:
            for word in text.split():
                whole = any(word in cell.split() for cell in cells)
                cut = any(c.endswith("…") and word.startswith(c.split()[-1][:-1]) for c in cells)
                assert whole or cut, (word, out)
    if width >= 64:
        assert "params" in header
        for word in ("backpressure", "outbound", '"corvid-guide",', '{"source":'):  # short enough: never cut
            assert any(word in cell.split() for cell in cells), (word, out)
    if width == 120:
        assert "…" not in out
    if width == 40:
        assert "params" not in header  # the smaller share is left out; queries keeps the room
        assert "backpressure" in cells
