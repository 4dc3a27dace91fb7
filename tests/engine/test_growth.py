"""Work that grows with its input, never faster (issue 13, item 5).

Structural checks, not timings (``benchmarks/growth.py`` prints the
measured ratios): cutting one long line reads each character a bounded
number of times, and deleting a label's chunks before re-indexing it costs
the same number of SQLite VM steps in a store 10 times larger.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

import engine.store.chunking as chunking
from engine import Store
from engine.store.chunking import WHITESPACE_BREAK_RATIO, chunk_plain_text
from engine.js.strings import utf8_len, utf16_len
from engine.store.indexing import delete_label_rows


def _reference_split(lines: list[str], title: str, max_chunk_bytes: int) -> list[tuple[str, str]]:
    """The previous (quadratic) ``_split_oversized``, kept as the oracle: a
    transcription of the reference's slice-the-rest loop."""

    def capped_prefix(text: str, max_bytes: int) -> str:
        if utf8_len(text) <= max_bytes:
            return text
        total = 0
        for index, ch in enumerate(text):
            size = utf8_len(ch)
            if total + size > max_bytes:
                return text[:index] if index else text[:1]
            total += size
        return text

    out: list[tuple[str, str]] = []
    acc: list[str] = []
    part_index = 1

    def flush_acc() -> None:
        nonlocal part_index
        if not acc:
            return
        out.append((title if part_index == 1 else f"{title} ({part_index})", "\n".join(acc)))
        part_index += 1
        acc.clear()

    for line in lines:
        if utf8_len(line) > max_chunk_bytes:
            flush_acc()
            remaining = line
            line_part = 1
            while remaining:
                piece = capped_prefix(remaining, max_chunk_bytes)
                if len(piece) < len(remaining):
                    brk = max(piece.rfind(" "), piece.rfind("\n"))
                    if brk >= 0 and utf16_len(piece[:brk]) > utf16_len(piece) * WHITESPACE_BREAK_RATIO:
                        piece = piece[:brk]
                part_title = title if (part_index == 1 and line_part == 1) else f"{title} ({part_index}.{line_part})"
                out.append((part_title, piece))
                remaining = remaining[len(piece) :]
                line_part += 1
                part_index += 1
            continue
        candidate = ("\n".join(acc) + "\n" + line) if acc else line
        if acc and utf8_len(candidate) > max_chunk_bytes:
            flush_acc()
        acc.append(line)
    flush_acc()
    return out


#: Characters that exercise every UTF-8 width, lone surrogates and the
#: whitespace the cut backs off to.
_CHARS = st.sampled_from(["a", "b", " ", "\n", "é", "€", "中", "😀", "\ud800", "\udfff", "\t", "\u00a0"])


@settings(max_examples=400, deadline=None)
@given(
    lines=st.lists(st.text(_CHARS, max_size=120), min_size=1, max_size=4),
    cap=st.integers(min_value=0, max_value=40),
)
def test_split_matches_the_reference_loop(lines, cap):
    assert chunking._split_oversized(lines, "T", cap) == _reference_split(lines, "T", cap)


def test_long_line_split_reads_each_character_a_bounded_number_of_times(monkeypatch):
    """A 1 MB single-line log: the characters handed to ``utf8_len`` add up
    to a small multiple of the text (the old loop re-measured the whole rest
    for every 4 KB piece: about 128 times the text)."""
    text = ("lorem ipsum dolor sit amet " * 40_000)[:1_000_000]
    measured = {"chars": 0}
    real = chunking.utf8_len

    def counting(s: str) -> int:
        measured["chars"] += len(s)
        return real(s)

    monkeypatch.setattr(chunking, "utf8_len", counting)
    chunks = chunk_plain_text(text)
    monkeypatch.undo()
    assert "".join(c.content for c in chunks) == text
    assert measured["chars"] <= 4 * len(text), measured


def _vm_steps_to_delete(files: int) -> tuple[int, int]:
    """``(SQLite VM steps, chunks removed)`` for deleting one label's two
    chunks (inside a transaction that is rolled back) in a store of
    ``files`` labels."""
    with Store.create(":memory:") as s:
        for i in range(files):
            s.index_text(f"f{i:05d}.md", f"# Note {i}\nsome words about item {i}\n## More\nand a second chunk\n")
        s.index_text("target.md", "# Target\nfirst\n## Two\nsecond\n")
        conn = s.conn
        conn.execute("BEGIN")
        delete_label_rows(conn, "f00000.md")  # first call may build the index: not measured
        steps = {"n": 0}

        def tick() -> int:
            steps["n"] += 1
            return 0

        conn.set_progress_handler(tick, 1)
        removed = delete_label_rows(conn, "target.md")
        conn.set_progress_handler(None, 1)
        conn.execute("ROLLBACK")
        return steps["n"], removed


def test_deleting_a_labels_chunks_does_not_scan_the_store():
    """Re-indexing a file deletes its previous chunks first. The reference's
    ``DELETE ... WHERE source_id IN (...)`` scans every chunk of both FTS
    tables (``source_id`` is UNINDEXED), so re-indexing all N files was
    O(N²); the cost must not grow with the store."""
    (small, _), (large, removed) = _vm_steps_to_delete(20), _vm_steps_to_delete(200)
    assert large < 1.5 * small, (small, large)
    assert removed == 2  # chunks, not SQLite's change count (FTS5 shadow rows included)


def test_reindex_keeps_the_same_rows(tmp_path):
    """The rowid path deletes exactly the rows the scan deleted."""
    with Store.create(tmp_path / "s.db") as s:
        for i in range(5):
            s.index_text(f"f{i}.md", f"# N{i}\nzebra {i}\n## B\nmore {i}\n")
        s.index_text("f2.md", "# N2 again\nzebra two\n")
        rows = s.conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
        tri = s.conn.execute("SELECT COUNT(*) FROM chunks_trigram").fetchone()[0]
        labels = [r.label for r in s.sources()]
        assert rows == tri == 9 and sorted(labels) == [f"f{i}.md" for i in range(5)]
        assert s.delete_label("f0.md") == 2
        assert (
            s.conn.execute("SELECT COUNT(*) FROM chunks WHERE source_id NOT IN (SELECT id FROM sources)").fetchone()[0]
            == 0
        )
        s.conn.execute("INSERT INTO chunks(chunks) VALUES('integrity-check')")
        s.conn.execute("INSERT INTO chunks_trigram(chunks_trigram) VALUES('integrity-check')")
