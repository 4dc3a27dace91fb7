"""Finding context-mode content stores; project hashing; count checks."""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3


from engine import Store
from engine.store.discovery import (
    CLIENTS,
    StoreInfo,
    content_dirs,
    context_mode_store_reason,
    count_mismatches,
    find_stores,
    normalise_project_dir,
    read_store_info,
    source_count_mismatches,
    store_name_for_project,
    store_names_for_project,
)

from ..conftest import LEGACY, MODERN


def _h(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _put(folder, name, src=MODERN):
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy2(src, folder / name)
    return folder / name


# ─── project hashing ─────────────────────────────────────────────────────


def test_normalisation_matches_normalize_worktree_path():
    assert normalise_project_dir("/a/b/") == "/a/b"
    assert normalise_project_dir("/a/b///") == "/a/b"
    assert normalise_project_dir("///") == "/"
    assert normalise_project_dir("C:\\Users\\Me\\proj\\") == "C:/Users/Me/proj"
    assert normalise_project_dir("C:\\") == "C:/"


def test_store_name_for_project():
    assert store_name_for_project("/Users/Me/Proj/", platform="linux") == _h("/Users/Me/Proj")
    assert store_name_for_project("/Users/Me/Proj", platform="darwin") == _h("/users/me/proj")
    assert store_name_for_project("C:\\Users\\Me\\Proj", platform="win32") == _h("c:/users/me/proj")
    assert store_name_for_project("/", platform="linux") == _h("/")
    assert store_name_for_project("/home/ü/Straße", platform="linux") == _h("/home/ü/Straße")
    assert len(store_name_for_project("/x")) == 16


def test_relative_project_dir_is_made_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert store_name_for_project(".", platform="linux") == _h(os.getcwd())


def test_candidate_names_cover_legacy_casing_and_symlinks(tmp_path):
    real = tmp_path / "Real"
    real.mkdir()
    link = tmp_path / "link"
    os.symlink(real, link)
    names = store_names_for_project(str(link), platform="darwin")
    assert names[0] == _h(str(link).lower())  # canonical first
    assert _h(str(link)) in names  # versions up to 1.0.111 kept the casing
    assert _h(os.path.realpath(real).lower()) in names  # the resolved path


# ─── locations ───────────────────────────────────────────────────────────


def test_content_dirs_defaults_and_order(home):
    dirs = content_dirs()
    paths = {d.client: d.path for d in dirs}
    assert dirs[0].client == "claude-code"
    assert paths["claude-code"] == home / ".claude" / "context-mode" / "content"
    assert paths["codex"] == home / ".codex" / "context-mode" / "content"
    assert paths["gemini-cli"] == home / ".gemini" / "context-mode" / "content"
    assert paths["opencode"] == home / ".config" / "opencode" / "context-mode" / "content"
    assert paths["legacy-temp"] == home.parent / "tmp"
    assert {c for c, _, _ in CLIENTS} <= set(paths)


def test_content_dirs_overrides(home, tmp_path, monkeypatch):
    monkeypatch.setenv("CONTEXT_MODE_DIR", str(tmp_path / "cm"))
    monkeypatch.setenv("CONTEXT_MODE_DATA_DIR", "~/data")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    dirs = content_dirs(tmp_path / "proj")
    assert [d.path for d in dirs[:2]] == [tmp_path / "cm" / "content", home / "data" / "context-mode" / "content"]
    paths = {d.name: d.path for d in dirs}
    assert paths["Claude Code"] == tmp_path / "claude" / "context-mode" / "content"
    assert paths["Codex CLI"] == tmp_path / "codex" / "context-mode" / "content"
    assert paths["OpenCode"] == tmp_path / "xdg" / "opencode" / "context-mode" / "content"
    assert paths["VS Code Copilot (project)"] == tmp_path / "proj" / ".github" / "context-mode" / "content"


def test_relative_context_mode_dir_is_ignored(home, monkeypatch):
    monkeypatch.setenv("CONTEXT_MODE_DIR", "relative/dir")  # context-mode rejects it too
    assert all(d.client != "CONTEXT_MODE_DIR" for d in content_dirs())


# ─── finding stores ──────────────────────────────────────────────────────


def test_find_stores(home, tmp_path, monkeypatch):
    project = "/work/some-project"
    name = store_name_for_project(project)
    claude = _put(home / ".claude" / "context-mode" / "content", f"{name}.db")
    codex = _put(home / ".codex" / "context-mode" / "content", "0123456789abcdef.db", LEGACY)
    override = _put(tmp_path / "cm" / "content", "fedcba9876543210.db")
    (tmp_path / "cm" / "content" / "junk.db").write_text("not sqlite")
    other = tmp_path / "cm" / "content" / "other.db"
    c = sqlite3.connect(other)
    c.execute("CREATE TABLE t(x)")
    c.commit()
    c.close()
    temp_store = _put(home.parent / "tmp", "context-mode-4242.db")
    monkeypatch.setenv("CONTEXT_MODE_DIR", str(tmp_path / "cm"))
    before = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in (claude, codex, override, other, temp_store)}
    listing = {p: sorted(os.listdir(p)) for p in (claude.parent, codex.parent, override.parent)}

    found = find_stores()
    by_path = {i.path: i for i in found}
    assert found[0].client == "CONTEXT_MODE_DIR"  # the override is searched first
    assert set(by_path) == {str(p) for p in (claude, codex, override, other, temp_store)} | {
        str(tmp_path / "cm" / "content" / "junk.db")
    }
    ok = by_path[str(claude)]
    assert isinstance(ok, StoreInfo)
    assert (ok.sources, ok.chunks, ok.code_chunks, ok.vocabulary, ok.sessions) == (
        11,
        123,
        36,
        884,
        2,
    )  # s-alpha, s-beta (unattributed not counted)
    assert ok.schema == "8-column (session attribution)" and ok.error is None
    assert ok.client == "claude-code" and ok.project_hash == name
    assert ok.size_bytes == MODERN.stat().st_size and ok.last_indexed_at == "2026-11-30 06:52:59"
    legacy = by_path[str(codex)]
    assert legacy.schema == "4-column (legacy)" and legacy.sessions == 0 and legacy.client == "codex"
    assert by_path[str(temp_store)].client == "legacy-temp"
    junk = by_path[str(tmp_path / "cm" / "content" / "junk.db")]
    assert "not an SQLite database" in junk.error and junk.sources is None
    assert "not a context-mode content store" in by_path[str(other)].error
    assert ok.to_dict()["path"] == str(claude)

    # Only read: same bytes, no -wal/-shm left behind.
    assert before == {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in before}
    assert listing == {p: sorted(os.listdir(p)) for p in listing}

    # --project: only that project's store (and never the per-process temp files).
    assert [i.path for i in find_stores(project)] == [str(claude)]
    assert find_stores("/no/such/project") == []


def test_same_folder_twice_is_listed_once(home, monkeypatch):
    _put(home / ".claude" / "context-mode" / "content", "0123456789abcdef.db")
    monkeypatch.setenv("CONTEXT_MODE_DIR", str(home / ".claude" / "context-mode"))
    found = find_stores()
    assert len(found) == 1 and found[0].client == "CONTEXT_MODE_DIR"


def test_newest_first_within_a_folder(home):
    folder = home / ".claude" / "context-mode" / "content"
    old = _put(folder, "aaaaaaaaaaaaaaaa.db")
    new = _put(folder, "bbbbbbbbbbbbbbbb.db")
    os.utime(old, (1_000_000, 1_000_000))
    os.utime(new, (2_000_000, 2_000_000))
    assert [i.path for i in find_stores()] == [str(new), str(old)]


def test_nothing_found(home):
    assert find_stores() == []


def test_read_store_info_never_raises(tmp_path):
    info = read_store_info(tmp_path / "missing.db")
    assert info.error and info.sources is None
    (tmp_path / "dir.db").mkdir()
    assert "folder" in read_store_info(tmp_path / "dir.db").error


def test_context_mode_store_reason(home, tmp_path):
    content = home / ".claude" / "context-mode" / "content"
    content.mkdir(parents=True)
    assert "Claude Code" in context_mode_store_reason(content / "0123456789abcdef.db")
    assert "Claude Code" in context_mode_store_reason(content / "anything.db")
    elsewhere = tmp_path / "x" / "context-mode" / "content" / "0123456789abcdef.db"
    assert "named like a context-mode content store" in context_mode_store_reason(elsewhere)
    assert context_mode_store_reason(tmp_path / "mine.db") is None


# ─── counts ──────────────────────────────────────────────────────────────


def test_count_mismatches(tmp_path):
    db = tmp_path / "c.db"
    shutil.copy2(MODERN, db)
    with Store.open_readonly(db) as store:
        assert count_mismatches(store) == [] and source_count_mismatches is count_mismatches
    conn = sqlite3.connect(db)
    conn.execute("UPDATE sources SET chunk_count = chunk_count + 2 WHERE label = 'README.md'")
    conn.execute("UPDATE sources SET code_chunk_count = 0 WHERE label = 'config/larkspur.json'")
    rowid = conn.execute("SELECT rowid FROM chunks WHERE source_id = 2 LIMIT 1").fetchone()[0]
    conn.execute("DELETE FROM chunks_trigram WHERE rowid = ?", (rowid,))
    conn.execute("INSERT INTO chunks (title, content, source_id, content_type) VALUES ('t', 'c', 99.0, 'prose')")
    conn.commit()
    conn.close()
    with Store.open_readonly(db) as store:
        found = count_mismatches(store)
    by_what = {(m.label, m.what): m for m in found}
    readme = by_what[("README.md", "chunk_count")]
    assert (readme.recorded, readme.actual) == (14, 12)
    assert str(readme) == "README.md: sources.chunk_count says 14, the chunks table has 12"
    json_code = by_what[("config/larkspur.json", "code_chunk_count")]
    assert json_code.recorded == 0 and json_code.actual > 0
    tri = by_what[("changelog.md", "trigram rows")]
    assert (tri.recorded, tri.actual) == (14, 13)
    orphan = by_what[(None, "orphan chunks")]
    assert (orphan.source_id, orphan.actual) == (99, 1)
    assert "point to a source row that does not exist" in str(orphan)
    total = by_what[(None, "chunks_trigram total")]
    assert (total.recorded, total.actual) == (124, 122)
    assert len(found) == 5


def test_count_mismatches_on_legacy_store():
    with Store.open_readonly(LEGACY) as store:
        assert count_mismatches(store) == []
