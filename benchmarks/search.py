"""Search benchmark: index throughput, per-stage latency against the raw FTS5 floor, peak RSS.

Run it as a script (it is not a test)::

    python -m benchmarks.search                   # 1k and 10k chunks (npm docs when installed)
    python -m benchmarks.search --100k --1m       # also 100,000 and 1,000,000 chunks
    python -m benchmarks.search --sizes 1000000 --keep /var/tmp/rs-bench   # 1M only: build once, reuse later
    python -m benchmarks.search --corpus synthetic --sizes 5000 --queries 400 --seed 7
    python -m benchmarks.search --quick           # 2000 chunks, smoke run

Two corpora:

* ``npm`` (the default when npm's docs are installed; :mod:`benchmarks.npm_docs`):
  npm's own CLI documentation replicated ``R`` times (1,437 chunks a replica),
  every source file-backed, and 80 real queries (commands, terms, flags,
  questions, code, typos, no-match) run ``--rounds`` times. This is the
  corpus of the reference's figures in issue 12 and ``docs/performance.md``.
* ``synthetic``: a deterministic generated corpus (seeded
  :class:`random.Random`): a vocabulary of a few thousand pronounceable
  pseudo-words drawn with a Zipf-like distribution, mixed with real English
  tech words and stopword "glue"; markdown (``#`` title and intro, ``##``
  sections of ~300-800 bytes, some with a fenced code block), JSON (one chunk
  per flat record) and plain-text logs (one chunk per blank-line block),
  spread over the sessions ``sess-a``/``sess-b``/``sess-c`` (about 10% of
  files unattributed); seeded queries of several kinds (single terms of
  several frequencies, 2-3 terms, typos, no-match words, session allow-sets,
  content-type and source filters; limit 3, about a quarter with limit 10).

For each target size the script

1. builds the store in a temporary folder (or reuses one kept with
   ``--keep``) and reports MB/s and chunks/s (wall clock of the
   :meth:`Store.index_text` calls, vocabulary insertion included);
2. runs the queries; before each timed search the retriever-run cache is
   cleared (the reference has none), so every search pays for its SQL. Beside
   each search, in the same process and run, it times the **floor**: the two
   raw FTS5 statements of the first pass as the reference writes them
   (``ORDER BY bm25(...)``; sanitised queries, filters and row limit as the
   pipeline uses them) on the same connection, every row fetched; and the
   **own floor**: the same with rankscope's statements (FTS5 orders the
   matches, :func:`engine.pipeline.stages.retrieve.build_sql`), so the difference to the
   traced search is what the pipeline and its trace add;
   and a **counterfactual**: a what-if re-run of the same query with another
   fusion key, which reuses the cached retriever runs. It reports latency
   p50/p95/max overall, per stage (``trace.timings_ms``; the two retrievers
   run concurrently, so their times overlap) and per query category, the
   ratio of the traced search to the floor, and the answering layers;
3. opens the store read-only as the browser does (``Store.open_readonly`` and
   ``tui.browser.facts.read_facts``) and reports the time;
4. prints the peak RSS of the process and the size of the database on disk.

:func:`run` is importable for smoke tests.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import resource
import shutil
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Iterator, Sequence, TextIO

from dataclasses import replace

from engine.pipeline.candidates import FUZZY_PREFIX
from engine.pipeline.params import SearchParams
from engine.pipeline.variants import Variant
from engine.pipeline.run import fts_limit_for, pool_size_for, search
from engine.store.stopwords import STOPWORDS
from engine.pipeline.query import sanitize_porter, sanitize_trigram
from engine.pipeline.stages.retrieve import build_sql, like_pattern
from engine.pipeline.table import STAGES
from engine.store.store import Store
from tui.browser.facts import read_facts

from . import npm_docs

DEFAULT_SIZES = (1_000, 10_000)
QUICK_SIZES = (2_000,)
DEFAULT_QUERIES = 240
DEFAULT_SEED = 20260301
#: Queries run (and discarded) before timing, to warm SQLite's page cache.
WARMUP_QUERIES = 5

SESSIONS = ("sess-a", "sess-b", "sess-c")
#: Share of files per session id; ``""`` = unattributed.
SESSION_WEIGHTS = {"sess-a": 0.40, "sess-b": 0.30, "sess-c": 0.20, "": 0.10}
#: Share of *chunks* per file kind.
KIND_WEIGHTS = {"markdown": 0.50, "json": 0.25, "plain": 0.25}

#: Real English tech words (none is a stopword), so queries read naturally.
_TECH_WORDS = (
    "database index query cache server client request response timeout latency thread process memory "
    "buffer socket token session config deploy build compile module function parameter schema migration "
    "transaction commit rollback replica cluster shard kernel container docker kubernetes pipeline search "
    "ranking retrieval fusion tokenizer vector embedding parser router handler middleware authentication "
    "authorization password certificate encryption compression upload download storage bucket queue worker "
    "scheduler webhook endpoint payload header cookie browser render component template stylesheet "
    "javascript python typescript golang sqlite postgres redis kafka nginx throughput benchmark profile "
    "debug error warning exception traceback stack heap garbage collector allocation pointer reference "
    "iterator generator closure callback promise async await mutex semaphore deadlock retry backoff "
    "circuit breaker metrics logging tracing monitor alert dashboard incident outage rollout feature "
    "release version changelog dependency package install upgrade network firewall proxy gateway balancer "
    "resolver hostname latency snapshot backup restore checksum integrity journal checkpoint vacuum "
    "analyzer optimizer planner executor cursor iterator binding adapter plugin extension registry "
    "manifest lockfile artifact sandbox permission policy quota throttle limiter pagination filter "
    "serializer encoder decoder stream channel listener observer emitter reducer selector store"
).split()
TECH_WORDS = tuple(dict.fromkeys(w for w in _TECH_WORDS if w not in STOPWORDS))

#: Function words of prose (mostly stopwords, so they never enter the vocabulary).
GLUE_WORDS = (
    "the",
    "of",
    "and",
    "to",
    "in",
    "is",
    "for",
    "on",
    "with",
    "that",
    "this",
    "as",
    "it",
    "from",
    "by",
    "at",
    "or",
    "be",
    "are",
    "when",
    "which",
    "should",
    "into",
    "then",
    "each",
    "after",
    "before",
    "not",
)

LOG_LEVELS = ("INFO", "INFO", "INFO", "DEBUG", "WARN", "ERROR")
SERVICES = ("api", "auth", "billing", "indexer", "scheduler", "gateway", "search", "ingest")
LANGS = ("python", "javascript", "sql", "bash", "rust")
STATUSES = ("active", "pending", "failed", "degraded", "retired")
REGIONS = ("eu-west-1", "us-east-1", "ap-south-1", "sa-east-1")
#: Fixed words the templates emit (part of the "universe" typos must avoid).
TEMPLATE_WORDS = (
    "path status duration req user service owner description latency_ms retries enabled region name "
    "id true false null api v1 v2 def return let const fn select where order limit from echo done "
    "rec info debug warn error ms z t"
).split()

_CONSONANTS = "bcdfghklmnprstvz"
_ONSETS = tuple(_CONSONANTS) + ("br", "cl", "dr", "gr", "pl", "st", "tr", "sh", "ch", "th")
_VOWELS = ("a", "e", "i", "o", "u", "a", "e", "o", "ai", "ou", "ea")
_CODAS = ("", "", "", "n", "r", "l", "s", "m", "k", "t")


def _zipf_weights(n: int, s: float = 1.0) -> list[float]:
    raw = [1.0 / (rank**s) for rank in range(1, n + 1)]
    total = sum(raw)
    return [w / total for w in raw]


def _pseudo_word(rng: random.Random) -> str:
    return "".join(rng.choice(_ONSETS) + rng.choice(_VOWELS) + rng.choice(_CODAS) for _ in range(rng.randint(2, 3)))


# ─── vocabulary and corpus ─────────────────────────────────────────────────


class Vocabulary:
    """The word distribution of the synthetic corpus.

    ``pseudo`` is in Zipf rank order (``pseudo[0]`` is the most frequent);
    ``tech`` is shuffled, then Zipf-ranked too. Text draws 30% glue words,
    15% tech words and 55% pseudo-words.
    """

    def __init__(self, rng: random.Random, n_pseudo: int = 3000):
        reserved = set(TECH_WORDS) | set(STOPWORDS) | set(GLUE_WORDS) | set(TEMPLATE_WORDS)
        words: dict[str, None] = {}
        while len(words) < n_pseudo:
            w = _pseudo_word(rng)
            if 4 <= len(w) <= 12 and w not in reserved:
                words[w] = None
        self.pseudo: list[str] = list(words)
        self.tech: list[str] = list(TECH_WORDS)
        rng.shuffle(self.tech)
        pool = list(GLUE_WORDS) + self.tech + self.pseudo
        weights = (
            [0.30 * w for w in _zipf_weights(len(GLUE_WORDS), 0.8)]
            + [0.15 * w for w in _zipf_weights(len(self.tech))]
            + [0.55 * w for w in _zipf_weights(len(self.pseudo), 1.05)]
        )
        self._pool = pool
        self._cum = list(accumulate(weights))
        content = self.tech + self.pseudo
        self._content = content
        self._content_cum = list(
            accumulate(
                [0.2 * w for w in _zipf_weights(len(self.tech))]
                + [0.8 * w for w in _zipf_weights(len(self.pseudo), 1.05)]
            )
        )
        self._tech_cum = list(accumulate(_zipf_weights(len(self.tech))))
        self.request_ids = [f"req-{rng.getrandbits(24):06x}" for _ in range(2000)]

    def words(self, rng: random.Random, k: int) -> list[str]:
        """``k`` words of running text."""
        return rng.choices(self._pool, cum_weights=self._cum, k=k)

    def tech_words(self, rng: random.Random, k: int) -> list[str]:
        """``k`` tech words, Zipf-weighted."""
        return rng.choices(self.tech, cum_weights=self._tech_cum, k=k)

    def content_words(self, rng: random.Random, k: int) -> list[str]:
        """``k`` content words (no glue): headings, identifiers, names."""
        return rng.choices(self._content, cum_weights=self._content_cum, k=k)

    def prose(self, rng: random.Random, nbytes: int) -> str:
        """Sentences of running text, about ``nbytes`` long."""
        out: list[str] = []
        size = 0
        while size < nbytes:
            s = " ".join(self.words(rng, rng.randint(6, 14)))
            s = s[0].upper() + s[1:] + "."
            out.append(s)
            size += len(s) + 1
        return " ".join(out)

    def universe(self) -> str:
        """Every token the generator can emit, newline-separated (lower case)."""
        parts = list(GLUE_WORDS) + self.tech + self.pseudo + list(TEMPLATE_WORDS) + self.request_ids
        parts += [x.lower() for x in SERVICES + LANGS + STATUSES + REGIONS + LOG_LEVELS]
        return "\n" + "\n".join(parts) + "\n"


@dataclass(frozen=True)
class SynthFile:
    """One generated file: ``chunks`` is the chunk count its structure predicts."""

    label: str
    kind: str
    session_id: str
    text: str
    chunks: int


class CorpusGenerator:
    """Deterministic files whose chunk counts are known in advance."""

    def __init__(self, vocab: Vocabulary, rng: random.Random):
        self.vocab = vocab
        self.rng = rng
        self._sessions = list(SESSION_WEIGHTS)
        self._session_cum = list(accumulate(SESSION_WEIGHTS.values()))
        self._kinds = list(KIND_WEIGHTS)
        self._kind_cum = list(accumulate(KIND_WEIGHTS.values()))

    def _session(self) -> str:
        return self.rng.choices(self._sessions, cum_weights=self._session_cum)[0]

    def _heading(self, n_min: int = 2, n_max: int = 4) -> str:
        return " ".join(w.capitalize() for w in self.vocab.content_words(self.rng, self.rng.randint(n_min, n_max)))

    def _ident(self) -> str:
        rng = self.rng
        if rng.random() < 0.2:
            a, b = self.vocab.tech_words(rng, 2)
            return f"{a}_{b}"
        return self.vocab.content_words(rng, 1)[0]

    def _code(self) -> tuple[str, str]:
        rng = self.rng
        lang = rng.choice(LANGS)
        lines = []
        for _ in range(rng.randint(3, 8)):
            a, b, c = self._ident(), self._ident(), self._ident()
            if lang == "python":
                lines.append(f"    {a} = {b}.{c}({self._ident()}, {rng.randint(0, 999)})")
            elif lang == "javascript":
                lines.append(f"  const {a} = await {b}.{c}({self._ident()});")
            elif lang == "sql":
                lines.append(f"SELECT {a}, {b} FROM {c} WHERE {self._ident()} = {rng.randint(0, 99)};")
            elif lang == "bash":
                lines.append(f"{a} --{b} {c} | grep {self._ident()}")
            else:
                lines.append(f"    let {a} = {b}::{c}(&{self._ident()})?;")
        if lang == "python":
            lines.insert(0, f"def {self._ident()}({self._ident()}):")
            lines.append(f"    return {self._ident()}")
        return lang, "\n".join(lines)

    def markdown(self, index: int, n_sections: int) -> SynthFile:
        """``#`` title + intro (1 chunk) and ``n_sections`` ``##`` sections (1 chunk each)."""
        rng = self.rng
        title = self._heading(2, 5)
        parts = [f"# {title}", "", self.vocab.prose(rng, rng.randint(120, 300)), ""]
        seen: set[str] = set()
        for _ in range(n_sections):
            heading = self._heading()
            while heading in seen:
                heading = self._heading()
            seen.add(heading)
            parts += [f"## {heading}", ""]
            body_bytes = rng.randint(300, 800)
            if rng.random() < 0.35:
                lang, code = self._code()
                prose_bytes = max(80, body_bytes - len(code) - 20)
                parts += [self.vocab.prose(rng, prose_bytes), "", f"```{lang}", code, "```", ""]
            else:
                parts += [self.vocab.prose(rng, body_bytes), ""]
        slug = title.split()[0].lower()
        return SynthFile(f"docs/{slug}-{index:05d}.md", "markdown", self._session(), "\n".join(parts), 1 + n_sections)

    def json_file(self, index: int, n_records: int) -> SynthFile:
        """An object of ``n_records`` flat records: one chunk per record."""
        rng = self.rng
        records = {}
        for i in range(n_records):
            records[f"rec-{i:03d}"] = {
                "name": self._heading(2, 3),
                "service": rng.choice(SERVICES),
                "status": rng.choice(STATUSES),
                "owner": self.vocab.content_words(rng, 1)[0],
                "region": rng.choice(REGIONS),
                "description": self.vocab.prose(rng, rng.randint(150, 500)),
                "latency_ms": round(rng.lognormvariate(3.0, 1.0), 2),
                "retries": rng.randint(0, 5),
                "enabled": rng.random() < 0.8,
            }
        slug = rng.choice(SERVICES)
        text = json.dumps(records, indent=2)
        return SynthFile(f"data/{slug}-{index:05d}.json", "json", self._session(), text, n_records)

    def log_file(self, index: int, n_blocks: int) -> SynthFile:
        """``n_blocks`` (3-200) blank-line separated blocks of log lines: one chunk each."""
        rng = self.rng
        service = rng.choice(SERVICES)
        day = rng.randint(1, 28)
        blocks = []
        for _ in range(n_blocks):
            lines = []
            target = rng.randint(300, 800)
            size = 0
            while size < target:
                ts = f"2026-03-{day:02d}T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}.{rng.randint(0, 999):03d}Z"
                words = " ".join(self.vocab.words(rng, rng.randint(4, 10)))
                line = (
                    f"{ts} {rng.choice(LOG_LEVELS)} [{service}-{rng.randint(1, 4)}] {words} "
                    f"path=/api/v1/{self.vocab.content_words(rng, 1)[0]} status={rng.choice((200, 200, 200, 404, 500))} "
                    f"duration={int(rng.lognormvariate(3.5, 1.0)) % 2000}ms req={rng.choice(self.vocab.request_ids)}"
                )
                lines.append(line)
                size += len(line) + 1
            blocks.append("\n".join(lines))
        return SynthFile(f"logs/{service}-{index:05d}.log", "plain", self._session(), "\n\n".join(blocks), n_blocks)

    def files(self, target_chunks: int) -> Iterator[SynthFile]:
        """Files until the predicted chunk count reaches ``target_chunks`` exactly."""
        rng = self.rng
        remaining = target_chunks
        index = 0
        while remaining > 0:
            kind = rng.choices(self._kinds, cum_weights=self._kind_cum)[0]
            if kind == "plain" and remaining < 3:
                kind = "json"  # the blank-line strategy needs 3+ blocks
            if kind == "markdown" and remaining < 2:
                kind = "json"
            if kind == "markdown":
                f = self.markdown(index, min(rng.randint(8, 40), remaining - 1))
            elif kind == "json":
                f = self.json_file(index, min(rng.randint(10, 60), remaining))
            else:
                f = self.log_file(index, min(rng.randint(10, 120), remaining))
            remaining -= f.chunks
            index += 1
            yield f


# ─── query set ─────────────────────────────────────────────────────────────

#: Query categories and their share of the set.
CATEGORY_WEIGHTS = {
    "term-frequent": 0.08,
    "term-mid": 0.10,
    "term-rare": 0.08,
    "term-tech": 0.08,
    "two-terms": 0.12,
    "three-terms": 0.10,
    "typo": 0.10,
    "typo-multi": 0.05,
    "no-match": 0.04,
    "sessions": 0.10,
    "content-type": 0.10,
    "source": 0.05,
}


@dataclass(frozen=True)
class BenchQuery:
    category: str
    params: SearchParams


def _allocate(total: int, weights: dict[str, float]) -> dict[str, int]:
    """Largest-remainder split of ``total`` by ``weights``."""
    exact = {k: total * w / sum(weights.values()) for k, w in weights.items()}
    counts = {k: int(v) for k, v in exact.items()}
    left = total - sum(counts.values())
    for k in sorted(exact, key=lambda k: (counts[k] - exact[k], list(weights).index(k)))[:left]:
        counts[k] += 1
    return counts


def _typo(rng: random.Random, word: str, universe: str) -> str | None:
    """A one-edit misspelling of ``word`` (inside the word) that occurs nowhere
    in the corpus, not even as a substring (so neither retriever matches)."""
    letters = "abcdefghiklmnoprstuvwy"
    for _ in range(60):
        i = rng.randrange(1, len(word) - 1)
        op = rng.randrange(4)
        if op == 0:
            cand = word[:i] + rng.choice(letters) + word[i + 1 :]
        elif op == 1:
            cand = word[:i] + word[i + 1 :]
        elif op == 2:
            cand = word[:i] + rng.choice(letters) + word[i:]
        else:
            cand = word[:i] + word[i + 1] + word[i] + word[i + 2 :]
        if cand != word and len(cand) >= 4 and cand not in universe:
            return cand
    return None


def build_queries(vocab: Vocabulary, n: int, seed: int) -> list[BenchQuery]:
    """The fixed query set (same for every size with the same seed)."""
    rng = random.Random(seed * 7919 + 17)
    universe = vocab.universe()
    pseudo, tech = vocab.pseudo, vocab.tech
    frequent = pseudo[:30]
    mid = pseudo[100:600]
    rare = pseudo[2000:]
    content = tech + pseudo[:1000]
    long_words = [w for w in tech + pseudo[:800] if len(w) >= 6]

    def limit() -> int:
        return 10 if rng.random() < 0.25 else 3

    def terms(k: int) -> str:
        return " ".join(rng.sample(content, k))

    def typo_of() -> str:
        while True:
            t = _typo(rng, rng.choice(long_words), universe)
            if t:
                return t

    out: list[BenchQuery] = []
    for category, count in _allocate(n, CATEGORY_WEIGHTS).items():
        for _ in range(count):
            kw: dict = {}
            if category == "term-frequent":
                q = rng.choice(frequent)
            elif category == "term-mid":
                q = rng.choice(mid)
            elif category == "term-rare":
                q = rng.choice(rare)
            elif category == "term-tech":
                q = rng.choice(tech)
            elif category == "two-terms":
                q = terms(2)
            elif category == "three-terms":
                q = terms(3)
            elif category == "typo":
                q = typo_of()
            elif category == "typo-multi":
                q = " ".join(typo_of() for _ in range(rng.randint(2, 3)))
            elif category == "no-match":
                q = "".join(rng.choice("qxzjvkwy") for _ in range(rng.randint(6, 9)))
            elif category == "sessions":
                q = terms(rng.randint(1, 2))
                kw["sessions"] = rng.choice([("sess-a",), ("sess-b",), ("sess-c",), ("sess-a", "sess-b"), ()])
            elif category == "content-type":
                q = terms(rng.randint(1, 2))
                kw["content_type"] = rng.choice(("code", "prose"))
            else:  # source
                q = terms(rng.randint(1, 2))
                kw["source"] = rng.choice(("docs/", "data/", "logs/"))
            out.append(BenchQuery(category, SearchParams(q, limit=limit(), **kw)))
    return out


# ─── measurement and report ────────────────────────────────────────────────

#: Stage ids in table order (:data:`engine.pipeline.table.STAGES`).
STAGE_ORDER = tuple(s.id for s in STAGES)


def percentile(values: Sequence[float], p: float) -> float:
    """Linear-interpolated percentile (``p`` in 0..100) of ``values``."""
    if not values:
        return float("nan")
    s = sorted(values)
    pos = (len(s) - 1) * p / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def peak_rss_mib() -> float:
    """Process high-water RSS in MiB (``ru_maxrss``: KiB on Linux, bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def rss_split_mib() -> tuple[float, float] | None:
    """Current ``(anonymous, file-backed)`` RSS in MiB (Linux ``/proc``): the
    store is read through a memory map, whose pages count as file-backed
    RSS (they are the page cache, shared and reclaimable), or ``None``."""
    try:
        with open("/proc/self/status") as fh:
            fields = dict(line.split(":", 1) for line in fh if ":" in line)
        return int(fields["RssAnon"].split()[0]) / 1024, int(fields["RssFile"].split()[0]) / 1024
    except (OSError, KeyError, ValueError):
        return None


def current_rss_mib() -> float | None:
    """Current RSS in MiB (Linux ``/proc``), or ``None``."""
    try:
        with open("/proc/self/statm") as fh:
            pages = int(fh.read().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE") / (1024 * 1024)
    except (OSError, ValueError, IndexError):
        return None


def table(headers: Sequence[str], rows: Sequence[Sequence[object]], left: int = 1) -> list[str]:
    """A plain-text table; the first ``left`` columns are left-aligned."""
    cells = [[str(h) for h in headers]] + [[_fmt(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]

    def line(r: list[str]) -> str:
        return "  ".join(c.ljust(widths[i]) if i < left else c.rjust(widths[i]) for i, c in enumerate(r)).rstrip()

    return [line(cells[0]), "  ".join("-" * w for w in widths)] + [line(r) for r in cells[1:]]


def _fmt(c: object) -> str:
    if isinstance(c, float):
        if c != c:
            return "-"
        return f"{c:,.3f}" if c < 10 else f"{c:,.1f}" if c < 1000 else f"{c:,.0f}"
    if isinstance(c, int):
        return f"{c:,}"
    return str(c)


@dataclass
class SizeResult:
    """Numbers of one size (also returned by :func:`run`). Times in seconds
    (``*_s``) or milliseconds (``*_ms``)."""

    target: int
    corpus: str = "synthetic"
    replicas: int = 0
    reused: bool = False
    files: Counter = field(default_factory=Counter)
    predicted_chunks: int = 0
    chunks: int = 0
    code_chunks: int = 0
    vocabulary: int = 0
    text_bytes: int = 0
    generate_s: float = 0.0
    index_s: float = 0.0
    #: The end-of-run FTS5 merge (included in ``index_s``).
    merge_s: float = 0.0
    query_build_s: float = 0.0
    query_s: float = 0.0
    latencies_ms: list[float] = field(default_factory=list)
    #: The two raw FTS5 queries of each search's first pass, as the reference
    #: writes them (same row limit and connection), timed next to it: the floor.
    floor_ms: list[float] = field(default_factory=list)
    #: The same two queries as rankscope writes them: the own floor.
    own_floor_ms: list[float] = field(default_factory=list)
    #: Searches for words of one source only (npm corpus), and their floor.
    rare_ms: list[float] = field(default_factory=list)
    rare_floor_ms: list[float] = field(default_factory=list)
    #: A what-if re-run of each search (variant ``fusion_key=rowid``: same
    #: retriever runs, different fusion) right after it.
    counterfactual_ms: list[float] = field(default_factory=list)
    stages_ms: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    by_category: dict[str, list[tuple[float, str, int]]] = field(default_factory=lambda: defaultdict(list))
    floor_by_category: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    layers: Counter = field(default_factory=Counter)
    refresh_methods: Counter = field(default_factory=Counter)
    #: How each retriever run that ran SQL was ranked: ``top-k``, ``fts5``
    #: (with the declined code), ``halves`` (FTS5 in two rowid halves).
    rankings: Counter = field(default_factory=Counter)
    db_bytes: int = 0
    wal_bytes: int = 0
    peak_rss_mib: float = 0.0
    rss_mib: float | None = None
    #: (anonymous, file-backed) RSS after the searches, store still open, MiB.
    rss_split: tuple[float, float] | None = None
    #: Opening the store read-only (``Store.open_readonly``) and reading what
    #: the browser shows before its first paint (``tui.browser.facts.read_facts``).
    open_ms: float = float("nan")
    facts_ms: float = float("nan")
    #: ``(cumulative chunks, cumulative index seconds)`` after each file.
    progress: list[tuple[int, float]] = field(default_factory=list)

    @property
    def mb_per_s(self) -> float:
        return self.text_bytes / 1e6 / self.index_s if self.index_s else float("nan")

    @property
    def chunks_per_s(self) -> float:
        return self.chunks / self.index_s if self.index_s else float("nan")

    def ratios(self, own: bool = False) -> tuple[float, float, float]:
        """Traced search over the floor (``own``: the own floor): ``(p50 /
        p50, median of per-search ratios, total / total)``."""
        lat, fl = self.latencies_ms, (self.own_floor_ms if own else self.floor_ms)
        if not lat or not fl:
            return (float("nan"),) * 3
        per = [a / b for a, b in zip(lat, fl) if b > 0]
        return (percentile(lat, 50) / percentile(fl, 50), percentile(per, 50), sum(lat) / sum(fl))


def quarter_rates(progress: Sequence[tuple[int, float]]) -> list[tuple[int, int, float]]:
    """Indexing rate over each quarter of the corpus: ``(first chunk, last chunk, chunks/s)``."""
    if not progress:
        return []
    total = progress[-1][0]
    out = []
    prev_n, prev_t = 0, 0.0
    for q in range(1, 5):
        # first file boundary at or past q/4 of the chunks
        n, t = next(((n, t) for n, t in progress if n >= total * q / 4), progress[-1])
        if n > prev_n:
            out.append((prev_n + 1, n, (n - prev_n) / (t - prev_t) if t > prev_t else float("nan")))
            prev_n, prev_t = n, t
    return out


def ranking_label(run) -> str:
    """``top-k``, ``fts5 in halves``, ``fts5 (kept N)`` (a filtered run over
    the N rows its filters keep) or ``fts5 (CODE)`` for a retriever run."""
    if run.ranked_by == "top-k":
        return "top-k"
    if run.ranking_fact("halves"):
        return "fts5 in halves"
    if run.ranking_fact("kept_rows") is not None:
        return f"fts5 (kept {run.ranking_fact('kept_rows'):,})"
    code = run.ranking_fact("declined")
    return f"fts5 ({code})" if code else "fts5 (filters)"


def _stage_names(stages: dict[str, list[float]]) -> list[str]:
    """The timed stage ids in table order, the fuzzy re-run's after the first pass's."""
    names = [s for s in STAGE_ORDER if s in stages]
    names += [FUZZY_PREFIX + s for s in STAGE_ORDER if FUZZY_PREFIX + s in stages]
    names += [s for s in stages if s not in names]
    return names


def floor_statements(store: Store, params: SearchParams, reference: bool = True) -> list[tuple[str, list]]:
    """The two raw FTS5 statements of a search's first pass
    (:func:`engine.pipeline.stages.retrieve.build_sql`: the reference's own SQL, or with
    ``reference=False`` rankscope's) with the sanitised queries, filters and
    row limit the pipeline uses; a trigram query with no word of 3+
    characters is skipped, as the pipeline skips it."""
    fts_limit = fts_limit_for(params, pool_size_for(params))
    out = []
    for name, sanitize in (("porter", sanitize_porter), ("trigram", sanitize_trigram)):
        match = sanitize(params.query, "OR")
        if not match:
            continue
        sql, names = build_sql(
            name, store.schema, params.source, params.source_match, params.content_type, reference=reference
        )
        values = {
            "match": match,
            "source": params.source if params.source_match == "exact" else like_pattern(params.source or ""),
            "content_type": params.content_type,
            "limit": fts_limit,
        }
        out.append((sql, [values[n] for n in names]))
    return out


def time_floor(store: Store, statements: list[tuple[str, list]]) -> float:
    """Milliseconds to run ``statements`` back to back on the store's own
    connection, every row fetched (nothing else: no Python per row)."""
    with store.lock:
        t0 = time.perf_counter()
        for sql, args in statements:
            store.conn.execute(sql, args).fetchall()
        return (time.perf_counter() - t0) * 1000.0


def _clear_run_cache(store: Store) -> None:
    """Forget cached retriever runs and phrase counts, so every timed search pays for its SQL
    (the reference has no such cache; a re-run of the same query would
    otherwise be served from it). Fuzzy corrections stay cached, as the
    reference caches them."""
    for cache in ("runs", "phrase_rows"):  # phrase_rows: top-k's phrase counts, part of a run's work
        held = getattr(store, cache, None)
        if held is not None:
            held.clear()


def _build_synthetic(store: Store, target: int, seed: int, res: SizeResult) -> Vocabulary:
    rng = random.Random(seed)
    vocab = Vocabulary(rng)
    gen = CorpusGenerator(vocab, rng)
    files = iter(gen.files(target))
    while True:
        t0 = time.perf_counter()
        f = next(files, None)
        t1 = time.perf_counter()
        res.generate_s += t1 - t0
        if f is None:
            break
        result = store.index_text(f.label, f.text, f.kind, session_id=f.session_id)
        res.index_s += time.perf_counter() - t1
        res.files[f.kind] += 1
        res.predicted_chunks += f.chunks
        res.text_bytes += result.bytes
        res.progress.append((res.predicted_chunks, res.index_s))
    _end_of_run_merge(store, res)
    return vocab


def _build_npm(store: Store, target: int, res: SizeResult, docs: list[npm_docs.DocFile]) -> None:
    res.replicas = npm_docs.replicas_for(target)
    for label, f in npm_docs.replica_files(docs, res.replicas):
        t0 = time.perf_counter()
        result = store.index_text(label, f.text, "markdown", file_path=f.path)
        res.index_s += time.perf_counter() - t0
        res.files["markdown"] += 1
        res.predicted_chunks += result.chunks
        res.text_bytes += result.bytes
        res.progress.append((res.predicted_chunks, res.index_s))
    _end_of_run_merge(store, res)


def _end_of_run_merge(store: Store, res: SizeResult) -> None:
    """The FTS5 merge an indexing run ends with (``rankscope index`` calls
    the same :meth:`Store.merge_index`); its time counts as indexing time
    and is also kept apart in ``res.merge_s``. The merges a long run makes
    on the way are inside ``index_text``'s time."""
    t0 = time.perf_counter()
    store.merge_index()
    res.merge_s = time.perf_counter() - t0
    res.index_s += res.merge_s


#: Build figures kept beside a store (``--keep``). ``merged``: built by an
#: indexer that merges its FTS5 indexes (issue 25); stores kept before that
#: are built again.
_META_FIELDS = ("corpus", "replicas", "predicted_chunks", "text_bytes", "generate_s", "index_s", "merge_s")


def _open_or_build(
    target: int, seed: int, corpus: str, tmp: str, keep_dir: str | None, res: SizeResult, docs: list | None
) -> tuple[Store, str, Vocabulary | None]:
    """The store to query: reused from ``keep_dir`` when a kept one exists
    (its build figures come from the ``.json`` beside it), else built."""
    if keep_dir:
        db = os.path.join(
            keep_dir, f"{corpus}-{target}-{seed}.db" if corpus == "synthetic" else f"{corpus}-{target}.db"
        )
        meta_path = db + ".json"
        meta = {}
        if os.path.exists(db) and os.path.exists(meta_path):
            with open(meta_path, encoding="utf-8") as fh:
                meta = json.load(fh)
        if meta.get("merged"):
            for k in _META_FIELDS:
                setattr(res, k, meta[k])
            res.files = Counter(meta["files"])
            res.reused = True
            vocab = Vocabulary(random.Random(seed)) if corpus == "synthetic" else None
            return Store.open_writable(db), db, vocab
        for stale in (db, db + "-wal", db + "-shm", meta_path):  # kept by an older indexer: built again
            if os.path.exists(stale):
                os.unlink(stale)
    else:
        db = os.path.join(tmp, "bench.db")
    store = Store.create(db)
    vocab = None
    if corpus == "synthetic":
        vocab = _build_synthetic(store, target, seed, res)
    else:
        _build_npm(store, target, res, docs or [])
    if keep_dir:
        meta = {k: getattr(res, k) for k in _META_FIELDS}
        meta["files"] = dict(res.files)
        meta["merged"] = True
        with open(db + ".json", "w", encoding="utf-8") as fh:
            json.dump(meta, fh)
    return store, db, vocab


def _rare_term_probe(store: Store, res: SizeResult, rounds: int, say) -> None:
    """Index a one-file source of words found nowhere else, time searches for
    them (traced, and the floor beside), then remove it again."""
    store.index_text(npm_docs.NEEDLE_LABEL, npm_docs.NEEDLE_TEXT, "markdown")
    try:
        for q in npm_docs.NEEDLE_QUERIES:
            search(store, SearchParams(q, limit=3))  # warm up
        for _ in range(rounds * 3):
            for q in npm_docs.NEEDLE_QUERIES:
                params = SearchParams(q, limit=3)
                _clear_run_cache(store)
                t0 = time.perf_counter()
                trace = search(store, params)
                res.rare_ms.append((time.perf_counter() - t0) * 1000.0)
                res.rare_floor_ms.append(time_floor(store, floor_statements(store, params)))
                assert trace.final and trace.final[0].candidate.source == npm_docs.NEEDLE_LABEL, q
    finally:
        store.delete_label(npm_docs.NEEDLE_LABEL)
    r, f = res.rare_ms, res.rare_floor_ms
    say(f"rare terms  ({len(r)} searches for words in one source only: {', '.join(npm_docs.NEEDLE_QUERIES)})")
    say(
        f"  traced p50 {percentile(r, 50):,.2f} / p95 {percentile(r, 95):,.2f} / max {max(r):,.2f} ms; "
        f"floor p50 {percentile(f, 50):,.2f} ms"
    )


def _queries_for(corpus: str, vocab: Vocabulary | None, n: int, seed: int, rounds: int) -> list[BenchQuery]:
    if corpus == "synthetic":
        assert vocab is not None
        return build_queries(vocab, n, seed)
    one = [BenchQuery(cat, SearchParams(q, limit=3)) for cat, q in npm_docs.queries()]
    return [q for _ in range(rounds) for q in one]


def run_size(
    target: int,
    queries_per_size: int,
    seed: int,
    out: TextIO,
    workdir: str | None = None,
    *,
    corpus: str = "synthetic",
    rounds: int = 3,
    keep_dir: str | None = None,
    docs: list | None = None,
) -> SizeResult:
    """Build (or reuse) and query one size; print its report to ``out``.

    ``corpus`` is ``"synthetic"`` (``queries_per_size`` seeded queries) or
    ``"npm"`` (the 80 npm-docs queries × ``rounds``; ``docs`` from
    :func:`benchmarks.npm_docs.load_docs`). With ``keep_dir`` the store is
    kept there and reused by later runs of the same size.
    """
    res = SizeResult(target, corpus)

    def say(line: str = "") -> None:
        print(line, file=out, flush=True)

    say(f"== size {target:,} chunks (target), {corpus} corpus " + "=" * 30)
    tmp = tempfile.mkdtemp(prefix="rankscope-bench-", dir=workdir)
    store, db, vocab = _open_or_build(target, seed, corpus, tmp, keep_dir, res, docs)
    try:
        stats = store.stats()
        res.chunks, res.code_chunks, res.vocabulary = stats.chunks, stats.code_chunks, stats.vocabulary or 0
        sessions = store.session_counts()

        say("corpus")
        if corpus == "npm":
            say(
                f"  files       {sum(res.files.values()):,} markdown files: npm's docs/content x {res.replicas:,} "
                f"replicas, file-backed; text {res.text_bytes / 1e6:,.1f} MB"
            )
        else:
            say(
                f"  files       {sum(res.files.values()):,} (markdown {res.files['markdown']:,}, json {res.files['json']:,}, "
                f"logs {res.files['plain']:,}); text {res.text_bytes / 1e6:,.1f} MB"
            )
        say(
            f"  chunks      {res.chunks:,} actual in the store (predicted {res.predicted_chunks:,}; "
            f"{res.chunks / target - 1:+.1%} vs target); code {res.code_chunks:,}, prose {res.chunks - res.code_chunks:,}"
        )
        say("  sessions    " + ", ".join(f"{s or '(none)'} {n:,}" for s, n in sessions))
        say(f"  vocabulary  {res.vocabulary:,} words in the vocabulary table")
        say("index" + ("  (store reused from --keep; figures of the run that built it)" if res.reused else ""))
        say(
            f"  throughput  {res.mb_per_s:,.2f} MB/s, {res.chunks_per_s:,.0f} chunks/s "
            f"(wall clock of index_text, vocabulary insertion included, and of the end-of-run FTS5 merge: "
            f"{res.merge_s:,.2f} s)"
        )
        if res.progress:
            say(
                "  by quarter  "
                + " | ".join(f"{lo:,}-{hi:,}: {rate:,.0f} chunks/s" for lo, hi, rate in quarter_rates(res.progress))
                + "  (a falling rate means per-file cost grows with the store)"
            )

        # Queries: each timed search is cold for the retriever-run cache; its
        # floor and a counterfactual re-run are timed right beside it.
        t0 = time.perf_counter()
        queries = _queries_for(corpus, vocab, queries_per_size, seed, rounds)
        res.query_build_s = time.perf_counter() - t0
        for q in queries[:WARMUP_QUERIES]:
            search(store, q.params)
            time_floor(store, floor_statements(store, q.params))
            time_floor(store, floor_statements(store, q.params, reference=False))
        what_if = Variant(fusion_key="rowid")
        t_all = time.perf_counter()
        for i, q in enumerate(queries):
            statements = floor_statements(store, q.params)
            own_statements = floor_statements(store, q.params, reference=False)
            _clear_run_cache(store)
            # rotate the order, so no side always finds the pages warm
            for step in ("traced", "floor", "own")[i % 3 :] + ("traced", "floor", "own")[: i % 3]:
                if step == "floor":
                    fl = time_floor(store, statements)
                elif step == "own":
                    own = time_floor(store, own_statements)
                else:
                    t0 = time.perf_counter()
                    trace = search(store, q.params)
                    ms = (time.perf_counter() - t0) * 1000.0
            t0 = time.perf_counter()
            search(store, replace(q.params, variant=what_if))
            res.counterfactual_ms.append((time.perf_counter() - t0) * 1000.0)
            res.latencies_ms.append(ms)
            res.floor_ms.append(fl)
            res.own_floor_ms.append(own)
            res.floor_by_category[q.category].append(fl)
            for stage, sms in trace.timings_ms:
                res.stages_ms[stage].append(sms)
            res.layers[trace.layer] += 1
            method = getattr(trace.refresh, "method", None)
            if method:
                res.refresh_methods[method] += 1
            for run in (r for p in (trace.first, trace.fuzzy.rerun) if p for r in (p.porter, p.trigram)):
                if run.skipped or run.cached:
                    continue
                res.rankings[ranking_label(run)] += 1
            res.by_category[q.category].append((ms, trace.layer, q.params.limit))
        res.query_s = time.perf_counter() - t_all
        _clear_run_cache(store)

        lat = res.latencies_ms
        n10 = sum(1 for q in queries if q.params.limit == 10)
        say(
            f"query latency  ({len(lat)} searches: {len(lat) - n10} with limit 3, {n10} with limit 10; "
            f"wall clock per search() call with the full trace, retriever-run cache cleared before each; ms; "
            f"{WARMUP_QUERIES} warm-up searches not counted)"
        )
        rows: list[tuple] = [
            ("all queries", len(lat), percentile(lat, 50), percentile(lat, 95), max(lat), sum(lat) / len(lat))
        ]
        for lim in (3, 10):
            sub = [t for q, t in zip(queries, lat) if q.params.limit == lim]
            if sub and n10:
                rows.append(
                    (f"limit {lim}", len(sub), percentile(sub, 50), percentile(sub, 95), max(sub), sum(sub) / len(sub))
                )
        for label, floor_list in (("floor", res.floor_ms), ("own floor", res.own_floor_ms)):
            rows.append(
                (
                    label,
                    len(floor_list),
                    percentile(floor_list, 50),
                    percentile(floor_list, 95),
                    max(floor_list),
                    sum(floor_list) / len(floor_list),
                )
            )
        cf = res.counterfactual_ms
        rows.append(("counterfactual", len(cf), percentile(cf, 50), percentile(cf, 95), max(cf), sum(cf) / len(cf)))
        for line in table(("", "n", "p50", "p95", "max", "mean"), rows):
            say("  " + line)
        r50, rmed, rsum = res.ratios()
        o50, omed, osum = res.ratios(own=True)
        say(
            "  floor = the two raw FTS5 queries of the first pass as the reference writes them (ORDER BY bm25(); "
            "same row limit and connection, every row fetched); own floor = the same two as rankscope writes them "
            "(FTS5 orders the matches); both timed beside each search in the same run"
        )
        say(f"  traced / floor:     {r50:.2f}x at p50, {rmed:.2f}x median per search, {rsum:.2f}x in total")
        say(f"  traced / own floor: {o50:.2f}x at p50, {omed:.2f}x median per search, {osum:.2f}x in total")
        say(
            "  counterfactual = a what-if re-run (fusion_key=rowid) right after each search, reusing its retriever runs"
        )
        if res.refresh_methods:
            say("  refresh answers: " + ", ".join(f"{m} {n:,}" for m, n in res.refresh_methods.most_common()))
        if res.rankings:
            say(
                "  retriever runs ranked by: "
                + ", ".join(f"{m} {n:,}" for m, n in res.rankings.most_common())
                + "  (engine/pipeline/stages/topk.py; fts5 runs name why top-k declined)"
            )
        say("per stage  (trace.timings_ms, ms; n = searches in which the stage ran; porter and trigram may overlap)")
        rows = []
        for name in _stage_names(res.stages_ms):
            stage_ms = res.stages_ms[name]
            rows.append(
                (name, len(stage_ms), percentile(stage_ms, 50), percentile(stage_ms, 95), max(stage_ms), sum(stage_ms))
            )
        for line in table(("stage", "n", "p50", "p95", "max", "total"), rows):
            say("  " + line)
        say("by category  (ms; floor p50 and traced/floor at p50; layer counts)")
        rows = []
        cats = list(CATEGORY_WEIGHTS) if corpus == "synthetic" else list(npm_docs.QUERIES)
        for cat in cats:
            v = res.by_category.get(cat)
            if not v:
                continue
            cat_ms = [x[0] for x in v]
            layers = Counter(x[1] for x in v)
            f50 = percentile(res.floor_by_category[cat], 50)
            rows.append(
                (
                    cat,
                    len(v),
                    percentile(cat_ms, 50),
                    percentile(cat_ms, 95),
                    max(cat_ms),
                    f50,
                    percentile(cat_ms, 50) / f50 if f50 else float("nan"),
                    layers["rrf"],
                    layers["rrf-fuzzy"],
                    layers["none"],
                )
            )
        for line in table(
            ("category", "n", "p50", "p95", "max", "floor p50", "ratio", "rrf", "rrf-fuzzy", "none"), rows
        ):
            say("  " + line)
        say(f"layers  rrf {res.layers['rrf']:,} | rrf-fuzzy {res.layers['rrf-fuzzy']:,} | none {res.layers['none']:,}")
        if corpus == "npm":
            _rare_term_probe(store, res, rounds, say)
        res.rss_split = rss_split_mib()
    finally:
        store.close()
    try:
        # What the browser does before its first paint, on a fresh read-only handle.
        t0 = time.perf_counter()
        ro = Store.open_readonly(db)
        res.open_ms = (time.perf_counter() - t0) * 1000.0
        try:
            t0 = time.perf_counter()
            read_facts(ro)
            res.facts_ms = (time.perf_counter() - t0) * 1000.0
        finally:
            ro.close()
        res.db_bytes = os.path.getsize(db)
        res.wal_bytes = sum(os.path.getsize(db + ext) for ext in ("-wal", "-shm") if os.path.exists(db + ext))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    res.peak_rss_mib = peak_rss_mib()
    res.rss_mib = current_rss_mib()
    say("opening")
    say(
        f"  open        {res.open_ms:,.1f} ms Store.open_readonly + {res.facts_ms:,.1f} ms reading the browser's facts "
        f"(counts, sessions, labels)"
    )
    say("storage and memory")
    say(
        f"  db size     {res.db_bytes / 2**20:,.1f} MiB on disk (+ {res.wal_bytes / 2**20:,.1f} MiB -wal/-shm); "
        f"{res.db_bytes / max(res.text_bytes, 1):.1f}x the text"
    )
    rss = f", current {res.rss_mib:,.1f} MiB" if res.rss_mib is not None else ""
    if res.rss_split is not None:
        rss += (
            f"; with the store open after its searches {res.rss_split[0]:,.1f} MiB anonymous + "
            f"{res.rss_split[1]:,.1f} MiB file-backed (mapped store pages: page cache, shared)"
        )
    say(f"  peak RSS    {res.peak_rss_mib:,.1f} MiB (process high-water mark since start{rss})")
    say("phases")
    say(
        f"  generate {res.generate_s:,.1f} s | index {res.index_s:,.1f} s | build queries {res.query_build_s:,.2f} s | "
        f"queries {res.query_s:,.1f} s"
    )
    say()
    return res


def run(
    sizes: Sequence[int] = DEFAULT_SIZES,
    queries_per_size: int = DEFAULT_QUERIES,
    seed: int = DEFAULT_SEED,
    out: TextIO | None = None,
    workdir: str | None = None,
    *,
    corpus: str = "synthetic",
    rounds: int = 3,
    keep_dir: str | None = None,
) -> list[SizeResult]:
    """Run the benchmark for each size, print the report to ``out``
    (stdout by default) and return the numbers.

    Raises:
        ValueError: ``corpus="npm"`` and npm's docs are not on this machine.
    """
    out = out or sys.stdout
    docs = None
    if corpus == "npm":
        root = npm_docs.find_npm_docs()
        if root is None:
            raise ValueError("npm's docs/content folder was not found (install Node's npm, or set RANKSCOPE_NPM_DOCS)")
        docs = npm_docs.load_docs(root)
    start = time.perf_counter()
    what = (
        f"{queries_per_size} queries per size"
        if corpus == "synthetic"
        else f"80 npm-docs queries x {rounds} rounds per size, docs from {root}"
    )
    print(
        f"rankscope search benchmark  {corpus} corpus, seed {seed}, sizes {', '.join(f'{s:,}' for s in sizes)}, {what}",
        file=out,
    )
    print(
        f"python {platform.python_version()}, SQLite {sqlite_version()}, {platform.machine()}, "
        f"{os.cpu_count()} CPUs, load average {_loadavg()}, {platform.system()} {platform.release()}",
        file=out,
    )
    print(file=out)
    results = [
        run_size(size, queries_per_size, seed, out, workdir, corpus=corpus, rounds=rounds, keep_dir=keep_dir, docs=docs)
        for size in sizes
    ]
    print("summary  (ms unless marked; ratio = traced p50 / floor p50; own = traced p50 / own floor p50)", file=out)
    rows = [
        (
            r.target,
            r.chunks,
            r.text_bytes / 1e6,
            r.mb_per_s,
            r.chunks_per_s,
            percentile(r.latencies_ms, 50),
            percentile(r.latencies_ms, 95),
            max(r.latencies_ms),
            percentile(r.floor_ms, 50),
            r.ratios()[0],
            r.ratios(own=True)[0],
            percentile(r.counterfactual_ms, 50),
            percentile(r.rare_ms, 50) if r.rare_ms else float("nan"),
            r.open_ms + r.facts_ms,
            r.db_bytes / 2**20,
            r.peak_rss_mib,
        )
        for r in results
    ]
    headers = (
        "target",
        "chunks",
        "text MB",
        "MB/s",
        "chunks/s",
        "q p50",
        "q p95",
        "q max",
        "floor p50",
        "ratio",
        "own",
        "cf p50",
        "rare p50",
        "open",
        "db MiB",
        "peak RSS MiB",
    )
    for line in table(headers, rows, left=0):
        print("  " + line, file=out)
    print(
        f"load average at the end {_loadavg()}; total elapsed {time.perf_counter() - start:,.1f} s",
        file=out,
        flush=True,
    )
    return results


def sqlite_version() -> str:
    """The SQLite library the engine runs on."""
    from engine.store import sql

    return f"{sql.SQLITE_VERSION} (apsw {sql.APSW_VERSION})"


def _loadavg() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def parse_sizes(ap: argparse.ArgumentParser, text: str) -> list[int]:
    """The chunk counts of ``--sizes``: comma-separated integers (``100_000``
    allowed); anything else is ``ap``'s usage error (exit 2)."""
    try:
        return [int(s.replace("_", "")) for s in text.split(",") if s.strip()]
    except ValueError:
        ap.error(f"--sizes must be comma-separated integers; got {text!r}")


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.search", description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--corpus",
        choices=("npm", "synthetic"),
        default=None,
        help="npm: npm's own docs replicated (default when they are installed); synthetic: generated files",
    )
    ap.add_argument(
        "--sizes",
        default=None,
        help=f"comma-separated target chunk counts (default {','.join(str(s) for s in DEFAULT_SIZES)})",
    )
    ap.add_argument("--100k", dest="add_100k", action="store_true", help="also run 100,000 chunks")
    ap.add_argument("--1m", dest="add_1m", action="store_true", help="also run 1,000,000 chunks (builds a ~4 GB store)")
    ap.add_argument("--quick", action="store_true", help=f"smoke run: {QUICK_SIZES[0]} chunks only")
    ap.add_argument(
        "--queries", type=int, default=DEFAULT_QUERIES, help="queries per size, synthetic corpus (default %(default)s)"
    )
    ap.add_argument("--rounds", type=int, default=3, help="rounds of the 80 queries, npm corpus (default %(default)s)")
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED, help="random seed (default %(default)s)")
    ap.add_argument("--tmpdir", default=None, help="folder for the temporary store (default: the system temp dir)")
    ap.add_argument(
        "--keep",
        default=None,
        metavar="DIR",
        help="keep each built store in DIR and reuse it on later runs (index figures come from the build)",
    )
    args = ap.parse_args(argv)
    corpus = args.corpus or ("npm" if npm_docs.find_npm_docs() is not None else "synthetic")
    if args.quick:
        sizes = list(QUICK_SIZES)
    elif args.sizes:
        sizes = parse_sizes(ap, args.sizes)
    else:
        sizes = list(DEFAULT_SIZES)
    if args.add_100k and 100_000 not in sizes:
        sizes.append(100_000)
    if args.add_1m and 1_000_000 not in sizes:
        sizes.append(1_000_000)
    if not sizes or any(s < 1 for s in sizes):
        ap.error("every size must be a positive integer")
    if args.queries < 1 or args.rounds < 1:
        ap.error("--queries and --rounds must be at least 1")
    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
    try:
        run(sizes, args.queries, args.seed, workdir=args.tmpdir, corpus=corpus, rounds=args.rounds, keep_dir=args.keep)
    except ValueError as exc:
        ap.error(str(exc))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
