"""Who may use the control page, checked on every request before any page runs.

- **The access token** is made on first start and kept in ``state/web_token`` (mode 0600).
  ``corvid web`` prints the address with it; opening that address (or pasting the token into
  the login form) sets the session cookie and sends the browser on without the token in the
  address bar.
- **The session cookie** is derived from the token (an HMAC), so it survives restarts and a new
  token (delete the file) signs everyone out. It is HttpOnly, SameSite=Strict, and Secure
  behind a TLS proxy.
- **The Host header** must name this page (loopback, or a configured host name): a page on
  another site that rebinds its DNS name to 127.0.0.1 is refused.
- **Changes** (every POST) need the CSRF token from the page's forms, and a cross-site
  ``Origin`` or ``Sec-Fetch-Site`` is refused outright.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import secrets
from collections.abc import Awaitable, Callable
from pathlib import Path

from aiohttp import web

from gateway.config import LOOPBACK, WebConfig

COOKIE = "corvid_session"
CSRF_FIELD = "csrf"
CSRF_HEADER = "X-CSRF-Token"
TOKEN_FILE = "web_token"
COOKIE_MAX_AGE = 30 * 24 * 3600
# Reachable without the cookie: the login form and what it needs to look right.
OPEN_PATHS = frozenset({"/login", "/static/corvid.css"})

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; img-src 'self' data: blob:; style-src 'self'; script-src 'self'; "
        "connect-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    # same-origin, not no-referrer: with no-referrer, browsers send "Origin: null" on the
    # page's own form posts, which the cross-site check must refuse.
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


def load_token(state: Path) -> str:
    """The page's access token, made (readable by the owner's user alone) if there is none."""
    path = state / TOKEN_FILE
    with contextlib.suppress(FileNotFoundError):
        token = path.read_text(encoding="ascii").strip()
        if len(token) >= 32:
            return token
    token = secrets.token_urlsafe(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as f:
        f.write(token + "\n")
    os.chmod(path, 0o600)
    return token


class Guard:
    """Checks a request's host, session and CSRF token; see the module's docstring."""

    def __init__(self, token: str, web_config: WebConfig) -> None:
        self._token = token
        self.session = self._derive("session")
        self.csrf = self._derive("csrf")
        self.secure = web_config.behind_tls_proxy
        hosts = set(LOOPBACK) | {"[::1]"} | {h.lower() for h in web_config.hostnames}
        if web_config.host not in ("0.0.0.0", "::", ""):
            hosts.add(web_config.host.lower())
        self.hosts = frozenset(hosts)

    def _derive(self, purpose: str) -> str:
        return hmac.new(self._token.encode(), purpose.encode(), hashlib.sha256).hexdigest()

    def token_ok(self, given: str) -> bool:
        return hmac.compare_digest(given.strip().encode(), self._token.encode())

    def signed_in(self, request: web.Request) -> bool:
        return hmac.compare_digest(request.cookies.get(COOKIE, "").encode(), self.session.encode())

    def sign_in(self, response: web.StreamResponse) -> None:
        response.set_cookie(
            COOKIE,
            self.session,
            max_age=COOKIE_MAX_AGE,
            path="/",
            httponly=True,
            samesite="Strict",
            secure=self.secure,
        )

    def host_ok(self, request: web.Request) -> bool:
        host = request.host.lower()
        if host.startswith("["):  # [::1]:8787
            name = host.partition("]")[0] + "]"
        else:
            name = host.rpartition(":")[0] if host.count(":") == 1 else host
        return name in self.hosts or name.startswith("127.")

    def cross_site(self, request: web.Request) -> bool:
        """Sent by a page on another site: the browser says so, or the Origin is not ours."""
        if request.headers.get("Sec-Fetch-Site", "") == "cross-site":
            return True
        origin = request.headers.get("Origin")
        if origin is None:
            return False
        scheme, _, rest = origin.partition("://")
        return scheme not in ("http", "https") or rest.lower() != request.host.lower()

    async def csrf_ok(self, request: web.Request) -> bool:
        given = request.headers.get(CSRF_HEADER)
        if given is None and request.content_type in (
            "application/x-www-form-urlencoded",
            "multipart/form-data",
        ):
            form = await request.post()
            value = form.get(CSRF_FIELD)
            given = value if isinstance(value, str) else None
        return given is not None and hmac.compare_digest(given.encode(), self.csrf.encode())

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        response = await self._checked(request, handler)
        response.headers.update(HEADERS)
        return response

    async def _checked(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if not self.host_ok(request):
            return web.Response(status=421, text="This page is not served under that name.\n")
        changing = request.method not in ("GET", "HEAD")
        if changing and self.cross_site(request):
            return web.Response(status=403, text="Refused: the request came from another site.\n")
        if request.path not in OPEN_PATHS and not self.signed_in(request):
            if changing or request.path.startswith("/events"):
                return web.Response(status=401, text="Sign in first.\n")
            return web.Response(status=303, headers={"Location": "/login"})
        if changing and request.path != "/login" and not await self.csrf_ok(request):
            return web.Response(status=403, text="Refused: the form's CSRF token is missing.\n")
        return await handler(request)
