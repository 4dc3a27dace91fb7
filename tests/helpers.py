"""Helpers shared by test modules (fixtures themselves live in conftest.py).

* tiny corpora, each built to show one pipeline behaviour;
* :func:`case_params`: the :class:`SearchParams` of a golden case;
* :data:`ENV_VARS`: every variable that moves context-mode's storage;
* :func:`fresh_python`: code run in a new interpreter;
* :func:`append_call`: another process appends a ``ctx_search`` call to a
  session DB the way context-mode's hooks write it.
* :func:`cli_error`: a command refused with one ``rankscope: error:`` line;
  :func:`indexed_by_cli`: a one-file store written by ``rankscope index``.
* :func:`spans`, :func:`rounds`, :func:`folder_bytes`: concurrency and soak
  tests work for a number of seconds, not a number of rounds, and watch the
  size of their temporary files.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine import SearchParams

#: Forty ``lorem``: pushes two words of one chunk far apart.
FILLER = " ".join(["lorem"] * 40)

#: Environment variables that move where context-mode keeps its stores.
ENV_VARS = (
    "CONTEXT_MODE_DIR",
    "CONTEXT_MODE_DATA_DIR",
    "CONTEXT_MODE_SESSION_DIR",
    "CLAUDE_CONFIG_DIR",
    "CODEX_HOME",
    "COPILOT_HOME",
    "XDG_CONFIG_HOME",
    "APPDATA",
    "PI_CONFIG_DIR",
    "DEVIN_HOME",
    "HERMES_HOME",
    "VIBE_HOME",
)


def index_zebra(store, others: int = 4):
    """Row 1 ``Zebra crossing guide`` (terms in the title, far apart in the
    content) is fused #1 for "zebra crossing"; row 2 ``Beta`` (the phrase
    four times) is fused #2 but has the higher rerank boost. Then ``others``
    unrelated rows ``Other n``. Returns ``store``."""
    store.index_text("a.md", f"# Zebra crossing guide\nzebra {FILLER} crossing\n", "markdown")
    store.index_text(
        "b.md", "# Beta\n" + " ".join(["zebra crossing here"] * 4) + " " + " ".join(["ipsum"] * 60) + "\n", "markdown"
    )
    for i in range(others):
        store.index_text(f"o{i}.md", f"# Other {i}\nnothing relevant here {i}\n", "markdown")
    return store


def index_herd(store):
    """Row 1 ``Zebra`` (session ``other``) ranks first for "zebra"; rows
    2-7 ``Doc n`` (unattributed) each mention it once. Returns ``store``."""
    store.index_text("top.md", "# Zebra\nzebra zebra zebra\n", "markdown", session_id="other")
    for i in range(6):
        store.index_text(f"d{i}.md", f"# Doc {i}\nsome text about a zebra number {i} and more words\n", "markdown")
    return store


def index_collide(store):
    """The heading chunk (row 1), then rows 2 and 3 sharing the key
    ``guide.md::Guide > Example`` (identical bm25). Returns ``store``."""
    store.index_text("guide.md", "# Guide\n## Example\nalpha widget one\n## Example\nalpha widget two\n", "markdown")
    return store


def case_params(case: dict) -> SearchParams:
    """The :class:`SearchParams` of a golden case (``query`` plus a
    ``params`` object with every field given)."""
    p = case["params"]
    return SearchParams(
        query=case["query"],
        limit=p["limit"],
        source=p["source"],
        source_match=p["source_match"],
        content_type=p["content_type"],
        sessions=tuple(p["sessions"]) if p["sessions"] is not None else None,
    )


#: The last recorded call of the fixture: its mcp row is 72, the call row 73, then external_ref and retrieval.
LAST_CALL_FIRST_ROW = 72

#: A hook process: copy a recorded call's 4 rows as new rows, as PostToolUse writes them (WAL mode,
#: one transaction, datetime('now')), print the wall-clock time of the commit, close.
APPEND = textwrap.dedent(
    """
    import sqlite3, sys, time
    db, first = sys.argv[1], int(sys.argv[2])
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    cols = ("session_id, type, category, priority, data, project_dir, attribution_source, "
            "attribution_confidence, bytes_avoided, bytes_returned, source_hook, data_hash")
    rows = conn.execute(f"SELECT {cols} FROM session_events WHERE id BETWEEN ? AND ? ORDER BY id",
                        (first, first + 3)).fetchall()
    conn.execute("BEGIN IMMEDIATE")
    for r in rows:
        conn.execute(f"INSERT INTO session_events ({cols}, created_at) VALUES ({', '.join('?' * 12)}, "
                     "datetime('now'))", r)
    conn.execute("COMMIT")
    print(time.time(), flush=True)
    conn.close()
    """
)


def fresh_python(code: str, timeout: float = 120) -> str:
    """Run ``code`` in a new interpreter (this one's, in the repository);
    assert it exits 0 (else fail with its stderr); returns its stdout."""
    repo = Path(__file__).resolve().parent.parent
    out = subprocess.run([sys.executable, "-c", code], cwd=repo, capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, out.stderr
    return out.stdout


def append_call(db: Path, first_row: int = LAST_CALL_FIRST_ROW) -> float:
    """Another process appends a call; returns when it committed (epoch s)."""
    out = subprocess.run([sys.executable, "-c", APPEND, str(db), str(first_row)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return float(out.stdout)


# ─── the CLI ───
# (tui.cli is imported when called: importing it fixes its console's width, and this module is
# imported by conftest before pytest_configure clears the caller's terminal variables)


def cli_error(args: list[str], capsys) -> str:
    """Run ``rankscope ARGS`` in-process; assert it exits 2 with exactly one
    line on stderr, ``rankscope: error: …``, and no traceback anywhere.
    Returns that line without its newline."""
    from tui.cli import main

    with pytest.raises(SystemExit) as exc:
        main(args)
    assert exc.value.code == 2
    out = capsys.readouterr()
    assert out.err.startswith("rankscope: error: ") and out.err.count("\n") == 1, out.err
    assert "Traceback" not in out.err + out.out
    return out.err.rstrip("\n")


def indexed_by_cli(root: Path) -> Path:
    """``root/s.db``: ``rankscope index`` of a folder holding one file, ``a.md``
    (``# Zebra`` / ``zebra crossing``)."""
    from typer.testing import CliRunner

    from tui.cli import app

    folder = root / "c"
    folder.mkdir()
    (folder / "a.md").write_text("# Zebra\nzebra crossing\n", "utf-8")
    path = root / "s.db"
    r = CliRunner().invoke(app, ["index", str(folder), "--db", str(path)])
    assert r.exit_code == 0, r.output
    return path


# ─── concurrency and soak tests: bounded by a deadline, not a count ───

#: Seconds a concurrency test works for in the suite, and in the soak run
#: (``python -m pytest -m soak``, deselected by default; ``.ci/run`` runs it).
BRIEF_SECONDS = 3.0
SOAK_SECONDS = 20.0


def spans(brief: float = BRIEF_SECONDS, soak: float = SOAK_SECONDS) -> list:
    """The values of a concurrency test's ``seconds`` parameter: ``brief``
    (in the suite) and ``soak`` (marked ``soak``: only ``pytest -m soak``)."""
    return [pytest.param(brief, id="brief"), pytest.param(soak, id="soak", marks=pytest.mark.soak)]


def rounds(seconds: float, least: int = 1) -> Iterator[int]:
    """0, 1, 2, ... while ``seconds`` (monotonic clock) have not passed, and
    at least ``least`` rounds however long they take."""
    end = time.monotonic() + seconds
    i = 0
    while i < least or time.monotonic() < end:
        yield i
        i += 1


def folder_bytes(folder: Path) -> int:
    """Bytes of the files under ``folder`` (recursively; 0 for a file that vanished meanwhile)."""
    total = 0
    for p in folder.rglob("*"):
        try:
            total += p.stat().st_size if p.is_file() else 0
        except FileNotFoundError:
            pass
    return total
