"""Bounded work per search (issue 26, class 5): the decisions, not the times.

* A content over :data:`engine.pipeline.marks.SQL_MAX_BYTES` is not
  highlighted by FTS5 inside the retriever statement (its highlight costs
  time quadratic in the row's matches); it gets a :class:`Marks`, computed
  only when a view shows the row, and equal byte for byte to FTS5's.
* ``rankscope search`` shows no highlight, so it computes none.
* The exact top-k declines (``long-walk``) instead of tokenizing every row
  when its bound cannot prune, as on log lines that all hold the query.
"""

from __future__ import annotations

import random

import pytest
from typer.testing import CliRunner

from engine import SearchParams, Store, search
from engine.agent.snippet import extract_snippet
from engine.pipeline import marks
from engine.pipeline.marks import Marks
from engine.pipeline.query import sanitize_porter, sanitize_trigram
from engine.pipeline.stages import bm25, topk
from engine.pipeline.stages.retrieve import Request, retrieve
from engine.store import sql
from tui.cli import app

COLUMNS = (
    "title, content, source_id UNINDEXED, content_type UNINDEXED, source_category UNINDEXED, "
    "session_id UNINDEXED, event_id UNINDEXED, timestamp UNINDEXED"
)
WORDS = ["quorum", "relay", "Relays", "quorums", "replica", "naïve", "CAFÉ", "café", "aaa", "aaaa", "x", "--", "é"]


def _crlf_text(rng: random.Random, lines: int) -> str:
    out = ["# Relay notes\r\n\r\n"]
    for i in range(lines):
        out.append(" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 9))) + f" line{i}\r\n")
    return "".join(out)


@pytest.fixture
def big_store():
    """A store whose one markdown file is a single 70 KB chunk (CRLF: no
    blank line the chunker splits at) with the query's words on every line."""
    store = Store.create(":memory:")
    store.index_text("relay.md", _crlf_text(random.Random(5), 2500), "markdown")
    store.index_text("small.md", "# Small\n\nquorum relay in a short chunk\n", "markdown")
    yield store
    store.close()


def _fts5_highlight(conn: sql.Connection, table: str, match: str, rowid: int) -> str:
    row = conn.execute(
        f"SELECT {sql.text(f'highlight({table}, 1, char(2), char(3))')} FROM {table} WHERE {table} MATCH ? AND rowid = ?",
        (match, rowid),
    ).fetchone()
    return sql.decode(row[0]) or ""


def test_a_long_content_is_highlighted_only_when_shown_and_exactly(big_store):
    big = next(c for c in big_store.iter_chunks() if c.source == "relay.md")
    assert big.content is not None and len(big.content.encode()) > marks.SQL_MAX_BYTES
    for name, sanitize, table in (
        ("porter", sanitize_porter, "chunks"),
        ("trigram", sanitize_trigram, "chunks_trigram"),
    ):
        run = retrieve(big_store.conn, big_store.schema, Request(name, "quorum relay", 10))
        long_hit = next(h for h in run.hits if h.rowid == big.rowid)
        short_hit = next(h for h in run.hits if h.rowid != big.rowid)
        assert isinstance(long_hit.marked, Marks) and not long_hit.marked.computed  # not computed by the search
        assert isinstance(short_hit.marked, str) and "\x02" in short_hit.marked  # FTS5's own, in the statement
        want = _fts5_highlight(big_store.conn, table, sanitize("quorum relay", "OR"), big.rowid)
        assert long_hit.highlighted == want and long_hit.marked.computed  # computed when asked, FTS5's bytes
        assert long_hit.highlighted.count("\x02") > 1000


def test_the_final_candidate_carries_the_lazy_highlight_to_the_agent_snippet(big_store):
    trace = search(big_store, SearchParams("quorum relay", limit=2))
    top = next(f.candidate for f in trace.final if f.candidate.source == "relay.md")
    assert isinstance(top.marked, Marks) and not top.marked.computed
    snippet = extract_snippet(top.content, "quorum relay", top.highlighted)
    assert snippet.source_of_positions == "highlight" and len(snippet.marker_spans) > 1000


def test_rankscope_search_computes_no_highlight(tmp_path, monkeypatch):
    db = tmp_path / "s.db"
    with Store.create(db) as store:
        store.index_text("relay.md", _crlf_text(random.Random(6), 2000), "markdown")

    def refuse(self):
        raise AssertionError("a highlight was computed for rankscope search")

    monkeypatch.setattr(Marks, "bytes", refuse)
    for args in (["search", "quorum relay", "--db", str(db)], ["search", "quorum relay", "--db", str(db), "--json"]):
        r = CliRunner().invoke(app, args)
        assert r.exit_code == 0, r.output
        assert "relay.md" in r.output


@pytest.mark.parametrize("tokenize", ["trigram", "porter unicode61", "unicode61 remove_diacritics 2"])
def test_marks_equal_fts5s_highlight_on_random_long_texts(tokenize):
    conn = sql.connect(":memory:")
    conn.execute(f"CREATE VIRTUAL TABLE t USING fts5({COLUMNS}, tokenize='{tokenize}')")
    rng = random.Random(tokenize)
    texts = [_crlf_text(rng, rng.randint(1, 400)) for _ in range(12)] + ["", "quorum", "x\r\n"]
    for text in texts:
        conn.execute("INSERT INTO t (title, content) VALUES ('', ?)", (text,))
    spec = bm25.tokenizer_spec(conn, "t")
    for _ in range(20):
        words = rng.sample(WORDS, rng.randint(1, 4)) + (["quorum relay"] if rng.random() < 0.3 else [])
        match = " OR ".join(bm25.match_phrase(w) for w in words)
        for rowid, content in conn.execute("SELECT rowid, CAST(content AS BLOB) FROM t WHERE t MATCH ?", (match,)):
            got = Marks(spec, bytes(content), tuple(bm25.phrases_of(match) or ())).text()
            assert got == _fts5_highlight(conn, "t", match, rowid), (tokenize, match, rowid)


def _log_store(lines: int) -> Store:
    """Log lines that all hold ``INFO request``, different otherwise, as
    the plain-text chunker cuts them (20 lines a chunk)."""
    rng = random.Random(9)
    text = "\n".join(
        f"12:{j % 60:02d}:{rng.randint(0, 59):02d} INFO request id={rng.getrandbits(32):08x} status={rng.choice([200, 404])}"
        for j in range(lines)
    )
    store = Store.create(":memory:")
    store.index_text("app.log", text + "\n", "plain")
    return store


def test_top_k_declines_a_walk_its_bound_cannot_shorten(monkeypatch):
    monkeypatch.setattr(topk, "MIN_ROWS", 0)
    monkeypatch.setattr(topk, "MIN_MATCHES", 0)
    store = _log_store(12_000)
    conn = store.conn
    n = store.stats().chunks
    assert n >= 600
    match = sanitize_porter("info request", "OR")
    with pytest.raises(topk.Declined) as declined:
        topk.top_k(conn, "chunks", match, 10)
    assert declined.value.code == "long-walk" and declined.value.phrase_rows == (n, n)
    # what it would have tokenized without the budget: nearly every row
    monkeypatch.setattr(topk, "WALK_MIN_TEXTS", 10**6)
    whole = topk.top_k(conn, "chunks", match, 10)
    assert whole.tokenized > n * 0.9 > topk.WALK_TEXTS_PER_ROW * 10
    # the retriever then lets FTS5 rank, with the same rows
    monkeypatch.setattr(topk, "WALK_MIN_TEXTS", 40)
    run = retrieve(conn, store.schema, Request("porter", "info request", 10))
    assert run.ranked_by == "fts5" and run.ranking_fact("declined") == "long-walk"
    assert [h.rowid for h in run.hits] == [r.rowid for r in whole.rows]
    assert [h.bm25 for h in run.hits] == [r.bm25 for r in whole.rows]
    store.close()
