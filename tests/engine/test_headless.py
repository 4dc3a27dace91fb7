"""The engine is headless: importing it (and running a search) never loads Textual."""

import subprocess
import sys

from ..conftest import REPO


def test_engine_never_imports_textual():
    code = (
        "import sys, engine\n"
        "from engine import Store, SearchParams, search\n"
        "s = Store.create(':memory:')\n"
        "s.index_text('a.md', '# A\\nhello world', 'markdown')\n"
        "search(s, SearchParams('hello'))\n"
        "import engine.diff, engine.export, engine.corpus\n"
        "bad = [m for m in sys.modules if m == 'textual' or m.startswith('textual.')]\n"
        "assert not bad, bad\n"
        "print('clean')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "clean"


def test_stopwords_match_shared_list():
    from engine.query import STOPWORDS

    from ..conftest import SHARED

    shared = {w.strip() for w in (SHARED / "stopwords.txt").read_text("utf-8").split() if w.strip()}
    assert STOPWORDS == shared
    assert len(STOPWORDS) == 102
