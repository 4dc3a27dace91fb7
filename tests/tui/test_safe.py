"""Terminal-safe text."""

from tui import safe


def test_line_makes_every_control_visible():
    assert safe.line("a\x1b[2Jb\nc\td\x7f\x9b") == "a␛[2Jb␊c␉d␡\ufffd"
    assert safe.line(None) == ""


def test_block_keeps_layout_and_drops_cr():
    assert safe.block("x\x1b[31m\r\ny\tz") == "x␛[31m\ny\tz"


def test_marked_keeps_fts_markers():
    assert safe.marked("a\x02hit\x03\x1b") == "a\x02hit\x03␛"
