"""Variant specs and the side-by-side comparison."""

from __future__ import annotations

import json

import pytest

from engine import SearchParams, Variant
from engine.lab.compare import CompareCounts, compare, compare_set, comparison_to_dict, set_comparison_to_dict
from engine.pipeline.variants import parse_variant, variant_spec

from ..helpers import index_zebra


@pytest.fixture
def zebra(store):
    """Row 1 ``Zebra crossing guide`` is fused #1; row 2 ``Beta`` is fused #2
    but wins the rerank (see test_variants)."""
    return index_zebra(store)


def P(query, limit=2, spec="reference", **kw):
    return SearchParams(query, limit=limit, variant=parse_variant(spec), **kw)


# ─── parse_variant ───────────────────────────────────────────────────────


def test_parse_variant_full_spec():
    v = parse_variant(
        "key=rowid,rerank=before-trim,rrf_k=10,fts_limit=50,pool=20,pool_sessions=80,fuzzy=always,retrievers=porter"
    )
    assert v == Variant(
        fusion_key="rowid",
        rerank="before-trim",
        rrf_k=10,
        fts_limit=50,
        pool_size=20,
        pool_size_sessions=80,
        fuzzy="always",
        retrievers="porter",
    )


@pytest.mark.parametrize("spec", ["", "reference", "  Reference ", "default"])
def test_parse_variant_reference(spec):
    assert parse_variant(spec) == Variant()


def test_parse_variant_is_lenient_about_spacing_and_case_and_knows_one_spelling():
    assert parse_variant(" Key = ROWID , rrf-k=5,") == Variant(fusion_key="rowid", rrf_k=5)
    assert parse_variant("key=rowid,pool=4,pool_sessions=9") == Variant(
        fusion_key="rowid", pool_size=4, pool_size_sessions=9
    )
    assert parse_variant("pool=default,fts_limit=auto") == Variant()
    with pytest.raises(ValueError, match="unknown variant key 'fusion_key'"):
        parse_variant("fusion_key=rowid")


@pytest.mark.parametrize(
    "v",
    [
        Variant(),
        Variant(fusion_key="rowid", rrf_k=0),
        Variant(fts_limit=7, pool_size=0, pool_size_sessions=12),
        Variant(rerank="off", fuzzy="never", retrievers="trigram"),
    ],
)
def test_parse_variant_round_trips(v):
    assert parse_variant(variant_spec(v)) == v


@pytest.mark.parametrize(
    "spec, words",
    [
        ("key=row", ["'row'", "key", "source-title", "rowid"]),
        ("rerank=sometimes", ["'sometimes'", "rerank", "on", "off", "before-trim"]),
        ("fuzzy=maybe", ["'maybe'", "fuzzy", "fallback", "always", "never"]),
        ("retrievers=bm25", ["'bm25'", "retrievers", "both", "porter", "trigram"]),
        ("colour=red", ["'colour'", "key", "rrf_k", "fts_limit", "pool", "pool_sessions", "rerank", "fuzzy"]),
        ("rrf_k=-1", ["'-1'", "rrf_k", "non-negative integer"]),
        ("rrf_k=default", ["'default'", "rrf_k"]),
        ("pool=lots", ["'lots'", "pool", "non-negative integer or 'default'"]),
        ("fts_limit=99999999999", ["'99999999999'", "fts_limit"]),
        ("rowid", ["'rowid'", "key=value", "allowed keys"]),
        ("key=rowid,key=source-title", ["'key'", "twice"]),
    ],
)
def test_parse_variant_errors_name_the_problem_and_the_choices(spec, words):
    with pytest.raises(ValueError) as info:
        parse_variant(spec)
    for w in words:
        assert w in str(info.value)


# ─── compare ─────────────────────────────────────────────────────────────


def test_compare_marks_up_and_down(zebra):
    cmp = compare(zebra, P("zebra crossing"), P("zebra crossing", spec="rerank=off"))
    assert [r.candidate.rowid for r in cmp.final_a] == [2, 1]
    assert [r.candidate.rowid for r in cmp.final_b] == [1, 2]
    assert [(r.rowid, r.position_a, r.position_b, r.marker, r.delta) for r in cmp.rows] == [
        (1, 2, 1, "up", 1),
        (2, 1, 2, "down", -1),
    ]
    assert cmp.counts == CompareCounts(improved=1, worsened=1)
    assert cmp.overlap == 1.0
    assert cmp.trace_a.params.variant == Variant() and cmp.trace_b.params.variant.rerank == "off"
    row = next(r for r in cmp.rows if 1 in (r.rowid_a, r.rowid_b))
    assert row.boost_a is not None and row.boost_b is None  # no rerank in B
    assert row.score_a == row.score_b == 1 / (60 + 1) + 1 / (60 + 1)


def test_compare_marks_new_and_gone(zebra):
    cmp = compare(
        zebra,
        P("zebra crossing", limit=1, sessions=()),
        P("zebra crossing", limit=1, sessions=(), spec="rerank=before-trim"),
    )
    assert [(r.rowid, r.position_a, r.position_b, r.marker) for r in cmp.rows] == [
        (2, None, 1, "new"),
        (1, 1, None, "gone"),
    ]
    assert cmp.counts == CompareCounts(only_in_a=1, only_in_b=1)
    assert cmp.overlap == 0.0 and cmp.rows[0].delta is None


def test_compare_same_variant_is_unchanged(zebra):
    cmp = compare(zebra, P("zebra crossing"), P("zebra crossing"))
    assert [r.marker for r in cmp.rows] == ["same", "same"]
    assert cmp.counts == CompareCounts(unchanged=2) and cmp.counts.identical and cmp.counts.shared == 2


def test_compare_both_empty(zebra):
    cmp = compare(zebra, P("nothingmatches"), P("nothingmatches", spec="fuzzy=never"))
    assert cmp.rows == () and cmp.overlap == 1.0 and cmp.counts.identical


def test_compare_rowid_key_shows_the_merged_chunk_as_new(store):
    store.index_text("guide.md", "# Guide\n## Example\nalpha widget one\n## Example\nalpha widget two\n", "markdown")
    cmp = compare(store, P("widget", limit=3), P("widget", limit=3, spec="key=rowid"))
    assert [(r.rowid, r.marker) for r in cmp.rows] == [(2, "same"), (3, "new")]
    assert cmp.overlap == 1 / 2


def test_compare_matches_a_merged_group_kept_by_another_row(store):
    # Porter finds both "Example" chunks (row 1 first, row 2 merged into it);
    # trigram finds only row 2 ("zebras" is not a substring of "zebra").
    store.index_text(
        "g.md",
        "# Example\nzebra zebra zebra\n# Example\nzebras and lots of other words here to make this chunk long enough\n"
        "# Other\nnothing\n",
        "markdown",
    )
    cmp = compare(store, P("zebras", spec="retrievers=porter"), P("zebras", spec="retrievers=trigram"))
    assert [(r.rowid_a, r.rowid_b, r.marker) for r in cmp.rows] == [(1, 2, "same")]
    assert cmp.rows[0].score_a == 1 / (60 + 1) + 1 / (60 + 2) and cmp.rows[0].score_b == 1 / (60 + 1)


def test_comparison_to_dict_is_json(zebra):
    cmp = compare(zebra, P("zebra crossing"), P("zebra crossing", spec="rerank=off"))
    d = json.loads(json.dumps(comparison_to_dict(cmp)))
    assert d["a"]["spec"] == "reference" and d["b"]["spec"] == "rerank=off"
    assert [r["marker"] for r in d["rows"]] == ["up", "down"]
    assert d["counts"] == {"improved": 1, "worsened": 1, "unchanged": 0, "only_in_a": 0, "only_in_b": 0, "shared": 2}
    assert d["traces"]["b"]["variant"] == "rerank=off"
    assert "traces" not in comparison_to_dict(cmp, include_traces=False)


# ─── compare_set ─────────────────────────────────────────────────────────


def test_compare_set_sums_queries(zebra):
    entries = [
        {"id": "swap", "query": "zebra crossing", "limit": 2},
        {"id": "typo", "query": "zebar"},
        {"id": "miss", "query": "nothingmatches"},
    ]
    sc = compare_set(zebra, entries, None, "rerank=off,fuzzy=never")
    assert [q.id for q in sc.queries] == ["swap", "typo", "miss"]
    swap, typo, miss = sc.queries
    assert swap.counts == CompareCounts(improved=1, worsened=1) and swap.overlap == 1.0
    assert (typo.layer_a, typo.layer_b) == ("rrf-fuzzy", "none")
    assert typo.counts.only_in_a == typo.size_a > 0 and typo.overlap == 0.0
    assert miss.counts.identical and miss.overlap == 1.0
    assert sc.totals == swap.counts + typo.counts + miss.counts
    assert sc.mean_overlap == (1.0 + 0.0 + 1.0) / 3
    assert (sc.changed_queries, sc.layer_changes) == (2, 1)
    assert sc.variant_b == Variant(rerank="off", fuzzy="never")
    d = json.loads(json.dumps(set_comparison_to_dict(sc)))
    assert d["variant_b"] == "rerank=off,fuzzy=never" and d["changed_queries"] == 2
    assert d["queries"][0]["rows"][0]["marker"] == "up"


def test_compare_set_accepts_search_params_and_keeps_their_fields(zebra):
    sc = compare_set(zebra, [SearchParams("zebra crossing", limit=1)], Variant(), Variant(rerank="off"))
    [q] = sc.queries
    assert q.id == "1" and q.size_a == q.size_b == 1
    assert q.comparison.params_b.variant.rerank == "off" and q.comparison.params_b.limit == 1


def test_compare_set_empty():
    from engine import Store

    with Store.create(":memory:") as s:
        sc = compare_set(s, [], None, "rerank=off")
    assert sc.queries == () and sc.mean_overlap is None and sc.totals == CompareCounts()


@pytest.mark.parametrize(
    "entries, words",
    [
        ([{"query": "ok"}, {"id": "bad", "query": "x", "limit": -1}], ["query #2", "bad", "limit"]),
        ([{"nope": 1}], ["query #1", "string 'query'"]),
    ],
)
def test_compare_set_rejects_bad_entries_before_searching(zebra, entries, words):
    with pytest.raises(ValueError) as info:
        compare_set(zebra, entries, None, "rerank=off")
    for w in words:
        assert w in str(info.value)


def test_compare_set_rejects_bad_spec(zebra):
    with pytest.raises(ValueError, match="unknown variant key 'nope'"):
        compare_set(zebra, [{"query": "zebra"}], "nope=1", None)


def test_lab_modules_stay_textual_free():
    import subprocess
    import sys

    code = (
        "import sys, engine.lab.compare, engine.lab.why, engine.lab.doctor; "
        "sys.exit('textual' in sys.modules or 'tui' in sys.modules)"
    )
    assert (
        subprocess.run(
            [sys.executable, "-c", code], cwd=str(__import__("pathlib").Path(__file__).parents[2])
        ).returncode
        == 0
    )


# ─── query-file entries ──────────────────────────────────────────────────


def test_every_shipped_query_file_parses():
    from engine.lab.compare import params_for_entry

    from ..conftest import PARITY_SETS, REPO

    # every parity set's queries (context7 only when ../shared holds it) and the demo queries
    files = [p / "queries.json" for p in PARITY_SETS.values() if (p / "queries.json").is_file()]
    files.append(REPO / "docs" / "demo-queries.json")
    assert PARITY_SETS["stages"] / "queries.json" in files and len(files) >= 2
    for f in files:
        for i, entry in enumerate(json.loads(f.read_text("utf-8"))):
            params_for_entry(entry, Variant(), i)


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (
            {"query": "quorum", "sessions": "sess-docs"},
            "query #1 (?): 'sessions' must be a list of session id strings (or null); got 'sess-docs'",
        ),
        ({"query": "quorum", "sessions": ["a", 1]}, "'sessions' must be a list of session id strings"),
        (
            {"id": "x", "query": "quorum", "limt": 5},
            "query #1 (x): unknown key 'limt'; allowed: id, query, why, limit, source, source_match, content_type, sessions",
        ),
        ({"query": "q", "sesions": [], "params": {}}, "unknown keys 'sesions', 'params'; allowed: id, query"),
        ({"query": "q", "limit": "5"}, "'limit' must be an integer; got '5'"),
        ({"query": "q", "limit": 2.0}, "'limit' must be an integer; got 2.0"),
        ({"query": "q", "limit": True}, "'limit' must be an integer; got True"),
        ({"query": "q", "source": 5}, "'source' must be a string (or null); got 5"),
    ],
)
def test_bad_entries_are_rejected(entry, message):
    from engine.lab.compare import params_for_entry

    with pytest.raises(ValueError) as exc:
        params_for_entry(entry, Variant(), 0)
    assert message in str(exc.value)


def test_entry_fields_and_defaults():
    from engine.lab.compare import params_for_entry

    p = params_for_entry(
        {
            "id": 7,
            "query": "q",
            "why": "note",
            "sessions": ["a", "b"],
            "source_match": None,
            "limit": 4,
            "content_type": None,
            "source": None,
        },
        Variant(),
        0,
    )
    assert (p.limit, p.sessions, p.source_match, p.source) == (4, ("a", "b"), "like", None)
    assert params_for_entry({"query": "q", "sessions": None}, Variant()).sessions is None
