"""``.gitignore`` rules for folder indexing.

:func:`gitignore_matcher` turns the ``.gitignore`` files under a folder (the
folder's own and every nested one) plus ``.git/info/exclude`` into one
predicate over *labels*: paths relative to the folder with ``/`` separators,
where a label ending in ``/`` names a directory. Git's rules apply:

* a pattern in ``a/.gitignore`` is relative to ``a/``;
* the last matching pattern wins, a deeper ``.gitignore`` overriding a
  shallower one, so ``!pattern`` can re-include a file;
* nothing under an ignored directory can be re-included (git never looks
  inside it);
* ``.git/`` itself is always ignored.

Global excludes (``core.excludesFile``) are not read: indexing should not
depend on the machine it runs on. Patterns are compiled with pathspec's
``GitIgnoreSpec``; an unreadable ``.gitignore`` counts as empty.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Callable

from pathspec import GitIgnoreSpec

from engine.files.reading import InputFileError, read_input_bytes

GITIGNORE = ".gitignore"


def _read_lines(path: Path) -> list[str]:
    """The lines of a rule file, read by :func:`engine.files.reading.read_input_bytes`
    (a regular file only: a FIFO named ``.gitignore`` would block the walk);
    a leading BOM dropped as git does, bad UTF-8 replaced. No rules when it
    cannot be read."""
    try:
        data = read_input_bytes(path, GITIGNORE)
    except InputFileError:
        return []
    return data.decode("utf-8-sig", errors="replace").splitlines()


class GitIgnore:
    """The predicate :func:`gitignore_matcher` returns: call it with a label.

    :meth:`rule_files` names the rule files it has consulted so far (a walk
    that asked about every entry it visited has consulted every rule file
    that can matter: git never reads one inside an ignored folder).
    """

    def __init__(self, ignored: Callable[[str], bool], consulted: Callable[[], list[Path]]) -> None:
        self._ignored = ignored
        self._consulted = consulted

    def __call__(self, label: str) -> bool:
        return self._ignored(label)

    def rule_files(self) -> list[Path]:
        """The ``.gitignore`` paths (and ``.git/info/exclude``) looked at so
        far, existing or not, in the order first read."""
        return self._consulted()


def gitignore_matcher(root: Path) -> GitIgnore:
    """A predicate ``ignored(label) -> bool`` for the folder ``root``.

    Args:
        root: the folder being indexed; labels are relative to it.

    Returns:
        A :class:`GitIgnore`: called with a label (``"docs/a.md"``, or
        ``"build/"`` for a directory) it is ``True`` when git would ignore
        it. Rule files are read lazily, once each; results are cached.
    """
    root = Path(root)
    consulted: list[Path] = []

    @lru_cache(maxsize=None)
    def spec_for(rel_dir: str) -> GitIgnoreSpec | None:
        folder = root / rel_dir if rel_dir else root
        consulted.append(folder / GITIGNORE)
        lines = _read_lines(folder / GITIGNORE)
        if not rel_dir:
            # Lowest priority at the top level: the repository's own excludes.
            consulted.append(root / ".git" / "info" / "exclude")
            lines = _read_lines(root / ".git" / "info" / "exclude") + lines
        lines = [ln for ln in lines if ln.strip() and not ln.lstrip().startswith("#")]
        return GitIgnoreSpec.from_lines(lines) if lines else None

    def verdict(parts: tuple[str, ...], is_dir: bool) -> bool:
        # Every .gitignore from the top down to the entry's own folder; the
        # deepest decisive match wins (a later rule in one file beats an
        # earlier one, which GitIgnoreSpec already resolves).
        result = False
        for depth in range(len(parts)):
            spec = spec_for("/".join(parts[:depth]))
            if spec is None:
                continue
            sub = "/".join(parts[depth:]) + ("/" if is_dir else "")
            include = spec.check_file(sub).include
            if include is not None:
                result = include
        return result

    decided: dict[tuple[str, ...], bool] = {}

    def dir_ignored(parts: tuple[str, ...]) -> bool:
        # A folder is ignored when any folder above it is: decide the
        # undecided ancestors top-down, iteratively (no recursion, whatever
        # the depth; a top-down walk has decided the parent already).
        if parts in decided:
            return decided[parts]
        chain = []
        p = parts
        while p and p not in decided:
            chain.append(p)
            p = p[:-1]
        for q in reversed(chain):
            decided[q] = q[0] == ".git" or (len(q) > 1 and decided[q[:-1]]) or verdict(q, True)
        return decided[parts]

    def ignored(label: str) -> bool:
        is_dir = label.endswith("/")
        parts = tuple(p for p in label.split("/") if p and p != ".")
        if not parts:
            return False
        if is_dir:
            return dir_ignored(parts)
        if len(parts) > 1 and dir_ignored(parts[:-1]):
            return True
        return parts[0] == ".git" or verdict(parts, False)

    return GitIgnore(ignored, lambda: list(consulted))
