"""Indexing real folders: skips, incremental runs, interruption."""

from __future__ import annotations

import os

import pytest

import engine.store.indexing as indexing
from engine import SearchParams, Store, search
from engine.store.corpus import TRACK_TABLE, IndexInterrupted, index_paths
from engine.store.discovery import count_mismatches
from engine.store.gitignore import gitignore_matcher


def _tree(root, files: dict[str, str | bytes]) -> None:
    for rel, body in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(body, bytes):
            p.write_bytes(body)
        else:
            p.write_text(body)


def _consistent(store: Store) -> None:
    assert count_mismatches(store) == []
    porter = [r[0] for r in store.conn.execute("SELECT rowid FROM chunks ORDER BY rowid")]
    trigram = [r[0] for r in store.conn.execute("SELECT rowid FROM chunks_trigram ORDER BY rowid")]
    assert porter == trigram


def _contents(store: Store) -> dict[str, str]:
    out: dict[str, str] = {}
    for c in store.iter_chunks():
        out[c.source] = out.get(c.source, "") + c.content
    return out


@pytest.fixture
def folder(tmp_path):
    root = tmp_path / "proj"
    _tree(
        root,
        {
            "README.md": "# Project\nintro words\n",
            "docs/guide.md": "# Guide\n## Install\nrun the installer\n",
            "conf/app.json": '{"name": "app", "port": 8080}',
            "logs/run.log": "line one\nline two\n",
            "img/logo.png": b"\x89PNG\r\n\x1a\n\x00\x00\x00",
            "big/huge.txt": "x" * 5000,
        },
    )
    return root


def test_skips_are_counted_and_the_run_goes_on(folder, monkeypatch):
    real_open = open

    def flaky_open(path, *a, **kw):
        if str(path).endswith("run.log"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *a, **kw)

    import engine.store.corpus as corpus

    monkeypatch.setattr(corpus, "open", flaky_open, raising=False)
    store = Store.create(":memory:")
    report = index_paths(store, [folder], max_file_bytes=4096)
    assert [r.label for r in report.results] == ["README.md", "conf/app.json", "docs/guide.md"]
    assert report.skip_counts() == {"unreadable": 1, "too-large": 1, "binary": 1}
    reasons = {s.path: s.reason for s in report.not_indexed}
    assert "Permission denied" in reasons["logs/run.log"]
    assert reasons["big/huge.txt"] == "5000 bytes is over the 4096-byte limit"
    assert "binary" in reasons["img/logo.png"]
    assert report.files_seen == 6
    _consistent(store)


def test_every_kind_records_its_hash(folder):
    store = Store.create(":memory:")
    index_paths(store, [folder])
    rows = {s.label: s for s in store.sources()}
    assert all(rows[label].content_hash for label in ("README.md", "conf/app.json", "logs/run.log"))
    assert rows["README.md"].file_path == str((folder / "README.md").resolve())
    assert rows["conf/app.json"].file_path is None  # only markdown is file-backed (reference)


def test_incremental_runs(folder, tmp_path):
    store = Store.create(tmp_path / "s.db")
    first = index_paths(store, [folder], incremental=True)
    assert len(first.results) == 5 and not first.unchanged

    again = index_paths(store, [folder], incremental=True)
    assert again.results == [] and len(again.unchanged) == 5 and again.removed == []

    (folder / "docs" / "guide.md").write_text("# Guide\n## Install\nuse the zeppelin\n")
    (folder / "logs" / "run.log").unlink()
    (folder / "new.md").write_text("# New\nfresh\n")
    third = index_paths(store, [folder], incremental=True)
    assert [r.label for r in third.results] == ["docs/guide.md", "new.md"]
    assert third.removed == ["logs/run.log"]
    assert sorted(third.unchanged) == ["README.md", "big/huge.txt", "conf/app.json"]
    contents = _contents(store)
    assert "zeppelin" in contents["docs/guide.md"] and "installer" not in contents["docs/guide.md"]
    assert "logs/run.log" not in contents
    assert search(store, SearchParams("zeppelin")).final[0].candidate.source == "docs/guide.md"
    _consistent(store)
    store.close()


def test_full_run_reindexes_everything(folder):
    store = Store.create(":memory:")
    index_paths(store, [folder])
    report = index_paths(store, [folder])  # not incremental
    assert len(report.results) == 5 and report.unchanged == []
    _consistent(store)


def test_removal_only_touches_labels_from_the_folders_indexed(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    _tree(a, {"one.md": "# One\n", "shared.json": "{}"})
    _tree(b, {"two.md": "# Two\n"})
    store = Store.create(":memory:")
    index_paths(store, [a], incremental=True)
    store.index_text("manual-note", "added by hand", "plain")
    report = index_paths(store, [b], incremental=True)  # another folder into the same store
    assert report.removed == []
    assert set(_contents(store)) == {"one.md", "shared.json", "manual-note", "two.md"}
    (a / "shared.json").unlink()
    report = index_paths(store, [a], incremental=True)
    assert report.removed == ["shared.json"]
    assert set(_contents(store)) == {"one.md", "manual-note", "two.md"}
    tracked = dict(store.conn.execute(f"SELECT label, root FROM {TRACK_TABLE}"))
    assert tracked == {"one.md": os.path.realpath(a), "two.md": os.path.realpath(b)}


def test_newly_ignored_or_unindexable_files_are_removed(folder):
    store = Store.create(":memory:")
    index_paths(store, [folder], incremental=True, ignore_factory=gitignore_matcher)
    (folder / ".gitignore").write_text("logs/\n")
    (folder / "conf" / "app.json").write_bytes(b"\x00binary now")
    report = index_paths(store, [folder], incremental=True, ignore_factory=gitignore_matcher)
    assert sorted(report.removed) == ["conf/app.json", "logs/run.log"]
    assert report.results == []  # the new .gitignore is metadata, not content
    assert [(s.path, s.kind) for s in report.skipped if s.kind == "vcs-metadata"] == [(".gitignore", "vcs-metadata")]
    _consistent(store)


def test_unreadable_file_keeps_previous_content(folder, monkeypatch):
    import engine.store.corpus as corpus

    store = Store.create(":memory:")
    index_paths(store, [folder], incremental=True)
    real_open = open
    monkeypatch.setattr(
        corpus,
        "open",
        lambda p, *a, **k: (
            (_ for _ in ()).throw(OSError(5, "I/O error")) if str(p).endswith("README.md") else real_open(p, *a, **k)
        ),
        raising=False,
    )
    report = index_paths(store, [folder], incremental=True)
    assert report.kept == ["README.md"] and report.removed == []
    assert "intro words" in _contents(store)["README.md"]


def test_store_inside_the_folder_is_not_indexed(tmp_path):
    _tree(tmp_path, {"a.md": "# A\n"})
    store = Store.create(tmp_path / "store.db")
    store.index_text("x", "make a wal", "plain")
    report = index_paths(store, [tmp_path])
    assert [r.label for r in report.results] == ["a.md"]
    assert {s.path for s in report.skipped if s.kind == "store-file"} >= {"store.db"}
    store.close()


def test_duplicate_labels_and_missing_paths(tmp_path):
    _tree(tmp_path, {"one/a.md": "# First\n", "two/a.md": "# Second\n"})
    store = Store.create(":memory:")
    report = index_paths(store, [tmp_path / "one" / "a.md", tmp_path / "two" / "a.md", tmp_path / "nope"])
    assert [r.label for r in report.results] == ["a.md"]
    assert [(s.path, s.kind) for s in report.not_indexed] == [
        (str(tmp_path / "nope"), "missing"),
        ("a.md", "duplicate"),
    ]
    assert "First" in _contents(store)["a.md"]


def test_progress_and_plan(folder):
    calls, plan = [], []
    store = Store.create(":memory:")
    report = index_paths(
        store,
        [folder],
        max_file_bytes=4096,
        progress=lambda label, n: calls.append((label, n)),
        on_plan=plan.append,
    )
    assert plan == [6]
    assert [c[0] for c in calls] == [
        "README.md",
        "big/huge.txt",
        "conf/app.json",
        "docs/guide.md",
        "img/logo.png",
        "logs/run.log",
    ]
    assert dict(calls)["big/huge.txt"] == 0  # skipped by size, never read
    assert sum(n for _, n in calls) == report.bytes_read


def test_interrupt_between_files_leaves_a_consistent_store(folder, tmp_path):
    db = tmp_path / "s.db"
    store = Store.create(db)

    seen: list[str] = []

    def stop_after_two(label, n):
        seen.append(label)
        if len(seen) == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt) as exc:
        index_paths(store, [folder], progress=stop_after_two)
    assert isinstance(exc.value, IndexInterrupted)
    assert [r.label for r in exc.value.report.results] == ["README.md", "big/huge.txt"]
    store.close()
    with Store.open_readonly(db) as ro:
        _consistent(ro)
        assert {s.label for s in ro.sources()} == {"README.md", "big/huge.txt"}


def test_interrupt_inside_a_file_rolls_that_file_back(folder, tmp_path, monkeypatch):
    db = tmp_path / "s.db"
    store = Store.create(db)
    index_paths(store, [folder], incremental=True)
    old = _contents(store)
    for rel in ("README.md", "docs/guide.md", "logs/run.log"):
        p = folder / rel
        p.write_text(
            p.read_text().replace("line", "LINE").replace("words", "WORDS").replace("installer", "INSTALLER")
            + "\n# Extra\nmore text\n"
        )
    real = indexing.vocabulary_words
    calls = []

    def interrupting(text):
        calls.append(text)
        if len(calls) == 2:  # the second file's transaction: chunks written, not committed
            raise KeyboardInterrupt
        return real(text)

    monkeypatch.setattr(indexing, "vocabulary_words", interrupting)
    with pytest.raises(IndexInterrupted) as exc:
        index_paths(store, [folder], incremental=True)
    monkeypatch.setattr(indexing, "vocabulary_words", real)
    assert [r.label for r in exc.value.report.results] == ["README.md"]
    store.close()

    with Store.open_readonly(db) as ro:
        _consistent(ro)
        now = _contents(ro)
        assert "WORDS" in now["README.md"]  # committed before the interrupt
        assert now["docs/guide.md"] == old["docs/guide.md"]  # rolled back whole: old content, not a mix
        assert now["logs/run.log"] == old["logs/run.log"]  # never reached
        hashes = {s.label: s.content_hash for s in ro.sources()}

    # The next incremental run finishes the job: the rolled-back file still
    # has its old hash, so it is seen as changed.
    store = Store.open_writable(db)
    report = index_paths(store, [folder], incremental=True)
    assert [r.label for r in report.results] == ["docs/guide.md", "logs/run.log"]
    assert hashes["docs/guide.md"] != store.source_hashes()["docs/guide.md"]
    _consistent(store)
    store.close()


@pytest.mark.parametrize("incremental", [False, True])
def test_interrupt_right_after_a_commit_counts_that_file(folder, tmp_path, monkeypatch, incremental):
    """Ctrl-C is delivered when SQLite hands control back, usually just after
    the (slow) COMMIT: the file is stored although index_text never returned.
    The report must count it, as the store does."""
    db = tmp_path / "s.db"
    store = Store.create(db)
    if incremental:
        index_paths(store, [folder])
        for rel in ("README.md", "conf/app.json", "docs/guide.md"):
            (folder / rel).write_text((folder / rel).read_text().replace("a", "A") + "\n")
    real = indexing.insert
    calls = []

    def commit_then_interrupt(*a, **kw):
        result = real(*a, **kw)  # committed
        calls.append(result.label)
        if len(calls) == 2:
            raise KeyboardInterrupt  # ... but the result is lost on the way back
        return result

    monkeypatch.setattr(indexing, "insert", commit_then_interrupt)
    with pytest.raises(IndexInterrupted) as exc:
        index_paths(store, [folder], incremental=incremental)
    monkeypatch.setattr(indexing, "insert", real)
    report = exc.value.report
    assert [r.label for r in report.results] == calls
    assert calls == (["README.md", "conf/app.json"] if incremental else ["README.md", "big/huge.txt"])
    stored = {s.label: s for s in store.sources()}
    recovered = report.results[1]
    assert (recovered.source_id, recovered.chunks) == (stored[calls[1]].id, stored[calls[1]].chunk_count)
    assert report.bytes == sum(len((folder / r).read_bytes()) for r in calls)
    store.close()


def test_interrupt_before_the_commit_is_not_counted(folder, tmp_path, monkeypatch):
    db = tmp_path / "s.db"
    store = Store.create(db)
    index_paths(store, [folder])
    (folder / "conf/app.json").write_text('{"name": "changed"}')
    (folder / "README.md").write_text("# Project\nnew intro\n")

    def interrupted(text):
        raise KeyboardInterrupt  # inside the transaction: rolled back

    monkeypatch.setattr(indexing, "vocabulary_words", interrupted)
    with pytest.raises(IndexInterrupted) as exc:
        index_paths(store, [folder], incremental=True)
    assert exc.value.report.results == []
    store.close()


def test_a_second_folder_replacing_labels_is_reported(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    _tree(a, {"README.md": "# A\nfrom a\n", "notes.md": "# Notes\nonly a\n"})
    _tree(b, {"README.md": "# B\nfrom b\n", "only.md": "# Only\nonly b\n"})
    store = Store.create(tmp_path / "s.db")
    assert index_paths(store, [a], incremental=True).replaced == []
    report = index_paths(store, [b], incremental=True)
    assert report.replaced == [("README.md", os.path.realpath(a))]
    assert "from b" in _contents(store)["README.md"]
    assert index_paths(store, [b], incremental=True).replaced == []  # b owns it now
    assert index_paths(store, [b]).replaced == []  # --full too
    store.close()


def test_vcs_metadata_is_skipped_and_reported(tmp_path):
    _tree(
        tmp_path,
        {
            ".gitignore": "*.log\n",
            ".gitattributes": "* text=auto\n",
            "sub/.gitmodules": "[submodule]\n",
            "sub/.gitkeep": "",
            ".env.example": "A=1\n",
            "a.md": "# A\n",
        },
    )
    store = Store.create(":memory:")
    report = index_paths(store, [tmp_path])
    assert [r.label for r in report.results] == [".env.example", "a.md", "sub/.gitkeep"]
    assert [(s.path, s.kind) for s in report.not_indexed] == [
        (".gitattributes", "vcs-metadata"),
        (".gitignore", "vcs-metadata"),
        ("sub/.gitmodules", "vcs-metadata"),
    ]
    assert report.skip_counts() == {"vcs-metadata": 3}
