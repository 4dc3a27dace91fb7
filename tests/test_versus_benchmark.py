"""benchmarks.versus: the side-by-side run against the reference. The real
reference (context-mode from npm) is not installed here; a stand-in package
with the same ``build/store.js`` shape drives the real Node driver, so the
protocol, the alternation, the answer comparison and the report are tested
wherever Node is."""

from __future__ import annotations

import io
import json
import shutil
import textwrap

import pytest

from benchmarks.search import BenchQuery
from benchmarks.versus import (
    Reference,
    ReferenceError_,
    SideBySide,
    build_reference_store,
    measure,
    queries_of,
    report,
    summary,
)
from engine import SearchParams, Store, index_corpus, search

from .conftest import SAMPLE_CORPUS

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not on PATH")


def fake_package(tmp_path, answers: dict[str, list[list[str]]]):
    """A package folder whose ContentStore answers ``answers[query]``
    (rows of [source, title, layer]) and fails on the query "boom"; a
    filtered search answers ``[[source, contentType, sourceMatchMode]]``;
    ``index`` and ``close`` append what they were given to ``DB.log``."""
    build = tmp_path / "pkg" / "build"
    build.mkdir(parents=True)
    (build / "store.js").write_text(
        textwrap.dedent(
            f"""
            import {{ appendFileSync }} from "node:fs";
            const ANSWERS = {__import__("json").dumps(answers)};
            export class ContentStore {{
              constructor(path) {{ this.path = path; }}
              index(options) {{
                appendFileSync(this.path + ".log", JSON.stringify(options) + "\\n");
                return {{ totalChunks: 2 }};
              }}
              close() {{ appendFileSync(this.path + ".log", "closed\\n"); }}
              searchWithFallback(query, limit, source, contentType, sourceMatchMode) {{
                if (query === "boom") throw new Error("no such table: chunks");
                if (source || contentType) return [{{ source: String(source), title: String(contentType), matchLayer: sourceMatchMode }}];
                return (ANSWERS[query] ?? []).slice(0, limit)
                  .map(([source, title, matchLayer]) => ({{ source, title, matchLayer }}));
              }}
            }}
            """
        ),
        encoding="utf-8",
    )
    return tmp_path / "pkg"


@pytest.fixture
def store(tmp_path):
    s = Store.create(tmp_path / "s.db")
    index_corpus(s, SAMPLE_CORPUS)
    yield s
    s.close()


def test_reference_answers_and_identical_answers_are_counted(tmp_path, store):
    queries = ["throttling", "cache hook", "write quorum"]
    answers = {}
    for q in queries:
        trace = search(store, SearchParams(q, limit=3))
        answers[q] = [[r.candidate.source, r.candidate.title, r.layer] for r in trace.final]
    answers["write quorum"] = list(reversed(answers["write quorum"]))  # the reference "disagrees" here
    ref = Reference(fake_package(tmp_path, answers), str(tmp_path / "s.db"))
    try:
        assert ref.node.startswith("v")
        ms, rows = ref.search("throttling", 3)
        assert ms >= 0 and rows == [tuple(r) for r in answers["throttling"]]
        side = SideBySide(1000)
        measure(store, ref, [BenchQuery("term", SearchParams(q, limit=3)) for q in queries * 2], side)
    finally:
        ref.close()
    assert len(side.ours) == len(side.ref) == 6
    assert side.differing == ["write quorum"]
    out = io.StringIO()
    report(side, lambda line="": print(line, file=out))
    text = out.getvalue()
    assert "answers: 2 of 3 queries identical" in text
    assert "differs: 'write quorum'" in text
    assert "goal (issue 25: ratio >= 1.0" in text and ("met" in text)
    assert "reference / rankscope:" in text


def test_a_failing_reference_search_is_reported(tmp_path):
    ref = Reference(fake_package(tmp_path, {}), str(tmp_path / "x.db"))
    try:
        with pytest.raises(ReferenceError_, match="no such table: chunks"):
            ref.search("boom", 3)
    finally:
        ref.close()


def test_a_wrong_package_folder_is_a_clear_error(tmp_path):
    with pytest.raises(ReferenceError_, match="build/store.js not found"):
        Reference(tmp_path, str(tmp_path / "x.db"))


def test_the_reference_builds_its_own_store_file_by_file(tmp_path):
    pkg = fake_package(tmp_path, {})
    db = tmp_path / "ref.db"
    seconds, chunks = build_reference_store(pkg, str(db), [("r0001/a.md", "/docs/a.md"), ("r0001/b.md", "/docs/b.md")])
    assert seconds >= 0 and chunks == 4
    log = (tmp_path / "ref.db.log").read_text(encoding="utf-8").splitlines()
    assert [json.loads(x) for x in log[:2]] == [
        {"path": "/docs/a.md", "source": "r0001/a.md"},
        {"path": "/docs/b.md", "source": "r0001/b.md"},
    ]
    assert log[2:] == ["closed"]  # closing is what merges the reference's indexes


def test_filters_reach_the_reference(tmp_path):
    ref = Reference(fake_package(tmp_path, {}), str(tmp_path / "x.db"))
    try:
        _, rows = ref.search(SearchParams("install", limit=3, source="commands/", content_type="code"))
        _, exact = ref.search(SearchParams("install", limit=3, source="a.md", source_match="exact"))
    finally:
        ref.close()
    assert rows == [("commands/", "code", "like")] and exact == [("a.md", "undefined", "exact")]


def test_both_query_sets_and_the_summary(tmp_path, store):
    heavy, light = queries_of("heavy", 1), queries_of("light", 2)
    assert len(heavy) == 80 and len(light) == 160
    assert {q.category for q in light} == {"term", "flag", "filtered", "no-match", "two-word"}
    assert sum(1 for q in light[:80] if q.params.source or q.params.content_type) == 16
    sides = []
    for name, chunks, ours, ref in (("heavy", 1437, 2.0, 3.0), ("light", 14370, 1.0, 1.5)):
        side = SideBySide(chunks, chunks, name, [ours] * 4, [ref] * 4, ["term"] * 4, ["q"] * 4)
        sides.append(side)
    out = io.StringIO()
    summary(sides, lambda line="": print(line, file=out))
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("summary") and len(lines) == 5
    assert lines[3].split()[:2] == ["1,437", "heavy"] and lines[3].endswith(" met")  # 1.5 >= 1.0
    assert lines[4].split()[:2] == ["14,370", "light"] and lines[4].endswith("NOT met")  # 1.5 < 2.0
