"""Stage titles live only in the stage table (engine.pipeline.table): rename one and
every front-end (CLI tables, F1 help, why-not, journey, inspector) follows."""

from __future__ import annotations

from dataclasses import replace

from rich.console import Console

import engine.pipeline.table as stages_mod
from engine import SearchParams, search
from engine.lab.journey import journey
from engine.pipeline.table import BY_ID, STAGES, title
from tui.present.render import stages_table
from tui.browser.screens.help import help_renderable
from tui.present.describe import stage_words
from tui.browser.subject import Subject
from tui.browser.widgets.inspector import stage_lines
from tui.browser.widgets.preview import journey_renderable, stage_name

from .helpers import index_herd


def text(renderable) -> str:
    console = Console(width=160, record=True)
    console.print(renderable)
    return console.export_text()


def test_a_renamed_stage_is_renamed_everywhere(store, monkeypatch):
    """Titles live only in the table: rename one and every front-end follows."""
    renamed = replace(BY_ID["trim"], title="Cut to the limit")
    monkeypatch.setitem(stages_mod.BY_ID, "trim", renamed)
    monkeypatch.setattr(stages_mod, "STAGES", tuple(renamed if s.id == "trim" else s for s in STAGES))
    index_herd(store)
    trace = search(store, SearchParams("zebra", limit=3, sessions=("mine",)))

    assert "Cut to the limit" in text(stages_table(trace))
    assert "Cut to the limit" in text(help_renderable())
    assert stage_words("fuzzy:trim") == "fuzzy re-run · Cut to the limit"
    assert stage_name("trim") == "Cut to the limit"
    assert any("Cut to the limit" in line.text.plain for line in stage_lines(trace) if line.kind == "header")
    cut = trace.first.filter.kept[4]
    subject = Subject.from_candidate(cut, title("trim"))
    assert "Cut to the limit" in text(journey_renderable(subject, trace))
    assert [s.stage for s in journey(trace, cut.key) if s.exit is not None] == ["trim"]
    assert all("Trim" not in line.text.plain for line in stage_lines(trace) if line.kind == "header")
