"""Helpers shared by test modules (fixtures themselves live in conftest.py).

* tiny corpora, each built to show one pipeline behaviour;
* :func:`case_params`: the :class:`SearchParams` of a golden case;
* :data:`ENV_VARS`: every variable that moves context-mode's storage;
* :func:`append_call`: another process appends a ``ctx_search`` call to a
  session DB the way context-mode's hooks write it.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

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


def append_call(db: Path, first_row: int = LAST_CALL_FIRST_ROW) -> float:
    """Another process appends a call; returns when it committed (epoch s)."""
    out = subprocess.run([sys.executable, "-c", APPEND, str(db), str(first_row)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return float(out.stdout)
