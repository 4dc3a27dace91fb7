"""``rankscope eval``, ``batch --trec-run``, ``snapshot save|check`` and
``qrels`` (tui/cli/eval.py, tui/cli/search.py)."""

from __future__ import annotations

import json
import shutil

import pytest
from typer.testing import CliRunner

from engine.lab.qrels import Qrels, default_qrels_path, write_qrels
from tui.cli import CliError, app, main

from .helpers import cli_error
from .conftest import REPO, SAMPLE_CORPUS

runner = CliRunner()
QUERIES = REPO / "docs" / "demo-queries.json"
QRELS_JSON = REPO / "docs" / "demo-qrels.json"
QRELS_TREC = REPO / "docs" / "demo-qrels.txt"


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def run_eval(db, *args):
    """``rankscope eval`` of the demo queries with the shipped JSON qrels, then ``args``."""
    return invoke("eval", QUERIES, "--db", db, "--qrels", QRELS_JSON, *args)


def error_of(result) -> str:
    assert isinstance(result.exception, CliError), result.output
    return str(result.exception)


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    path = tmp_path_factory.mktemp("eval") / "sample.db"
    r = invoke("index", SAMPLE_CORPUS, "--db", path)
    assert r.exit_code == 0, r.output
    return path


# ─── eval ────────────────────────────────────────────────────────────────


def test_eval_json_schema(db):
    r = invoke("eval", QUERIES, "--db", db, "--qrels", QRELS_TREC, "--measures", "nDCG@10,RR,R@10", "--json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert list(doc) == ["measures", "stages", "judged", "queries", "comparison"]
    assert doc["measures"] == ["nDCG@10", "RR", "R@10"] and doc["comparison"] is None
    assert list(doc["stages"])[:8] == ["porter", "trigram", "fusion", "pool", "filter", "trim", "rerank", "final"]
    assert all(set(v) == {"nDCG@10", "RR", "R@10"} for v in doc["stages"].values())
    assert list(doc["judged"]) == list(doc["stages"])
    assert all(set(v) == {"Judged@10", "Judged"} for v in doc["judged"].values())
    assert [q["id"] for q in doc["queries"]] == [e["id"] for e in json.loads(QUERIES.read_text()) if e["id"] != "empty"]
    assert all(set(q) == {"id", "stages", "judged"} for q in doc["queries"])
    fuzzy = next(q for q in doc["queries"] if q["id"] == "fuzzy")
    # the first pass found nothing: every first-pass stage scores 0 (and counts in the mean)
    assert fuzzy["stages"]["porter"] == {"nDCG@10": 0.0, "RR": 0.0, "R@10": 0.0}
    n = len(doc["queries"])
    assert doc["stages"]["porter"]["RR"] == pytest.approx(sum(q["stages"]["porter"]["RR"] for q in doc["queries"]) / n)


def test_eval_reads_both_qrels_forms_alike(db):
    a = invoke("eval", QUERIES, "--db", db, "--qrels", QRELS_TREC, "--json")
    b = run_eval(db, "--json")
    assert a.exit_code == b.exit_code == 0
    assert json.loads(a.output) == json.loads(b.output)


def test_eval_human(db):
    r = run_eval(db)
    assert r.exit_code == 0, r.output
    for text in (
        "Mean over 9 judged queries, per stage",
        "fuzzy:rerank",
        "Per query, final stage",
        "1 unjudged query not counted: empty",
        "trec_eval -c",
        "nDCG@10",
    ):
        assert text in r.output, text


def test_eval_ab(db):
    r = run_eval(db, "--b", "rerank=off", "--json")
    assert r.exit_code == 0, r.output
    cmp = json.loads(r.output)["comparison"]
    assert cmp["a"] == "reference" and cmp["b"] == "rerank=off" and cmp["stage"] == "final"
    assert "rerank" not in cmp["stages"]  # B does not rerank
    nd = cmp["measures"]["nDCG@10"]
    assert nd["improved"] + nd["worsened"] + nd["tied"] == 9 and nd["worsened"] >= 1
    assert 0 < nd["p_ttest"] <= 1 and 0 < nd["p_wilcoxon"] <= 1
    human = run_eval(db, "--b", "rerank=off")
    assert human.exit_code == 0
    for text in ("A reference  vs  B rerank=off, stage final", "better", "p (t)", "p (W)", "→"):
        assert text in human.output, text


def test_eval_uses_the_stores_own_judgments(db, tmp_path, monkeypatch):
    monkeypatch.setenv("RANKSCOPE_DATA_DIR", str(tmp_path / "data"))
    r = invoke("eval", QUERIES, "--db", db)
    assert "no judgments for" in error_of(r) and "give --qrels FILE" in error_of(r)
    write_qrels(Qrels({"rerank": {"docs/replication.md::Replication > Write quorum": 3}}), default_qrels_path(db))
    r = invoke("eval", QUERIES, "--db", db, "--json", "--measures", "RR")
    assert r.exit_code == 0, r.output
    assert [q["id"] for q in json.loads(r.output)["queries"]] == ["rerank"]
    p = invoke("qrels", "path", "--db", db)
    assert p.output.strip() == str(default_qrels_path(db))


@pytest.mark.parametrize(
    "args, message",
    [
        (["--measures", "Nope@3"], "--measures: unknown measure 'Nope@3'"),
        (["--b", "rerank=sideways"], "--b: bad value 'sideways' for rerank"),
        (["--qrels", "/nonexistent/q.txt"], "no such qrels file: /nonexistent/q.txt"),
    ],
)
def test_eval_errors(db, args, message):
    extra = [] if "--qrels" in args else ["--qrels", str(QRELS_JSON)]
    assert message in error_of(invoke("eval", QUERIES, "--db", db, *extra, *args))


def test_eval_without_any_judged_query(db, tmp_path):
    q = tmp_path / "q.txt"
    q.write_text("other 0 a.md::X 1\n")
    message = error_of(invoke("eval", QUERIES, "--db", db, "--qrels", q))
    assert "none of the 10 queries" in message and "judged ids: other" in message


def test_eval_bad_qrels_line_is_one_line_error(db, tmp_path, capsys):
    q = tmp_path / "q.txt"
    q.write_text("rerank 0 a.md::X 9\n")
    err = cli_error(["eval", str(QUERIES), "--db", str(db), "--qrels", str(q)], capsys)
    assert "line 1: grade must be 0, 1, 2 or 3; got 9" in err


# ─── batch --trec-run ────────────────────────────────────────────────────


@pytest.mark.parametrize("stage", ["final", "porter", "fuzzy:rerank"])
def test_trec_run_reads_back_to_the_same_numbers(db, tmp_path, stage):
    import ir_measures

    run = tmp_path / "run.txt"
    r = invoke("batch", QUERIES, "--db", db, "--trec-run", run, "--stage", stage)
    assert r.exit_code == 0, r.output
    assert f"(stage {stage}) to {run}" in r.output
    lines = run.read_text().splitlines()
    assert lines and all(len(line.split()) == 6 and line.split()[5] == f"rankscope-{stage}" for line in lines)
    by_query: dict[str, list[tuple[int, float]]] = {}
    for line in lines:
        qid, _, _, rank, score, _ = line.split()
        by_query.setdefault(qid, []).append((int(rank), float(score)))
    for ranks in by_query.values():
        assert [r for r, _ in ranks] == list(range(1, len(ranks) + 1))
        assert all(a[1] > b[1] for a, b in zip(ranks, ranks[1:]))  # strictly decreasing
    measures = [ir_measures.parse_measure(m) for m in ("nDCG@10", "RR", "R@10", "P@3")]
    qrels = list(ir_measures.read_trec_qrels(str(QRELS_TREC)))
    judged = {q.query_id for q in qrels}
    per = {}
    for m in ir_measures.iter_calc(measures, qrels, list(ir_measures.read_trec_run(str(run)))):
        per.setdefault(m.query_id, {})[str(m.measure)] = m.value
    got = json.loads(invoke("eval", QUERIES, "--db", db, "--qrels", QRELS_TREC, "--json").output)
    for name in ("nDCG@10", "RR", "R@10", "P@3"):
        mean = sum(per.get(q, {}).get(name, 0.0) for q in judged) / len(judged)
        assert mean == pytest.approx(got["stages"][stage][name], abs=1e-12), name
        for q in got["queries"]:
            assert per.get(q["id"], {}).get(name, 0.0) == pytest.approx(q["stages"].get(stage, {}).get(name, 0.0))


def test_trec_run_with_out_writes_both(db, tmp_path):
    run, out = tmp_path / "run.txt", tmp_path / "traces.json"
    r = invoke("batch", QUERIES, "--db", db, "--trec-run", run, "--out", out)
    assert r.exit_code == 0, r.output
    assert len(json.loads(out.read_text())) == 10 and run.read_text()


@pytest.mark.parametrize(
    "args, message",
    [
        (["--trec-run", "RUN", "--stage", "answer"], "--stage: unknown stage 'answer'"),
        (["--stage", "porter"], "--stage applies to --trec-run"),
        (
            ["--trec-run", "/nonexistent/dir/run.txt"],
            "--trec-run /nonexistent/dir/run.txt: folder /nonexistent/dir does not exist",
        ),
    ],
)
def test_trec_run_errors(db, tmp_path, args, message):
    args = [str(tmp_path / "run.txt") if a == "RUN" else a for a in args]
    assert message in error_of(invoke("batch", QUERIES, "--db", db, *args))


# ─── snapshot ────────────────────────────────────────────────────────────


def test_snapshot_check_fails_with_a_readable_diff_after_a_corpus_change(tmp_path):
    corpus = tmp_path / "corpus"
    shutil.copytree(SAMPLE_CORPUS, corpus)
    store = tmp_path / "s.db"
    assert invoke("index", corpus, "--db", store).exit_code == 0
    snap = tmp_path / "snap.json"
    r = invoke("snapshot", "save", QUERIES, "--db", store, "-o", snap)
    assert r.exit_code == 0, r.output
    assert "recorded 10 queries" in r.output
    data = json.loads(snap.read_text())
    assert data["format"] == "rankscope-snapshot" and data["queries"][0]["stages"]["final"]
    ok = invoke("snapshot", "check", snap, "--db", store)
    assert ok.exit_code == 0, ok.output
    assert "unchanged: 10 queries, every stage" in ok.output
    # Edit the docs: a new section about throttling outranks the old ones.
    page = corpus / "docs" / "backpressure.md"
    page.write_text(
        page.read_text("utf-8") + "\n## Throttling explained\nthrottling throttling throttled producers\n", "utf-8"
    )
    assert invoke("index", corpus, "--db", store).exit_code == 0
    bad = invoke("snapshot", "check", snap, "--db", store)
    assert bad.exit_code == 1, bad.output
    out = bad.output
    assert "changed: " in out and "query porter-stemming ('throttling')" in out
    assert "entered at 1  docs/backpressure.md::Backpressure > Throttling explained" in out
    assert "left (was 3)" in out and "moved   1 → 2" in out
    finals = invoke("snapshot", "check", snap, "--db", store, "--stages", "final", "--json")
    assert finals.exit_code == 1
    doc = json.loads(finals.output)
    assert doc["ok"] is False and doc["stages"] == ["final"]
    assert all(set(q["stages"]) <= {"final"} for q in doc["changed"])


def test_snapshot_diff_lines_are_never_wrapped(tmp_path):
    """At 80 columns (CliRunner's width, output redirected) a diff line with
    a long chunk id is printed whole, so a CI log greps line by line."""
    corpus = tmp_path / "corpus"
    shutil.copytree(SAMPLE_CORPUS, corpus)
    store, snap = tmp_path / "s.db", tmp_path / "snap.json"
    assert invoke("index", corpus, "--db", store).exit_code == 0
    assert invoke("snapshot", "save", QUERIES, "--db", store, "-o", snap).exit_code == 0
    long_title = "What a throttled producer sees and feels when the broker pushes back hard"
    page = corpus / "docs" / "backpressure.md"
    page.write_text(page.read_text("utf-8") + f"\n## {long_title}\nthrottled throttling producer\n", "utf-8")
    assert invoke("index", corpus, "--db", store).exit_code == 0
    r = runner.invoke(app, ["snapshot", "check", str(snap), "--db", str(store)], terminal_width=80)
    assert r.exit_code == 1, r.output
    lines = r.output.splitlines()
    chunk_id = f"docs/backpressure.md::Backpressure > {long_title}"
    assert any(line.startswith("    entered at ") and line.endswith(f"  {chunk_id}") for line in lines), r.output
    assert max(len(line) for line in lines) > 80
    # every line is a header, a query, a stage or a whole diff line: none is a wrapped tail
    for line in lines:
        assert line.startswith(("changed: ", "query ", "  ")), line
        if line.startswith("    "):
            assert line.lstrip().startswith(("moved ", "entered at ", "left (was ")) and "::" in line, line


def test_an_empty_stage_list_is_an_error(db, tmp_path):
    snap = tmp_path / "snap.json"
    assert invoke("snapshot", "save", QUERIES, "--db", db, "-o", snap).exit_code == 0
    for empty in ("", " ", ","):
        message = error_of(invoke("snapshot", "check", snap, "--db", db, "--stages", empty))
        assert message.startswith("--stages: no stage given; e.g. final"), message


def test_a_snapshot_from_before_fuzzy_final_is_checked_on_what_it_recorded(db, tmp_path):
    snap = tmp_path / "snap.json"
    assert invoke("snapshot", "save", QUERIES, "--db", db, "-o", snap).exit_code == 0
    data = json.loads(snap.read_text())
    assert data["stage_ids"][-1] == "fuzzy:final"
    fuzzy = next(q for q in data["queries"] if q["id"] == "fuzzy")
    assert fuzzy["stages"]["fuzzy:final"]  # the typo query re-ran: its answer is recorded
    # as an older rankscope wrote it: no stage_ids, no fuzzy:final lists
    del data["stage_ids"]
    for q in data["queries"]:
        q["stages"].pop("fuzzy:final", None)
    snap.write_text(json.dumps(data))
    r = invoke("snapshot", "check", snap, "--db", db)
    assert r.exit_code == 0, r.output
    assert "unchanged: 10 queries, every stage" in r.output
    assert "not compared (the snapshot predates them): fuzzy:final" in r.output
    doc = json.loads(invoke("snapshot", "check", snap, "--db", db, "--json").output)
    assert doc["ok"] is True and doc["unrecorded"] == ["fuzzy:final"]
    # a snapshot that lists its stages compares every one of them: a missing list is a change
    fresh = tmp_path / "fresh.json"
    assert invoke("snapshot", "save", QUERIES, "--db", db, "-o", fresh).exit_code == 0
    new = json.loads(fresh.read_text())
    new["queries"] = [
        dict(q, stages={k: v for k, v in q["stages"].items() if k != "fuzzy:final"}) for q in new["queries"]
    ]
    fresh.write_text(json.dumps(new))
    changed = invoke("snapshot", "check", fresh, "--db", db, "--json")
    assert changed.exit_code == 1
    (q,) = json.loads(changed.output)["changed"]
    assert q["id"] == "fuzzy" and list(q["stages"]) == ["fuzzy:final"]


@pytest.mark.parametrize(
    "content, message",
    [
        ("{}", "is not a rankscope snapshot"),
        (
            '{"format": "rankscope-snapshot", "version": 1, "stage_ids": "final", "queries": []}',
            "stage_ids must be a list",
        ),
        ("nope", "cannot read snapshot"),
    ],
)
def test_snapshot_check_bad_files(db, tmp_path, content, message):
    snap = tmp_path / "snap.json"
    snap.write_text(content)
    assert message in error_of(invoke("snapshot", "check", snap, "--db", db))


def test_snapshot_errors(db, tmp_path):
    assert "no such snapshot file" in error_of(invoke("snapshot", "check", tmp_path / "none.json", "--db", db))
    assert "--stages: unknown stage 'answer'" in error_of(
        invoke("snapshot", "check", tmp_path / "none.json", "--db", db, "--stages", "answer")
    )
    assert "-o" in error_of(invoke("snapshot", "save", QUERIES, "--db", db, "-o", tmp_path))


def test_groups_run_through_main(db, tmp_path, capsys):
    snap = tmp_path / "snap.json"
    with pytest.raises(SystemExit) as exc:
        main(["snapshot", "save", str(QUERIES), "--db", str(db), "-o", str(snap)])
    assert exc.value.code == 0
    with pytest.raises(SystemExit) as exc:
        main(["snapshot", "check", str(snap), "--db", str(db), "--stages", "final"])
    assert exc.value.code == 0
    assert "unchanged" in capsys.readouterr().out


# ─── qrels convert ───────────────────────────────────────────────────────


def test_qrels_convert_round_trip(tmp_path):
    trec, back = tmp_path / "q.txt", tmp_path / "q.json"
    r = invoke("qrels", "convert", QRELS_JSON, trec)
    assert r.exit_code == 0, r.output
    assert trec.read_text() == QRELS_TREC.read_text()
    assert invoke("qrels", "convert", trec, back).exit_code == 0
    assert (
        json.loads(back.read_text())["queries"][0]["judgments"]
        == json.loads(QRELS_JSON.read_text())["queries"][0]["judgments"]
    )
    assert "no such qrels file" in error_of(invoke("qrels", "convert", tmp_path / "none", back))
    one = tmp_path / "one.txt"
    one.write_text("q1 0 docs/a.md::A 2\n")
    r = invoke("qrels", "convert", one, tmp_path / "one.json")
    assert r.exit_code == 0 and "wrote 1 judgment for 1 query" in r.output, r.output  # not "1 queries"


def _main(args: list[str], capsys) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main([str(a) for a in args])
    out = capsys.readouterr()
    assert "Traceback" not in out.out + out.err
    return int(exc.value.code or 0), out.out, out.err


def test_qrels_convert_warns_about_conflicting_grades_and_keeps_the_last(tmp_path, capsys):
    """Two grades for one (query, document) were resolved silently (the last
    kept): one warning line says how many pairs, the first one's ids, its
    grades with their lines, and the grade kept. A judgment repeated with its
    own grade changes nothing and is not warned about."""
    src, target = tmp_path / "in.txt", tmp_path / "out.json"
    src.write_text(
        "q1 0 a.md::A 2\nq1 0 b.md::B 1\nq2 0 c.md::C 1\nq1 0 a.md::A 0\nq2 0 c.md::C 3\nq2 0 b.md::B 1\nq2 0 b.md::B 1\n"
    )
    code, out, err = _main(["qrels", "convert", src, target], capsys)
    assert code == 0, err
    assert err == (
        f"rankscope: warning: qrels {src}: 2 (query, document) pairs are judged with different grades; "
        "the last grade is kept: query 'q1', document 'a.md::A': 2 on line 1, 0 on line 4 (kept: 0); 1 more\n"
    )
    judgments = {e["id"]: e["judgments"] for e in json.loads(target.read_text())["queries"]}
    assert judgments == {"q1": {"a.md::A": 0, "b.md::B": 1}, "q2": {"c.md::C": 3, "b.md::B": 1}}
    src.write_text("q1 0 a.md::A 2\nq1 0 a.md::A 2\n")
    code, out, err = _main(["qrels", "convert", src, tmp_path / "same.txt"], capsys)
    assert code == 0 and err == "" and (tmp_path / "same.txt").read_text() == "q1 0 a.md::A 2\n"


def test_eval_warns_about_conflicting_grades_too(db, tmp_path, capsys):
    q = tmp_path / "q.txt"
    q.write_text("rerank 0 docs/replication.md::Replication 1\nrerank 0 docs/replication.md::Replication 3\n")
    code, out, err = _main(["eval", QUERIES, "--db", db, "--qrels", q, "--json"], capsys)
    assert code == 0, err
    assert err.startswith(f"rankscope: warning: qrels {q}: 1 (query, document) pair is judged with different grades")
    assert "1 on line 1, 3 on line 2 (kept: 3)" in err and err.count("\n") == 1


def test_the_browser_shows_conflicting_grades_once_it_starts(db, tmp_path, capsys, monkeypatch):
    """The browser's --qrels: the warning is the browser's start notice (a
    line on stderr printed before the screen opened was hidden under it)."""
    import tui.cli.launch

    q = tmp_path / "q.txt"
    q.write_text("rerank 0 docs/replication.md::Replication 1\nrerank 0 docs/replication.md::Replication 3\n")
    seen: dict[str, object] = {}
    monkeypatch.setattr(tui.cli.launch, "launch_browser", lambda *a, **k: seen.update(k))
    main([str(db), "--qrels", str(q)])  # the browser mocked: nothing exits
    err = capsys.readouterr().err
    assert err == "", err
    notice = str(seen["notice"])
    assert notice.startswith(f"qrels {q}: 1 (query, document) pair is judged with different grades")
    assert "1 on line 1, 3 on line 2 (kept: 3)" in notice
    q.write_text("rerank 0 docs/replication.md::Replication 1\n")
    seen.clear()
    main([str(db), "--qrels", str(q)])
    assert seen["notice"] is None and capsys.readouterr().err == ""


@pytest.mark.parametrize("token", ["a.md::100%zz", "a.md::X%FF", "a.md::50%"])
def test_qrels_convert_refuses_an_id_it_would_write_back_changed(tmp_path, capsys, token):
    """``%zz`` was written back ``%25zz`` (and ``%FF`` as U+FFFD): another id.
    Refused with one line naming the file, the line and the field; nothing
    is written."""
    src, target = tmp_path / "in.txt", tmp_path / "out.txt"
    src.write_text(f"q1 0 a.md::A 2\n\nq1 0 {token} 1\n")
    err = cli_error(["qrels", "convert", str(src), str(target)], capsys)
    assert err.startswith(f"rankscope: error: {src} line 3: docid {token!r}: "), err
    assert not target.exists() and list(tmp_path.iterdir()) == [src]


def test_readme_eval_example_is_current(db):
    """The per-stage table the README shows for the demo queries is what
    ``rankscope eval`` prints today (with the sessions map picked up)."""
    readme = (REPO / "README.md").read_text("utf-8")
    block = readme.split(
        "$ COLUMNS=110 rankscope eval docs/demo-queries.json --db /tmp/sample.db --qrels docs/demo-qrels.json\n", 1
    )[1]
    block = block.split("```", 1)[0].split("Per query", 1)[0]
    doc = json.loads(run_eval(db, "--json").output)
    rows = {
        line.split()[0]: line.split()[1:]
        for line in block.splitlines()
        if line.strip() and line.split()[0] in doc["stages"]
    }
    assert set(rows) == set(doc["stages"])
    for stage, cells in rows.items():
        judged = doc["judged"][stage]["Judged@10"]
        assert cells == [f"{doc['stages'][stage][m]:.3f}" for m in doc["measures"]] + [f"{judged:.2f}"], stage


def test_readme_eval_examples_say_their_width_and_match_it(db):
    """Issue 24: the README's first ``eval`` example matched only at 100
    columns and said no width. Every ``$ rankscope eval`` example of the
    README is the whole output of its command at the width it gives
    (``COLUMNS=N``; none: 80, what Rich assumes for a pipe), line by line."""
    import re
    import shlex

    readme = (REPO / "README.md").read_text("utf-8")
    examples = re.findall(r"^\$ ((?:COLUMNS=\d+ )?rankscope eval .*?)\n(.*?)^```", readme, flags=re.M | re.S)
    assert examples
    for command, shown in examples:
        command, _, shown_rest = (command + "\n" + shown).partition("\n")
        while command.endswith("\\"):  # a command continued on the next line
            more, _, shown_rest = shown_rest.partition("\n")
            command = command[:-1] + " " + more.strip()
        words = shlex.split(command)
        width = int(words.pop(0).split("=")[1]) if words[0].startswith("COLUMNS=") else 80
        args = [str(db) if w == "/tmp/sample.db" else str(REPO / w) if w.startswith("docs/") else w for w in words[1:]]
        out = runner.invoke(app, args, terminal_width=width, env={"COLUMNS": str(width)}).output
        lines = [line.rstrip() for line in shown_rest.rstrip("\n").splitlines()]
        # an example that stops early (``...``) or leaves lines out (``  …  (the fuzzy:* stages, alike)``)
        # is compared up to there
        cut = next((i for i, line in enumerate(lines) if line == "..." or line.lstrip().startswith("…")), None)
        lines = lines[:cut]
        got = [line.rstrip() for line in out.splitlines()]
        assert got[: len(lines)] == lines, command


@pytest.mark.parametrize(
    "args",
    [
        ["eval", "QUERIES", "--qrels", str(QRELS_TREC)],
        ["batch", "QUERIES", "--trec-run", "RUN"],
        ["snapshot", "save", "QUERIES", "-o", "SNAP"],
    ],
    ids=lambda a: " ".join(a[:2]),
)
def test_a_damaged_store_is_one_line_error(damaged_db, tmp_path, capsys, args):
    queries = tmp_path / "q.json"
    queries.write_text(json.dumps([{"id": "rerank", "query": "quorum"}]))
    subs = {"QUERIES": str(queries), "RUN": str(tmp_path / "run.txt"), "SNAP": str(tmp_path / "snap.json")}
    err = cli_error([subs.get(a, a) for a in args] + ["--db", str(damaged_db)], capsys)
    assert err.startswith(f"rankscope: error: {damaged_db} is damaged")


@pytest.mark.parametrize("qrels", [None, str(QRELS_TREC)], ids=["default judgments", "--qrels"])
def test_eval_on_a_file_that_is_no_store_says_so_before_looking_for_judgments(tmp_path, capsys, qrels):
    """An SQLite file without the store's tables: the same error as every
    other command gives, not "no judgments for …" (which sent the user
    looking for a qrels file)."""
    from engine.store import sql

    other = tmp_path / "other.db"
    conn = sql.connect(str(other))
    conn.execute("CREATE TABLE t (x)")
    conn.close()
    queries = tmp_path / "q.json"
    queries.write_text(json.dumps([{"id": "rerank", "query": "quorum"}]))
    err = cli_error(["eval", str(queries), "--db", str(other), *(["--qrels", qrels] if qrels else [])], capsys)
    assert err.startswith(f"rankscope: error: {other} is not a context-mode content store"), err


# ─── sweeps, divergence, what to grade next ──────────────────────────────


def test_a_four_value_sweep_prints_every_stage_for_each_value_with_adjusted_p(db):
    args = [str(a) for a in ("eval", QUERIES, "--db", db, "--qrels", QRELS_JSON, "--sweep", "pool=3,10,20,40")]
    args += ["--measures", "nDCG@10,R@10"]
    r = runner.invoke(app, args, env={"COLUMNS": "140"})
    assert r.exit_code == 0, r.output
    doc = json.loads(invoke(*args, "--json").output)
    assert list(doc["variants"]) == ["reference", "pool=3", "pool=10", "pool=20", "pool=40"]
    means_part, versus_part = r.output.split("Against the reference", 1)
    lines = means_part.split("▲ best of the variants")[0].splitlines()
    for stage in doc["variants"]["reference"]["stages"]:
        rows = [line.split() for line in lines if line.split()[:1] == [stage]]
        assert rows, stage
        if len(rows) == 1:  # every variant has the same means there: one row
            assert rows[0][1:3] == ["all", "5"]
            continue
        assert [row[1] for row in rows] == list(doc["variants"])
        for row in rows:
            means = doc["variants"][row[1]]["stages"][stage]
            assert [c.rstrip("▲†? ") for c in row[2:4]] == [f"{means[m]:.3f}" for m in doc["measures"]]
    versus = [
        line.split() for line in versus_part.splitlines() if line.split()[:1] and line.split()[0].startswith("pool=")
    ]
    for name in ("pool=3", "pool=10", "pool=20", "pool=40"):
        for m in doc["measures"]:
            row = next(v for v in versus if v[:2] == [name, m])
            x = doc["variants"][name]["vs_reference"][m]
            want = "—" if x["p_adjusted"] is None else f"{x['p_adjusted']:.4f}"
            assert row[-1].rstrip("†") == want
    assert any(x["p_adjusted"] is not None for v in doc["variants"].values() for x in v["vs_reference"].values())
    assert "Holm" in r.output and "Per query, most changed first" in r.output
    for v in doc["variants"].values():
        assert {"spec", "stages", "vs_reference"} <= set(v)
        for x in v["vs_reference"].values():
            assert {"p", "p_adjusted", "delta"} <= set(x)


def test_eval_sweep_grids_and_named_variants(db):
    r = run_eval(
        db,
        "--sweep",
        "rerank=on,off",
        "--sweep",
        "rrf_k=10,60",
        "--variant",
        "big=pool=10,rerank=before-trim",
        "--test",
        "wilcoxon",
        "--json",
    )
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert list(doc["variants"]) == [
        "rerank=on,rrf_k=60",
        "rerank=on,rrf_k=10",
        "rerank=off,rrf_k=10",
        "rerank=off,rrf_k=60",
        "big",
    ]
    assert doc["reference"] == "rerank=on,rrf_k=60" and doc["test"] == "wilcoxon"
    assert doc["variants"]["big"]["spec"] == "pool=10,rerank=before-trim"
    assert doc["runs"]["groups"] == 2  # big's pool changes its retriever runs


@pytest.mark.parametrize(
    "args, message",
    [
        (["--sweep", "nope=1"], "--sweep nope=1: unknown setting 'nope'"),
        (["--sweep", "rrf_k=" + ",".join(map(str, range(1, 66)))], "at most 64 run at once"),
        (["--sweep", "rrf_k=1,2,3,4,5,6,7,8", "--sweep", "pool=1,2,3,4,5,6,7,8,9"], "8 × 9 = 72 variants"),
        (["--sweep", "rrf_k=1", "--b", "rerank=off"], "--b compares two variants"),
        (["--variant", "pool=10"], "a name comes first"),
        (["--against", "x"], "--against names a variant of --sweep or --variant"),
        (["--sweep", "rrf_k=1", "--against", "x"], "--against: no variant named 'x'"),
        (["--sort", "divergence"], "--sort divergence needs two variants"),
        (["--test", "z"], "--test must be one of t, wilcoxon"),
        (["--stage", "nope"], "--stage: unknown stage 'nope'"),
        (["--rbo-p", "1"], "--rbo-p: RBO persistence p must be between 0 and 1"),
        (["--depth", "0"], "--depth must be 1 or more"),
    ],
)
def test_eval_sweep_errors(db, args, message):
    assert message in error_of(run_eval(db, *args))


def test_eval_ab_carries_rbo_and_jaccard_and_sorts_by_divergence(db):
    from engine.lab.divergence import jaccard, rbo

    r = run_eval(db, "--b", "pool=20", "--json")
    doc = json.loads(r.output)
    qs = doc["comparison"]["queries"]
    assert all({"rbo", "jaccard"} <= set(q) for q in qs)
    changed = [q["id"] for q in qs if q["rbo"] < 1]
    assert changed
    # independent: the final lists of 'compare' for the same pair
    sc = json.loads(invoke("compare", "--queries", QUERIES, "--db", db, "--b", "pool=20", "--json").output)
    by_id = {q["id"]: q for q in sc["queries"]}
    for q in qs:
        rows = by_id[q["id"]]["rows"]
        fa = [r["rowid_a"] for r in sorted((r for r in rows if r["position_a"]), key=lambda r: r["position_a"])]
        fb = [r["rowid_b"] for r in sorted((r for r in rows if r["position_b"]), key=lambda r: r["position_b"])]
        assert q["rbo"] == pytest.approx(rbo(fa, fb)) == pytest.approx(by_id[q["id"]]["rbo"])
        assert q["jaccard"] == pytest.approx(jaccard(fa, fb, 10)) == pytest.approx(by_id[q["id"]]["jaccard"])
    text = run_eval(db, "--b", "pool=20", "--sort", "divergence").output
    table = text.split("most changed first", 1)[1]
    ids = [q["id"] for q in qs]
    positions = sorted((table.index(f"  {i} "), i) for i in ids)
    assert [i for _, i in positions][: len(changed)] == sorted(
        changed, key=lambda i: (next(q["rbo"] for q in qs if q["id"] == i), ids.index(i))
    )


def test_compare_queries_sort_by_divergence(db):
    doc = json.loads(
        invoke("compare", "--queries", QUERIES, "--db", db, "--b", "pool=20", "--sort", "divergence", "--json").output
    )
    rbos = [q["rbo"] for q in doc["queries"]]
    assert rbos == sorted(rbos) and rbos[0] < 1
    assert doc["rbo_p"] == 0.9 and doc["jaccard_k"] == 10
    assert "--sort orders the queries" in error_of(
        invoke("compare", "x", "--db", db, "--b", "rrf_k=1", "--sort", "divergence")
    )


def test_eval_ungraded_lists_what_to_grade_without_any_judgment(db):
    r = invoke("eval", QUERIES, "--db", db, "--ungraded", "--depth", "3", "--json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert doc["depth"] == 3 and doc["variants"] == ["reference"] and doc["queue"]
    lists = [u["lists"] for u in doc["queue"]]
    assert lists == sorted(lists, reverse=True)
    assert set(doc["queue"][0]) == {"query_id", "query", "chunk_id", "lists", "best_rank", "stages", "variants"}
    # graded chunks leave the queue
    first = doc["queue"][0]
    write_qrels(Qrels({first["query_id"]: {first["chunk_id"]: 2}}), default_qrels_path(db))
    again = json.loads(invoke("eval", QUERIES, "--db", db, "--ungraded", "--depth", "3", "--json").output)
    assert (first["query_id"], first["chunk_id"]) not in {(u["query_id"], u["chunk_id"]) for u in again["queue"]}
    assert len(again["queue"]) == len(doc["queue"]) - 1
    human = invoke("eval", QUERIES, "--db", db, "--ungraded", "--sweep", "rerank=on,off")
    assert "To grade next" in human.output and "of any stage of 2 variants" in human.output


def test_eval_writes_nothing_in_the_data_folder(tmp_path):
    """eval only reads: it wrote query-file.txt into the user's data folder
    (with the store's own judgments, --ungraded included) without being asked."""
    from engine.store.userdata import data_dir, query_file_of

    db = tmp_path / "sample.db"
    assert invoke("index", SAMPLE_CORPUS, "--db", db).exit_code == 0
    assert invoke("eval", QUERIES, "--db", db, "--ungraded").exit_code == 0
    assert query_file_of(db) is None
    write_qrels(Qrels({"rerank": {"docs/replication.md::Replication > Write quorum": 3}}), default_qrels_path(db))
    before = sorted(data_dir().rglob("*"))
    assert invoke("eval", QUERIES, "--db", db).exit_code == 0
    assert sorted(data_dir().rglob("*")) == before
    assert query_file_of(db) is None


def test_qrels_query_file_names_the_stores_query_file(db, tmp_path, capsys):
    from engine.store.userdata import query_file_of

    assert query_file_of(db) is None
    r = invoke("qrels", "query-file", QUERIES, "--db", db)
    assert r.exit_code == 0, r.output
    assert query_file_of(db) == QUERIES.resolve()
    bad = tmp_path / "bad.json"
    bad.write_text("[]")
    assert "has no queries" in cli_error(["qrels", "query-file", str(bad), "--db", str(db)], capsys)
    assert query_file_of(db) == QUERIES.resolve()


def test_eval_marks_values_on_few_judged_results(db, tmp_path):
    thin = tmp_path / "thin.txt"
    thin.write_text("rerank 0 docs/replication.md::Replication%20>%20Write%20quorum 3\n")
    r = invoke("eval", QUERIES, "--db", db, "--qrels", thin, "--measures", "nDCG@10")
    assert r.exit_code == 0, r.output
    words = " ".join(r.output.split())
    assert "rests on fewer than half judged results" in words and "nDCG@10 for 1 (rerank)" in words
    row = next(line for line in r.output.splitlines() if line.startswith("  rerank "))
    assert "?" in row


def test_readme_sweep_example_is_current(db):
    """The README's 4-value sweep: its final-stage means and Holm-adjusted
    p-values are what ``rankscope eval --sweep`` computes today."""
    readme = (REPO / "README.md").read_text("utf-8")
    block = readme.split("--sweep pool=default,10,20,40 --measures nDCG@10,R@10\n", 1)[1].split("```", 1)[0]
    args = ["--qrels", QRELS_JSON, "--sweep", "pool=default,10,20,40", "--measures", "nDCG@10,R@10", "--json"]
    doc = json.loads(invoke("eval", QUERIES, "--db", db, *args).output)
    means, versus = block.split("Against the reference", 1)
    finals = {line.split()[1]: line.split()[-3:-1] for line in means.splitlines() if line.startswith("  final ")}
    assert set(finals) == set(doc["variants"])
    for name, cells in finals.items():
        want = [f"{doc['variants'][name]['stages']['final'][m]:.3f}" for m in doc["measures"]]
        assert [c.rstrip("▲†? ") for c in cells] == want, name
    rows = [line.split() for line in versus.split("p: two-sided")[0].splitlines() if line.startswith("  pool=")]
    assert len(rows) == 3 * len(doc["measures"])
    for row in rows:
        x = doc["variants"][row[0]]["vs_reference"][row[1]]
        assert row[-1].rstrip("†") == ("—" if x["p_adjusted"] is None else f"{x['p_adjusted']:.4f}")


@pytest.mark.parametrize(
    "command",
    [
        ["eval", "{q}"],
        ["eval", "{q}", "--qrels", str(QRELS_JSON)],
        ["batch", "{q}"],
        ["compare", "--queries", "{q}", "--b", "key=rowid"],
    ],
)
def test_an_empty_query_file_says_so(db, tmp_path, command):
    """``[]`` as the query file: eval said "no judgments for …; give --qrels"
    (or "none of the 0 queries …"); every command that reads a query file
    now says the file has no queries."""
    empty = tmp_path / "empty.json"
    empty.write_text("[]")
    r = invoke(*[str(empty) if a == "{q}" else a for a in command], "--db", db)
    assert r.exit_code != 0
    assert "has no queries" in error_of(r), error_of(r)


@pytest.mark.parametrize(
    "command",
    [
        ["eval", "{q}", "--db", "{db}", "--ungraded"],
        ["eval", "{q}", "--db", "{db}", "--qrels", str(QRELS_JSON)],
        ["compare", "--queries", "{q}", "--db", "{db}", "--b", "key=rowid"],
        ["batch", "{q}", "--db", "{db}"],
        ["snapshot", "save", "{q}", "--db", "{db}", "-o", "{out}"],
    ],
)
def test_a_query_file_with_duplicate_ids_is_refused(db, tmp_path, capsys, command):
    """Results, judgments, TREC runs and snapshots are keyed by query id: two
    entries with one id (also an entry whose id is another's number) were
    accepted silently, and eval scored both queries as one."""
    queries = tmp_path / "dup.json"
    entries = [{"id": "q1", "query": "write quorum"}, {"query": "retention"}, {"id": "q1", "query": "kafka"}]
    entries.append({"id": "2", "query": "consumer lag"})
    queries.write_text(json.dumps(entries))
    out = tmp_path / "snap.json"
    line = cli_error([a.format(q=queries, db=db, out=out) for a in command], capsys)
    assert "query ids must be unique" in line
    assert "'q1' is the id of entries 1 and 3" in line and "'2' is the id of entries 2 and 4" in line
    assert not out.exists()


def test_compare_set_refuses_duplicate_ids():
    from engine.lab.compare import compare_set
    from engine.store.store import Store

    with Store.create() as store, pytest.raises(ValueError, match="'a' is the id of entries 1 and 2"):
        compare_set(store, [{"id": "a", "query": "x"}, {"id": "a", "query": "y"}], "reference", "key=rowid")


@pytest.mark.parametrize("spec", ["P@0", "nDCG@0", "R@0", "AP@0", "Success@0", "RR@0", "nDCG@-3", "P(rel=0)@3", "P"])
def test_a_measure_it_cannot_compute_is_one_line_before_any_evaluation(db, spec):
    """``P@0`` (any cutoff below 1) aborted the process in trec_eval (exit
    134) and ``P(rel=0)@3`` was a traceback: run in a process of its own,
    each is one line, exit 2."""
    import subprocess
    import sys

    r = subprocess.run(
        [sys.executable, "-m", "tui.cli", "eval", str(QUERIES), "--db", str(db), "--qrels", str(QRELS_TREC)]
        + ["--measures", f"nDCG@10,{spec}"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith("rankscope: error: --measures: ") and f"'{spec}'" in r.stderr, r.stderr
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
