"""Refresh the vendored golden data from ``../shared/`` and rewrite MANIFEST.sha256.

Usage (from the repository root)::

    python tests/golden/refresh.py             # copy from ../shared, rewrite the manifest
    python tests/golden/refresh.py --check     # only compare; exit 1 and list what differs

What is vendored is :data:`SETS` (folders relative to ``../shared``); SQLite
side files (``-wal``, ``-shm``, ``-journal``) are never copied: they are left
behind by whoever opened a store read-write, not part of the golden data.
Documents written by other projects (``parity/context7``, ``stopwords.txt``)
are not vendored; see README.md. :data:`MADE_HERE` folders are golden data
recorded by this repository's own scripts (``tests/tools/``), not copies of
``../shared``: a refresh keeps them and lists them in the manifest, and the
comparison with ``../shared`` leaves them out. Exit status: 0 done / identical, 1 differences
(``--check``), 2 ``../shared`` missing.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import sys
from pathlib import Path

GOLDEN = Path(__file__).resolve().parent
REPO = GOLDEN.parent.parent
#: The vendored sets: (path under ../shared, path under tests/golden).
SETS = (
    ("parity/README.md", "parity/README.md"),
    ("parity/.gitattributes", "parity/.gitattributes"),
    ("parity/stages", "parity/stages"),
    ("fixtures", "fixtures"),
    ("agent-view", "agent-view"),
)
#: Golden data recorded here (path under tests/golden; the script that made it is named in its files).
MADE_HERE = ("agent-view/edges", "js-numbers")
MANIFEST = GOLDEN / "MANIFEST.sha256"
#: Files of tests/golden itself, not copied from ../shared.
OWN = {"README.md", "MANIFEST.sha256", "refresh.py"}
SIDE_FILES = ("-wal", "-shm", "-journal")


def sha256(path: Path) -> str:
    """Hex SHA-256 of the file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def source_files(shared: Path) -> dict[str, Path]:
    """``{path relative to tests/golden: file under shared}`` for every file to vendor."""
    files: dict[str, Path] = {}
    for src, dst in SETS:
        root = shared / src
        if root.is_file():
            files[dst] = root
            continue
        for f in sorted(root.rglob("*")):
            if f.is_file() and not f.name.endswith(SIDE_FILES):
                files[f"{dst}/{f.relative_to(root).as_posix()}"] = f
    return files


def read_manifest(path: Path = MANIFEST) -> dict[str, str]:
    """``{relative path: sha256}`` from a ``sha256sum``-format manifest."""
    entries = {}
    for line in path.read_text("utf-8").splitlines():
        digest, name = line.split("  ", 1)
        entries[name] = digest
    return entries


def made_here(name: str) -> bool:
    """Whether ``name`` (relative to tests/golden) lies in a :data:`MADE_HERE` folder."""
    return any(name == d or name.startswith(d + "/") for d in MADE_HERE)


def vendored_files() -> dict[str, Path]:
    """Every file under tests/golden but its own (README, manifest, this script),
    the :data:`MADE_HERE` ones included."""
    return {f.relative_to(GOLDEN).as_posix(): f for f in sorted(GOLDEN.rglob("*"))
            if f.is_file() and f.relative_to(GOLDEN).as_posix() not in OWN and "__pycache__" not in f.parts}


def differences(shared: Path) -> list[str]:
    """What differs between ``shared`` and the vendored copy, one line each."""
    want = source_files(shared)
    have = {name: path for name, path in vendored_files().items() if not made_here(name)}
    out = [f"only in {shared}: {name}" for name in sorted(set(want) - set(have))]
    out += [f"only in tests/golden: {name}" for name in sorted(set(have) - set(want))]
    out += [f"differs: {name}" for name in sorted(set(want) & set(have)) if sha256(want[name]) != sha256(have[name])]
    return out


def refresh(shared: Path) -> None:
    """Replace the vendored sets by copies of ``shared``'s and rewrite the manifest."""
    files = source_files(shared)
    kept = {name: path.read_bytes() for name, path in vendored_files().items() if made_here(name)}
    for _, dst in SETS:
        target = GOLDEN / dst
        if target.is_dir():
            shutil.rmtree(target)
        elif target.exists():
            target.unlink()
    for name, data in kept.items():
        (GOLDEN / name).parent.mkdir(parents=True, exist_ok=True)
        (GOLDEN / name).write_bytes(data)
    for name, src in files.items():
        dst = GOLDEN / name
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dst)  # bytes only: the shared files are read-only, the copies must not be
    names = sorted(set(files) | set(kept))
    MANIFEST.write_text("".join(f"{sha256(GOLDEN / n)}  {n}\n" for n in names), "utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shared", type=Path, default=REPO.parent / "shared", help="default: ../shared")
    parser.add_argument("--check", action="store_true", help="compare only; exit 1 when something differs")
    args = parser.parse_args(argv)
    if not args.shared.is_dir():
        print(f"refresh: error: {args.shared} is not a folder", file=sys.stderr)
        return 2
    if args.check:
        diffs = differences(args.shared)
        print("\n".join(diffs) or "identical")
        return 1 if diffs else 0
    refresh(args.shared)
    print(f"refreshed {len(read_manifest())} files from {args.shared}; update the date in tests/golden/README.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
