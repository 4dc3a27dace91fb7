"""Terminal-safe text."""

from tui.present import safe
from tui.present.cut import end_cut


def test_line_makes_every_control_visible():
    assert safe.line("a\x1b[2Jb\nc\td\x7f\x9b") == "a␛[2Jb␊c␉d␡\ufffd"
    assert safe.line(None) == ""


def test_block_keeps_layout_and_drops_cr():
    assert safe.block("x\x1b[31m\r\ny\tz") == "x␛[31m\ny\tz"


def test_marked_keeps_fts_markers():
    assert safe.marked("a\x02hit\x03\x1b") == "a\x02hit\x03␛"


def test_bidi_controls_are_shown_not_obeyed():
    """Issue 13 item 6: a file name with U+202E (RIGHT-TO-LEFT OVERRIDE)
    would show as ``invoiceexe.pdf``; every bidi control is made visible."""
    name = "invoice\u202efdp.exe"
    assert safe.line(name) == "invoice⟨RLO⟩fdp.exe"
    every = "".join(chr(c) for c in safe.BIDI_CONTROLS)
    for shown in (safe.line(every), safe.block(every), safe.marked(every)):
        assert not any(chr(c) in shown for c in safe.BIDI_CONTROLS)
        assert all(f"⟨{abbr}⟩" in shown for abbr in safe.BIDI_CONTROLS.values())
    assert end_cut(name, 40).plain == "invoice⟨RLO⟩fdp.exe"


def test_bidi_file_name_in_cli_output(tmp_path):
    """The index summary and search output never print a raw bidi control."""
    from typer.testing import CliRunner

    from tui.cli import app

    folder = tmp_path / "c"
    folder.mkdir()
    (folder / "invoice\u202efdp.md").write_text("# Bill\nzebra owed\n", "utf-8")
    (folder / "binary\u2067.bin").write_bytes(b"\x00zebra")
    runner = CliRunner()
    db = str(tmp_path / "s.db")
    r = runner.invoke(app, ["index", str(folder), "--db", db])
    assert r.exit_code == 0, r.output
    assert "binary⟨RLI⟩.bin" in r.output
    r = runner.invoke(app, ["search", "zebra", "--db", db])
    assert r.exit_code == 0, r.output
    assert "invoice⟨RLO⟩fdp.md" in r.output
    assert not any(chr(c) in r.output for c in safe.BIDI_CONTROLS)


def test_every_format_character_is_shown_not_hidden():
    """A zero-width space (U+200B) and every other invisible format
    character (Unicode category Cf) is made visible, as the bidi controls are."""
    import sys
    import unicodedata

    every = "".join(chr(c) for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) == "Cf")
    assert "\u200b" in every and "\u00ad" in every
    for shown in (safe.line(every), safe.block(every), safe.marked(every)):
        assert not any(unicodedata.category(ch) == "Cf" for ch in shown), shown
    assert safe.line("write\u200bquorum") == "write⟨ZWSP⟩quorum"
    assert safe.line("a\u2061b\ufeff") == "a⟨U+2061⟩b⟨ZWNBSP⟩"
    assert safe.line("invoice\u202efdp.exe") == "invoice⟨RLO⟩fdp.exe"  # bidi names unchanged


def test_a_zero_width_space_in_the_query_is_shown_by_the_cli_and_the_browser(tmp_path):
    """``rankscope search`` printed the sanitised Porter and trigram queries
    with the raw U+200B, and so did the browser's line under the query box."""
    from typer.testing import CliRunner

    from engine.pipeline.params import SearchParams
    from engine.pipeline.run import search
    from engine.store.store import Store
    from tui.browser.widgets.query_box import QueryParts
    from tui.cli import app

    from tests.conftest import SAMPLE_CORPUS

    db = str(tmp_path / "s.db")
    runner = CliRunner()
    assert runner.invoke(app, ["index", str(SAMPLE_CORPUS), "--db", db]).exit_code == 0
    query = "write\u200bquorum"
    r = runner.invoke(app, ["search", query, "--db", db])
    assert r.exit_code == 0, r.output
    assert "\u200b" not in r.output
    assert 'porter: "write⟨ZWSP⟩quorum"' in r.output
    with Store.open_readonly(db) as store:
        parts = QueryParts.of(search(store, SearchParams(query=query)))
    assert parts.porter == parts.trigram == '"write⟨ZWSP⟩quorum"'
