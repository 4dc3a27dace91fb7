"""Per-store history, cases and judgments (tui/browser/userstate.py), without the browser."""

from __future__ import annotations

import json

import pytest

from engine import SearchParams
from engine.pipeline.variants import Variant
from tui.browser.userstate import (
    HISTORY_MAX,
    Case,
    CaseBook,
    HistoryCursor,
    Judgments,
    QueryHistory,
    free_export_path,
    query_slug,
)


def test_history_dedupes_caps_and_persists(tmp_path):
    path = tmp_path / "h.json"
    h = QueryHistory(path)
    for q in ("a", "b", "a", "  ", "c"):
        h.add(q)
    assert h.entries == ["b", "a", "c"]
    assert QueryHistory(path).entries == ["b", "a", "c"]
    for i in range(HISTORY_MAX + 5):
        h.add(f"q{i}")
    assert len(h.entries) == HISTORY_MAX and h.entries[-1] == f"q{HISTORY_MAX + 4}"


def test_history_search_is_fuzzy_in_order():
    h = QueryHistory(None)
    for q in ("write quorum", "retention", "quorum reads", "wrong"):
        h.add(q)
    assert h.search("") == ["wrong", "quorum reads", "retention", "write quorum"]
    assert h.search("wqm") == ["write quorum"]
    assert set(h.search("quo")) == {"write quorum", "quorum reads"}
    assert h.search("zzz") == []


def test_cursor_steps_like_a_shell():
    h = QueryHistory(None)
    for q in ("a", "b", "c"):
        h.add(q)
    cur = HistoryCursor()
    assert cur.newer() is None  # not stepping
    assert cur.older(h, "c") == "b"  # "c" is already in the box: skipped
    assert cur.older(h, "b") == "a" and cur.older(h, "a") is None
    assert cur.newer() == "b" and cur.newer() == "c" and cur.newer() == "c"  # the draft
    assert not cur.browsing


def test_cursor_steps_through_the_history_as_it_was_when_stepping_began():
    h = QueryHistory(None)
    for q in ("a", "b", "c"):
        h.add(q)
    cur = HistoryCursor()
    assert cur.older(h, "") == "c"
    h.add("b")  # recorded while stepping (a stepped query's search): ["a", "c", "b"]
    assert cur.older(h, "c") == "b" and cur.older(h, "b") == "a"
    assert cur.stepped_to("c") and not cur.stepped_to("z")
    assert cur.newer() == "b" and cur.newer() == "c" and cur.newer() == ""
    assert not cur.browsing and not cur.stepped_to("c")
    assert cur.older(h, "") == "b"  # a new stepping sees the history as it is now


def test_an_unreadable_file_is_kept(tmp_path):
    path = tmp_path / "h.json"
    path.write_text("{broken")
    h = QueryHistory(path)
    assert h.problem and h.entries == []
    with pytest.raises(ValueError, match="not saved"):
        h.add("x")
    assert path.read_text() == "{broken"


def test_judgments_ids_follow_query_texts(tmp_path):
    j = Judgments(tmp_path / "q.json")
    assert j.grade("Write quorum!", "a::b", 3) == "write-quorum"
    assert j.grade("write quorum?", "a::b", 1) == "write-quorum-2"  # another text, same slug
    assert j.qid_for("Write quorum!") == "write-quorum" and j.for_query("Write quorum!") == {"a::b": 3}
    assert Judgments(tmp_path / "q.json").for_query("write quorum?") == {"a::b": 1}
    assert query_slug("  ") == "query"
    with pytest.raises(ValueError, match="type a query first"):
        j.grade(" ", "a::b", 1)


def test_removing_a_grade_that_is_not_there_writes_nothing(tmp_path):
    path = tmp_path / "q.json"
    j = Judgments(path)
    assert j.grade("kafka broker", "a::b", None) is None
    assert not path.exists() and j.qid_for("kafka broker") is None
    assert j.grade("write quorum", "a::b", 2) == "write-quorum"
    before = path.read_bytes()
    assert j.grade("write quorum", "c::d", None) is None  # another chunk of a judged query
    assert path.read_bytes() == before
    assert j.grade("write quorum", "a::b", None) == "write-quorum"
    assert Judgments(path).for_query("write quorum") == {}


def test_an_export_is_new_files_at_the_next_free_name(tmp_path):
    book = CaseBook(None)
    book.cases.append(Case.from_search("q", SearchParams("q"), None, {"a::b": 1}))
    assert free_export_path(tmp_path, "cases.json") == tmp_path / "cases.json"
    (tmp_path / "cases.qrels.json").write_text("kept")
    assert free_export_path(tmp_path, "cases.json") == tmp_path / "cases-2.json"
    with pytest.raises(FileExistsError):
        book.export(tmp_path / "cases.json")  # its qrels name is taken: nothing written
    assert not (tmp_path / "cases.json").exists() and (tmp_path / "cases.qrels.json").read_text() == "kept"
    queries, qrels = book.export(free_export_path(tmp_path, "cases.json"))
    assert (queries.name, qrels.name) == ("cases-2.json", "cases-2.qrels.json")
    with pytest.raises(FileExistsError):
        book.export(queries)


def test_case_entry_and_export(tmp_path):
    params = SearchParams(
        "retention", limit=5, sessions=("sess-docs",), content_type="prose", variant=Variant(rerank="off")
    )
    case = Case.from_search("retention", params, "a.md::T", {"a.md::T": 2})
    assert case.params() == params
    assert case.query_entry() == {
        "id": "retention",
        "query": "retention",
        "limit": 5,
        "content_type": "prose",
        "sessions": ["sess-docs"],
    }
    book = CaseBook(tmp_path / "cases.json")
    book.save_case(case)
    book.save_case(Case.from_search("retention", SearchParams("retention"), None, {}))  # same id: replaced
    assert len(CaseBook(tmp_path / "cases.json").cases) == 1
    queries, qrels = book.export(tmp_path / "out.json")
    assert json.loads(queries.read_text()) == [{"id": "retention", "query": "retention"}]
    assert qrels.name == "out.qrels.json"
