"""Browsing a store while another process writes it never reports a false
"damaged" (issue 13, item 2) and never creates a file beside it (item 1).

Each writer kind runs as a separate process on a store of context-mode's
schema (a rankscope store from ``Store.create``, and a copy of the
context-mode 1.0.169 fixture as a foreign store), adding a source with two
chunks per commit:

* ``wal`` — one WAL connection kept open (context-mode's own way);
* ``wal-reconnect`` — a WAL connection opened and closed around every commit
  (its close checkpoints and removes ``-wal``/``-shm``, so the files come and
  go between two searches, and even during one);
* ``delete`` — a rollback-journal (``journal_mode=DELETE``) store.

Meanwhile, for ``seconds`` (:func:`tests.helpers.spans`: a brief run in the
suite, a long one in the soak, ``pytest -m soak``), the test searches through
the API on one store opened *before* the writer started (so a WAL store is
first read ``immutable``), and one ``python -m tui.cli search ... --json``
subprocess after another runs beside it, each opening the store afresh:
every one must succeed with both retrievers clean, and the long-lived store
must have seen the writer's commits arrive. Every :data:`LAB_EVERY` searches
a why-not explanation and a doctor report (without the integrity copy) read
the same store and must succeed too. After the writer exits, the long-lived
store sees every row it wrote. The writer is paced (:data:`WRITER_COMMITS`) and stops at
:data:`WRITER_MAX_BYTES` of store files, and the case's temporary folder must stay under
:data:`TEMP_LIMIT` (sampled after every search); it is emptied at the end.
The counts seen go to stdout (``pytest -s``).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import stat
import subprocess
import sys

import pytest

from engine import SearchParams, Store, StoreError, search
from engine.store import sql
from engine.lab.doctor import diagnose
from engine.lab.why import why_not

from ..conftest import MODERN, REPO
from ..helpers import folder_bytes, rounds, spans

#: Every this many API searches, one why-not explanation and one doctor report too.
LAB_EVERY = 25
#: The writer commits at most about this many times in a run (it pauses ``seconds /
#: WRITER_COMMITS``, at least 5 ms, after each commit): while searches keep a read open the
#: ``-wal`` cannot restart, and grows by about 12 KB a commit ...
WRITER_COMMITS = 1500
#: ... and stops committing once its store's files (database, ``-wal``, journal) hold this many bytes.
WRITER_MAX_BYTES = 32 * 2**20
#: The case's temporary folder (stores, CLI output) stays under this many bytes.
TEMP_LIMIT = 50 * 2**20
#: The writer gives up by itself this many seconds after its test's deadline (a test that died).
WRITER_GRACE = 300

WRITER = r"""
import os, sqlite3, sys, time

path, kind, stop_file = sys.argv[1], sys.argv[2], sys.argv[3]
max_bytes, pause, seconds = int(sys.argv[4]), float(sys.argv[5]), float(sys.argv[6])


def connect():
    conn = sqlite3.connect(path, isolation_level=None, timeout=30)
    conn.execute("PRAGMA journal_mode=" + ("DELETE" if kind == "delete" else "WAL")).fetchall()
    return conn


def size():
    return sum(os.path.getsize(p) for p in (path, path + "-wal", path + "-journal") if os.path.exists(p))


keep = None if kind == "wal-reconnect" else connect()
print("ready", flush=True)
deadline = time.monotonic() + seconds
i = 0
capped = False
while not os.path.exists(stop_file) and time.monotonic() < deadline:
    if capped or size() >= max_bytes:
        capped = True  # wait for the stop file, writing nothing more
        time.sleep(0.01)
        continue
    conn = keep or connect()
    conn.execute("BEGIN IMMEDIATE")
    sid = conn.execute("INSERT INTO sources (label, chunk_count, code_chunk_count) VALUES (?, 2, 0)",
                       (f"writer-{i}.md",)).lastrowid
    for table in ("chunks", "chunks_trigram"):
        for part in range(2):
            conn.execute(
                f"INSERT INTO {table} (title, content, source_id, content_type, session_id) "
                "VALUES (?, ?, ?, 'prose', '')",
                (f"Writer {i}", f"zeppelin writer entry {i} tag{i} part {part} alpha retry " + "filler words " * 20, sid),
            )
    conn.execute("COMMIT")
    if keep is None:
        conn.close()
    i += 1
    time.sleep(pause)
print(f"wrote {i}" + (" (stopped at the size cap)" if capped else ""), flush=True)
if keep is not None:
    keep.close()
"""

KINDS = ("wal", "wal-reconnect", "delete")
QUERIES = ("zeppelin writer", "alpha retry", "journal compaction", "deploymnet chekclist", "writer part")


def _prepare(tmp_path, store_kind: str, kind: str):
    """A store of context-mode's schema with no ``-wal`` beside it, in the writer's journal mode."""
    db = tmp_path / f"{store_kind}.db"
    if store_kind == "rankscope":
        with Store.create(db) as store:
            store.index_text("seed.md", "# Seed\nzeppelin alpha retry journal compaction", "markdown")
    else:
        shutil.copy2(MODERN, db)
    if kind == "delete":
        conn = sqlite3.connect(db, isolation_level=None)
        conn.execute("PRAGMA journal_mode=DELETE").fetchall()
        conn.close()
    assert not os.path.exists(f"{db}-wal")
    return db


def _clean(trace) -> str | None:
    for run in (trace.first.porter, trace.first.trigram):
        if run.error is not None:
            return f"{run.retriever}: {run.error}"
    return None


def _cli_command(db, query: str) -> list[str]:
    return [sys.executable, "-m", "tui.cli", "search", query, "--db", str(db), "--json"]


def _cli_problem(returncode: int, stdout: str, stderr: str) -> str | None:
    """The error a CLI search showed, or ``None``."""
    if returncode != 0 or "damaged" in stderr:
        return f"rc {returncode}: {stderr.strip()[-300:]}"
    data = json.loads(stdout)
    if not isinstance(data, dict):
        return f"unexpected JSON: {stdout[:200]}"
    return None


def _cli_search(db, query: str) -> str | None:
    """One CLI search; the error it shows, or ``None``."""
    proc = subprocess.run(_cli_command(db, query), cwd=REPO, capture_output=True, text=True, timeout=300)
    return _cli_problem(proc.returncode, proc.stdout, proc.stderr)


class _CliSearches:
    """CLI searches run one after another in the background, their output in files under ``folder``."""

    def __init__(self, db, folder) -> None:
        self.db, self.out, self.err = db, folder / "cli.out", folder / "cli.err"
        self.proc: subprocess.Popen | None = None
        self.runs = 0
        self.errors: list[str] = []

    def step(self, query: str) -> None:
        """Collect the running search if it has finished; then start the next one if none runs."""
        if self.proc is not None and self.proc.poll() is not None:
            self._collect()
        if self.proc is None:
            with open(self.out, "w") as out, open(self.err, "w") as err:
                self.proc = subprocess.Popen(_cli_command(self.db, query), cwd=REPO, stdout=out, stderr=err, text=True)

    def finish(self) -> None:
        """Wait for the running search, if any, and collect it."""
        if self.proc is not None:
            self.proc.wait(timeout=300)
            self._collect()

    def _collect(self) -> None:
        assert self.proc is not None
        self.runs += 1
        problem = _cli_problem(self.proc.returncode, self.out.read_text(), self.err.read_text())
        if problem:
            self.errors.append(f"CLI search {self.runs}: {problem}")
        self.proc = None


@pytest.mark.parametrize("seconds", spans())
@pytest.mark.parametrize("store_kind", ["rankscope", "foreign"])
@pytest.mark.parametrize("kind", KINDS)
def test_searches_while_a_writer_works_never_fail(tmp_path, kind, store_kind, seconds):
    work = tmp_path / "work"
    work.mkdir()
    db = _prepare(work, store_kind, kind)
    stop = work / "stop"
    store = Store.open_readonly(db)  # opened before the writer starts
    cli = _CliSearches(db, work)
    try:
        assert store.read_mode == ("live" if kind == "delete" else "immutable")
        sources_before = store.stats().sources
        first_row = store.conn.execute("SELECT min(rowid) FROM chunks").fetchone()[0]
        writer = subprocess.Popen(
            [
                sys.executable,
                "-c",
                WRITER,
                str(db),
                kind,
                str(stop),
                str(WRITER_MAX_BYTES),
                str(max(0.005, seconds / WRITER_COMMITS)),
                str(seconds + WRITER_GRACE),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert writer.stdout.readline().strip() == "ready", writer.stderr.read()
            errors: list[str] = []
            api_runs = lab_runs = peak = 0
            for i in rounds(seconds):
                query = QUERIES[i % len(QUERIES)]
                cli.step(query)
                api_runs += 1
                try:
                    problem = _clean(search(store, SearchParams(query, limit=5)))
                except StoreError as exc:
                    problem = f"{type(exc).__name__}: {exc}"
                if problem:
                    errors.append(f"API search {i}: {problem}")
                if i % LAB_EVERY == 0:
                    # why-not and doctor read the same store: retried like a search (Store.reading)
                    lab_runs += 1
                    try:
                        (exp,) = why_not(store, SearchParams(query, limit=5), rowid=first_row)
                        assert exp.chunk.rowid == first_row
                        diagnose(store, integrity=False)
                    except StoreError as exc:
                        errors.append(f"why/doctor {i}: {type(exc).__name__}: {exc}")
                peak = max(peak, folder_bytes(work))
            cli.finish()  # the one still running (round 0 started one: at least one, however slow the machine)
            sources_seen = store.stats().sources
            peak = max(peak, folder_bytes(work))
            writer_alive = writer.poll() is None
        finally:
            stop.touch()
            out, err = writer.communicate(timeout=300)
        assert writer.returncode == 0, err
        wrote = int(out.split("wrote ")[1])
        print(
            f"\n{kind} writer on the {store_kind} store, {seconds:g} s: {wrote} commits; {api_runs} API searches, "
            f"{cli.runs} CLI searches, {lab_runs} why-not + doctor reads, {len(errors + cli.errors)} errors; "
            f"temporary files peaked at {peak / 2**20:.1f} MiB"
        )
        assert errors + cli.errors == [], (errors + cli.errors)[:5]
        assert api_runs >= 1 and cli.runs >= 1 and lab_runs >= 1
        assert writer_alive and "size cap" not in out, f"the writer stopped before the searches ended: {out.strip()}"
        assert sources_seen > sources_before, "the long-lived store saw none of the writer's commits while searching"
        assert peak < TEMP_LIMIT, f"temporary files reached {peak} bytes"
        # After the writer is gone, the long-lived store reads everything it wrote.
        assert store.stats().sources == sources_before + wrote
        # tag<N> is the last commit's own word (no longer number starts with N: it is the last),
        # for both retrievers: "zeppelin writer entry N" ranked writer-0 first when N had two digits
        top = search(store, SearchParams(f"tag{wrote - 1}", limit=3)).final
        assert top and top[0].candidate.source == f"writer-{wrote - 1}.md"
    finally:
        if cli.proc is not None:
            cli.proc.kill()
            cli.proc.wait()
        store.close()
        shutil.rmtree(work, ignore_errors=True)


def _snapshot(folder) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def _killed_writer_leaves_wal(folder):
    """A copy of the fixture whose WAL writer was killed after a commit it had
    not checkpointed (``late.md``, "zeppelin arrives"); its ``-shm`` is then
    removed, as after a reboot that cleared shared memory."""
    db = folder / "S.db"
    shutil.copy2(MODERN, db)
    script = r"""
import os, signal, sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("PRAGMA journal_mode=WAL").fetchall()
conn.execute("PRAGMA wal_autocheckpoint=0").fetchall()
conn.execute("BEGIN IMMEDIATE")
sid = conn.execute("INSERT INTO sources (label, chunk_count, code_chunk_count) VALUES ('late.md', 1, 0)").lastrowid
for table in ("chunks", "chunks_trigram"):
    conn.execute(f"INSERT INTO {table} (title, content, source_id, content_type, session_id) "
                 "VALUES ('Late', 'zeppelin arrives', ?, 'prose', '')", (sid,))
conn.execute("COMMIT")
os.kill(os.getpid(), signal.SIGKILL)
"""
    proc = subprocess.run([sys.executable, "-c", script, str(db)], capture_output=True, text=True)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert os.path.getsize(f"{db}-wal") > 0
    os.remove(f"{db}-shm")
    return db


@pytest.mark.parametrize("read_only_folder", [False, True], ids=["writable-folder", "read-only-folder"])
def test_leftover_wal_without_shm_creates_nothing(tmp_path, read_only_folder):
    folder = tmp_path / "f"
    folder.mkdir()
    db = _killed_writer_leaves_wal(folder)
    before = _snapshot(folder)
    if read_only_folder:
        os.chmod(folder, stat.S_IRUSR | stat.S_IXUSR)
    try:
        store = Store.open_readonly(db)
        try:
            assert store.read_mode == "copy"
            for _ in range(3):
                trace = search(store, SearchParams("zeppelin", limit=3))
                assert _clean(trace) is None
                assert trace.final[0].candidate.source == "late.md"  # the WAL's commit is read
            assert store.stats().sources == 12
        finally:
            store.close()
        assert _cli_search(db, "zeppelin") is None
        assert _snapshot(folder) == before  # nothing created, nothing changed
    finally:
        os.chmod(folder, 0o755)


def test_a_writer_that_starts_after_an_immutable_open_and_exits(tmp_path):
    """Item 2's first reproduction: opened ``immutable`` (nobody writing), then
    a WAL writer commits and exits; every later search reads its rows."""
    db = tmp_path / "c.db"
    shutil.copy2(MODERN, db)
    store = Store.open_readonly(db)
    try:
        assert store.read_mode == "immutable"
        assert _clean(search(store, SearchParams("zeppelin"))) is None
        # In this process, so through the same SQLite library (two libraries in
        # one process would break each other's POSIX locks).
        conn = sql.connect(str(db))
        conn.execute("PRAGMA journal_mode=WAL").fetchall()
        for i in range(30):
            conn.execute("BEGIN IMMEDIATE")
            conn.execute(
                "INSERT INTO sources (label, chunk_count, code_chunk_count) VALUES (?, 1, 0)", (f"late{i}.md",)
            )
            sid = conn.last_insert_rowid()
            for table in ("chunks", "chunks_trigram"):
                conn.execute(
                    f"INSERT INTO {table} (title, content, source_id, content_type, session_id) "
                    "VALUES ('Late', ?, ?, 'prose', '')",
                    (f"zeppelin arrives {'word ' * 300}{i}", sid),
                )
            conn.execute("COMMIT")
            assert _clean(search(store, SearchParams("zeppelin arrives", limit=3))) is None
        assert store.read_mode == "live"
        conn.close()  # checkpoints into the main file and removes -wal/-shm... unless we hold it open
        for _ in range(5):
            trace = search(store, SearchParams("zeppelin arrives", limit=50))
            assert _clean(trace) is None
            assert len({r.candidate.source for r in trace.final}) == 30
        assert store.stats().sources == 11 + 30
    finally:
        store.close()


def test_a_failure_that_goes_away_is_retried_and_a_stable_one_is_damage(tmp_path):
    """:meth:`Store.reading`: a damage code once (a writer's change) is read
    again; the same code twice on unchanged files is reported as damage; an
    error of another kind is not retried."""
    import apsw

    from engine.store.errors import CorruptStoreError

    db = tmp_path / "c.db"
    shutil.copy2(MODERN, db)
    with Store.open_readonly(db) as store:
        calls = []

        def flaky(conn):
            calls.append(conn)
            if len(calls) == 1:
                raise apsw.CorruptError("database disk image is malformed")
            return "answer"

        assert store.reading(flaky) == "answer" and len(calls) == 2

        def damaged(conn):
            calls.append(conn)
            raise apsw.CorruptError("database disk image is malformed")

        calls.clear()
        with pytest.raises(CorruptStoreError, match="is damaged"):
            store.reading(damaged)
        assert len(calls) == 2  # confirmed on a second read of the same, unchanged files

        def refused(conn):
            calls.append(conn)
            raise apsw.ReadOnlyError("attempt to write a readonly database")

        calls.clear()
        with pytest.raises(StoreError, match="cannot write to"):
            store.reading(refused, action="write to")
        assert len(calls) == 1


def test_why_not_and_doctor_retry_a_read_a_writer_broke(tmp_path, monkeypatch):
    """A damage code once (what a concurrent writer can cause) is read again
    by why-not and doctor, as by a search; the same code twice on unchanged
    files is reported as damage."""
    import apsw

    import engine.lab.doctor as doctor_mod
    import engine.lab.why as why_mod
    from engine.store.errors import CorruptStoreError

    db = tmp_path / "c.db"
    shutil.copy2(MODERN, db)
    with Store.open_readonly(db) as store:
        row = store.conn.execute("SELECT min(rowid) FROM chunks").fetchone()[0]
        for mod, name, call in (
            (why_mod, "find_chunks", lambda: why_not(store, SearchParams("store"), rowid=row)),
            (doctor_mod, "count_mismatches", lambda: diagnose(store, integrity=False)),
        ):
            real = getattr(mod, name)
            failures = []

            def once(*args, real=real, failures=failures, **kwargs):
                if not failures:
                    failures.append(1)
                    raise apsw.CorruptError("database disk image is malformed")
                return real(*args, **kwargs)

            monkeypatch.setattr(mod, name, once)
            assert call() and failures == [1], name

            def always(*args, **kwargs):
                raise apsw.CorruptError("database disk image is malformed")

            monkeypatch.setattr(mod, name, always)
            with pytest.raises(CorruptStoreError, match="is damaged"):
                call()
            monkeypatch.setattr(mod, name, real)
