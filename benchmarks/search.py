"""Search benchmark: synthetic corpus, index throughput, per-stage latency, peak RSS.

Run it as a script (it is not a test)::

    python -m benchmarks.search                   # sizes 10000,100000
    python -m benchmarks.search --quick           # 2000 chunks, smoke run
    python -m benchmarks.search --sizes 5000 --queries 400 --seed 7

For each target size the script

1. generates a deterministic synthetic corpus (seeded :class:`random.Random`):
   a vocabulary of a few thousand pronounceable pseudo-words drawn with a
   Zipf-like distribution, mixed with real English tech words (so queries
   can be written) and stopword "glue"; files are markdown (an ``#`` title
   with an intro, then ``##`` sections of ~300-800 bytes, some with a fenced
   code block), JSON (an object of flat records, one chunk each) and plain
   text logs (blank-line separated blocks, one chunk each), spread over the
   sessions ``sess-a``/``sess-b``/``sess-c`` (about 10% of files unattributed);
2. indexes it file by file with :meth:`Store.index_text` into a fresh on-disk
   store in a temporary folder and reports MB/s and chunks/s (wall clock of
   the ``index_text`` calls, which include the vocabulary insertion);
3. runs a fixed, seeded query set (single terms of several frequencies,
   2-3 term queries, typos that need the fuzzy fallback, no-match words,
   session allow-sets, content-type and source filters; limit 3, about a
   quarter with limit 10) and reports wall-clock latency per query
   (p50/p95/max), per pipeline stage (from ``trace.timings_ms``) and per
   query category, with the answering layer counts;
4. prints the peak RSS of the process and the size of the database on disk.

The chunk count is controlled by construction (each markdown section, JSON
record and log block is exactly one chunk); the count reported is the one
read back from the store. :func:`run` is importable for smoke tests.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import resource
import shutil
import sqlite3
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Iterator, Sequence, TextIO

from engine.model import FUZZY_PREFIX, SearchParams
from engine.pipeline import search
from engine.query import STOPWORDS
from engine.stages import STAGES
from engine.store import Store

DEFAULT_SIZES = (10_000, 100_000)
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
    "the", "of", "and", "to", "in", "is", "for", "on", "with", "that", "this", "as", "it", "from", "by",
    "at", "or", "be", "are", "when", "which", "should", "into", "then", "each", "after", "before", "not",
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
    raw = [1.0 / (rank ** s) for rank in range(1, n + 1)]
    total = sum(raw)
    return [w / total for w in raw]


def _pseudo_word(rng: random.Random) -> str:
    return "".join(
        rng.choice(_ONSETS) + rng.choice(_VOWELS) + rng.choice(_CODAS) for _ in range(rng.randint(2, 3))
    )


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
        self._content_cum = list(accumulate(
            [0.2 * w for w in _zipf_weights(len(self.tech))] + [0.8 * w for w in _zipf_weights(len(self.pseudo), 1.05)]
        ))
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
            cand = word[:i] + rng.choice(letters) + word[i + 1:]
        elif op == 1:
            cand = word[:i] + word[i + 1:]
        elif op == 2:
            cand = word[:i] + rng.choice(letters) + word[i:]
        else:
            cand = word[:i] + word[i + 1] + word[i] + word[i + 2:]
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

#: Stage ids in table order (:data:`engine.stages.STAGES`).
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
    """Numbers of one size (also returned by :func:`run`)."""

    target: int
    files: Counter = field(default_factory=Counter)
    predicted_chunks: int = 0
    chunks: int = 0
    code_chunks: int = 0
    vocabulary: int = 0
    text_bytes: int = 0
    generate_s: float = 0.0
    index_s: float = 0.0
    query_build_s: float = 0.0
    query_s: float = 0.0
    latencies_ms: list[float] = field(default_factory=list)
    stages_ms: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    by_category: dict[str, list[tuple[float, str, int]]] = field(default_factory=lambda: defaultdict(list))
    layers: Counter = field(default_factory=Counter)
    db_bytes: int = 0
    wal_bytes: int = 0
    peak_rss_mib: float = 0.0
    rss_mib: float | None = None
    #: ``(cumulative chunks, cumulative index seconds)`` after each file.
    progress: list[tuple[int, float]] = field(default_factory=list)

    @property
    def mb_per_s(self) -> float:
        return self.text_bytes / 1e6 / self.index_s if self.index_s else float("nan")

    @property
    def chunks_per_s(self) -> float:
        return self.chunks / self.index_s if self.index_s else float("nan")


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


def _stage_names(stages: dict[str, list[float]]) -> list[str]:
    """The timed stage ids in table order, the fuzzy re-run's after the first pass's."""
    names = [s for s in STAGE_ORDER if s in stages]
    names += [FUZZY_PREFIX + s for s in STAGE_ORDER if FUZZY_PREFIX + s in stages]
    names += [s for s in stages if s not in names]
    return names


def run_size(target: int, queries_per_size: int, seed: int, out: TextIO, workdir: str | None = None) -> SizeResult:
    """Generate, index and query one size; print its report to ``out``."""
    res = SizeResult(target)

    def say(line: str = "") -> None:
        print(line, file=out, flush=True)

    say(f"== size {target:,} chunks (target) " + "=" * 40)
    rng = random.Random(seed)
    vocab = Vocabulary(rng)
    gen = CorpusGenerator(vocab, rng)
    tmp = tempfile.mkdtemp(prefix="rankscope-bench-", dir=workdir)
    db = os.path.join(tmp, "bench.db")
    store = Store.create(db)
    try:
        # Phase 1+2: generate and index, file by file (the corpus is never held
        # in memory whole); the two phases are timed separately.
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
        stats = store.stats()
        res.chunks, res.code_chunks, res.vocabulary = stats["chunks"], stats["code_chunks"], stats["vocabulary"]
        sessions = store.session_counts()

        say("corpus")
        say(
            f"  files       {sum(res.files.values()):,} (markdown {res.files['markdown']:,}, json {res.files['json']:,}, "
            f"logs {res.files['plain']:,}); text {res.text_bytes / 1e6:,.1f} MB"
        )
        say(f"  chunks      {res.chunks:,} actual in the store (predicted {res.predicted_chunks:,}; "
            f"{res.chunks / target - 1:+.1%} vs target); code {res.code_chunks:,}, prose {res.chunks - res.code_chunks:,}")
        say("  sessions    " + ", ".join(f"{s or '(none)'} {n:,}" for s, n in sessions))
        say(f"  vocabulary  {res.vocabulary:,} words in the vocabulary table")
        say("index")
        say(f"  throughput  {res.mb_per_s:,.2f} MB/s, {res.chunks_per_s:,.0f} chunks/s "
            f"(wall clock of index_text, vocabulary insertion included)")
        say("  by quarter  " + " | ".join(
            f"{lo:,}-{hi:,}: {rate:,.0f} chunks/s" for lo, hi, rate in quarter_rates(res.progress)
        ) + "  (a falling rate means per-file cost grows with the store)")

        # Phase 3: queries.
        t0 = time.perf_counter()
        queries = build_queries(vocab, queries_per_size, seed)
        res.query_build_s = time.perf_counter() - t0
        for q in queries[:WARMUP_QUERIES]:
            search(store, q.params)
        t_all = time.perf_counter()
        for q in queries:
            t0 = time.perf_counter()
            trace = search(store, q.params)
            ms = (time.perf_counter() - t0) * 1000.0
            res.latencies_ms.append(ms)
            for stage, sms in trace.timings_ms:
                res.stages_ms[stage].append(sms)
            res.layers[trace.layer] += 1
            res.by_category[q.category].append((ms, trace.layer, q.params.limit))
        res.query_s = time.perf_counter() - t_all

        lat = res.latencies_ms
        n10 = sum(1 for q in queries if q.params.limit == 10)
        say(f"query latency  ({len(lat)} queries: {len(lat) - n10} with limit 3, {n10} with limit 10; "
            f"wall clock per search() call, ms; {WARMUP_QUERIES} warm-up queries not counted)")
        rows: list[tuple] = [("all queries", len(lat), percentile(lat, 50), percentile(lat, 95), max(lat), sum(lat) / len(lat))]
        for lim in (3, 10):
            sub = [ms for q, ms in zip(queries, lat) if q.params.limit == lim]
            if sub:
                rows.append((f"limit {lim}", len(sub), percentile(sub, 50), percentile(sub, 95), max(sub), sum(sub) / len(sub)))
        for line in table(("", "n", "p50", "p95", "max", "mean"), rows):
            say("  " + line)
        say("per stage  (trace.timings_ms, ms; n = queries in which the stage ran)")
        rows = []
        for name in _stage_names(res.stages_ms):
            stage_ms = res.stages_ms[name]
            rows.append((name, len(stage_ms), percentile(stage_ms, 50), percentile(stage_ms, 95), max(stage_ms),
                         sum(stage_ms)))
        for line in table(("stage", "n", "p50", "p95", "max", "total"), rows):
            say("  " + line)
        say("by category  (ms; layer counts)")
        rows = []
        for cat in CATEGORY_WEIGHTS:
            runs = res.by_category.get(cat)
            if not runs:
                continue
            cat_ms = [x[0] for x in runs]
            layers = Counter(x[1] for x in runs)
            rows.append((cat, len(runs), sum(1 for x in runs if x[2] == 10), percentile(cat_ms, 50),
                         percentile(cat_ms, 95), max(cat_ms),
                         layers["rrf"], layers["rrf-fuzzy"], layers["none"]))
        for line in table(("category", "n", "lim10", "p50", "p95", "max", "rrf", "rrf-fuzzy", "none"), rows):
            say("  " + line)
        say(f"layers  rrf {res.layers['rrf']:,} | rrf-fuzzy {res.layers['rrf-fuzzy']:,} | none {res.layers['none']:,}")

        res.db_bytes = os.path.getsize(db)
        res.wal_bytes = sum(os.path.getsize(db + ext) for ext in ("-wal", "-shm") if os.path.exists(db + ext))
    finally:
        store.close()
        shutil.rmtree(tmp, ignore_errors=True)
    res.peak_rss_mib = peak_rss_mib()
    res.rss_mib = current_rss_mib()
    say("storage and memory")
    say(f"  db size     {res.db_bytes / 2**20:,.1f} MiB on disk (+ {res.wal_bytes / 2**20:,.1f} MiB -wal/-shm); "
        f"{res.db_bytes / max(res.text_bytes, 1):.1f}x the text")
    rss = f", current {res.rss_mib:,.1f} MiB" if res.rss_mib is not None else ""
    say(f"  peak RSS    {res.peak_rss_mib:,.1f} MiB (process high-water mark since start{rss})")
    say("phases")
    say(f"  generate {res.generate_s:,.1f} s | index {res.index_s:,.1f} s | build queries {res.query_build_s:,.2f} s | "
        f"queries {res.query_s:,.1f} s")
    say()
    return res


def run(
    sizes: Sequence[int] = DEFAULT_SIZES,
    queries_per_size: int = DEFAULT_QUERIES,
    seed: int = DEFAULT_SEED,
    out: TextIO | None = None,
    workdir: str | None = None,
) -> list[SizeResult]:
    """Run the benchmark for each size, print the report to ``out``
    (stdout by default) and return the numbers."""
    out = out or sys.stdout
    start = time.perf_counter()
    print(f"rankscope search benchmark  seed {seed}, sizes {', '.join(f'{s:,}' for s in sizes)}, "
          f"{queries_per_size} queries per size", file=out)
    print(f"python {platform.python_version()}, SQLite {sqlite3.sqlite_version}, {platform.machine()}, "
          f"{os.cpu_count()} CPUs, {platform.system()} {platform.release()}", file=out)
    print(file=out)
    results = [run_size(size, queries_per_size, seed, out, workdir) for size in sizes]
    print("summary", file=out)
    rows = [
        (r.target, r.chunks, r.text_bytes / 1e6, r.index_s, r.mb_per_s, r.chunks_per_s,
         percentile(r.latencies_ms, 50), percentile(r.latencies_ms, 95), max(r.latencies_ms),
         r.db_bytes / 2**20, r.peak_rss_mib)
        for r in results
    ]
    headers = ("target", "chunks", "text MB", "index s", "MB/s", "chunks/s", "q p50 ms", "q p95 ms", "q max ms",
               "db MiB", "peak RSS MiB")
    for line in table(headers, rows, left=0):
        print("  " + line, file=out)
    print(f"total elapsed {time.perf_counter() - start:,.1f} s", file=out, flush=True)
    return results


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.search", description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default=",".join(str(s) for s in DEFAULT_SIZES),
                    help="comma-separated target chunk counts (default %(default)s)")
    ap.add_argument("--quick", action="store_true", help=f"smoke run: {QUICK_SIZES[0]} chunks only")
    ap.add_argument("--queries", type=int, default=DEFAULT_QUERIES, help="queries per size (default %(default)s)")
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED, help="random seed (default %(default)s)")
    ap.add_argument("--tmpdir", default=None, help="folder for the temporary store (default: the system temp dir)")
    args = ap.parse_args(argv)
    try:
        sizes = list(QUICK_SIZES) if args.quick else [int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()]
    except ValueError:
        ap.error(f"--sizes must be comma-separated integers; got {args.sizes!r}")
    if not sizes or any(s < 1 for s in sizes):
        ap.error("every size must be a positive integer")
    if args.queries < 1:
        ap.error("--queries must be at least 1")
    run(sizes, args.queries, args.seed, workdir=args.tmpdir)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
