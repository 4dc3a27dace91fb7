"""benchmarks.versus: the side-by-side run against the reference. The real
reference (context-mode from npm) is not installed here; a stand-in package
with the same ``build/store.js`` shape drives the real Node driver, so the
protocol, the alternation, the answer comparison and the report are tested
wherever Node is."""

from __future__ import annotations

import io
import shutil
import textwrap

import pytest

from benchmarks.search import BenchQuery
from benchmarks.versus import Reference, ReferenceError_, SideBySide, measure, report
from engine import SearchParams, Store, index_corpus, search

from .conftest import SAMPLE_CORPUS

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not on PATH")


def fake_package(tmp_path, answers: dict[str, list[list[str]]]):
    """A package folder whose ContentStore answers ``answers[query]``
    (rows of [source, title, layer]) and fails on the query "boom"."""
    build = tmp_path / "pkg" / "build"
    build.mkdir(parents=True)
    (build / "store.js").write_text(
        textwrap.dedent(
            f"""
            const ANSWERS = {__import__("json").dumps(answers)};
            export class ContentStore {{
              constructor(path) {{ this.path = path; }}
              searchWithFallback(query, limit) {{
                if (query === "boom") throw new Error("no such table: chunks");
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
    assert "goal (issue 12" in text and ("met" in text)
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
