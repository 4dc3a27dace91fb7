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
pages that point back at the address the visitor typed. No Textual here
(textual-serve starts each session as its own process).
"""

from __future__ import annotations

import hmac
import ipaddress
import socket
from typing import Any, Awaitable, Callable, Iterable
from urllib.parse import urlsplit

from aiohttp import web
from textual_serve.server import Server

#: Cookie the page keeps the token in once opened with ``?token=``.
TOKEN_COOKIE = "rankscope_token"
#: Host names that always mean this machine's loopback.
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


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


class GuardedServer(Server):
    """textual-serve's ``Server`` with the Host, Origin and token checks of
    the module docstring.

    Args:
        command, host, port, title: as ``textual_serve.server.Server``.
        token: the secret every request must carry (``None``: no token).
        allowed_hosts: host names the ``Host`` header may name (``None``:
            any, for serving beyond loopback, where the token guards).
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
    ) -> None:
        super().__init__(command, host=host, port=port, title=title)
        self.token = token
        self.allowed_hosts = None if allowed_hosts is None else frozenset(h.lower() for h in allowed_hosts)

    async def _make_app(self) -> web.Application:
        app = await super()._make_app()
        app.middlewares.append(self._guard_middleware())
        return app

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
        async def guard(request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]):
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
        the ``Host`` the browser used (checked by the middleware first). The
        wrapped handler reads ``public_url`` before its first ``await``, so
        concurrent requests cannot see each other's value."""
        self.public_url = f"{request.scheme}://{request.host}"
        return await super().handle_index(request)

    async def on_startup(self, app: web.Application) -> None:
        """Quiet: ``rankscope serve`` prints its own address (with the token)."""
