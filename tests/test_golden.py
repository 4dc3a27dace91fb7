"""The vendored golden data (``tests/golden/``) is intact and, when
``../shared/`` is present, still the same as its source there."""

from __future__ import annotations

import pytest

from .conftest import GOLDEN, SHARED
from .golden import refresh


def test_every_vendored_file_is_in_the_manifest_with_its_bytes():
    manifest = refresh.read_manifest()
    files = refresh.vendored_files()
    assert sorted(files) == sorted(manifest), "tests/golden and MANIFEST.sha256 list different files"
    changed = [name for name, path in files.items() if refresh.sha256(path) != manifest[name]]
    assert changed == [], f"vendored golden files changed (a test wrote to them, or line endings moved): {changed}"


def test_the_vendored_sets_are_there():
    names = set(refresh.read_manifest())
    for must in (
        "parity/stages/expected.json",
        "parity/stages/queries.json",
        "fixtures/expected.json",
        "fixtures/context-mode-1.0.169.db",
        "fixtures/context-mode-1.0.22.db",
        "fixtures/session-1.0.169.db",
        "fixtures/session-1.0.169.md",
        "agent-view/calls.json",
        "agent-view/store.db",
    ):
        assert must in names, must
    # documents written by other projects stay out (see tests/golden/README.md)
    assert not any(n.startswith("parity/context7") for n in names)
    assert not (GOLDEN / "stopwords.txt").exists()


def test_line_endings_and_bom_survive_the_checkout():
    corpus = GOLDEN / "parity" / "stages" / "corpus" / "docs"
    assert b"\r\n" in (corpus / "legacy-crlf.md").read_bytes()
    assert (corpus / "bom-notes.md").read_bytes().startswith(b"\xef\xbb\xbf")


def test_the_vendored_copy_matches_shared():
    if not SHARED.is_dir():
        pytest.skip(f"{SHARED} is absent: nothing to compare the vendored copy with")
    diffs = refresh.differences(SHARED)
    assert diffs == [], "tests/golden differs from ../shared: run `python tests/golden/refresh.py`\n" + "\n".join(diffs)
