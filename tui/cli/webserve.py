"""The web server behind ``rankscope serve``: textual-serve's ``Server``,
extended (not forked) with the checks a browser-driven terminal needs.

textual-serve accepts a websocket from any page: a site open in another tab
could connect to ``ws://127.0.0.1:8000/ws``, drive rankscope and read the
screen. :class:`GuardedServer` adds one aiohttp middleware in front of every
route:

* **Host check** (loopback serving): the request's ``Host`` must name this
  machine's loopback (``localhost``, ``127.0.0.1``, ``::1`` or the address
  served), so a DNS-rebinding page (``evil.example`` resolving to 127.0.0.1)
  is refused;
* **Origin check** (the websocket): the ``Origin`` header must be present
  and be this server as the browser reached it (scheme ``http``/``https``,
  same host and port as the ``Host`` header): a page from any other origin
  cannot open the session;
* **Token** (serving beyond loopback, which needs ``--public``): every
  request must carry the random token, as ``?token=...`` in the URL printed
  at start-up (the page then keeps it in an ``HttpOnly``, ``SameSite=Strict``
  cookie for its websocket and static files).

Each refusal is an HTTP 403 with a one-line reason. The page's own URLs
(websocket, static files) are built from the ``Host`` the browser used, so
``localhost`` and ``127.0.0.1`` both work and a ``0.0.0.0`` bind serves
pages that point back at the address the visitor typed.

The sessions are bounded (textual-serve starts one, through a shell, for
every websocket, and never ends one that does not quit):

* **At most** ``max_sessions`` at once: past that, the page is a 503 that
  says why (:func:`busy_page`) and a websocket is refused with 503;
* **one process per session**: the command runs without a shell, in a
  process group of its own; when the visitor leaves it is asked to quit,
  and after :data:`STOP_TIMEOUT_S` its whole group is killed
  (:class:`SessionProcess`);
* **idle sessions end**: the session's app quits itself after
  ``idle_timeout`` seconds without a key (``rankscope --idle-timeout``);
  a session whose websocket brought no key or resize for
  :data:`IDLE_GRACE_S` longer is closed by the server all the same;
* **a demo's visitor folder** (``visitor_folders``): the server makes one
  per session (:mod:`tui.cli.visitor`), hands it to the process, and
  removes it once the process has ended.

A request the server cannot answer (a malformed one: a bad request line
or header, bytes that are not HTTP, a broken websocket handshake; or a
failure while answering) is one plain line on stderr naming what was wrong
(:func:`problem_line`), never a traceback, and the server goes on serving:
aiohttp reports such requests to :data:`REQUEST_LOG`, whose handler
(:class:`RequestProblems`) writes that line.

``/static/`` serves textual-serve's files, never a listing of them. No
Textual here (each session is its own process).
"""

from __future__ import annotations

import asyncio
import hmac
import html
import ipaddress
import json
import logging
import os
import shlex
import signal
import socket
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Awaitable, Callable, Iterable, Sequence
from urllib.parse import urlsplit

import aiohttp_jinja2
import jinja2
from aiohttp import WSMsgType, web
from aiohttp.http_exceptions import HttpProcessingError
from textual_serve.app_service import AppService
from textual_serve.server import Server

from tui.cli.base import DEFAULT_MAX_SESSIONS
from tui.cli.visitor import VISITOR_DIR_ENV, make_visitor_folder, remove_visitor_folder
from tui.present import safe
from tui.present.cut import clip

log = logging.getLogger("textual-serve")

#: Cookie the page keeps the token in once opened with ``?token=``.
TOKEN_COOKIE = "rankscope_token"
#: Host names that always mean this machine's loopback.
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
#: Seconds a session's process has to quit once asked (the visitor left);
#: then its process group is sent SIGTERM, and SIGKILL as long again later.
STOP_TIMEOUT_S = 5.0
#: Seconds past the idle timeout after which the server closes a session
#: whose app has not quit by itself.
IDLE_GRACE_S = 30.0
#: The terminal size a page may ask for (columns, rows): at least, at most.
MIN_SIZE, MAX_SIZE = (20, 5), (1000, 500)


def is_loopback(host: str) -> bool:
    """True when every address ``host`` resolves to is a loopback address
    (``127.0.0.0/8``, ``::1``); ``0.0.0.0``, ``::`` and anything unresolvable
    are not."""
    try:
        infos = socket.getaddrinfo(host, None)
    except (OSError, UnicodeError):
        return False
    addresses = {str(info[4][0]).split("%")[0] for info in infos}
    try:
        return bool(addresses) and all(ipaddress.ip_address(a).is_loopback for a in addresses)
    except ValueError:
        return False


def host_name(host_header: str) -> str:
    """The host name of a ``Host`` header value, lower-cased, without port
    or IPv6 brackets: ``[::1]:8000`` → ``::1``."""
    try:
        return (urlsplit("//" + host_header).hostname or "").lower()
    except ValueError:
        return ""


def same_origin(origin: str | None, host_header: str) -> bool:
    """True when ``origin`` (an ``Origin`` header) is an ``http(s)`` origin
    whose host and port are those of ``host_header`` (the ``Host`` the
    browser sent to this server). A missing or ``null`` origin is not."""
    if not origin or origin == "null":
        return False
    try:
        parts = urlsplit(origin)
    except ValueError:
        return False
    if parts.scheme not in ("http", "https") or parts.path not in ("", "/") or parts.query or parts.username:
        return False
    default = "80" if parts.scheme == "http" else "443"

    def norm(netloc: str) -> str:
        netloc = netloc.lower()
        name = host_name(netloc)
        try:
            port = urlsplit("//" + netloc).port
        except ValueError:
            return ""
        return f"{name}:{port if port is not None else default}"

    return bool(host_header) and norm(parts.netloc) == norm(host_header)


def busy_page(max_sessions: int) -> str:
    """The HTML page a visitor past the cap gets (with HTTP 503): it says
    why, and when to come back. Self-contained: no script, no style sheet."""
    sessions = f"{max_sessions} session{'s' if max_sessions != 1 else ''}"
    reason = (
        f"All {sessions} of this rankscope server are in use: it runs at most {sessions} at once "
        f"(--max-sessions {max_sessions}), so that each one stays quick."
    )
    return (
        "<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>rankscope: all sessions in use</title></head>\n"
        "<body style='font-family: monospace; max-width: 44em; margin: 4em auto; line-height: 1.5'>\n"
        f"<h1>rankscope: all sessions in use</h1>\n<p>{html.escape(reason)}</p>\n"
        "<p>A session ends when its visitor closes the page or leaves it idle. "
        "Try again in a minute: reload this page.</p>\n</body></html>\n"
    )


def busy_text(max_sessions: int) -> str:
    """The one-line refusal of a websocket past the cap (HTTP 503)."""
    return f"rankscope serve: refused: all {max_sessions} sessions are in use (--max-sessions {max_sessions}); try again later"


#: Characters of what was wrong with a request that a console line quotes.
PROBLEM_SHOWN = 120


def request_problem(error: BaseException) -> str:
    """What was wrong, in one line safe for a terminal
    (:func:`tui.present.safe.line`), cut to :data:`PROBLEM_SHOWN`
    characters: aiohttp's words for a malformed request (``Invalid header
    token: b'Bad Header'``, its lines joined, the caret line dropped) or an
    HTTP error's text (``Handshake error: 'bad'``), else the error's type
    and words (``RuntimeError: boom``)."""
    if isinstance(error, HttpProcessingError):
        words = error.message
    elif isinstance(error, web.HTTPException):
        words = error.text or error.reason
    else:
        words = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    parts = [part.strip() for part in str(words).splitlines() if part.strip(" ^")]
    return clip(safe.line(" ".join(parts)), PROBLEM_SHOWN)


def problem_line(remote: str | None, error: BaseException) -> str:
    """The console line for a request that ``error`` ended (``remote``: the
    client's address, ``None`` when unknown): ``rankscope serve: refused a
    malformed request from 127.0.0.1: ...`` for a request aiohttp could not
    parse or a 4xx raised while answering it, ``rankscope serve: failed to
    answer a request from ...: ...`` for anything else (a bug)."""
    who = safe.line(remote) if remote else "a client"
    malformed = isinstance(error, HttpProcessingError) or (
        isinstance(error, web.HTTPException) and 400 <= error.status < 500
    )
    what = "refused a malformed request" if malformed else "failed to answer a request"
    return f"rankscope serve: {what} from {who}: {request_problem(error)}"


def tell(line: str) -> None:
    """Write ``line`` (one line, no newline) to stderr, for the operator;
    a closed or broken stderr is ignored (the server goes on)."""
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


class RequestProblems(logging.Handler):
    """The handler of :data:`REQUEST_LOG`, where aiohttp's request handler
    reports a request it could not answer: :func:`problem_line` for a
    report that carries the error (the client's address is the report's
    one argument, when given: ``"Error handling request from %s"``), the
    report's words for one without an error at warning level or above; any
    other debug report is dropped. Never a traceback."""

    def emit(self, record: logging.LogRecord) -> None:
        error = record.exc_info[1] if record.exc_info else None
        if error is not None:
            args = record.args
            remote = args[0] if isinstance(args, tuple) and len(args) == 1 and isinstance(args[0], str) else None
            tell(problem_line(remote, error))
        elif record.levelno >= logging.WARNING:
            tell(f"rankscope serve: {safe.line(record.getMessage())}")


def _request_log() -> logging.Logger:
    logger = logging.getLogger("rankscope.serve.requests")
    logger.propagate = False  # not to textual-serve's Rich handler (tracebacks with locals)
    logger.setLevel(logging.DEBUG)  # aiohttp reports non-HTTP bytes at debug level: still one line
    if not any(isinstance(h, RequestProblems) for h in logger.handlers):
        logger.addHandler(RequestProblems())
    return logger


#: The ``logger`` of aiohttp's request handler for ``rankscope serve``
#: (passed in the application's ``handler_args``): :class:`RequestProblems`.
REQUEST_LOG = _request_log()


def _clamp(value: str | None, default: int, low: int, high: int) -> int:
    try:
        number = int(value) if value is not None else default
    except ValueError:
        number = default
    return max(low, min(high, number))


class SessionProcess(AppService):
    """textual-serve's ``AppService`` for one session, with bounds: the
    command (an argument list) runs without a shell, in a process group of
    its own, with ``extra_env`` added to textual-serve's environment;
    :meth:`stop` ends the whole group within about 3 × :data:`STOP_TIMEOUT_S`
    whatever it does; and the websocket is closed when the process ends, how
    ever it ends (textual-serve closes it only on the app's ``exit``)."""

    def __init__(self, argv: Sequence[str], *, extra_env: dict[str, str] | None = None, **kwargs: Any) -> None:
        super().__init__(shlex.join(argv), **kwargs)
        self.argv = list(argv)
        self.extra_env = dict(extra_env or {})

    async def _open_app_process(self, width: int = 80, height: int = 24) -> asyncio.subprocess.Process:
        environment = self._build_environment(width=width, height=height)
        environment.update(self.extra_env)
        self._process = process = await asyncio.create_subprocess_exec(
            *self.argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=environment,
            start_new_session=True,
        )
        assert process.stdin is not None
        self._stdin = process.stdin
        return process

    async def run(self) -> None:
        try:
            await super().run()
        finally:
            await self.remote_close()

    @property
    def pid(self) -> int | None:
        """The session's process id (its process group's too), once started."""
        return None if self._process is None else self._process.pid

    async def stop(self) -> None:
        """Ask the app to quit; after :data:`STOP_TIMEOUT_S` send its
        process group SIGTERM, then SIGKILL; wait for the process."""
        process = self._process
        try:
            await asyncio.wait_for(super().stop(), STOP_TIMEOUT_S)
        except (asyncio.TimeoutError, OSError, RuntimeError):
            pass
        if process is None:
            return
        for sig in (signal.SIGTERM, signal.SIGKILL):
            if process.returncode is not None:
                break
            self._signal_group(process.pid, sig)
            try:
                await asyncio.wait_for(process.wait(), STOP_TIMEOUT_S)
            except asyncio.TimeoutError:
                continue
        self._signal_group(process.pid, signal.SIGKILL)  # anything the app left in its group
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()

    @staticmethod
    def _signal_group(pgid: int, sig: signal.Signals) -> None:
        try:
            os.killpg(pgid, sig)
        except (ProcessLookupError, PermissionError):
            pass


@dataclass
class Session:
    """One visitor's session.

    Attributes:
        last_input: ``time.monotonic()`` of the last key or resize from the page.
        folder: the demo visitor's folder (``None``: not a demo).
        process: the session's process, once started.
    """

    last_input: float = field(default_factory=time.monotonic)
    folder: Path | None = None
    process: SessionProcess | None = None


class GuardedServer(Server):
    """textual-serve's ``Server`` with the Host, Origin and token checks and
    the session bounds of the module docstring.

    Args:
        command, host, port, title: as ``textual_serve.server.Server``
            (``command`` is split into arguments with ``shlex`` and run
            without a shell).
        token: the secret every request must carry (``None``: no token).
        allowed_hosts: host names the ``Host`` header may name (``None``:
            any, for serving beyond loopback, where the token guards).
        max_sessions: sessions at once; the next visitor is refused.
        idle_timeout: seconds without a key or resize after which the app
            quits (it is passed the option; the server closes the session
            :data:`IDLE_GRACE_S` later if it has not); ``None``: never.
        visitor_folders: make a visitor folder per session (``--demo``).
    """

    def __init__(
        self,
        command: str,
        host: str = "127.0.0.1",
        port: int = 8000,
        title: str | None = None,
        *,
        token: str | None = None,
        allowed_hosts: Iterable[str] | None = None,
        max_sessions: int = DEFAULT_MAX_SESSIONS,
        idle_timeout: float | None = None,
        visitor_folders: bool = False,
    ) -> None:
        super().__init__(command, host=host, port=port, title=title)
        self.argv = shlex.split(command)
        self.token = token
        self.allowed_hosts = None if allowed_hosts is None else frozenset(h.lower() for h in allowed_hosts)
        self.max_sessions = max_sessions
        self.idle_timeout = idle_timeout
        self.visitor_folders = visitor_folders
        #: The sessions open now (a slot is taken before the first ``await``).
        self.sessions: list[Session] = []

    async def _make_app(self) -> web.Application:
        """textual-serve's routes (the page, the websocket, downloads, the
        static files), with the guard in front and no listing of ``/static/``."""
        app = web.Application(middlewares=[self._guard_middleware()], handler_args={"logger": REQUEST_LOG})
        aiohttp_jinja2.setup(app, loader=jinja2.FileSystemLoader(self.templates_path))
        app.add_routes(
            [
                web.get("/", self.handle_index, name="index"),
                web.get("/ws", self.handle_websocket, name="websocket"),
                web.get("/download/{key}", self.handle_download, name="download"),
                web.static("/static", self.statics_path, show_index=False, name="static"),
            ]
        )
        app.on_startup.append(self.on_startup)
        app.on_shutdown.append(self.on_shutdown)
        return app

    @property
    def full(self) -> bool:
        """Every session slot is taken."""
        return len(self.sessions) >= self.max_sessions

    def refusal(self, request: web.Request) -> str | None:
        """Why ``request`` is refused (``None``: let it through)."""
        if self.allowed_hosts is not None and host_name(request.host) not in self.allowed_hosts:
            return (
                f"rankscope serve: refused: Host {request.host!r} is not this machine's loopback "
                "(open the address rankscope serve printed)"
            )
        if self.token is not None:
            given = request.query.get("token") or request.cookies.get(TOKEN_COOKIE) or ""
            if not hmac.compare_digest(given.encode("utf-8", "replace"), self.token.encode()):
                return "rankscope serve: refused: this session needs its token; open the URL rankscope serve printed"
        if request.path == "/ws" and not same_origin(request.headers.get("Origin"), request.host):
            return (
                f"rankscope serve: refused: websocket from origin {request.headers.get('Origin')!r}, "
                f"not from this server ({request.host})"
            )
        return None

    def _guard_middleware(self) -> Callable[..., Awaitable[web.StreamResponse]]:
        @web.middleware
        async def guard(
            request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
        ) -> web.StreamResponse:
            reason = self.refusal(request)
            if reason is not None:
                return web.Response(status=403, text=reason + "\n")
            response = await handler(request)
            if self.token is not None and request.query.get("token") and not response.prepared:
                response.set_cookie(TOKEN_COOKIE, self.token, httponly=True, samesite="Strict", path="/")
            return response

        return guard

    async def handle_index(self, request: web.Request) -> Any:
        """textual-serve's page, with its websocket and static URLs built from
        the ``Host`` the browser used (checked by the middleware first); a
        503 page saying why when every session is taken. The wrapped handler
        reads ``public_url`` before its first ``await``, so concurrent
        requests cannot see each other's value."""
        if self.full:
            return web.Response(
                status=503, text=busy_page(self.max_sessions), content_type="text/html", headers={"Retry-After": "60"}
            )
        self.public_url = f"{request.scheme}://{request.host}"
        return await super().handle_index(request)

    async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
        """One session: a slot taken (or a 503 when none is free), the
        visitor folder made, the process started and fed the page's keys and
        sizes until either side ends; then the process stopped, the folder
        removed and the slot freed, whatever happened. A malformed handshake
        is a 400 (and one line on stderr: :func:`problem_line`); a session
        that fails is one line on stderr too."""
        if self.full:
            raise web.HTTPServiceUnavailable(text=busy_text(self.max_sessions) + "\n", headers={"Retry-After": "60"})
        session = Session()
        self.sessions.append(session)  # before any await: the cap holds for concurrent requests
        websocket = web.WebSocketResponse(heartbeat=15)
        try:
            if self.visitor_folders:
                session.folder = make_visitor_folder()
            await websocket.prepare(request)
            session.process = SessionProcess(
                self.argv,
                extra_env={VISITOR_DIR_ENV: str(session.folder)} if session.folder is not None else None,
                write_bytes=websocket.send_bytes,
                write_str=websocket.send_str,
                close=websocket.close,
                download_manager=self.download_manager,
                debug=self.debug,
            )
            width = _clamp(request.query.get("width"), 80, MIN_SIZE[0], MAX_SIZE[0])
            height = _clamp(request.query.get("height"), 24, MIN_SIZE[1], MAX_SIZE[1])
            await session.process.start(width, height)
            watcher = asyncio.create_task(self._close_when_idle(session, websocket))
            try:
                await self._relay(websocket, session)
            finally:
                watcher.cancel()
        except asyncio.CancelledError:
            pass
        except web.HTTPException as refusal:  # a malformed handshake (prepare): aiohttp answers its 400
            tell(problem_line(request.remote, refusal))
            raise
        except Exception as error:  # a session's failure must not stop the server
            tell(
                f"rankscope serve: a session from {safe.line(request.remote or 'a client')} failed: {request_problem(error)}"
            )
        finally:
            await self._end(session)
            if websocket.prepared and not websocket.closed:
                await websocket.close()
        return websocket

    async def _end(self, session: Session) -> None:
        """Stop the session's process, remove its folder, free its slot."""
        try:
            if session.process is not None:
                await session.process.stop()
        finally:
            if session.folder is not None:
                remove_visitor_folder(session.folder)
            if session in self.sessions:
                self.sessions.remove(session)

    async def _relay(self, websocket: web.WebSocketResponse, session: Session) -> None:
        """The page's messages to the process (textual-serve's protocol:
        ``["stdin", text]``, ``["resize", {"width", "height"}]``, ``["ping",
        x]``, ``["focus"]``, ``["blur"]``); malformed ones are ignored."""
        process = session.process
        assert process is not None
        async for message in websocket:
            if message.type != WSMsgType.TEXT:
                continue
            try:
                envelope = json.loads(message.data)
            except ValueError:
                continue
            if not isinstance(envelope, list) or not envelope:
                continue
            kind, data = envelope[0], (envelope[1] if len(envelope) > 1 else None)
            if kind == "stdin" and isinstance(data, str):
                session.last_input = time.monotonic()
                await process.send_bytes(data.encode("utf-8", "replace"))
            elif kind == "resize" and isinstance(data, dict):
                session.last_input = time.monotonic()
                width = _clamp(str(data.get("width")), 80, MIN_SIZE[0], MAX_SIZE[0])
                height = _clamp(str(data.get("height")), 24, MIN_SIZE[1], MAX_SIZE[1])
                await process.set_terminal_size(width, height)
            elif kind == "ping":
                await websocket.send_json(["pong", data])
            elif kind == "blur":
                await process.blur()
            elif kind == "focus":
                await process.focus()

    async def _close_when_idle(self, session: Session, websocket: web.WebSocketResponse) -> None:
        """Close the session once it has had no key or resize for the idle
        timeout plus :data:`IDLE_GRACE_S` (its app should have quit by then)."""
        if self.idle_timeout is None:
            return
        limit = self.idle_timeout + IDLE_GRACE_S
        while not websocket.closed:
            idle = time.monotonic() - session.last_input
            if idle >= limit:
                log.info("closing a session idle for %.0f s", idle)
                await websocket.close()
                return
            await asyncio.sleep(min(5.0, limit - idle))

    async def on_startup(self, app: web.Application) -> None:
        """Quiet: ``rankscope serve`` prints its own address (with the token)."""

    async def on_shutdown(self, app: web.Application) -> None:
        """The server stops: every session's process is stopped and its folder removed."""
        await asyncio.gather(*(self._end(s) for s in list(self.sessions)), return_exceptions=True)
