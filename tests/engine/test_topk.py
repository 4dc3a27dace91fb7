"""engine.pipeline.stages.topk: the exact top-k ranking returns FTS5's own first k rows,
bm25 bit for bit and highlight byte for byte, on tables built to stress it
(a word in most rows, ties from repeated rows, title hits, repeated and
overlapping instances, multi-token phrases, diacritics, case), and declines
(with its code) whatever it cannot answer exactly."""

from __future__ import annotations

import random

import apsw
import pytest

from engine import SearchParams, Store, search, trace_to_dict
from engine.store import sql
from engine.pipeline import marks
from engine.pipeline.stages import bm25, topk
from engine.pipeline.query import sanitize_porter, sanitize_trigram
from engine.pipeline.stages.retrieve import PORTER, Request, retrieve

COLUMNS = (
    "title, content, source_id UNINDEXED, content_type UNINDEXED, source_category UNINDEXED, "
    "session_id UNINDEXED, event_id UNINDEXED, timestamp UNINDEXED"
)
#: Words by frequency class: ``npm`` is in most rows (its idf is clamped to 1e-6).
COMMON = ["npm", "install", "package", "the", "config"]
MIDDLE = ["registry", "workspace", "publish", "version", "script", "cache", "save-dev", "Café", "cafe", "naïve"]
RARE = ["zephyr", "quillwort", "marmoset", "aaaa", "aaa", "dry-run", "x", "pelagic", "tarball", "shrinkwrap"]


def _text(rng: random.Random, n: int) -> str:
    words = []
    for _ in range(n):
        r = rng.random()
        pool = COMMON if r < 0.45 else MIDDLE if r < 0.85 else RARE
        words.append(rng.choice(pool))
        if rng.random() < 0.1:
            words.append(rng.choice([",", ".", " -", "\n\n", "`x`"]))
    return " ".join(words)


def _build(conn: sql.Connection, rows: int, seed: int) -> None:
    rng = random.Random(seed)
    conn.execute(f"CREATE VIRTUAL TABLE chunks USING fts5({COLUMNS}, tokenize='porter unicode61')")
    conn.execute(f"CREATE VIRTUAL TABLE chunks_trigram USING fts5({COLUMNS}, tokenize='trigram')")
    made: list[tuple[str, str]] = []
    conn.execute("BEGIN")
    for _ in range(rows):
        if made and rng.random() < 0.2:
            title, content = rng.choice(made)  # the same text again: ties in bm25, broken by rowid
        else:
            title = _text(rng, rng.randint(0, 4))
            content = _text(rng, rng.randint(0, 60))
            made.append((title, content))
        for t in ("chunks", "chunks_trigram"):
            conn.execute(
                f"INSERT INTO {t} (title, content, source_id, content_type) VALUES (?, ?, 1, 'prose')", (title, content)
            )
    conn.execute("COMMIT")


@pytest.fixture(scope="module")
def table():
    conn = sql.connect(":memory:")
    _build(conn, 1500, seed=7)
    return conn


@pytest.fixture
def forced(monkeypatch):
    """Try top-k on every query, whatever the table's size or the saving."""
    for name, value in (
        ("MIN_ROWS", 0),
        ("MIN_MATCHES", 0),
        ("SEED_SHARE_MAX", 1.0),
        ("RARE_SHARE_MAX", 1.0),
        ("WALK_MIN_TEXTS", 10**9),
    ):
        monkeypatch.setattr(topk, name, value)


def _fts5(conn: sql.Connection, table: str, match: str, k: int) -> list[tuple[int, float, bytes]]:
    rows = conn.execute(
        f"SELECT rowid, rank, CAST(highlight({table}, 1, char(2), char(3)) AS BLOB) FROM {table} "
        f"WHERE {table} MATCH ? AND {table}.rank MATCH 'bm25(5.0, 1.0)' ORDER BY {table}.rank LIMIT ?",
        (match, k),
    ).fetchall()
    return [(int(r[0]), float(r[1]), bytes(r[2]) if r[2] is not None else b"") for r in rows]


def _queries(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    words = COMMON + MIDDLE + RARE + ["npm install", "ins", "stall", "nothere", "--", "café", "NPM"]
    return [" ".join(rng.sample(words, rng.randint(1, 5))) for _ in range(n)]


def test_top_k_equals_fts5_bit_for_bit_on_a_stress_table(table, forced):
    answered = declined = 0
    codes: dict[str, int] = {}
    table.execute("BEGIN")
    try:
        for q in _queries(11, 150):
            for name, sanitize in (("chunks", sanitize_porter), ("chunks_trigram", sanitize_trigram)):
                match = sanitize(q, "OR")
                if not match:
                    continue
                for k in (1, 3, 10, 80):
                    try:
                        out = topk.top_k(table, name, match, k)
                    except topk.Declined as d:
                        declined += 1
                        codes[d.code] = codes.get(d.code, 0) + 1
                        continue
                    answered += 1
                    got = [(r.rowid, r.bm25, r.highlighted) for r in out.rows]
                    assert got == _fts5(table, name, match, k), (q, name, k)
    finally:
        table.execute("COMMIT")
    # most queries qualify, so the equality above says something
    assert answered > 500, (answered, declined, codes)
    assert set(codes) <= set(topk.DECLINED), codes


def test_the_walk_stops_early_on_a_frequent_word(table, forced):
    """``npm`` is in most rows: it is bounded, not ranked, and far fewer rows
    than match are read."""
    match = sanitize_porter("npm zephyr", "OR")
    out = topk.top_k(table, "chunks", match, 3)
    n_npm, n_zephyr = out.phrases
    assert n_npm > len(_all_rowids(table, "chunks", '"npm"')) / 2 > n_zephyr > 0
    assert out.rare == [1]
    assert out.walked < n_npm / 4
    assert [(r.rowid, r.bm25, r.highlighted) for r in out.rows] == _fts5(table, "chunks", match, 3)


def _all_rowids(conn, table, match):
    return [r[0] for r in conn.execute(f"SELECT rowid FROM {table} WHERE {table} MATCH ?", (match,))]


@pytest.mark.parametrize(
    ("content", "query"),
    [
        ("aaaaaa bbb aaaa", '"aaa" OR "bbb"'),  # overlapping trigram instances merge into one highlight
        ("xaaax aaa", '"aaa" OR "aax"'),
        ("Café CAFÉ cafe", '"café" OR "caf"'),
        ("no match here but zzz", '"zzz" OR "here but"'),
        ("", '"zzz" OR "abc"'),
        ("end at the very end", '"end" OR "the very"'),
        ("zzz abc, zzz  abc", '"zzz" OR "abc"'),  # adjacent instances: each closes before the next opens
        ("zzz abc aaa", '"zzz abc" OR "abc aaa"'),  # overlapping multi-token phrases merge
    ],
)
def test_highlight_equals_fts5(content, query, forced):
    conn = sql.connect(":memory:")
    conn.execute(f"CREATE VIRTUAL TABLE t USING fts5({COLUMNS}, tokenize='trigram')")
    conn.execute(f"CREATE VIRTUAL TABLE p USING fts5({COLUMNS}, tokenize='porter unicode61')")
    for t in ("t", "p"):
        for title, text in (("zzz abc aaa", content), ("x", "zzz abc aaa end"), ("", "filler")):
            conn.execute(f"INSERT INTO {t} (title, content) VALUES (?, ?)", (title, text))
    for t in ("t", "p"):
        try:
            out = topk.top_k(conn, t, query, 2)
        except topk.Declined:
            continue
        assert [(r.rowid, r.bm25, r.highlighted) for r in out.rows] == _fts5(conn, t, query, 2)
    # the emulation itself, on every row, against FTS5's highlight
    for t in ("t", "p"):
        tok = bm25.tokenizer_for(conn, t)
        phrases = [tuple(x[2] for x in tok(p.encode(), apsw.FTS5_TOKENIZE_QUERY, None)) for p in bm25.phrases_of(query)]
        for rowid, text, want in conn.execute(
            f"SELECT rowid, CAST(content AS BLOB), CAST(highlight({t}, 1, char(2), char(3)) AS BLOB) "
            f"FROM {t} WHERE {t} MATCH ?",
            (query,),
        ):
            toks = [x[2] for x in tok(text, apsw.FTS5_TOKENIZE_DOCUMENT, None)]
            inst = sorted(
                (p, len(ph)) for ph in phrases for p in range(len(toks)) if ph and tuple(toks[p : p + len(ph)]) == ph
            )
            assert marks.highlight(tok, text, inst) == (want or b""), (t, rowid)


def test_varints():
    assert bm25.varints(bytes([0x86, 0x91, 0x6E, 0x05])) == [100590, 5]
    assert bm25.varints(b"\xff" * 8 + b"\x01") == [(1 << 64) - 255]


@pytest.mark.parametrize(
    ("match", "code"),
    [
        ('"npm" AND "zephyr"', "not-or-query"),
        ("npm OR zephyr", "not-or-query"),
        ('"npm"', "one-phrase"),
        ('"npm" OR "nothere"', "one-phrase"),
        ('"zephyr" OR "nothere" OR "quillwort"', "few-matches"),
        ('"npm" OR "zephyr"', "deep-limit"),
    ],
)
def test_declines_with_a_code(table, forced, match, code, monkeypatch):
    if code == "few-matches":
        monkeypatch.setattr(topk, "MIN_MATCHES", 10**9)
    with pytest.raises(topk.Declined) as info:
        topk.top_k(table, "chunks", match, topk.MAX_K + 1 if code == "deep-limit" else 3)
    assert info.value.code == code
    assert code in topk.DECLINED


def test_declines_a_small_table_without_counting(table):
    with pytest.raises(topk.Declined) as info:
        topk.top_k(table, "chunks", '"npm" OR "zephyr"', 3)  # 1,500 rows < MIN_ROWS
    assert info.value.code == "few-matches"


def test_declines_a_contentless_table(forced):
    """No text to tokenize: the counted sizes differ from %_docsize."""
    conn = sql.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(title, content, content='')")
    for i in range(50):
        conn.execute(
            "INSERT INTO t (rowid, title, content) VALUES (?, ?, ?)", (i + 1, "a", "npm zephyr" if i % 7 else "npm")
        )
    with pytest.raises(topk.Declined) as info:
        topk.top_k(conn, "t", '"npm" OR "zephyr"', 3)
    assert info.value.code == "size-mismatch"


def test_declines_a_table_without_docsize(forced):
    conn = sql.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(title, content, columnsize=0)")
    conn.execute("INSERT INTO t (title, content) VALUES ('a', 'npm zephyr')")
    with pytest.raises(topk.Declined) as info:
        topk.top_k(conn, "t", '"npm" OR "zephyr"', 3)
    assert info.value.code == "no-docsize"


def _store(seed: int, docs: int) -> Store:
    rng = random.Random(seed)
    store = Store.create(":memory:")
    for i in range(docs):
        text = "\n\n".join(f"## {_text(rng, 3)}\n\n{_text(rng, 40)}" for _ in range(3))
        store.index_text(f"docs/{i % 9}/page-{i}.md", text)
    return store


def test_retrieve_through_top_k_equals_fts5_and_says_so(monkeypatch, forced):
    """The whole run (source, title, session, bm25, highlight) is the one
    FTS5's statement gives; the run records how it was ranked."""
    store = _store(5, 120)
    queries = _queries(3, 60)
    through: list = []
    for q in queries:
        for name in ("porter", "trigram"):
            a = retrieve(store.conn, store.schema, Request(name, q, 10))
            through.append(a)
    monkeypatch.setattr(topk, "MIN_ROWS", 10**9)
    plain = [
        retrieve(store.conn, store.schema, Request(name, q, 10)) for q in queries for name in ("porter", "trigram")
    ]
    assert [r.hits for r in through] == [r.hits for r in plain]
    assert sum(r.ranked_by == "top-k" for r in through) > 20
    for r in through:
        if r.ranked_by == "top-k":
            assert r.ranking_fact("rows_read") >= len(r.hits)
            assert len(r.ranking_fact("phrase_rows")) == r.query.count(" OR ") + 1
        else:
            assert r.ranked_by == "fts5"
    assert all(r.ranked_by == "fts5" and r.ranking_fact("declined") == "few-matches" for r in plain if not r.skipped)


def test_the_stage_headline_and_the_json_trace_say_how_a_run_was_ranked(forced):
    store = _store(5, 120)
    trace = search(store, SearchParams(query="npm zephyr install", limit=3))
    run = trace.first.porter
    assert run.ranked_by == "top-k"
    read, rows = run.ranking_fact("rows_read"), run.ranking_fact("phrase_rows")
    line = PORTER.headline_of(run, trace.params)
    assert line.endswith(f"; exact top-k read {read:,} of {sum(rows):,} phrase matches"), line
    ranking = trace_to_dict(trace)["ranking"]["porter"]
    assert ranking["by"] == "top-k" and ranking["rows_read"] == read and ranking["phrase_rows"] == list(rows)


def test_filters_keep_fts5s_ranking(forced):
    store = _store(6, 40)
    run = retrieve(store.conn, store.schema, Request("porter", "npm zephyr", 10, source="docs/1"))
    assert run.ranked_by == "fts5" and run.ranking == ()


def test_a_search_is_the_same_either_way(monkeypatch, forced):
    store = _store(8, 150)
    params = [SearchParams(query=q, limit=5) for q in _queries(9, 30)]
    got = [search(store, p) for p in params]
    store.runs.clear()
    monkeypatch.setattr(topk, "MIN_ROWS", 10**9)
    want = [search(store, p) for p in params]
    for g, w in zip(got, want):
        assert trace_to_dict(g)["final"] == trace_to_dict(w)["final"]
        assert g.first.porter.hits == w.first.porter.hits
        assert g.first.trigram.hits == w.first.trigram.hits


@pytest.mark.parametrize(
    ("ranking", "tail"),
    [
        (
            (("declined", "one-phrase"), ("halves", 2), ("half_helped", True)),
            "2 rowid ranges, one on the other retriever's thread",
        ),
        ((("declined", "one-phrase"), ("halves", 2), ("half_helped", False)), "2 rowid ranges, one after the other"),
        ((("declined", "few-matches"),), "(limit 10)"),
    ],
)
def test_the_headline_of_an_fts5_run_says_whether_it_ran_in_halves(ranking, tail):
    from engine.pipeline.stages.retrieve import RetrieverRun

    run = RetrieverRun("trigram", '"npm"', 10, (), ranking=ranking)
    assert PORTER.headline_of(run, SearchParams(query="npm")).endswith(tail)


@pytest.mark.parametrize(
    ("options", "declined"),
    [
        ("detail=column", True),
        ("detail='none'", True),
        ("detail=full", False),
        ("locale=1", True),
        ("locale=0", False),
    ],
)
def test_tables_whose_options_change_matching_are_left_to_fts5(forced, options, declined):
    conn = sql.connect(":memory:")
    conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(title, content, {options})")
    for i in range(40):
        conn.execute("INSERT INTO t (title, content) VALUES (?, ?)", ("a", "npm zephyr npm" if i % 5 else "npm"))
    if declined:
        with pytest.raises(topk.Declined) as info:
            topk.top_k(conn, "t", '"npm" OR "zephyr"', 3)
        assert info.value.code == "table-options"
    else:
        out = topk.top_k(conn, "t", '"npm" OR "zephyr"', 3)
        assert [(r.rowid, r.bm25, r.highlighted) for r in out.rows] == _fts5(conn, "t", '"npm" OR "zephyr"', 3)


def test_phrase_counts_are_reused_within_a_data_version_and_recounted_after_a_write(tmp_path, forced):
    store = Store.create(tmp_path / "counts.db")
    rng = random.Random(12)
    for i in range(60):
        store.index_text(f"docs/p{i}.md", f"# npm {i}\n\n{_text(rng, 40)} npm install zephyr\n")
    cache = store.phrase_rows
    params = SearchParams(query="npm zephyr", limit=3)
    search(store, params)
    first = (cache.hits, cache.misses)
    assert first[1] >= 2  # each phrase of each retriever counted once
    store.runs.clear()  # the runs go; the counts stay
    again = search(store, params)
    assert again.first.porter.ranked_by == "top-k"
    assert cache.misses == first[1] and cache.hits > first[0]
    store.index_text("docs/new.md", "# zephyr\n\nzephyr zephyr npm\n")  # a write: a new data version
    after = search(store, params)
    assert cache.misses > first[1]
    zephyr = after.first.porter.ranking_fact("phrase_rows")[1]
    assert zephyr == again.first.porter.ranking_fact("phrase_rows")[1] + 1
    store.close()
