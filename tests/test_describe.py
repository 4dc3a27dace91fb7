"""Compare, why-not and doctor are described once (tui.present.describe) and the CLI
and the browser show that one description."""

from __future__ import annotations

from rich.console import Console

from engine import SearchParams, Variant
from engine.lab.compare import compare
from engine.lab.doctor import diagnose
from engine.lab.why import why_not
from tui.cli import lab as cli_lab
from tui.present.describe import (
    COMPARE_COLUMNS,
    Description,
    Table,
    describe_comparison,
    describe_explanation,
    describe_report,
    line_text,
    to_rich,
)
from tui.browser.screens.doctor import MAX_ROWS, doctor_renderable
from tui.browser.screens.why import explanations_renderable

from .helpers import index_collide, index_zebra


def text(renderable) -> str:
    console = Console(width=140, record=True)
    console.print(renderable)
    return console.export_text()


def test_why_not_is_one_description(store):
    index_zebra(store)
    [e] = why_not(store, SearchParams("zebra crossing", limit=2), rowid=1)
    desc = describe_explanation(e)
    assert isinstance(desc, Description)
    verdict = line_text(desc.blocks[2]).plain
    assert verdict == "✓ in the answer at #2 · reason outranked"
    assert text(cli_lab.explanation_renderable(e)) == text(explanations_renderable([e])) == text(to_rich(desc))


def test_doctor_is_one_description(store):
    index_collide(store)
    report = diagnose(store)
    desc = describe_report(report)
    [collisions] = [b for b in desc.blocks if isinstance(b, Table)]
    assert collisions.name == "Fusion-key collisions" and len(collisions.rows) == 1
    assert text(cli_lab.doctor_renderable(report, examples=MAX_ROWS)) == text(doctor_renderable(report))


def test_compare_is_one_description(store):
    index_zebra(store)
    cmp = compare(
        store,
        SearchParams("zebra crossing", limit=2),
        SearchParams("zebra crossing", limit=2, variant=Variant(rerank="off")),
    )
    desc = describe_comparison(cmp)
    assert [c.name for c in desc.table.columns] == [c.name for c in COMPARE_COLUMNS]
    assert [line_text(row[2]).plain for row in desc.table.rows] == ["↑1", "↓1"]
    out = text(cli_lab.comparison_renderable(cmp))
    for row in desc.table.rows:
        assert all(line_text(cell).plain in out for cell in row)
    assert "improved 1 · worsened 1 · unchanged 0 · only in A 0 · only in B 0 · overlap 1.00" in out


def test_a_damaged_store_is_one_description(damaged_db):
    """A store too damaged to read: the integrity checks, ✗ lines for the
    damage (from the report's data, not its words) and how to rebuild; the
    CLI and the browser show the same."""
    from engine.lab.doctor import DoctorReport, IntegrityCheck

    report = DoctorReport.unreadable(
        str(damaged_db),
        "schema unknown",
        "SQLite says 'database disk image is malformed'",
        (
            IntegrityCheck("copy", ("no room in the temporary folder",), damage=False),
            IntegrityCheck("sqlite", ("page 3: btree damaged",)),
        ),
    )
    lines = [line_text(b).plain for b in describe_report(report).blocks if not isinstance(b, Table)]
    assert "schema unknown · unreadable" in lines
    assert "integrity: private copy FAILED, SQLite integrity_check FAILED" in lines
    marks = [ln[0] for ln in lines if ln[:1] in ("✗", "⚠")]
    # the read error and the sqlite check are damage; the copy that could not be made is not
    assert marks == ["✗", "⚠", "✗"]
    assert any(ln.startswith("Rebuild the store from its files") for ln in lines)
    assert text(cli_lab.doctor_renderable(report, examples=MAX_ROWS)) == text(doctor_renderable(report))
