"""The npm-docs corpus of the search benchmark: npm's own CLI documentation
(``docs/content`` of the npm package, 91 markdown files, 1,437 chunks with
npm 11.19.1) indexed ``R`` times under ``r0001/…``, ``r0002/…`` labels, and
80 queries of the kind a developer or an agent asks of it.

This is the corpus of the side-by-side measurement in issue 12 (the
reference's figures at 1,437 / 14,370 / 100,590 chunks are for ``R`` = 1 /
10 / 70). Every replica's source is file-backed by the original file
(``sources.file_path`` = the file's resolved path, SHA-256 recorded), as
``ctx_index path=…`` would record it, so the stale-source check has one
source per file and replica to look at; the files themselves are never
copied or modified.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

#: Chunks one replica of npm 11.19.1's docs gives (the chunk count is read
#: back from the store; this is only used to pick ``R`` for a target size).
CHUNKS_PER_REPLICA = 1437

#: The 80 queries, by category. Typos are real one-edit slips of words the
#: docs contain; none of the misspelt forms occurs in the docs.
QUERIES: dict[str, tuple[str, ...]] = {
    "command": (
        "npm ci",
        "npm audit fix",
        "npm publish",
        "npm link",
        "npm pack",
        "npm dedupe",
        "npm exec",
        "npm outdated",
        "npm prune",
        "npm shrinkwrap",
        "npm sbom",
        "npm query",
    ),
    "term": (
        "workspaces",
        "registry",
        "lockfile",
        "provenance",
        "tarball",
        "deprecate",
        "peerDependencies",
        "bundleDependencies",
        "overrides",
        "engines",
        "funding",
        "otp",
    ),
    "flag": (
        "--save-dev",
        "--ignore-scripts",
        "--legacy-peer-deps",
        "--dry-run",
        "--omit=dev",
        "--prefer-offline",
        "--global",
        "--workspace",
        "strict-peer-deps",
        "install-strategy",
        "foreground-scripts",
        "include-workspace-root",
    ),
    "question": (
        "how do I publish a scoped package publicly",
        "install peer dependencies automatically",
        "where does npm store its cache",
        "run a script in every workspace",
        "difference between package-lock.json and npm-shrinkwrap.json",
        "use a private registry with an auth token",
        "what does npm ci do differently from npm install",
        "how to unpublish a version",
        "set the default registry in npmrc",
        "lifecycle scripts order preinstall postinstall",
        "link a local package for development",
        "two factor authentication for publishing",
        "pin a transitive dependency version",
        "semver range caret tilde",
        "npx vs npm exec",
        "global install prefix folder",
    ),
    "code": (
        "npm install --save-dev typescript",
        "npm run build --workspace=packages/a",
        "npm config set registry",
        "npm version patch -m",
        "npm audit --audit-level=high",
        "package.json scripts prepare",
        "npm init -y",
        "npm view react versions",
        "npm dist-tag add latest",
        "npm exec -- eslint",
        "node_modules/.bin",
        "//registry.npmjs.org/:_authToken",
    ),
    "typo": (
        "worksapces",
        "depndencies",
        "pubish scoped package",
        "lcokfile version",
        "shrinkwarp",
        "peer dependecies conflict",
        "intsall globally",
        "registy url",
        "provenace attestation",
        "unistall package",
    ),
    "no-match": (
        "kubernetes helm chart",
        "zeppelin quasar",
        "qxzvkwy",
        "flux capacitor",
        "borrow checker lifetimes",
        "tensor gradient descent",
    ),
}


#: The light set: what a person types into a search box, in about the
#: proportions they type it (issue 25): single terms (40%), flags (20%),
#: a term filtered by source label or content type (20%), no-match
#: words (10%) and two-word terms (10%). Written for this benchmark; none
#: is in :data:`QUERIES`. A filtered query is ``(query, source, content_type)``.
LIGHT_QUERIES: dict[str, tuple[str, ...]] = {
    "term": (
        "cache",
        "token",
        "scope",
        "audit",
        "proxy",
        "prefix",
        "semver",
        "tag",
        "dependencies",
        "devDependencies",
        "bin",
        "exports",
        "license",
        "repository",
        "homepage",
        "keywords",
        "browser",
        "main",
        "private",
        "publishConfig",
        "optionalDependencies",
        "npx",
        "npmrc",
        "shrinkwrap",
        "lockfileVersion",
        "hoisting",
        "symlink",
        "integrity",
        "signatures",
        "access",
        "unpublish",
        "peerDependenciesMeta",
    ),
    "flag": (
        "--force",
        "--json",
        "--prefix",
        "--registry",
        "--tag",
        "--access",
        "--otp",
        "--scope",
        "--save-exact",
        "--no-save",
        "--production",
        "--workspaces",
        "--include",
        "--loglevel",
        "--yes",
        "--before",
    ),
    "no-match": (
        "kubernetes",
        "terraform",
        "haskell",
        "qwertyuiop",
        "blockchain",
        "zebra",
        "photosynthesis",
        "quaternion",
    ),
    "two-word": (
        "peer dependencies",
        "lifecycle scripts",
        "global install",
        "dist tags",
        "auth token",
        "package lock",
        "npm cache",
        "scoped packages",
    ),
}
#: Filtered queries of the light set: ``(query, source label substring, content type)``.
LIGHT_FILTERED: tuple[tuple[str, str | None, str | None], ...] = (
    ("install", "commands/npm-install.md", None),
    ("scripts", "using-npm/scripts", None),
    ("files", "configuring-npm/package-json", None),
    ("cache", "commands/npm-cache", None),
    ("registry", "using-npm/registry", None),
    ("config", "commands/npm-config", None),
    ("workspaces", "using-npm/workspaces", None),
    ("token", "commands/npm-token", None),
    ("install", None, "code"),
    ("publish", None, "code"),
    ("init", None, "code"),
    ("audit", None, "code"),
    ("version", None, "code"),
    ("exec", None, "code"),
    ("login", None, "code"),
    ("pack", None, "code"),
)


@dataclass(frozen=True)
class DocFile:
    """One file of the npm docs: ``label`` relative to ``docs/content``."""

    label: str
    path: str
    text: str


def find_npm_docs() -> Path | None:
    """``docs/content`` of the npm installed with Node (``npm root -g``), or
    ``None`` when npm or its docs are not there. ``RANKSCOPE_NPM_DOCS``
    overrides the location."""
    override = os.environ.get("RANKSCOPE_NPM_DOCS")
    if override:
        p = Path(override)
        return p if p.is_dir() else None
    candidates = []
    npm = shutil.which("npm")
    if npm:
        try:
            root = subprocess.run([npm, "root", "-g"], capture_output=True, text=True, timeout=20).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            root = ""
        if root:
            candidates.append(Path(root) / "npm" / "docs" / "content")
    candidates.append(Path("/usr/lib/node_modules/npm/docs/content"))
    candidates.append(Path("/usr/local/lib/node_modules/npm/docs/content"))
    for c in candidates:
        if c.is_dir() and any(c.rglob("*.md")):
            return c
    return None


def load_docs(root: Path) -> list[DocFile]:
    """The markdown files under ``root`` in the order the reference's labelling
    uses (ascending UTF-8 bytes of the relative path), decoded as UTF-8."""
    from engine.js.strings import decode_utf8_like_node

    files = sorted(
        (p for p in root.rglob("*.md") if p.is_file()),
        key=lambda p: p.relative_to(root).as_posix().encode("utf-8"),
    )
    return [
        DocFile(p.relative_to(root).as_posix(), str(p.resolve()), decode_utf8_like_node(p.read_bytes())) for p in files
    ]


def replicas_for(target_chunks: int) -> int:
    """``R`` for a target chunk count: the nearest whole number of replicas (at least 1)."""
    return max(1, round(target_chunks / CHUNKS_PER_REPLICA))


def replica_files(docs: list[DocFile], replicas: int) -> Iterator[tuple[str, DocFile]]:
    """``(label, file)`` for every replica in order: ``r0001/commands/npm-access.md``, …"""
    for r in range(1, replicas + 1):
        for f in docs:
            yield f"r{r:04d}/{f.label}", f


def queries() -> list[tuple[str, str]]:
    """The 80 ``(category, query)`` pairs in a fixed order."""
    out = [(cat, q) for cat, qs in QUERIES.items() for q in qs]
    assert len(out) == 80, len(out)
    return out


def light_queries() -> list[tuple[str, str, str | None, str | None]]:
    """The 80 ``(category, query, source, content_type)`` of the light set,
    interleaved by category the way a session mixes them (one of each
    category in turn while it lasts), in a fixed order."""
    Light = tuple[str, str, str | None, str | None]
    lists: dict[str, list[Light]] = {cat: [(cat, q, None, None) for q in qs] for cat, qs in LIGHT_QUERIES.items()}
    lists["filtered"] = [("filtered", q, src, ctype) for q, src, ctype in LIGHT_FILTERED]
    order = ("term", "flag", "term", "filtered", "no-match", "term", "two-word", "flag", "term", "filtered")
    out: list[Light] = []
    while any(lists.values()):
        for cat in order:
            if lists[cat]:
                out.append(lists[cat].pop(0))
    assert len(out) == 80, len(out)
    return out


#: A one-file source whose words occur nowhere in npm's docs: the rare-term
#: probe indexes it once (whatever ``R``), searches for its words, and removes it.
NEEDLE_LABEL = "zz-probe/rare-terms.md"
NEEDLE_TEXT = """# Quillwort ledger

The quillwort ledger keeps zephyrine tallies for the glaucous relay.

## Zephyrine tallies

Each zephyrine tally pins a marmoset checkpoint to the quillwort ledger; pelagic
batches are counted twice.
"""
#: Queries for the needle: rare words only (each in one or two chunks).
NEEDLE_QUERIES = ("quillwort", "zephyrine marmoset", "glaucous relay", "pelagic")
