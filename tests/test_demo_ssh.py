"""The SSH demo recipe (``docs/demo-over-ssh.md``) against a real OpenSSH
``sshd`` (issue 24, item 3).

The test runs ``/usr/sbin/sshd`` as the current user on 127.0.0.1, on a free
port, with the recipe's ``Match User`` block (read from the document; the
user, the rankscope command and the store replaced by this machine's), a
throwaway host key and user key in a temporary folder. A visitor connects
with ``ssh -tt`` in a pseudo-terminal, asking for a command: the browser
paints instead (in full colour, although ``COLORTERM`` is not forwarded),
a query shows its results, a resize reaches the app, and on disconnect the
app ends and its visitor folder is gone. The command asked for never ran.

It skips, saying why, where ``sshd``/``ssh``/``ssh-keygen`` are missing
(``.ci/run`` installs them on Debian) or sshd cannot run here.
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import shlex
import shutil
import signal
import socket
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from engine import Store, index_corpus

from .conftest import SAMPLE_CORPUS

ROOT = Path(__file__).resolve().parents[1]
RECIPE = ROOT / "docs" / "demo-over-ssh.md"
SSHD = Path("/usr/sbin/sshd")
#: The longest one step waits (Textual starting on a busy machine).
STEP_TIMEOUT = 60.0
#: Escape sequences (CSI, OSC, two-character ones), to read the screen's words.
ANSI = re.compile(rb"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
#: sshd's own folder for privilege separation: needed when it runs as root.
PRIVSEP_DIR = Path("/run/sshd")


def _tools() -> dict[str, str]:
    found = {"sshd": str(SSHD) if SSHD.is_file() else None, "ssh": shutil.which("ssh")}
    found["ssh-keygen"] = shutil.which("ssh-keygen")
    missing = [name for name, path in found.items() if path is None]
    if missing:
        pytest.skip(f"OpenSSH is not installed here ({', '.join(missing)} missing: apt-get install openssh-server)")
    if not sys.platform.startswith("linux"):
        pytest.skip("the pseudo-terminal and /proc checks need Linux")
    return {k: str(v) for k, v in found.items()}


def recipe_block() -> str:
    """The ``sshd_config`` block of the recipe, as written there."""
    match = re.search(r"```sshd_config\n(.*?)```", RECIPE.read_text("utf-8"), re.S)
    assert match, f"{RECIPE} has no ```sshd_config block"
    return match.group(1)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def processes_naming(marker: str) -> list[int]:
    """The processes whose command line contains ``marker`` (zombies aside)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


class Terminal:
    """A pseudo-terminal running a command; what it printed, in order."""

    def __init__(self, argv: list[str], env: dict[str, str], size: tuple[int, int]) -> None:
        self.master, slave = pty.openpty()
        self.resize(*size, signal_to=None)
        self.process = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env, start_new_session=True)
        os.close(slave)
        self.output = b""

    def resize(self, columns: int, rows: int, signal_to: int | None = -1) -> None:
        fcntl.ioctl(self.master, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
        if signal_to is not None:
            os.kill(self.process.pid, signal.SIGWINCH)  # as the terminal emulator's resize does

    def read(self, timeout: float) -> bool:
        """Add what the terminal printed within ``timeout`` seconds; False
        once the other side has closed."""
        ready, _, _ = select.select([self.master], [], [], timeout)
        if ready:
            try:
                data = os.read(self.master, 65536)
            except OSError:  # EIO: the other side closed
                data = b""
            self.output += data
            return bool(data)
        return True

    def wait_for(self, condition, what: str, since: int = 0) -> None:
        deadline = time.monotonic() + STEP_TIMEOUT
        while not condition(self.output[since:]):
            if time.monotonic() > deadline:
                tail = ANSI.sub(b"", self.output[-3000:]).decode("utf-8", "replace")
                raise AssertionError(f"no {what} within {STEP_TIMEOUT:g} s; the screen's last words: {tail!r}")
            if not self.read(0.2) and self.process.poll() is not None:
                words = self.words(self.output[-3000:])
                raise AssertionError(f"no {what}: ssh ended ({self.process.returncode}); its last words: {words!r}")

    def words(self, data: bytes) -> str:
        return ANSI.sub(b"", data).decode("utf-8", "replace")

    def type(self, text: str) -> None:
        os.write(self.master, text.encode())

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        try:
            os.close(self.master)
        except OSError:
            pass


@pytest.fixture
def sshd(tmp_path):
    """sshd with the recipe's block for the current user on a free port;
    yields (ssh's argument list but the command, the visitors' TMPDIR,
    the store, the folder of throwaway files)."""
    tools = _tools()
    if os.geteuid() == 0 and not PRIVSEP_DIR.is_dir():
        try:  # what the openssh-server package's service creates at start
            PRIVSEP_DIR.mkdir(mode=0o755)
        except OSError as exc:
            pytest.skip(f"sshd runs as root here and needs {PRIVSEP_DIR}: {exc.strerror}")
    keys = tmp_path / "keys"
    keys.mkdir(mode=0o700)
    for name in ("host_key", "user_key"):
        subprocess.run([tools["ssh-keygen"], "-q", "-t", "ed25519", "-N", "", "-f", str(keys / name)], check=True)
    shutil.copy(keys / "user_key.pub", keys / "authorized_keys")
    store = tmp_path / "srv" / "demo.db"
    store.parent.mkdir()
    with Store.create(store) as s:
        index_corpus(s, SAMPLE_CORPUS)
    visitors = tmp_path / "visitors"
    visitors.mkdir()
    user = subprocess.run(["id", "-un"], capture_output=True, text=True, check=True).stdout.strip()
    rankscope = shlex.join([sys.executable, "-m", "tui.cli"])
    block = recipe_block()
    for placeholder in ("Match User demo", "/opt/rankscope/bin/rankscope", "/srv/rankscope/demo.db", "exec env "):
        assert placeholder in block, placeholder
    block = (
        block.replace("Match User demo", f"Match User {user}")
        .replace("/opt/rankscope/bin/rankscope", rankscope)
        .replace("/srv/rankscope/demo.db", shlex.quote(str(store)))
        .replace("exec env ", f"exec env TMPDIR={shlex.quote(str(visitors))} PYTHONPATH={shlex.quote(str(ROOT))} ")
    )
    port = free_port()
    config = tmp_path / "sshd_config"
    config.write_text(
        # running sshd unprivileged, in a temporary folder (before the recipe's Match block)
        f"ListenAddress 127.0.0.1\nPort {port}\nHostKey {keys / 'host_key'}\nPidFile {tmp_path / 'sshd.pid'}\n"
        f"AuthorizedKeysFile {keys / 'authorized_keys'}\nUsePAM no\nStrictModes no\nPasswordAuthentication no\n"
        "KbdInteractiveAuthentication no\nPermitRootLogin prohibit-password\nLogLevel VERBOSE\n\n" + block
    )
    checked = subprocess.run([tools["sshd"], "-t", "-f", str(config)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr
    effective = subprocess.run(
        [tools["sshd"], "-T", "-f", str(config), "-C", f"user={user},host=localhost,addr=127.0.0.1"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    for line in ("permittty yes", "allowtcpforwarding no", "allowagentforwarding no", "x11forwarding no"):
        assert line in effective, line
    assert "permittunnel no" in effective and "disableforwarding yes" in effective
    [forced] = [line for line in effective if line.startswith("forcecommand ")]
    assert " COLORTERM=truecolor " in forced and f"{rankscope} --demo " in forced
    log = open(tmp_path / "sshd.log", "wb")
    server = subprocess.Popen([tools["sshd"], "-D", "-e", "-f", str(config)], stdout=log, stderr=log)
    try:
        deadline = time.monotonic() + STEP_TIMEOUT
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert server.poll() is None, (tmp_path / "sshd.log").read_text()
                assert time.monotonic() < deadline, "sshd did not listen"
                time.sleep(0.1)
        ssh = [tools["ssh"], "-tt", "-F", "/dev/null", "-i", str(keys / "user_key"), "-p", str(port)]
        ssh += ["-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "BatchMode=yes"]
        ssh += ["-o", "IdentitiesOnly=yes", "-o", "LogLevel=ERROR", f"{user}@127.0.0.1"]
        yield ssh, visitors, store, tmp_path
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


def test_the_ssh_recipe_shows_the_browser_and_nothing_else(sshd):
    ssh, visitors, store, folder = sshd
    pwned = folder / "pwned"
    env = {k: v for k, v in os.environ.items() if k not in ("COLORTERM", "NO_COLOR", "SSH_AUTH_SOCK")}
    env["TERM"] = "xterm-256color"
    terminal = Terminal([*ssh, f"touch {shlex.quote(str(pwned))}"], env, (80, 24))
    try:
        # the forced command paints the browser (the command asked for is not run)
        terminal.wait_for(lambda out: "F1" in terminal.words(out) and b"\x1b[24;" in out, "browser painted")
        assert b"\x1b[38;2;" in terminal.output or b"\x1b[48;2;" in terminal.output  # full colour
        [visitor] = list(visitors.iterdir())
        assert visitor.name.startswith("rankscope-visitor-")

        # a query and its results
        start = len(terminal.output)
        terminal.type("write quorum")
        terminal.wait_for(lambda out: "Refuse writes below" in terminal.words(out), "search results", since=start)

        # F6: no file the visitor could not fetch; a line saying why instead
        start = len(terminal.output)
        terminal.type("\x1b[17~")
        terminal.wait_for(lambda out: "Export refused" in terminal.words(out), "the export's refusal", since=start)
        assert not list(visitor.rglob("rankscope-trace-*"))

        # a resize reaches the app: it lays the screen out again on 30 rows
        start = len(terminal.output)
        terminal.resize(100, 30)
        terminal.wait_for(lambda out: b"\x1b[30;" in out, "repaint at 100x30", since=start)

        # the visitor disconnects (their terminal closes): the app ends, its folder goes
        os.kill(terminal.process.pid, signal.SIGHUP)
        terminal.process.wait(STEP_TIMEOUT)
        deadline = time.monotonic() + STEP_TIMEOUT
        while processes_naming(str(store)) or list(visitors.iterdir()):
            assert time.monotonic() < deadline, (processes_naming(str(store)), list(visitors.iterdir()))
            time.sleep(0.1)
    finally:
        terminal.close()
        for pid in processes_naming(str(store)):  # only on failure: never leave the app running
            os.kill(pid, signal.SIGKILL)
    assert not pwned.exists(), "the command given on the ssh line ran"
    assert sorted(p.name for p in store.parent.iterdir()) == ["demo.db"]  # read-only: no journal, no -wal
