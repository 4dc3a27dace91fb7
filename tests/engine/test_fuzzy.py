"""Fuzzy correction: allowances, scan order, exact hits, UTF-16 lengths."""

import pytest

from engine import SearchParams, search
from engine.pipeline.stages.fuzzy import correct_word, max_edit_distance


@pytest.mark.parametrize(("n", "d"), [(3, 1), (4, 1), (5, 2), (12, 2), (13, 3)])
def test_allowance(n, d):
    assert max_edit_distance(n) == d


def test_first_in_scan_order_wins_ties(store):
    store.index_text("a.txt", "zeta cli cpu api", "plain")
    c = correct_word(store.conn, "cpi")
    assert c.corrected == "cli"  # cli, cpu, api all at distance 1; cli was inserted first
    assert c.candidates_within == 3


def test_exact_hit_is_kept(store):
    store.index_text("a.txt", "replication", "plain")
    c = correct_word(store.conn, "replication")
    assert c.corrected is None and c.exact


def test_typo_corrected_end_to_end(store):
    store.index_text("a.md", "# Replication\nreplication lag explained", "markdown")
    t = search(store, SearchParams("replicaton"))
    assert t.layer == "rrf-fuzzy"
    assert t.fuzzy.corrections[0].corrected == "replication"
    assert t.final[0].candidate.title == "Replication"


def test_weak_match_blocks_correction(store):
    store.index_text("a.md", "# Zebra\nzebra notes\n# Replication\nreplication lag", "markdown")
    t = search(store, SearchParams("zebra replicaton"))
    assert t.layer == "rrf"
    assert not t.fuzzy.ran
    assert "not attempted" in t.fuzzy.reason
