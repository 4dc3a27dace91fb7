"""Formatting helpers shared by the CLI and the browser (tui/present/fmt.py)."""

from __future__ import annotations

import pytest
from rich.cells import cell_len

from tui.present.cut import middle_cut


@pytest.mark.parametrize(
    "title,width,expected",
    [
        ("ferryctl docs > install > publish > Example", 30, "ferryctl … > publish > Example"),
        ("ferryctl docs > install > publish > Example", 60, "ferryctl docs > install > publish > Example"),
        ("ferryctl docs > install > publish > Example", 22, "ferryctl d … > Example"),
        ("ferryctl docs > install > publish > Example", 12, "… > Example"),
        ("Replication > Write quorum", 20, "… > Write quorum"),  # not "Rep … > Write quorum" (issue 24)
        ("Incident review: 2023-04 outage > What went well", 20, "… > What went well"),
        ("Replication > Write quorum", 21, "Repl … > Write quorum"),
        ("[heartbeat] coordinator tick, 3 runners registered", 30, "[heartbeat] coo…ers registered"),
        ("A very long single heading without parts", 12, "A very…parts"),  # keeps its start and end
        ("a > b", 1, "…"),
        ("x", 0, ""),
    ],
)
def test_middle_cut_keeps_the_last_heading(title, width, expected):
    got = middle_cut(title, width)
    assert got == expected and cell_len(got) <= width


@pytest.mark.parametrize(
    "path,width,expected",
    [
        ("docs/plugins/hooks-reference.md", 24, "docs…/hooks-reference.md"),
        ("docs/plugins/hooks-reference.md", 31, "docs/plugins/hooks-reference.md"),
        ("docs/plugins/hooks-reference.md", 12, "…eference.md"),
    ],
)
def test_middle_cut_keeps_a_paths_file_name(path, width, expected):
    assert middle_cut(path, width, "/") == expected


def test_middle_cut_counts_terminal_cells():
    got = middle_cut("配置 > 部署 > 发布说明 > 示例标题", 16)
    assert cell_len(got) <= 16 and got.endswith("> 示例标题")


def test_abbreviate_cuts_only_when_the_cut_is_shorter():
    """The marker ``… (+N characters)`` is 17 characters and more: a text a
    few characters over the width is shown whole (it was cut to save one
    character: ``… (+1 characters)``); a cut is always shorter than the
    text, and N is what it left out."""
    from engine.pipeline.words import abbreviate

    width = 30
    for extra in range(0, 60):
        text = "".join(chr(ord("a") + i % 26) for i in range(width + extra))
        shown = abbreviate(text, width)
        if shown == text:
            continue
        assert len(shown) < len(text), (extra, shown)
        assert shown == f"{text[:width]}… (+{extra} characters)"
    assert abbreviate("x" * 31, 30) == "x" * 31
    assert abbreviate("x" * 47, 30) == "x" * 47  # "x" * 30 + "… (+17 characters)" has 48
    assert abbreviate("x" * 49, 30) == "x" * 30 + "… (+19 characters)"
    assert abbreviate("x" * 10_030, 30) == "x" * 30 + "… (+10,000 characters)"


def test_abbreviate_counts_code_points():
    """N counts characters (code points): not UTF-8 bytes (4 for 😀), not
    UTF-16 units (2 for 😀)."""
    from engine.pipeline.words import abbreviate

    assert abbreviate("😀" * 100, 30) == "😀" * 30 + "… (+70 characters)"


def test_agent_log_follow_shows_a_query_just_over_the_cut_whole():
    """``agent-log --follow``'s received words quote each query cut at 30
    characters: a 31-character one was shown as its first 30 and ``… (+1
    characters)``."""
    from tui.cli.agent import _received_words

    query = "abcdefghij abcdefghij abcdefghi"
    words = _received_words({"queries": [{"query": query, "results": 1}], "results": 1, "bytes": 9, "snippets_cut": 0})
    assert words == f"1 result ({query} 1), 9 B, 0 snippets cut"


def test_query_label_cuts_only_when_the_cut_is_shorter():
    """A heading's query label: an 81-character query (cut at 80) was its
    first 80 characters and ``… (81 characters)``, longer than the query."""
    from tui.present.fmt import query_label

    assert query_label("q" * 81) == repr("q" * 81)
    assert query_label("q" * 200) == repr("q" * 80) + "… (200 characters)"
    for n in range(80, 120):
        assert len(query_label("q" * n)) <= len(repr("q" * n))
