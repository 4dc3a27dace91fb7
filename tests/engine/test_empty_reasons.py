"""Why a search returned nothing, as data (``Trace.empty``, engine/pipeline/empty_reasons.py).

One test per code builds the situation and asserts the code and its facts
(not the words); the words are asserted by the older tests (test_diff,
test_variants, test_store, test_sample_corpus, test_readonly), which read
``Trace.empty_reason`` unchanged.
"""

from __future__ import annotations

import json
import sqlite3

import pytest

from engine import EmptyPart, FuzzyStage, SearchParams, Store, Variant, search, trace_to_dict
from engine.pipeline.empty_reasons import EMPTY_CODES, empty_sentence, part_sentence
from engine.pipeline.stages.fuzzy import FUZZY_CODES


def _parts(trace) -> list[tuple[str, dict]]:
    return [(p.code, p.data) for p in trace.empty]


def _no_match(**filters) -> dict:
    facts = {
        "retrievers": ("porter", "trigram"),
        "variant_retrievers": "both",
        "source": None,
        "source_match": "like",
        "content_type": None,
    }
    facts.update(filters)
    return facts


@pytest.fixture
def alpha(store):
    """Three ``alpha`` chunks under three titles, and a ``beta`` one, all in session s1."""
    store.index_text(
        "a.md", "# One\nalpha one\n# Two\nalpha two\n# Three\nalpha three\n# Four\nbeta", "markdown", session_id="s1"
    )
    return store


def _on_disk(tmp_path, drop: str) -> Store:
    """A store file holding one zebra chunk, with table ``drop`` dropped,
    opened read-only."""
    path = tmp_path / f"no-{drop}.db"
    s = Store.create(str(path))
    s.index_text("z.md", "# Zebra\nzebra crossing", "markdown")
    s.close()
    conn = sqlite3.connect(path)
    conn.execute(f"DROP TABLE {drop}")
    conn.commit()
    conn.close()
    return Store.open_readonly(path)


# ─── one situation per code ─────────────────────────────────────────────


def test_results_have_no_parts(alpha):
    t = search(alpha, SearchParams("alpha"))
    assert t.final and t.empty == () and t.empty_reason is None
    assert trace_to_dict(t)["empty"] == []


def test_empty_query(alpha):
    for q in ("", "  \t"):
        assert _parts(search(alpha, SearchParams(q))) == [("empty-query", {})]


def test_fts_limit_0(alpha):
    t = search(alpha, SearchParams("alpha", variant=Variant(fts_limit=0)))
    assert t.layer == "none"
    assert _parts(t)[0] == ("fts-limit-0", {})


def test_retriever_error(tmp_path):
    with _on_disk(tmp_path, "chunks_idx") as s:  # Porter's FTS5 index is gone
        t = search(s, SearchParams("zebra", variant=Variant(retrievers="porter")))
    assert t.layer == "none"
    (code, facts), fuzzy = _parts(t)
    assert code == "retriever-error" and facts["retriever"] == "porter"
    assert facts["error"] == t.first.porter.error and "malformed" in facts["error"]
    assert fuzzy == ("fuzzy", {"fuzzy_code": "no-correction"})


def test_no_match_records_the_retrievers_and_the_filters(alpha):
    assert _parts(search(alpha, SearchParams("zzzqqq"))) == [
        ("no-match", _no_match()),
        ("fuzzy", {"fuzzy_code": "no-correction"}),
    ]
    t = search(alpha, SearchParams("alpha", source="a.md", source_match="exact", content_type="code"))
    assert _parts(t)[0] == ("no-match", _no_match(source="a.md", source_match="exact", content_type="code"))
    t = search(alpha, SearchParams("zzzqqq", variant=Variant(retrievers="trigram", fuzzy="never")))
    assert _parts(t)[0] == ("no-match", _no_match(retrievers=("trigram",), variant_retrievers="trigram"))


def test_pool_empty(alpha):
    t = search(alpha, SearchParams("alpha", variant=Variant(pool_size=0)))
    assert t.layer == "none" and t.first.fusion.candidates
    assert _parts(t)[0] == ("pool-empty", {"pool_size": 0})


def test_filter_removed_all_names_how_many(alpha):
    t = search(alpha, SearchParams("beta", sessions=("s2",)))
    assert _parts(t)[0] == ("filter-removed-all", {"removed": 1})
    t = search(alpha, SearchParams("alpha", sessions=("s3",)))
    assert _parts(t)[0] == ("filter-removed-all", {"removed": 3})


def test_unknown_sessions_and_sessions_not_pooled(alpha):
    for i in range(10):
        alpha.index_text(f"n{i}.md", f"# Note {i}\nunrelated words", "markdown", session_id=f"t{i}")
    t = search(alpha, SearchParams("alpha", sessions=("t3", "ghost", "t0", "spook")))
    assert t.layer == "none"
    assert _parts(t)[:3] == [
        ("filter-removed-all", {"removed": 3}),
        (
            "unknown-sessions",
            {
                "sessions": ("ghost", "spook"),
                "store_sessions": ("s1", "t0", "t1", "t2", "t3", "t4", "t5", "t6"),
                "store_session_count": 11,
            },
        ),
        ("sessions-not-pooled", {"sessions": ("t3", "t0")}),
    ]
    assert "(sessions: s1, t0, t1, t2, t3, t4, t5, t6, … (3 more))" in t.empty_reason
    # only the parts that apply: every allowed id exists somewhere
    t = search(alpha, SearchParams("alpha", sessions=("t1",)))
    assert [code for code, _ in _parts(t)] == ["filter-removed-all", "sessions-not-pooled", "fuzzy"]


def test_limit_0_with_and_without_an_answering_pass(alpha):
    t = search(alpha, SearchParams("alpha", limit=0))  # pool 0: nothing reaches the trim
    assert t.layer == "none"
    assert _parts(t)[0] == ("limit-0", {"layer": "none"})
    t = search(alpha, SearchParams("alpha", limit=0, sessions=("s1",)))  # pool 40: the trim keeps 0
    assert t.layer == "rrf" and t.final == ()
    assert _parts(t) == [("limit-0", {"layer": "rrf"})]
    assert trace_to_dict(t)["empty"] == [{"code": "limit-0", "layer": "rrf"}]


def test_fuzzy_part_carries_the_fuzzy_stage_code(alpha):
    t = search(alpha, SearchParams("zzzqqq", variant=Variant(fuzzy="never")))
    assert _parts(t)[-1] == ("fuzzy", {"fuzzy_code": "policy-never"}) and t.fuzzy.code == "policy-never"
    t = search(alpha, SearchParams("zzzqqq"))
    assert _parts(t)[-1] == ("fuzzy", {"fuzzy_code": "no-correction"}) and t.fuzzy.code == "no-correction"
    t = search(alpha, SearchParams("xy"))  # no word of 3+ characters: nothing to correct
    assert t.fuzzy.ran and t.fuzzy.code == "no-word"
    assert _parts(t)[-1] == ("fuzzy", {"fuzzy_code": "no-word"})
    # corrected, but the re-run's candidates are all in another session
    t = search(alpha, SearchParams("alpah", sessions=("s9",)))
    assert t.fuzzy.code == "corrected" and t.fuzzy.corrected_query == "alpha"
    assert _parts(t)[-1] == ("fuzzy", {"fuzzy_code": "corrected", "corrected_query": "alpha"})


def test_fuzzy_part_of_a_store_without_vocabulary(tmp_path):
    with _on_disk(tmp_path, "vocabulary") as s:
        t = search(s, SearchParams("zebar"))
    assert not t.fuzzy.ran and t.fuzzy.code == "no-vocabulary"
    assert _parts(t) == [("no-match", _no_match()), ("fuzzy", {"fuzzy_code": "no-vocabulary"})]
    assert t.empty_reason.endswith("; " + t.fuzzy.reason)  # the fuzzy stage's own sentence


def test_unexplained_is_worded_no_results():
    part = EmptyPart.of("unexplained")
    assert part_sentence(part, FuzzyStage(False, "policy-never")) == "no results"


# ─── the codes as a closed set ──────────────────────────────────────────

#: A part for every code (facts as search records them).
SAMPLES = {
    "empty-query": {},
    "fts-limit-0": {},
    "retriever-error": {"retriever": "trigram", "error": "OperationalError: no such table"},
    "no-match": _no_match(source="docs", content_type="prose"),
    "pool-empty": {"pool_size": 0},
    "filter-removed-all": {"removed": 2},
    "unknown-sessions": {"sessions": ("x",), "store_sessions": ("a", "b"), "store_session_count": 2},
    "sessions-not-pooled": {"sessions": ("a", "b")},
    "limit-0": {"layer": "none"},
    "fuzzy": {"fuzzy_code": "no-correction"},
    "unexplained": {},
}


@pytest.mark.parametrize("code", list(EMPTY_CODES))
def test_every_code_has_a_sentence(code):
    assert set(SAMPLES) == set(EMPTY_CODES)  # a new code needs a sample here
    part = EmptyPart.of(code, **SAMPLES[code])
    words = part_sentence(part, FuzzyStage(True, "no-correction", "fusion-empty"))
    assert isinstance(words, str) and words.strip() and "None" not in words


def test_sentences_join_in_order():
    fz = FuzzyStage(True, "no-correction", "fusion-empty", words=("zzzqqq",))
    parts = (EmptyPart.of("no-match", **_no_match(source="docs")), EmptyPart.of("fuzzy", fuzzy_code="no-correction"))
    assert empty_sentence(parts, fz) == "no match in either index with source LIKE '%docs%'; fuzzy found no correction"
    assert empty_sentence((), fz) is None


@pytest.mark.parametrize("code", ["policy-never", "first-pass-found", "no-vocabulary"])
def test_a_skipped_fallback_is_worded_by_the_fuzzy_stage(code):
    fz = FuzzyStage(False, code, first_pass_results=2)
    assert part_sentence(EmptyPart.of("fuzzy", fuzzy_code=code), fz) == FUZZY_CODES[code](fz) == fz.reason


def test_an_unknown_code_is_refused():
    with pytest.raises(ValueError, match="unknown empty-result code 'nope'; known: empty-query, "):
        EmptyPart.of("nope")
    with pytest.raises(KeyError, match="pool-empty has no fact 'removed'"):
        EmptyPart.of("pool-empty", pool_size=0).fact("removed")


def test_json_writes_the_parts_as_data(alpha):
    t = search(alpha, SearchParams("zzzqqq", source="a.md"))
    d = json.loads(json.dumps(trace_to_dict(t)))
    assert d["empty"] == [
        {
            "code": "no-match",
            "retrievers": ["porter", "trigram"],
            "variant_retrievers": "both",
            "source": "a.md",
            "source_match": "like",
            "content_type": None,
        },
        {"code": "fuzzy", "fuzzy_code": "no-correction"},
    ]
    assert (
        d["empty_reason"]
        == t.empty_reason
        == "no match in either index with source LIKE '%a.md%'; fuzzy found no correction"
    )
    assert d["fuzzy"]["reason_code"] == d["empty"][-1]["fuzzy_code"]
