"""The reference stopword list: words the vocabulary leaves out and the
query sanitisers drop (context-mode's ``STOPWORDS``).

:data:`STOPWORDS` holds 102 lower-case words, read once from the packaged
``stopwords.txt`` (identical to ``../shared/stopwords.txt``).
"""

from __future__ import annotations

from importlib import resources

#: The reference stopword list (102 words), identical to ``../shared/stopwords.txt``.
STOPWORDS: frozenset[str] = frozenset(
    w.strip() for w in resources.files(__package__).joinpath("stopwords.txt").read_text("utf-8").split() if w.strip()
)
