"""Shared fixtures: paths to ../shared, fresh stores, an isolated home."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from .helpers import ENV_VARS

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
PARITY = SHARED / "parity"
FIXTURES = SHARED / "fixtures"
SAMPLE_CORPUS = REPO / "sample_corpus"
#: Real context-mode stores: 8 FTS columns (1.0.169) and the legacy 4 (1.0.22).
MODERN = FIXTURES / "context-mode-1.0.169.db"
LEGACY = FIXTURES / "context-mode-1.0.22.db"


@pytest.fixture
def store():
    """A fresh in-memory store."""
    from engine import Store

    s = Store.create(":memory:")
    yield s
    s.close()


@pytest.fixture
def home(tmp_path, monkeypatch):
    """An empty home folder, no storage variables, a private temp folder."""
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    h = tmp_path / "home"
    h.mkdir()
    monkeypatch.setenv("HOME", str(h))
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    return h
