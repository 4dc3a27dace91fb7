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
