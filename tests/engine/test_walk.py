"""Folder walking: .gitignore rules, symlinks, special files."""

from __future__ import annotations

import os
import socket

import pytest

from engine.store.corpus import Skip, collect_files
from engine.store.gitignore import gitignore_matcher


def _tree(root, files: dict[str, str]) -> None:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


def _labels(root, **kw) -> list[str]:
    return [label for label, _ in collect_files(root, gitignore_matcher(root), **kw)]


def test_root_and_nested_gitignore(tmp_path):
    _tree(
        tmp_path,
        {
            ".gitignore": "# comment\n*.log\n!keep.log\nbuild/\n/top-only.txt\n",
            "a.md": "a",
            "x.log": "x",
            "keep.log": "k",
            "top-only.txt": "t",
            "sub/top-only.txt": "kept: the pattern is anchored to the root",
            "sub/y.log": "y",
            "sub/keep.log": "k",
            "build/out.txt": "o",
            "sub/build/out.txt": "o",
            "sub/.gitignore": "*.tmp\n/local.md\n!y.log\n",
            "sub/z.tmp": "z",
            "sub/local.md": "l",
            "sub/deeper/local.md": "kept: anchored to sub/",
            "other/z.tmp": "kept: sub's rules do not apply here",
        },
    )
    assert _labels(tmp_path) == [  # the .gitignore files themselves are metadata, never indexed
        "a.md",
        "keep.log",
        "other/z.tmp",
        "sub/deeper/local.md",
        "sub/keep.log",
        "sub/top-only.txt",
        "sub/y.log",
    ]


def test_matcher_labels_and_directories(tmp_path):
    _tree(
        tmp_path,
        {
            ".gitignore": "build/\ncache\n*.bin\n",
            "docs/.gitignore": "drafts/\n!important.bin\n",
        },
    )
    ignored = gitignore_matcher(tmp_path)
    assert ignored("build/")  # a label ending in "/" is a directory
    assert not ignored("build")  # "build/" only matches directories
    assert ignored("build/x.md")  # under an ignored directory
    assert ignored("cache") and ignored("cache/") and ignored("a/cache/f.md")
    assert ignored("x.bin") and ignored("docs/x.bin")
    assert not ignored("docs/important.bin")  # re-included by the deeper file
    assert ignored("docs/drafts/") and ignored("docs/drafts/a.md")
    assert not ignored("drafts/a.md")  # docs/.gitignore is relative to docs/
    assert ignored(".git/") and ignored(".git/config")
    assert not ignored("docs/a.md")


def test_nothing_under_an_ignored_directory_comes_back(tmp_path):
    _tree(tmp_path, {".gitignore": "vendor/\n!vendor/keep.md\n", "vendor/keep.md": "k", "a.md": "a"})
    ignored = gitignore_matcher(tmp_path)
    assert ignored("vendor/keep.md")  # git cannot re-include inside an excluded directory
    assert _labels(tmp_path) == ["a.md"]


def test_git_info_exclude_and_git_folder(tmp_path):
    _tree(tmp_path, {".git/info/exclude": "secret.md\n", ".git/config": "x", "secret.md": "s", "a.md": "a"})
    assert _labels(tmp_path) == ["a.md"]


def test_no_gitignore_files(tmp_path):
    _tree(tmp_path, {"a.md": "a", "b/c.json": "{}"})
    assert _labels(tmp_path) == ["a.md", "b/c.json"]


def test_unreadable_gitignore_counts_as_empty(tmp_path):
    (tmp_path / ".gitignore").mkdir()  # a folder named .gitignore cannot be read as a file
    _tree(tmp_path, {"a.md": "a"})
    assert not gitignore_matcher(tmp_path)("a.md")


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symlinks")
def test_symlink_loops_are_not_followed(tmp_path):
    _tree(tmp_path, {"a/b.md": "b"})
    os.symlink(tmp_path, tmp_path / "a" / "loop")  # a -> root: a cycle if followed
    os.symlink(tmp_path / "a", tmp_path / "a" / "self")
    skipped: list[Skip] = []
    files = collect_files(tmp_path, skipped=skipped)
    assert [label for label, _ in files] == ["a/b.md"]
    assert {(s.path, s.kind) for s in skipped} == {("a/loop/", "symlink"), ("a/self/", "symlink")}


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symlinks")
def test_symlinked_files(tmp_path):
    root = tmp_path / "root"
    outside = tmp_path / "outside"
    _tree(root, {"docs/real.md": "# Real\n"})
    _tree(outside, {"secret.md": "# Secret\n"})
    os.symlink(root / "docs" / "real.md", root / "alias.md")  # inside the folder: indexed
    os.symlink(outside / "secret.md", root / "secret.md")  # outside: skipped
    os.symlink(root / "missing.md", root / "dangling.md")
    skipped: list[Skip] = []
    labels = [label for label, _ in collect_files(root, skipped=skipped)]
    assert labels == ["alias.md", "docs/real.md"]
    reasons = {s.path: (s.kind, s.reason) for s in skipped}
    assert reasons["secret.md"][0] == "symlink" and "outside the folder" in reasons["secret.md"][1]
    assert reasons["dangling.md"] == ("symlink", "dangling symlink")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs")
def test_special_files_are_skipped(tmp_path):
    _tree(tmp_path, {"a.md": "a"})
    os.mkfifo(tmp_path / "pipe")  # reading it would block forever
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(tmp_path / "s.sock"))
        skipped: list[Skip] = []
        labels = [label for label, _ in collect_files(tmp_path, skipped=skipped)]
    finally:
        sock.close()
    assert labels == ["a.md"]
    assert {(s.path, s.kind) for s in skipped} == {("pipe", "not-regular"), ("s.sock", "not-regular")}


def test_unreadable_folder_is_reported(tmp_path, monkeypatch):
    _tree(tmp_path, {"a.md": "a", "locked/b.md": "b"})
    real_scandir = os.scandir

    def scandir(path="."):
        if os.fspath(path).endswith("locked"):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    skipped: list[Skip] = []
    labels = [label for label, _ in collect_files(tmp_path, skipped=skipped)]
    assert labels == ["a.md"]
    assert [(s.path, s.kind) for s in skipped] == [("locked/", "unreadable")]
    assert "Permission denied" in skipped[0].reason


def test_non_utf8_file_name(tmp_path):
    if os.name == "nt" or os.uname().sysname == "Darwin":
        pytest.skip("the file system insists on valid names")
    _tree(tmp_path, {"a.md": "a"})
    (tmp_path / os.fsdecode(b"caf\xe9.md")).write_text("x")
    skipped: list[Skip] = []
    labels = [label for label, _ in collect_files(tmp_path, skipped=skipped)]
    assert labels == ["a.md"]
    assert [(s.path, s.kind) for s in skipped] == [("caf\ufffd.md", "bad-name")]


def test_order_is_utf8_byte_order(tmp_path):
    _tree(tmp_path, {"b.md": "", "B.md": "", "a/z.md": "", "a-b.md": "", "é.md": "", "z.md": ""})
    assert [label for label, _ in collect_files(tmp_path)] == ["B.md", "a-b.md", "a/z.md", "b.md", "z.md", "é.md"]
