"""Shared fixtures: paths to the golden data, fresh stores, an isolated home.

Golden data (see ``tests/golden/README.md``): the tests always read the copy
vendored in ``tests/golden/`` (the ``stages`` parity set, the context-mode
fixture stores, the agent-view set), so a fresh clone tests without
``../shared/``. Only documents written by other projects are not vendored:
the ``context7`` parity set (context-mode's own fixture files) and the
reference stopword list are read from ``../shared/`` when it is there, and
the tests over them skip, saying why, when it is not.
"""

from __future__ import annotations

import json
import os
import signal
import tempfile
from pathlib import Path

import pytest

from .helpers import ENV_VARS

# A suite started in the background (``cmd &`` in a script: SIGINT ignored, and
# inherited so by every process it starts) still tests what Ctrl-C does: the
# commands these tests start get SIGINT's default back.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

REPO = Path(__file__).resolve().parent.parent
#: The golden data vendored into the repository (provenance: its README.md).
GOLDEN = REPO / "tests" / "golden"
#: ``../shared/``: the maintainers' golden data; only its not-vendored parts are read.
SHARED = REPO.parent / "shared"
#: Vendored parity sets (``stages``), one folder each: corpus/, queries.json, expected.json.
PARITY = GOLDEN / "parity"
#: Every parity set: the vendored ones, plus ``context7`` from ``../shared`` (not vendored:
#: its corpus is context-mode's own fixture files). A set may be absent: see :func:`parity_set`.
PARITY_SETS = {"stages": PARITY / "stages", "context7": SHARED / "parity" / "context7"}
#: Why a parity set may be absent (only the not-vendored one can be).
NOT_VENDORED = (
    "{path} is absent: the context7 parity set is context-mode's own fixture files, not vendored "
    "(tests/golden/README.md); it is read from ../shared/parity/context7 when present"
)
FIXTURES = GOLDEN / "fixtures"
SAMPLE_CORPUS = REPO / "sample_corpus"
#: The README's ten queries over the sample corpus, and their judgments.
DEMO_QUERIES_FILE = REPO / "docs" / "demo-queries.json"
DEMO_QUERIES = json.loads(DEMO_QUERIES_FILE.read_text("utf-8"))
DEMO_QRELS = REPO / "docs" / "demo-qrels.json"
#: Real context-mode stores: 8 FTS columns (1.0.169) and the legacy 4 (1.0.22).
MODERN = FIXTURES / "context-mode-1.0.169.db"
LEGACY = FIXTURES / "context-mode-1.0.22.db"
#: ctx_search answers recorded from the real 1.0.169 server, with the stores
#: they searched (README.md, calls.json, store.db, stale/, plugin/).
AGENT_VIEW = GOLDEN / "agent-view"
#: The session DB written by context-mode 1.0.169's hooks (13 ctx_search calls).
SESSION_DB = FIXTURES / "session-1.0.169.db"
#: The plugin-mode store the calls of :data:`SESSION_DB` searched, and the
#: command line that searches it as they did (add a query or ``--params-json``).
PLUGIN_STORE = AGENT_VIEW / "plugin" / "store-P01.db"
PLUGIN_SEARCH = ["ctx-search", "--db", str(PLUGIN_STORE), "--sessions-db", str(SESSION_DB)]


#: Variables through which the caller's terminal would change what Rich, Typer and Textual
#: print (width, height, colour), all read after this conftest is loaded. The tests set the
#: ones they need; the caller's must not leak in: ``COLUMNS=100 pytest`` failed 22 width tests,
#: ``NO_COLOR=1 pytest`` 10 snapshot and contrast tests. (GNU readline, once imported, puts
#: ``COLUMNS``/``LINES`` into the C environment, which child processes inherit: pytest-xdist's
#: workers started with ``COLUMNS=80``.)
TERMINAL_VARS = (
    "COLUMNS",
    "LINES",
    "NO_COLOR",
    "FORCE_COLOR",
    "PY_COLORS",
    "TTY_COMPATIBLE",
    "TTY_INTERACTIVE",
    "TERMINAL_WIDTH",
    "COLORTERM",
)


#: Every test item collected in this run, before ``-k``/``-m`` deselection (in each xdist
#: worker: every worker collects the whole run). Read by tests/tui/test_snapshot_files.py.
COLLECTED = pytest.StashKey[list]()


def pytest_itemcollected(item):
    item.config.stash.setdefault(COLLECTED, []).append(item)


def pytest_configure(config):
    """Before any test module is imported (rankscope's CLI fixes its console's width at import
    when ``COLUMNS`` is set), in pytest's process and in each xdist worker."""
    for name in TERMINAL_VARS:
        os.environ.pop(name, None)


@pytest.fixture(autouse=True)
def _user_folders(tmp_path, monkeypatch):
    """Every test, the CLI and engine ones too, keeps rankscope's cache
    (folder indexes) and data folder (history, cases, judgments) in its own
    temporary folder: never the real user's."""
    monkeypatch.setenv("RANKSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("RANKSCOPE_DATA_DIR", str(tmp_path / "data"))


def parity_set(name: str) -> Path:
    """The folder of parity set ``name``; skips the calling test, saying why,
    when it is a not-vendored set and ``../shared/`` does not hold it."""
    path = PARITY_SETS[name]
    if not (path / "expected.json").is_file():
        pytest.skip(NOT_VENDORED.format(path=path))
    return path


@pytest.fixture
def store():
    """A fresh in-memory store."""
    from engine import Store

    s = Store.create(":memory:")
    yield s
    s.close()


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """Valid files of every form (:func:`tests.command_lines.make_world`), one set per test module."""
    from .command_lines import make_world

    return make_world(tmp_path_factory.mktemp("world"))


@pytest.fixture
def fresh(tmp_path):
    """``fresh(name)``: a new path under ``tmp_path/fresh`` (:func:`tests.command_lines.fresh_factory`)."""
    from .command_lines import fresh_factory

    return fresh_factory(tmp_path / "fresh")


@pytest.fixture
def home(tmp_path, monkeypatch):
    """An empty home folder, no storage variables, a private temp folder."""
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    h = tmp_path / "home"
    h.mkdir()
    monkeypatch.setenv("HOME", str(h))
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    return h


@pytest.fixture(scope="module")
def sample_store():
    """``sample_corpus/`` indexed into an in-memory store, one per test module."""
    from engine import Store, index_corpus

    s = Store.create(":memory:")
    index_corpus(s, SAMPLE_CORPUS)
    yield s
    s.close()


@pytest.fixture(scope="session")
def sample_db(tmp_path_factory):
    """``sample_corpus/`` indexed into a store on disk (do not modify it)."""
    from engine import Store, index_corpus

    path = tmp_path_factory.mktemp("sample") / "sample.db"
    with Store.create(path) as s:
        index_corpus(s, SAMPLE_CORPUS)
    return path


@pytest.fixture
def sample_file(sample_db, tmp_path):
    """``tmp_path/sample.db``: a fresh copy of :func:`sample_db`, for a test
    that writes to the store or beside it (its per-store data files)."""
    import shutil

    path = tmp_path / "sample.db"
    shutil.copy2(sample_db, path)
    return path


@pytest.fixture(scope="session")
def damaged_db(sample_db, tmp_path_factory):
    """A copy of :func:`sample_db` whose ``chunks`` b-trees (its content and
    index shadow tables), all but their root pages, are overwritten with
    0xAA: it opens (the schema pages are intact) but reading ``chunks``
    fails with "database disk image is malformed". The pages are found with
    SQLite's ``dbstat`` table, so the damage lands on them whatever the
    file's layout."""
    import shutil

    from engine.store import sql

    path = tmp_path_factory.mktemp("damaged") / "mid.db"
    shutil.copy2(sample_db, path)
    conn = sql.connect(str(path))
    try:
        size = int(conn.execute("PRAGMA page_size").fetchone()[0])
        pages = [
            int(p)
            for (p,) in conn.execute(
                "SELECT pageno FROM dbstat WHERE name IN ('chunks_content', 'chunks_data') AND path != '/'"
            )
        ]
    finally:
        conn.close()
    assert pages, "the sample store's chunks tables have no page below their roots"
    with open(path, "r+b") as fh:
        for page in pages:
            fh.seek((page - 1) * size)
            fh.write(b"\xaa" * size)
    return path
