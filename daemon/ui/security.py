"""What stands between the page and anyone else: the installation's token, the Host check, CSRF, headers.

- The token: 32 random bytes in ``<state_dir>/ui.token`` (0600, created once, never followed
  through a symlink). `memd ui` prints it in the address; the first request that carries it as
  ``?token=`` gets it back as an ``HttpOnly; SameSite=Strict`` cookie and is redirected to the same
  address without it (so it stays out of the history and of any Referer). Every other request needs
  the cookie; without it the answer is 401.
- The Host header must name the address the page listens on (``127.0.0.1:PORT``, ``localhost:PORT``
  or the host it was told to use): a DNS-rebinding page that resolves its own name to 127.0.0.1
  gets 421, and so does anything else.
- Only GET, HEAD and POST; a POST must carry the CSRF token (an HMAC of the token, put in every form
  by the templates) and, when the browser sends one, an ``Origin`` of this page; read-only mode
  refuses every POST (403). No CORS header is ever sent.
- Every answer says ``Content-Security-Policy`` (no script at all, styles and images from the page
  itself), ``X-Frame-Options: DENY``, ``Referrer-Policy: same-origin`` (no-referrer would make a browser send ``Origin: null`` with the page's own forms), ``nosniff``, ``no-store``.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import socket
import stat
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlencode

from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from pipeline.errors import MemdError
from pipeline.safefile import UnsafeFile, read_capped

TOKEN_FILE = "ui.token"
TOKEN_BYTES = 32
TOKEN_PARAM = "token"
CSRF_FIELD = "csrf"
MAX_FORM_BYTES = 64 * 1024
CSP = (
    "default-src 'none'; script-src 'none'; style-src 'self'; img-src 'self' data:; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
HEADERS = {
    "content-security-policy": CSP,
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",
    "cache-control": "no-store",
    "cross-origin-opener-policy": "same-origin",
    "cross-origin-resource-policy": "same-origin",
}
OPEN_PATHS = frozenset({"/healthz"})
"""Answered without the token (the Host check still applies): `memd ui` asks whether a daemon serves the page."""


class TokenError(MemdError):
    """The token file cannot be made or is not safe to trust; the message says why."""


def load_or_create_token(state_dir: Path) -> str:
    """The installation's token, made on first use (0600 in the state directory)."""
    path = state_dir / TOKEN_FILE
    try:
        return _read_token(path)
    except FileNotFoundError:
        pass
    try:
        state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except FileExistsError:
        return _read_token(path)  # another process made it first
    except OSError as exc:
        raise TokenError(f"cannot create the page's token {path}: {exc.strerror or exc}") from None
    with os.fdopen(fd, "w", encoding="ascii") as handle:
        handle.write(secrets.token_urlsafe(TOKEN_BYTES) + "\n")
    return _read_token(path)


def _read_token(path: Path) -> str:
    try:
        data = read_capped(path, 1024, follow_symlinks=False)
        info = path.lstat()
    except FileNotFoundError:
        raise
    except (OSError, UnsafeFile) as exc:
        raise TokenError(f"cannot read the page's token {path}: {exc}") from None
    if info.st_uid != os.getuid() or stat.S_IMODE(info.st_mode) & 0o077:
        raise TokenError(f"{path} must be yours and private (chmod 600 {path}), or delete it for a new one")
    token = data.decode("ascii", "replace").strip()
    if len(token) < 32:
        raise TokenError(f"{path} holds no valid token: delete it and memd makes a new one")
    return token


def derived(token: str, purpose: str) -> str:
    """A value made from the token for one purpose (the CSRF token, the installation's public id)."""
    return hmac.new(token.encode(), purpose.encode(), hashlib.sha256).hexdigest()


def cookie_name(port: int) -> str:
    """Cookies ignore the port: two installations on one machine each keep their own."""
    return f"memd_ui_{port}"


LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})
WILDCARD = frozenset({"0.0.0.0", "::"})


def allowed_hosts(host: str, port: int) -> frozenset[str]:
    """The Host headers this page answers: the address it listens on (and ``localhost`` for loopback;
    the machine's own names when it was told to listen on every address)."""
    names = {host}
    if host in LOOPBACK or host in WILDCARD:
        names = {"127.0.0.1", "localhost", "::1"}
    if host in WILDCARD:
        names |= {socket.gethostname(), socket.getfqdn()}
    return frozenset(f"[{name}]:{port}" if ":" in name else f"{name}:{port}" for name in names)


@dataclass
class Guard:
    """The page's security settings; ``port`` is set once the socket is bound (port 0 picks one)."""

    token: str
    host: str
    port: int
    read_only: bool

    @property
    def csrf(self) -> str:
        return derived(self.token, "csrf")

    @property
    def public_id(self) -> str:
        return derived(self.token, "id")[:16]

    def address(self, *, with_token: bool) -> str:
        host = socket.gethostname() if self.host in WILDCARD else self.host
        host = f"[{host}]" if ":" in host else host
        query = f"/?{urlencode({TOKEN_PARAM: self.token})}" if with_token else "/"
        return f"http://{host}:{self.port}{query}"


class SecurityMiddleware:
    """Every request passes here first: Host, token or cookie, method, read-only, Origin; headers on every answer."""

    def __init__(self, app: ASGIApp, guard: Guard) -> None:
        self.app = app
        self.guard = guard

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            if scope["type"] == "lifespan":
                await self.app(scope, receive, send)
            return
        refusal = self._check(Request(scope))

        async def send_with_headers(message: Mapping[str, object]) -> None:
            if message["type"] == "http.response.start":
                headers = [
                    (k, v)
                    for k, v in list(message.get("headers") or [])  # type: ignore[call-overload]
                    if k.decode("latin-1").lower() not in HEADERS
                ]
                headers += [(k.encode(), v.encode()) for k, v in HEADERS.items()]
                message = {**message, "headers": headers}
            await send(message)  # type: ignore[arg-type]

        if refusal is not None:
            await refusal(scope, receive, send_with_headers)
            return
        await self.app(scope, receive, send_with_headers)

    def _check(self, request: Request) -> Callable[[Scope, Receive, Send], Awaitable[None]] | None:
        guard = self.guard
        if request.headers.get("host", "") not in allowed_hosts(guard.host, guard.port):
            return PlainTextResponse("memd: this page answers only at its own address (Host)\n", 421)
        if request.method not in ("GET", "HEAD", "POST"):
            return PlainTextResponse("memd: method not allowed\n", 405, headers={"allow": "GET, HEAD, POST"})
        if request.url.path in OPEN_PATHS:
            return None
        given = request.query_params.get(TOKEN_PARAM)
        if given is not None:
            if not hmac.compare_digest(given.encode(), guard.token.encode()):
                return _unauthorized()
            rest = [(k, v) for k, v in request.query_params.multi_items() if k != TOKEN_PARAM]
            target = request.url.path + (f"?{urlencode(rest)}" if rest else "")
            response = RedirectResponse(target, 303)
            response.set_cookie(
                cookie_name(guard.port), guard.token, httponly=True, samesite="strict", path="/"
            )
            return response
        cookie = request.cookies.get(cookie_name(guard.port), "")
        if not hmac.compare_digest(cookie.encode(), guard.token.encode()):
            return _unauthorized()
        if request.method == "POST":
            if guard.read_only:
                return PlainTextResponse("memd: this page is read-only ([ui] read_only)\n", 403)
            origin = request.headers.get("origin")
            if origin is not None and f"{origin.split('://', 1)[-1]}" not in allowed_hosts(
                guard.host, guard.port
            ):
                return PlainTextResponse("memd: a change must come from this page (Origin)\n", 403)
        return None


def _unauthorized() -> Response:
    return PlainTextResponse(
        "memd: open the address `memd ui` prints (it carries this installation's token)\n", 401
    )


class FormRefused(Exception):
    """A POST without a valid CSRF token, or a form too big to be one of the page's."""


async def checked_form(request: Request, guard: Guard) -> dict[str, str]:
    """A POST's fields (``application/x-www-form-urlencoded``), once its CSRF token is checked."""
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            raise FormRefused("the form is too big")
    try:
        parsed = parse_qs(body.decode("utf-8"), keep_blank_values=True, max_num_fields=50)
    except (UnicodeDecodeError, ValueError):
        raise FormRefused("the form cannot be read") from None
    fields = {k: v[0] for k, v in parsed.items() if v}
    if not hmac.compare_digest(fields.get(CSRF_FIELD, "").encode(), guard.csrf.encode()):
        raise FormRefused("the form does not carry this page's CSRF token: reload the page and try again")
    return fields
