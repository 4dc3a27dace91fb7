"""``agent-log --follow``: each ctx_search call another process appends to a
copy of the session fixture, the way context-mode's hooks write it (a
separate process, WAL mode, the call's rows in one transaction, closed
after), is printed within a second; the follower creates no file beside the
DB and survives the DB being replaced or truncated; Ctrl-C ends it cleanly.
"""

from __future__ import annotations

import json
import os
import selectors
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.agent.follow import SessionFollower

from .conftest import PLUGIN_STORE, SESSION_DB
from .helpers import append_call

RANKSCOPE = [sys.executable, "-m", "tui.cli"]


class Follow:
    """``rankscope agent-log --follow`` as a child process, its stdout read line by line."""

    def __init__(self, db: Path, *extra: str):
        env = dict(os.environ, PYTHONUNBUFFERED="1", COLUMNS="200")
        self.proc = subprocess.Popen(
            [*RANKSCOPE, "agent-log", "--sessions-db", str(db), "--follow", *extra],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=Path(__file__).resolve().parent.parent,
        )
        self.sel = selectors.DefaultSelector()
        assert self.proc.stdout is not None and self.proc.stderr is not None
        os.set_blocking(self.proc.stdout.fileno(), False)
        os.set_blocking(self.proc.stderr.fileno(), False)
        self.sel.register(self.proc.stdout, selectors.EVENT_READ, "out")
        self.sel.register(self.proc.stderr, selectors.EVENT_READ, "err")
        self.buf = {"out": b"", "err": b""}

    def line(self, stream: str, deadline: float, contains: str = "") -> tuple[str, float]:
        """The next line of ``stream`` holding ``contains``, and when it arrived."""
        while True:
            while b"\n" in self.buf[stream]:
                raw, self.buf[stream] = self.buf[stream].split(b"\n", 1)
                text = raw.decode("utf-8")
                if contains in text:
                    return text, time.time()
            left = deadline - time.time()
            if left <= 0:
                raise AssertionError(f"no {stream} line with {contains!r} in time; stderr so far: {self.buf['err']!r}")
            for key, _ in self.sel.select(timeout=left):
                chunk = key.fileobj.read()  # type: ignore[union-attr]
                if chunk:
                    self.buf[key.data] += chunk

    def stop(self) -> tuple[int, str]:
        """Ctrl-C; the exit status and the rest of stderr."""
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=10)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
        assert self.proc.stderr is not None
        rest = self.buf["err"] + (self.proc.stderr.read() or b"")
        return self.proc.returncode, rest.decode("utf-8")


@pytest.fixture
def session_copy(tmp_path) -> Path:
    folder = tmp_path / "sessions"
    folder.mkdir()
    db = folder / "5399b2ea68c12e92.db"
    shutil.copyfile(SESSION_DB, db)
    return db


def test_a_call_appended_by_another_process_is_printed_within_a_second(session_copy):
    follow = Follow(session_copy, "--json", "--db", str(PLUGIN_STORE))
    try:
        follow.line("err", time.time() + 30, "following")
        assert sorted(os.listdir(session_copy.parent)) == [session_copy.name]  # nothing created beside it
        committed = append_call(session_copy)
        line, seen = follow.line("out", committed + 5)
        latency = seen - committed
        call = json.loads(line)
        assert (
            call["event_id"] == 77
            and call["queries"] == ["sextant"]
            and call["params"]
            == {
                "queries": ["sextant"],
                "source": "ops",
            }
        )
        assert call["received"]["throttle"] == {
            "count": 5,
            "block_after": "8",
            "warning": True,
            "per_query": "1",
            "blocked": False,
            "blocked_seconds": None,
        }
        assert call["received"]["queries"] == [{"query": "sextant", "status": "results", "results": 1}]
        assert call["received"]["bytes"] == 643 and call["received"]["snippets_cut"] == 0
        assert call["replay"]["outcome"] == "same"
        assert latency < 1.0, f"printed {latency:.2f} s after the commit"
        # a second call, a few polls later, is printed once
        committed = append_call(session_copy, 3)
        line, seen = follow.line("out", committed + 5)
        assert json.loads(line)["event_id"] == 81 and seen - committed < 1.0
        assert sorted(os.listdir(session_copy.parent)) == [session_copy.name]
    finally:
        code, err = follow.stop()
    assert code == 0 and "Traceback" not in err and "stopped following" in err


def test_follow_survives_the_db_replaced_and_truncated(session_copy, tmp_path):
    follow = Follow(session_copy)
    try:
        follow.line("err", time.time() + 30, "following")
        # replaced: another file renamed over it (a new inode), then a call appended to the new file
        fresh = tmp_path / "fresh.db"
        shutil.copyfile(SESSION_DB, fresh)
        os.replace(fresh, session_copy)
        follow.line("err", time.time() + 5, "was replaced")
        # followed from its start again, like tail -F: the 13 recorded calls, then the new one
        for _ in range(13):
            follow.line("out", time.time() + 5, "  ")
        committed = append_call(session_copy)
        line, seen = follow.line("out", committed + 5, "sextant")
        assert seen - committed < 1.0
        # truncated to nothing: a notice, and the follower waits
        with open(session_copy, "r+b") as fh:
            fh.truncate(0)
        follow.line("err", time.time() + 5, "cannot read")
        # the hooks create it again: followed from its start
        shutil.copyfile(SESSION_DB, session_copy)
        follow.line("err", time.time() + 5, "readable again")
        committed = append_call(session_copy)
        line, _ = follow.line("out", committed + 5, "sextant")
        assert "#5/8 ⚠ 1/query" in line and "1 result (sextant 1), 643 B" in line
    finally:
        code, err = follow.stop()
    assert code == 0 and "Traceback" not in err


def test_follower_reads_only_new_rows_and_is_idle_when_nothing_changes(session_copy, monkeypatch):
    follower = SessionFollower(str(session_copy))
    assert follower.poll().calls == () and follower.last_id == 75
    opened = []
    import engine.agent.follow as follow_module

    real = follow_module.SessionDb
    monkeypatch.setattr(follow_module, "SessionDb", lambda p: opened.append(p) or real(p))
    for _ in range(20):
        assert follower.poll().calls == ()
    assert opened == []  # unchanged files: four stat calls a poll, the DB is not opened
    append_call(session_copy)
    update = follower.poll()
    assert [c.event_id for c in update.calls] == [77] and len(opened) == 1
    assert SessionFollower(str(session_copy), from_start=True).poll().calls[0].event_id == 4
