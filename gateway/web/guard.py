"""Who may use the control page, checked on every request before any page runs."""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
from collections.abc import Awaitable, Callable

from aiohttp import web

from gateway.config.checks import LOOPBACK
from gateway.config.loader import WebConfig
from gateway.web.access import SESSION_DAYS, SignedIn, wildcard

COOKIE = "corvid_session"
CSRF_FIELD = "csrf"
CSRF_HEADER = "X-CSRF-Token"
# Reachable without the cookie: the login form and what it needs to look right.
OPEN_PATHS = frozenset({"/login", "/static/corvid.css", "/static/corvid.svg", "/favicon.ico"})
LOGIN_MAX_BYTES = 4096  # a sign-in form is read only up to this size

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


class Guard:
    """Checks a request's host, session and CSRF token.

    The access token (``state/web_token``) signs a browser in once, then a session cookie
    (HttpOnly, SameSite=Strict, kept on the server so *Sign out* ends it; a new token ends
    them all). The Host header must name this page exactly, so a site that rebinds its DNS
    name to 127.0.0.1 is refused; a change (POST) needs the CSRF token and is refused outright
    when cross-site. Browsers send a cookie to every port of a host, so a leaked session can
    be ended without a new token."""

    def __init__(self, token: str, web_config: WebConfig, signed_in: SignedIn) -> None:
        self.token = token
        self.sessions = signed_in
        self.csrf = _csrf(token)
        self.secure = web_config.behind_tls_proxy
        hosts = set(LOOPBACK) | {h.lower().rstrip(".") for h in web_config.hostnames}
        if not wildcard(web_config.host):
            hosts.add(web_config.host.lower())
        self.hosts = frozenset(hosts)

    def token_ok(self, given: str) -> bool:
        return hmac.compare_digest(given.strip().encode(), self.token.encode())

    def rotate(self, token: str) -> None:
        """``token`` replaces the old one: every browser is signed out, every open form's
        CSRF token is stale."""
        self.token, self.csrf = token, _csrf(token)
        self.sessions.end(None)

    def signed_in(self, request: web.Request) -> bool:
        return self.sessions.valid(request.cookies.get(COOKIE, ""))

    def sign_in(self, response: web.StreamResponse) -> None:
        response.set_cookie(
            COOKIE,
            self.sessions.new(),
            max_age=SESSION_DAYS * 86400,
            path="/",
            httponly=True,
            samesite="Strict",
            secure=self.secure,
        )

    def sign_out(
        self, request: web.Request, response: web.StreamResponse, everywhere: bool
    ) -> None:
        self.sessions.end(None if everywhere else request.cookies.get(COOKIE, ""))
        response.del_cookie(COOKIE, path="/")

    def host_ok(self, request: web.Request) -> bool:
        name = host_name(request.headers.get("Host", ""))
        if name is None:
            return False
        if name in self.hosts:
            return True
        try:
            return ipaddress.ip_address(name).is_loopback
        except ValueError:  # a name, not an address: only the configured ones
            return False

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
        if not self.host_ok(request):
            return web.Response(status=421, text="This page is not served under that name.\n")
        changing = request.method not in ("GET", "HEAD")
        if changing and self.cross_site(request):
            return web.Response(status=403, text="Refused: the request came from another site.\n")
        if request.path not in OPEN_PATHS and not self.signed_in(request):
            if changing or request.path.startswith("/events"):
                return web.Response(status=401, text="Sign in first.\n")
            return web.Response(status=303, headers={"Location": "/login"})
        if request.path == "/login" and (request.content_length or 0) > LOGIN_MAX_BYTES:
            return web.Response(status=413, text="That is not a sign-in form.\n")
        if changing and request.path != "/login" and not await self.csrf_ok(request):
            return web.Response(status=403, text="Refused: the form's CSRF token is missing.\n")
        return await handler(request)


async def add_headers(request: web.Request, response: web.StreamResponse) -> None:
    """Every answer carries the security headers, errors and redirects included."""
    response.headers.update(HEADERS)


def host_name(host: str) -> str | None:
    """The name in a Host header (``name``, ``name:port``, ``[v6]`` or ``[v6]:port``),
    lower-cased and without a trailing dot; None for anything else."""
    host = host.strip().lower()
    if host.startswith("["):
        inside, sep, rest = host[1:].partition("]")
        if not sep or (rest and not (rest.startswith(":") and rest[1:].isdigit())):
            return None
        return inside
    name, sep, port = host.partition(":")
    if sep and not port.isdigit():
        return None
    return name.rstrip(".") or None


def _csrf(token: str) -> str:
    return hmac.new(token.encode(), b"csrf", hashlib.sha256).hexdigest()
