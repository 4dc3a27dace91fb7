"""Shared fixtures: paths to ../shared and fresh stores."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
PARITY = SHARED / "parity"
FIXTURES = SHARED / "fixtures"
SAMPLE_CORPUS = REPO / "sample_corpus"


@pytest.fixture
def store():
    """A fresh in-memory store."""
    from engine import Store

    s = Store.create(":memory:")
    yield s
    s.close()
