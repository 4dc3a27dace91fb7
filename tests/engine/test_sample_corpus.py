"""The bundled demo corpus (``sample_corpus/``) and its ten demo queries.

``DEMO_QUERIES`` is the single source of truth for ``docs/demo-queries.md``:
the table there must list exactly these queries, with these options, in this
order. Each query is run through the engine and checked for the stage effect
it is meant to show.
"""

from __future__ import annotations

import json
import re

import pytest

from engine import SearchParams, search
from engine.store.corpus import SESSIONS_FILE, collect_files

from ..conftest import REPO, SAMPLE_CORPUS

ALL_SESSIONS = ("sess-build", "sess-docs", "sess-ops")

DEMO_QUERIES: list[dict] = [
    {
        "id": "porter-stemming",
        "query": "throttling",
        "limit": 3,
        "sessions": None,
        "content_type": None,
        "stage": "Porter stemming",
    },
    {
        "id": "trigram-only",
        "query": "inflight",
        "limit": 3,
        "sessions": None,
        "content_type": None,
        "stage": "trigram-only match",
    },
    {
        "id": "key-collision",
        "query": "publish partition-key example",
        "limit": 3,
        "sessions": None,
        "content_type": None,
        "stage": "fusion key collision",
    },
    {
        "id": "session-filter",
        "query": "retention",
        "limit": 3,
        "sessions": ("sess-docs",),
        "content_type": None,
        "stage": "session filter",
    },
    {
        "id": "trim",
        "query": "consumer lag",
        "limit": 3,
        "sessions": ALL_SESSIONS,
        "content_type": None,
        "stage": "trim",
    },
    {"id": "rerank", "query": "write quorum", "limit": 3, "sessions": None, "content_type": None, "stage": "rerank"},
    {
        "id": "fuzzy",
        "query": "replicaton quorom",
        "limit": 3,
        "sessions": None,
        "content_type": None,
        "stage": "fuzzy correction",
    },
    {
        "id": "fuzzy-blocked",
        "query": "tombstone replicaton",
        "limit": 3,
        "sessions": None,
        "content_type": None,
        "stage": "weak match blocks correction",
    },
    {
        "id": "content-type",
        "query": "acknowledge messages",
        "limit": 3,
        "sessions": None,
        "content_type": "code",
        "stage": "content-type filter",
    },
    {"id": "empty", "query": "kafka", "limit": 3, "sessions": None, "content_type": None, "stage": "empty result"},
]

DOC = REPO / "docs" / "demo-queries.md"


def options_text(q: dict) -> str:
    """The ``options`` cell of the docs table for one demo query."""
    parts = []
    if q["limit"] != 3:
        parts.append(f"--limit {q['limit']}")
    for s in q["sessions"] or ():
        parts.append(f"--session {s}")
    if q["content_type"]:
        parts.append(f"--content-type {q['content_type']}")
    return " ".join(parts) or "(defaults)"


def params(q: dict, **override) -> SearchParams:
    fields = {"limit": q["limit"], "sessions": q["sessions"], "content_type": q["content_type"], **override}
    return SearchParams(q["query"], **fields)


def by_id(qid: str) -> dict:
    return next(q for q in DEMO_QUERIES if q["id"] == qid)


@pytest.fixture(scope="module")
def chunks(sample_store):
    return sample_store.iter_chunks()


@pytest.fixture(scope="module")
def trace(sample_store):
    cache: dict = {}

    def run(qid: str, **override):
        key = (qid, tuple(sorted(override.items())))
        if key not in cache:
            cache[key] = search(sample_store, params(by_id(qid), **override))
        return cache[key]

    return run


def keys(candidates) -> list[str]:
    return [c.key for c in candidates]


# ─── the corpus itself ──────────────────────────────────────────────────


def test_file_count_between_20_and_40():
    files = collect_files(SAMPLE_CORPUS)
    assert 20 <= len(files) <= 40
    assert SESSIONS_FILE not in [label for label, _ in files]


def test_every_file_is_indexed(sample_store):
    labels = [label for label, _ in collect_files(SAMPLE_CORPUS)]
    indexed = [s.label for s in sample_store.sources()]
    assert indexed == labels
    assert all(s.chunk_count > 0 for s in sample_store.sources())


def test_sessions_map_has_three_sessions_and_leaves_files_unattributed():
    sessions = json.loads((SAMPLE_CORPUS / SESSIONS_FILE).read_text("utf-8"))
    assert set(sessions.values()) == set(ALL_SESSIONS)
    labels = {label for label, _ in collect_files(SAMPLE_CORPUS)}
    assert set(sessions) <= labels, "every label in the sessions map names a corpus file"
    assert labels - set(sessions), "some files are unattributed"


def test_chunks_carry_the_sessions(sample_store):
    counts = dict(sample_store.session_counts())
    assert set(counts) == {"", *ALL_SESSIONS}


def test_only_content_files_in_the_corpus():
    """Everything in the folder is indexed as content: keep notes and query lists out."""
    labels = [label for label, _ in collect_files(SAMPLE_CORPUS)]
    assert all(label.split(".")[-1] in ("md", "json", "log", "txt") for label in labels)


def test_some_file_has_an_untitled_chunk(chunks):
    assert any(c.title == "Untitled" for c in chunks)
    assert any(c.source == "README.md" and c.title == "Untitled" for c in chunks)


def test_repeated_markdown_heading_gives_duplicate_fusion_keys(chunks):
    titles = [c.title for c in chunks if c.source == "docs/cli-reference.md"]
    assert titles.count("ferryctl command reference > ferryctl publish > Example") == 2
    assert titles.count("ferryctl command reference > ferryctl consume > Example") == 2


def test_windowed_log_windows_share_their_first_line(chunks):
    titles = [c.title for c in chunks if c.source == "logs/broker.log"]
    assert len(titles) >= 3
    assert len(set(titles)) == 1, "every 20-line window of broker.log starts with the same banner"


def test_blank_line_sectioned_logs(chunks):
    startup = [c.title for c in chunks if c.source == "logs/startup.log"]
    assert len(startup) >= 3 and startup[0].startswith("[boot]")
    build = [c.title for c in chunks if c.source == "logs/build-output.txt"]
    assert "$ make unit" in build
    assert [c.title for c in chunks if c.source == "logs/test-report.txt"] == ["Output"]


def test_long_section_is_split_in_numbered_parts(chunks):
    titles = [c.title for c in chunks if c.source == "docs/replication.md"]
    assert "Replication > How replication works (1)" in titles
    assert "Replication > How replication works (2)" in titles
    section = (SAMPLE_CORPUS / "docs/replication.md").read_text("utf-8")
    body = section.split("## How replication works", 1)[1].split("\n## ", 1)[0]
    assert len(body.encode("utf-8")) > 4096


def test_code_and_prose_on_the_same_topic(chunks):
    types = {c.title: c.content_type for c in chunks if c.source == "docs/consumers.md"}
    assert types["Consumers > Acknowledging messages"] == "prose"
    assert types["Consumers > Acknowledging messages in client code"] == "code"


def test_json_nested_objects_and_batched_array(chunks):
    broker = [c.title for c in chunks if c.source == "config/broker.json"]
    assert "listen > tls" in broker and "producer" in broker
    topics = [c.title for c in chunks if c.source == "config/topics.json"]
    batches = [t for t in topics if t.startswith("topics > t-")]
    assert len(batches) >= 2, "the topics array is batched and titled by its id field"
    assert all(c.content_type == "code" for c in chunks if c.source.endswith(".json"))


def test_no_real_addresses_or_emails():
    for label, path in collect_files(SAMPLE_CORPUS):
        text = path.read_text("utf-8")
        for ip in re.findall(r"\b\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}\b", text):
            assert ip in ("0.0.0.0", "127.0.0.1") or ip.startswith(("192.0.2.", "198.51.100.", "203.0.113.")), (
                label,
                ip,
            )
        assert not re.search(r"[\w.+-]+@[\w-]+\.[\w.]+", text), label
        for host in re.findall(r"\b(?:[a-z0-9-]+\.)+(?:com|org|net|io)\b", text):
            assert host == "example.com" or host.endswith(".example.com"), (label, host)


# ─── the ten demo queries ───────────────────────────────────────────────


def test_ten_demo_queries_with_distinct_stages():
    assert len(DEMO_QUERIES) == 10
    assert len({q["id"] for q in DEMO_QUERIES}) == 10
    assert len({q["stage"] for q in DEMO_QUERIES}) == 10


@pytest.mark.parametrize("doc", [DOC, REPO / "README.md"], ids=["docs", "README"])
def test_docs_table_lists_the_demo_queries(doc):
    rows = []
    for line in doc.read_text("utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[0].startswith("`"):
            rows.append(cells)
    assert len(rows) == 10
    for q, (query, options, stage, _what) in zip(DEMO_QUERIES, rows):
        assert query == f"`{q['query']}`"
        assert options.replace("`", "") == options_text(q)
        assert stage == q["stage"]


def test_porter_stemming(trace, chunks):
    t = trace("porter-stemming")
    assert not any("throttling" in c.content.lower() for c in chunks), "the query word itself is absent"
    assert t.layer == "rrf"
    assert t.first.porter.hits and not t.first.trigram.hits
    assert len(t.final) == 3
    for r in t.final:
        assert r.candidate.porter_rank is not None and r.candidate.trigram_rank is None
        assert "throttl" in r.candidate.content.lower()
        assert r.candidate.source == "docs/backpressure.md"


def test_trigram_only(trace, chunks):
    t = trace("trigram-only")
    assert not any(re.search(r"\binflight\b", c.content, re.I) for c in chunks), "never a whole word"
    assert t.layer == "rrf"
    assert not t.first.porter.hits and t.first.trigram.hits
    for r in t.final:
        assert r.candidate.porter_rank is None and r.candidate.trigram_rank is not None
        assert "maxinflightbatches" in r.candidate.content.lower()
    assert "config/broker.json::producer" in keys(c.candidate for c in t.final)


def test_fusion_key_collision(trace, sample_store):
    t = trace("key-collision")
    assert t.layer == "rrf"
    merged = [c for c in t.first.fusion.candidates if c.merged_rowids]
    assert len(merged) >= 2
    for c in merged:
        assert c.key_collision
        for rowid in c.merged_rowids:
            other = sample_store.chunk(rowid)
            assert (other.source, other.title) == (c.source, c.title)
            assert other.content != c.content
    final = [r.candidate for r in t.final]
    assert final[0].key == "docs/cli-reference.md::ferryctl command reference > ferryctl publish > Example"
    assert final[0].merged_rowids
    # the consume pair ranks 7th or worse in each list, yet comes 2nd: four contributions summed
    second = final[1]
    assert second.title.endswith("ferryctl consume > Example") and second.merged_rowids
    assert min(c.rank for c in second.contributions) >= 7
    assert len(second.contributions) == 4


def test_session_filter(trace):
    q = by_id("session-filter")
    t = trace("session-filter")
    assert t.pool_size == 40
    removed = t.first.filter.removed
    assert removed
    assert all(c.session_id not in ("", "sess-docs") for c in removed)
    assert t.first.fusion.candidates[0] in removed, "the fused #1 is filtered out"
    assert t.layer == "rrf"
    assert all(r.candidate.session_id in ("", *q["sessions"]) for r in t.final)
    unfiltered = trace("session-filter", sessions=None)
    assert [r.candidate.key for r in unfiltered.final] != [r.candidate.key for r in t.final]


def test_trim_cuts_the_pool(trace):
    t = trace("trim")
    assert t.pool_size == 40
    assert t.first.filter.allow_set == ALL_SESSIONS
    assert t.first.filter.removed == ()
    assert t.first.trim is not None
    assert len(t.first.trim.kept) == 3
    assert len(t.first.trim.cut) > 0
    assert len(t.final) == 3
    # without sessions the pool equals the limit: nothing to cut
    plain = trace("trim", sessions=None)
    assert plain.pool_size == 3 and plain.first.trim.cut == ()


def test_rerank_moves_a_result(trace):
    t = trace("rerank")
    assert t.layer == "rrf"
    entries = t.first.rerank.entries
    assert any(e.old_position != e.new_position for e in entries)
    top = entries[0]
    assert top.candidate.key == "docs/replication.md::Replication > Write quorum"
    assert (top.old_position, top.new_position) == (2, 1)
    assert t.first.fusion.candidates[0].source == "notes/design-decisions.md"
    assert t.final[0].candidate.key == top.candidate.key


def test_fuzzy_correction(trace):
    t = trace("fuzzy")
    assert not t.first.fusion.candidates
    assert t.layer == "rrf-fuzzy"
    assert t.fuzzy.ran
    assert {c.word: c.corrected for c in t.fuzzy.corrections} == {"replicaton": "replication", "quorom": "quorum"}
    assert t.fuzzy.corrected_query == "replication quorum"
    assert t.final and all(r.layer == "rrf-fuzzy" for r in t.final)
    assert t.final[0].candidate.key == "docs/replication.md::Replication > Write quorum"


def test_weak_match_blocks_correction(trace, sample_store):
    t = trace("fuzzy-blocked")
    assert t.layer == "rrf"
    assert t.fuzzy.ran is False
    assert t.fuzzy.corrections == ()
    assert t.final
    for r in t.final:
        assert "tombstone" in r.candidate.content.lower()
    # the typo alone would have been corrected
    alone = search(sample_store, SearchParams("replicaton", limit=3))
    assert alone.layer == "rrf-fuzzy"
    assert [c.corrected for c in alone.fuzzy.corrections] == ["replication"]


def test_content_type_filter(trace):
    t = trace("content-type")
    assert t.layer == "rrf"
    assert t.final and all(r.candidate.content_type == "code" for r in t.final)
    assert all(h.content_type == "code" for h in t.first.porter.hits + t.first.trigram.hits)
    assert t.final[0].candidate.key == "docs/consumers.md::Consumers > Acknowledging messages in client code"
    unfiltered = trace("content-type", content_type=None)
    assert unfiltered.final[0].candidate.key == "docs/consumers.md::Consumers > Acknowledging messages"
    assert unfiltered.final[0].candidate.content_type == "prose"


def test_empty_result_with_reason(trace):
    t = trace("empty")
    assert t.layer == "none"
    assert t.final == ()
    assert not t.first.porter.hits and not t.first.trigram.hits
    assert t.fuzzy.ran and t.fuzzy.rerun is None
    assert [c.corrected for c in t.fuzzy.corrections] == [None]
    assert t.empty_reason == "no match in either index; fuzzy found no correction"


def test_porter_forgives_idempotancy(sample_store):
    """Documented curiosity: Porter stems 'idempotancy' like 'idempotency'."""
    t = search(sample_store, SearchParams("idempotancy", limit=3))
    assert t.layer == "rrf" and not t.fuzzy.ran
    assert all(r.candidate.source == "docs/idempotency.md" for r in t.final)


def test_windowed_log_collision_tops_the_fused_pool(sample_store):
    """Documented in docs/demo-queries.md: four broker.log windows merge into one key."""
    t = search(sample_store, SearchParams("consumer lag", limit=3, sessions=("sess-ops",)))
    top = t.first.fusion.candidates[0]
    assert top.source == "logs/broker.log" and len(top.merged_rowids) == 3
    entry = next(e for e in t.first.rerank.entries if e.candidate.key == top.key)
    assert (entry.old_position, entry.new_position) == (1, 3)
