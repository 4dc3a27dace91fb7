"""Nothing from a store reaches a terminal raw (issue 26, class 7).

Every command (from :data:`tests.command_lines.COMMAND_LINES`, so a new
command is covered) runs on a terminal (a pseudo-terminal, so that the
command sees ``isatty()`` as a user's shell gives it) against a world whose
file names, titles, content, query ids and texts, session DB queries and
snapshot chunk ids carry an OSC window-title sequence (``ESC ] 0;pwned
BEL``), a screen-clearing CSI (``ESC [2J``) and a RIGHT-TO-LEFT OVERRIDE.
None of them may arrive as bytes; each must arrive visible (``␛``, ``␇``,
``⟨RLO⟩``). Before the fix ``ctx-search`` wrote the answer raw (the window
title changed). Piped, ``ctx-search`` keeps the answer's exact bytes (the
README says so). Many unknown ``--session`` ids are one warning line.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import select
import sqlite3
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from tui.cli.main import file_parameters

from .command_lines import COMMAND_LINES, LONG_RUNNING, command_line, fresh_factory, make_world

REPO = Path(__file__).resolve().parent.parent
PARAMS = list(file_parameters())

OSC = "\x1b]0;pwned\x07"
CSI = "\x1b[2J"
RLO = "\u202e"
PAYLOAD = OSC + CSI + RLO
#: Bytes that must never reach the terminal (Rich's own colours, ``ESC [ … m``, may).
FORBIDDEN = [b"\x1b]", b"\x07", b"\x1b[2J", RLO.encode()]
#: What the payload looks like when shown (as text, or escaped in JSON).
VISIBLE = ["\u241b", "\u2407", "\u27e8RLO\u27e9", "\\u001b", "\\u202e"]

CORPUS = {
    f"a{OSC}.md": f"# Zebra {PAYLOAD}\nzebra crossing {PAYLOAD} text\n## Dup {OSC}\nzebra one\n## Dup {OSC}\nzebra two\n",
    "b.md": "# Crossing\ncross the zebra crossing guide here\n",
}
QUERIES = [{"id": f"q1{OSC}", "query": f"zebra {RLO}x"}, {"id": "q2", "query": "crossing guide"}]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile")
    w = make_world(root, CORPUS, QUERIES, tag=OSC)
    # the agent searched for the payload (agent-log shows its queries)
    with sqlite3.connect(w["session-db"]) as c:
        c.execute(
            "UPDATE session_events SET data = json_set(data, '$.params.queries[0]', ?) WHERE id = 4",
            (f"backpressure {PAYLOAD}",),
        )
    c.close()
    # a snapshot whose final list had a chunk id with the payload (check prints it as left)
    snap = json.loads(Path(w["snapshot"]).read_text("utf-8"))
    snap["queries"][0]["stages"]["final"].append(f"gone{OSC}.md::Old {PAYLOAD}")
    Path(w["snapshot"]).write_text(json.dumps(snap), "utf-8")
    # a context-mode content folder holding the store (stores lists it)
    content = root / "cm" / "content"
    content.mkdir(parents=True)
    (content / f"x{OSC}.db").write_bytes(Path(w["store"]).read_bytes())
    w["context-mode-dir"] = root / "cm"
    return w


def run_on_terminal(argv: list[str], env: dict[str, str], cwd: Path, timeout: float = 120) -> tuple[int, bytes]:
    """Run ``rankscope argv`` with stdin, stdout and stderr on a new
    pseudo-terminal (120 × 40); its exit status and every byte it wrote."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    proc = subprocess.Popen(
        [sys.executable, "-m", "tui.cli", *argv], stdin=slave, stdout=slave, stderr=slave, env=env, cwd=cwd
    )
    os.close(slave)
    out = b""
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.5)
            if ready:
                try:
                    chunk = os.read(master, 1 << 16)
                except OSError:  # EIO: the child closed its side
                    break
                if not chunk:
                    break
                out += chunk
            elif proc.poll() is not None:
                break
        else:
            proc.kill()
            raise AssertionError(f"rankscope {argv[0]} still running after {timeout} s")
    finally:
        os.close(master)
    return proc.wait(timeout=30), out


def _terminal_env(world, tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "TERM": "xterm-256color",
        "COLUMNS": "120",
        "CONTEXT_MODE_DIR": str(world["context-mode-dir"]),
        "RANKSCOPE_DATA_DIR": str(tmp_path / f"data{OSC}"),
        "RANKSCOPE_CACHE_DIR": str(tmp_path / "cache"),
    }


COMMANDS = [words for words in COMMAND_LINES if words not in LONG_RUNNING]


@pytest.mark.parametrize("words", COMMANDS, ids=lambda w: " ".join(w))
def test_store_text_reaches_a_terminal_visible_never_raw(words, world, tmp_path):
    argv = command_line(words, PARAMS, world, fresh_factory(tmp_path / f"fresh{OSC}"))
    code, out = run_on_terminal(argv, _terminal_env(world, tmp_path), tmp_path)
    assert b"Traceback" not in out, out.decode(errors="replace")
    for raw in FORBIDDEN:
        assert raw not in out, f"{raw!r} reached the terminal: {out.decode(errors='replace')[:3000]}"
    text = out.decode("utf-8", errors="replace")
    assert any(v in text for v in VISIBLE), f"nothing hostile was shown, the case tests nothing: {text[:2000]}"


def test_ctx_search_piped_keeps_the_exact_answer(world, tmp_path):
    """The documented exception: piped (or with --json), the answer is the
    bytes context-mode would send."""
    r = subprocess.run(
        [sys.executable, "-m", "tui.cli", "ctx-search", "zebra", "--db", str(world["store"])],
        capture_output=True,
        env=_terminal_env(world, tmp_path),
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    assert OSC.encode() in r.stdout and RLO.encode() in r.stdout


#: Every command with a session allow-set, and its option.
SESSION_OPTIONS = [
    (("search",), [], "--session"),
    (("compare",), ["--queries", "<drop>", "zebra"], "--session"),
    (("why",), [], "--session"),
    (("explain",), [], "--session"),
    (("why",), ["--agent"], "--session"),
    (("ctx-search",), ["zebra"], "--allow-session"),
]


def _session_argv(words, extra, world, tmp_path) -> list[str]:
    argv = command_line(words, PARAMS, world, fresh_factory(tmp_path / "fresh"))
    if extra[:2] == ["--queries", "<drop>"]:  # compare: one query (a query file's entries carry their own)
        i = argv.index("--queries")
        del argv[i : i + 2]
        argv.insert(1, extra[2])
    else:
        argv += extra
    if words == ("ctx-search",):  # a query instead of --params-json
        i = argv.index("--params-json")
        del argv[i : i + 2]
    return argv


def test_the_session_options_are_all_listed():
    """A new command with a session allow-set gets a line in SESSION_OPTIONS."""
    import inspect

    from tui.cli.main import command_functions

    found = set()
    for words, fn in command_functions():
        for name, p in inspect.signature(fn).parameters.items():
            decls = getattr(p.default, "param_decls", None) or ()
            if name in ("session", "allow_session") and (
                "List" in str(p.annotation) or "SessionFilter" in str(p.annotation)
            ):
                found.add((words, next(iter(decls), "--session")))
    assert found == {(w, o) for w, _, o in SESSION_OPTIONS}


@pytest.mark.parametrize(
    "words,extra,option", SESSION_OPTIONS, ids=lambda v: " ".join(v) if isinstance(v, (tuple, list)) else v
)
def test_many_unknown_sessions_are_one_warning_line(words, extra, option, world, tmp_path, capsys):
    """The issue's example: 20,000 unknown --session ids printed 20,000 lines."""
    from tui.cli.main import main

    argv = _session_argv(words, extra, world, tmp_path)
    sessions = [a for i in range(20_000) for a in (option, f"nosuch-{i}")]
    with pytest.raises(SystemExit) as exc:
        main([*argv, *sessions])
    assert exc.value.code in (0, None)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"rankscope: warning: {option}: 20000 of the 20000 session ids"), err
    with pytest.raises(SystemExit):
        main([*argv, option, "nosuch-a", option, "nosuch-b"])
    err = capsys.readouterr().err
    assert err.count("\n") == 2  # a few: one line each (with the store's closest ids when it has some)
