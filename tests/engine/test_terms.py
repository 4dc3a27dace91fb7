"""Which words matched (engine.lab.terms): Porter stems from SQLite's tokenizer,
and a chunk's Porter and trigram match spans from FTS5's highlight()."""

from __future__ import annotations

import pytest

from engine import SearchParams, Store, search
from engine.store import sql
from engine.lab.terms import (
    DEFAULT_TOKENIZER,
    MatchSpans,
    Stems,
    marked_spans,
    porter_stems,
    tokenize,
    tokenizer_of,
    trace_spans,
)

from ..conftest import LEGACY, MODERN


def test_stems_come_from_the_porter_tokenizer(store):
    got = porter_stems(store, "throttling the write-quorum installing café")
    assert got == (
        Stems("throttling", ("throttl",)),
        Stems("write-quorum", ("write", "quorum")),
        Stems("installing", ("instal",)),
        Stems("café", ("cafe",)),
    )
    assert [s.changed for s in got] == [True, True, True, True]
    assert Stems("cache", ("cach",)).changed
    assert Stems("zebra", ("zebra",)).changed is False
    assert got[0].to_dict() == {"word": "throttling", "stems": ["throttl"]}


def test_stems_follow_the_query_words(store):
    # stopwords go unless nothing else is left; FTS5 operators and repeats go
    assert [s.word for s in porter_stems(store, "the Cache AND cache OR with")] == ["Cache"]
    assert [s.word for s in porter_stems(store, "the with")] == ["the", "with"]
    assert porter_stems(store, "") == () and porter_stems(store, '"()"') == ()
    assert porter_stems(store, "--- ...") == (Stems("---", ()), Stems("...", ()))


def test_the_store_names_its_tokenizer(store):
    assert tokenizer_of(store) == "porter unicode61" == DEFAULT_TOKENIZER


@pytest.mark.parametrize("path", [MODERN, LEGACY], ids=["1.0.169", "1.0.22"])
def test_a_foreign_store_is_only_read(path):
    if not path.exists():
        pytest.skip("fixture missing")
    before = path.stat().st_mtime_ns
    s = Store.open_readonly(path)
    try:
        assert tokenizer_of(s) == "porter unicode61"
        assert porter_stems(s, "indexing")[0].stems == ("index",)
        title = s.conn.execute("SELECT title FROM chunks WHERE title != '' LIMIT 1").fetchone()[0]
        t = search(s, SearchParams(title))
        rowid = t.final[0].candidate.rowid
        assert trace_spans(t, rowid).rowid == rowid
    finally:
        s.close()
    assert path.stat().st_mtime_ns == before


def test_tokenize_with_another_tokenizer():
    assert tokenize(["Running", "café"], "unicode61 remove_diacritics 0") == [("running",), ("café",)]
    with pytest.raises(sql.Error, match="no such tokenizer"):
        tokenize(["x"], "nosuchtokenizer")


def test_trigram_spans_find_substrings_porter_spans_whole_tokens(store):
    content = "Set writeQuorum and retentionPolicy; a quorum of writes"
    store.index_text("c.md", f"# Config\n{content}\n", "markdown")
    rowid = store.conn.execute("SELECT rowid FROM chunks WHERE title = 'Config'").fetchone()[0]
    m = trace_spans(search(store, SearchParams("quorum retention write")), rowid)
    text = m.content
    porter = [text[s:e] for s, e in m.porter]
    trigram = [text[s:e] for s, e in m.trigram]
    # Porter matches tokens whose stem matches: "quorum", "writes" (write); not inside writeQuorum
    assert porter == ["quorum", "writes"]
    # trigram matches substrings, case-insensitively, inside identifiers too
    # ("write" and "Quorum" touch: FTS5's highlight() in the pinned SQLite 3.54 gives them as one span)
    assert "writeQuorum" in trigram and "retention" in trigram and "quorum" in trigram
    kinds = dict((t, k) for t, k in m.segments() if k)
    assert kinds["quorum"] == "both" and kinds["retention"] == "trigram"
    assert "".join(t for t, _ in m.segments()) == text


def test_no_match_gives_no_spans(store):
    store.index_text("a.md", "# A\nnothing here\n", "markdown")
    assert trace_spans(search(store, SearchParams("zebra")), 1) is None
    assert trace_spans(search(store, SearchParams("nothing")), 999) is None


def test_marked_spans():
    assert marked_spans("a \x02bc\x03 d\x02e\x03", "a bc de") == ((2, 4), (6, 7))
    assert marked_spans("\x02\x03x", "x") == ()  # an empty mark is no span
    assert marked_spans("a \x02b\x03", "a x") == ()  # does not strip back: no spans


def test_segments_cover_the_text_once():
    m = MatchSpans(1, "abcdefgh", ((0, 3),), ((2, 5),))
    assert m.segments() == (("ab", "porter"), ("c", "both"), ("de", "trigram"), ("fgh", None))
    assert MatchSpans(1, "", (), ()).segments() == ()
