"""Stable chunk ids (engine/store/chunkids.py): rules, caching, TREC tokens, and
ids that survive re-indexing while row ids change."""

from __future__ import annotations

import re
import shutil

import pytest
from hypothesis import given, strategies as st
from typer.testing import CliRunner

from engine import Store
from engine.store.chunkids import assign_chunk_ids, chunk_ids, from_trec_token, store_version, trec_token
from tui.cli import app

from ..conftest import SAMPLE_CORPUS
from ..helpers import index_collide

runner = CliRunner()


def test_first_chunk_gets_the_key_later_ones_a_number():
    rows = [(5, "a.md", "T"), (2, "a.md", "T"), (9, "a.md", "T"), (3, "b.md", "T"), (4, None, "Orphan")]
    assert assign_chunk_ids(rows) == {2: "a.md::T", 5: "a.md::T#2", 9: "a.md::T#3", 3: "b.md::T", 4: "::Orphan"}


def test_a_number_that_is_another_chunks_key_is_skipped():
    # Row 4's plain key is "a.md::T#2": the second "T" chunk must not take it.
    rows = [(1, "a.md", "T"), (2, "a.md", "T"), (3, "a.md", "T"), (4, "a.md", "T#2")]
    ids = assign_chunk_ids(rows)
    assert ids == {1: "a.md::T", 2: "a.md::T#3", 3: "a.md::T#4", 4: "a.md::T#2"}
    assert len(set(ids.values())) == len(ids)


@given(st.lists(st.tuples(st.sampled_from(["a", "b", ""]), st.sampled_from(["T", "T#2", "U", "T#3"])), max_size=30))
def test_ids_are_unique(rows):
    ids = assign_chunk_ids([(i + 1, lbl, t) for i, (lbl, t) in enumerate(rows)])
    assert len(set(ids.values())) == len(rows)


def test_collisions_in_a_store(store):
    index_collide(store)
    ids = chunk_ids(store)
    assert [ids.by_rowid[r] for r in (1, 2, 3)] == [
        "guide.md::Guide",
        "guide.md::Guide > Example",
        "guide.md::Guide > Example#2",
    ]
    assert ids.by_id["guide.md::Guide > Example#2"] == 3 and "nope" not in ids.by_id


def test_cached_until_the_store_changes(store):
    index_collide(store)
    first = chunk_ids(store)
    assert chunk_ids(store) is first
    store.index_text("other.md", "# Other\ntext\n", "markdown")
    second = chunk_ids(store)
    assert second is not first and "other.md::Other" in second
    v = store_version(store)
    store.delete_label("other.md")
    assert store_version(store) != v
    assert "other.md::Other" not in chunk_ids(store)


def test_reindexing_the_same_label_changes_rowids_not_ids(store):
    index_collide(store)
    store.index_text("later.md", "# Later\ntext\n", "markdown")  # keeps row ids from being reused
    before = dict(chunk_ids(store).by_id)
    store.index_text("guide.md", "# Guide\n## Example\nalpha widget one\n## Example\nalpha widget two\n", "markdown")
    after = dict(chunk_ids(store).by_id)
    assert set(before) == set(after)
    assert all(before[k] != after[k] for k in before if k.startswith("guide.md::"))
    assert before["later.md::Later"] == after["later.md::Later"]


@pytest.mark.parametrize("text", ["a.md::Guide > Example", "x 100%\u00a0y\tz\n", "é::ü", "%25", "a\x00b"])
def test_trec_token_round_trip(text):
    token = trec_token(text)
    assert token.split() == [token]
    assert from_trec_token(token) == text


@pytest.mark.parametrize("token", ["a%zz", "a%", "a%4", "%%41", "%FF", "%C3", "%C3%A9%FF", "%80", "%ED%A0%80"])
def test_from_trec_token_refuses_what_trec_token_never_writes(token):
    """A ``%`` that starts no escape, or escapes that are not UTF-8 (a lone
    surrogate's included): kept or replaced, they came back as another id."""
    with pytest.raises(ValueError, match="is not"):
        from_trec_token(token)


@given(st.text(alphabet="%0aFfz\u00e9", min_size=1))
def test_a_token_read_has_only_escapes_and_is_written_back_as_the_same_id(token):
    """Accepted only when every ``%`` starts an escape (``%`` then two hex
    digits): then writing the id gives a token that reads as the same id."""
    try:
        text = from_trec_token(token)
    except ValueError:
        assert "%" in token  # a token without escapes is its id
        return
    assert re.search(r"%(?![0-9A-Fa-f]{2})", token) is None
    assert from_trec_token(trec_token(text)) == text


@given(st.text(min_size=1))
def test_trec_token_is_one_field_and_reversible(text):
    token = trec_token(text)
    assert token and not any(ch.isspace() for ch in token)
    assert from_trec_token(token) == text


def _snapshot(db) -> dict[str, tuple]:
    """chunk id → (rowid, source, title, content) of every chunk of ``db``."""
    with Store.open_readonly(db) as s:
        ids = chunk_ids(s)
        return {ids.by_rowid[c.rowid]: (c.rowid, c.source, c.title, c.content) for c in s.iter_chunks()}


def test_ids_survive_reindexing_a_folder(tmp_path):
    corpus = tmp_path / "corpus"
    shutil.copytree(SAMPLE_CORPUS, corpus)
    db = tmp_path / "s.db"
    for attempt in range(2):
        r = runner.invoke(app, ["index", str(corpus), "--db", str(db), "--full"])
        assert r.exit_code == 0, r.output
        if attempt == 0:
            first = _snapshot(db)
    second = _snapshot(db)
    assert len(first) > 100
    assert set(first) == set(second)
    for cid, (rowid, *rest) in first.items():
        assert second[cid][1:] == tuple(rest), cid
        assert second[cid][0] != rowid, cid  # every row id changed
    # Edit one file; every chunk of the other files keeps its id.
    edited = corpus / "docs" / "backpressure.md"
    edited.write_text(edited.read_text("utf-8") + "\n## A new section\nmore words\n", "utf-8")
    r = runner.invoke(app, ["index", str(corpus), "--db", str(db), "--full"])
    assert r.exit_code == 0, r.output
    third = _snapshot(db)
    others = {cid: v for cid, v in second.items() if v[1] != "docs/backpressure.md"}
    assert others and all(third[cid][1:] == v[1:] and third[cid][0] != v[0] for cid, v in others.items())
    assert "docs/backpressure.md::Backpressure > A new section" in third


def _many_chunks_store(path, n: int) -> Store:
    s = Store.create(path)
    s.index_text("many.md", "".join(f"# Part {i}\nword {i}\n" for i in range(n)), "markdown")
    return s


def test_a_background_caller_pauses_between_batches_and_gets_the_same_ids(tmp_path, monkeypatch):
    """``pause`` runs every PAUSE_EVERY rows read and given ids (the browser's
    warm-up yields to a search there), never on the main connection, and the
    ids are those of an uninterrupted computation."""
    import engine.store.chunkids as ci

    monkeypatch.setattr(ci, "PAUSE_EVERY", 7)
    with _many_chunks_store(tmp_path / "s.db", 40) as s:
        plain = ci.assign_chunk_ids([(r.rowid, "many.md", r.title) for r in s.iter_chunks()])
        pauses: list[int] = []
        with s.thread_connection() as conn:
            ids = chunk_ids(s, conn, pause=lambda: pauses.append(1))
        assert dict(ids.by_rowid) == plain and len(plain) == 40
        assert len(pauses) == 40 // 7 * 2  # 5 full batches read, then 5 times 7 rows given ids
        ci._cache.clear()
        pauses.clear()
        assert dict(chunk_ids(s, pause=lambda: pauses.append(1)).by_rowid) == plain
        assert pauses == []  # the main connection: a search may be waiting for its lock


def test_two_callers_at_once_compute_once(tmp_path, monkeypatch):
    """A second caller while the first computes waits for its answer (the
    browser's search waits for the warm-up's ids rather than computing them too)."""
    import threading

    import engine.store.chunkids as ci

    monkeypatch.setattr(ci, "PAUSE_EVERY", 5)
    computed: list[int] = []
    real = ci.assign_chunk_ids
    monkeypatch.setattr(ci, "assign_chunk_ids", lambda rows, pause=None: computed.append(1) or real(rows, pause))
    with _many_chunks_store(tmp_path / "s.db", 20) as s:
        first_paused = threading.Event()
        go_on = threading.Event()

        def pause() -> None:
            first_paused.set()
            go_on.wait(10)

        out: list[object] = []

        def background() -> None:
            with s.thread_connection() as conn:
                out.append(chunk_ids(s, conn, pause=pause))

        t = threading.Thread(target=background)
        t.start()
        assert first_paused.wait(10)
        second: list[object] = []

        def foreground() -> None:
            with s.thread_connection() as conn:
                second.append(chunk_ids(s, conn))

        waiter = threading.Thread(target=foreground)
        waiter.start()
        waiter.join(0.2)
        assert waiter.is_alive()  # waiting for the first caller's answer
        go_on.set()
        t.join(10)
        waiter.join(10)
        assert second[0] is out[0] and computed == [1]
