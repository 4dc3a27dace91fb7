"""The engine is headless: importing it (and running a search) never loads Textual."""

import pytest

from ..helpers import fresh_python


def test_engine_never_imports_textual():
    code = (
        "import sys, engine\n"
        "from engine import Store, SearchParams, search\n"
        "s = Store.create(':memory:')\n"
        "s.index_text('a.md', '# A\\nhello world', 'markdown')\n"
        "search(s, SearchParams('hello'))\n"
        "import engine.lab.journey, engine.pipeline.export, engine.store.corpus\n"
        "bad = [m for m in sys.modules if m == 'textual' or m.startswith('textual.')]\n"
        "assert not bad, bad\n"
        "print('clean')\n"
    )
    assert fresh_python(code, timeout=60).strip() == "clean"


#: SHA-256 of the reference stopword list (``../shared/stopwords.txt``, the 102
#: words of context-mode's store.ts), sorted, one word a line, UTF-8, each line
#: ending in a newline. The list itself is context-mode's and not vendored.
STOPWORDS_SHA256 = "8fb611be88a28c42b3c9b8c7f0ee2070182b36a952e41751505a0a7f2e9c2127"


def test_stopwords_are_the_reference_list():
    import hashlib

    from engine.store.stopwords import STOPWORDS

    assert len(STOPWORDS) == 102
    digest = hashlib.sha256("".join(w + "\n" for w in sorted(STOPWORDS)).encode("utf-8")).hexdigest()
    assert digest == STOPWORDS_SHA256


def test_stopwords_match_shared_list():
    from engine.store.stopwords import STOPWORDS

    from ..conftest import SHARED

    path = SHARED / "stopwords.txt"
    if not path.is_file():
        pytest.skip(
            f"{path} is absent: the reference stopword list is context-mode's, not vendored "
            "(tests/golden/README.md); test_stopwords_are_the_reference_list checks its SHA-256"
        )
    shared = {w.strip() for w in path.read_text("utf-8").split() if w.strip()}
    assert STOPWORDS == shared
    assert len(STOPWORDS) == 102
