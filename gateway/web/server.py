"""The control page's web server: aiohttp on the gateway's own event loop."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Awaitable, Callable
from importlib import resources

from aiohttp import web

from gateway.config.loader import ChannelConfig
from gateway.usage import page as usage_page
from gateway.web import (
    actions_page,
    admin,
    chat_page,
    history_page,
    loops_page,
    memory_page,
    overview,
    proposals_page,
    sessions_page,
)
from gateway.web.access import SignedIn, address, load_token, new_token
from gateway.web.backend import Backend
from gateway.web.guard import Guard, add_headers
from gateway.web.respond import (
    BACKEND,
    GUARD,
    STOPPING,
    flash_read,
    html_response,
    see_other,
)

log = logging.getLogger(__name__)

RunJob = Callable[[str], Awaitable[tuple[str | None, str | None]]]


# The largest request: a file sent on the chat page (the chat platforms' default limit).
MAX_BODY = ChannelConfig().max_file_bytes + 1024**2
STATIC_TYPES = {".css": "text/css", ".js": "text/javascript", ".svg": "image/svg+xml"}
# The outcome of an action, shown once by the page it redirects to (never in the address,
# where a reload or a shared link would show it again).
LOGIN_REFUSED = (
    '<p class="notice error" role="status">That token is not right: open the address '
    "<code>corvid web</code> prints, or paste the token again.</p>"
)


class WebServer:
    """Serves the control page on the sockets it is given; ``url`` is its address once started."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        layout = backend.config.layout
        self.guard = Guard(
            load_token(layout.web_token), backend.config.web, SignedIn(layout.web_sessions)
        )
        self.stopping = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self.port: int | None = None

    @property
    def token(self) -> str:
        return self.guard.token

    def rotate_token(self) -> bool:
        """A new access token: the old address stops working, every browser is signed out."""
        self.guard.rotate(new_token(self.backend.config.layout.web_token))
        log.info("control page: a new access token; every browser was signed out")
        return True

    @property
    def url(self) -> str:
        return address(self.backend.config.web.host, self.port)

    def app(self) -> web.Application:
        app = web.Application(
            middlewares=[self.guard.middleware, flash_read], client_max_size=MAX_BODY
        )
        app[BACKEND] = self.backend
        app[SERVER] = self
        app[GUARD] = self.guard
        app[STOPPING] = self.stopping
        app.on_response_prepare.append(add_headers)
        app.router.add_get("/login", login_form)
        app.router.add_post("/login", login)
        app.router.add_post("/logout", logout)
        app.router.add_get("/logout/everywhere", confirm_everywhere)
        app.router.add_get("/token/new", confirm_new_token)
        app.router.add_post("/token/new", make_new_token)
        app.router.add_get("/static/{name}", static)
        app.router.add_get("/favicon.ico", favicon)
        overview.routes(app)
        memory_page.routes(app)
        history_page.routes(app)
        proposals_page.routes(app)
        loops_page.routes(app)
        admin.routes(app)
        sessions_page.routes(app)
        chat_page.routes(app)
        usage_page.routes(app)
        actions_page.routes(app)
        return app

    async def start(self, sockets: list[socket.socket]) -> None:
        """Serve on ``sockets``, bound and listening already (``gateway/web/listener.py``, which
        has said the address)."""
        # No access log: a login address carries the token in its query.
        self._runner = web.AppRunner(self.app(), access_log=None, shutdown_timeout=2)
        await self._runner.setup()
        try:
            for sock in sockets:
                await web.SockSite(self._runner, sock).start()
        except OSError:
            await self._runner.cleanup()
            self._runner = None
            raise
        self.port = int(sockets[0].getsockname()[1])

    async def stop(self) -> None:
        self.stopping.set()  # live pages end their streams
        if self._runner is not None:
            with contextlib.suppress(Exception):
                await self._runner.cleanup()
            self._runner = None


SERVER = web.AppKey("server", WebServer)


async def login_form(request: web.Request) -> web.StreamResponse:
    guard = request.app[GUARD]
    token = request.query.get("token")
    if token is not None:
        if guard.token_ok(token):
            return signed_in(guard)
        return _login_page(LOGIN_REFUSED, 403)
    if guard.signed_in(request):
        return web.Response(status=303, headers={"Location": "/"})
    return _login_page("", 200)


async def login(request: web.Request) -> web.StreamResponse:
    guard = request.app[GUARD]
    form = await request.post()
    token = form.get("token")
    if isinstance(token, str) and guard.token_ok(token):
        return signed_in(guard)
    return _login_page(LOGIN_REFUSED, 403)


async def logout(request: web.Request) -> web.StreamResponse:
    """Sign this browser out, or (``everywhere``, once confirmed) every browser."""
    form = await request.post()
    everywhere = bool(form.get("everywhere"))
    if everywhere and form.get("confirm") != "1":
        return see_other("/logout/everywhere")
    response = see_other("/login")
    request.app[GUARD].sign_out(request, response, everywhere)
    return response


async def confirm_everywhere(request: web.Request) -> web.StreamResponse:
    from gateway.web.html import form, page

    csrf = request.app[GUARD].csrf
    body = (
        "<p>Every browser signed in to this page is signed out, this one too. The access "
        "token stays the same: <code>corvid web</code> prints the address to sign in again.</p>"
        + _choice(
            form("/logout", csrf, "Sign out every browser", {"everywhere": "1", "confirm": "1"})
        )
    )
    return html_response(page("Sign out every browser?", body, active="/config", csrf=csrf))


async def confirm_new_token(request: web.Request) -> web.StreamResponse:
    from gateway.web.html import form, page

    csrf = request.app[GUARD].csrf
    body = (
        "<p>A new access token replaces the old one: the address <code>corvid web</code> "
        "printed before stops working, and every other browser is signed out. This one stays "
        "signed in; <code>corvid web</code> prints the new address.</p>"
        + _choice(form("/token/new", csrf, "Make a new token", {"confirm": "1"}))
    )
    return html_response(page("Make a new access token?", body, active="/config", csrf=csrf))


async def make_new_token(request: web.Request) -> web.StreamResponse:
    server = request.app[SERVER]
    if (await request.post()).get("confirm") != "1":
        return see_other("/token/new")
    server.rotate_token()
    response = see_other(
        "/config",
        ok="A new access token is in place: the old address no longer works and every other "
        "browser was signed out. corvid web prints the new address.",
    )
    server.guard.sign_in(response)  # this browser goes on
    return response


def _choice(button: str) -> str:
    return f'<p>{button} <a class="button" href="/config">Cancel</a></p>'


def signed_in(guard: Guard) -> web.StreamResponse:
    response = web.Response(status=303, headers={"Location": "/"})
    guard.sign_in(response)
    return response


def _login_page(problem: str, status: int) -> web.Response:
    """The sign-in form; ``problem`` is HTML of ours (no text from the request in it)."""
    from gateway.web.html import page

    body = (
        problem
        + "<p>Corvid's control page. Open the address <code>corvid web</code> prints, or paste "
        "the access token (in <code>state/web_token</code>) here.</p>"
        '<form method="post" action="/login"><label>Access token '
        '<input name="token" type="password" autocomplete="current-password" required></label>'
        "<button>Sign in</button></form>"
    )
    return html_response(page("Sign in", body, signed_in=False), status)


async def static(request: web.Request) -> web.StreamResponse:
    name = request.match_info["name"]
    suffix = name[name.rfind(".") :] if "." in name else ""
    if "/" in name or suffix not in STATIC_TYPES:
        raise web.HTTPNotFound()
    try:
        data = resources.files("gateway.web").joinpath("static", name).read_bytes()
    except FileNotFoundError:
        raise web.HTTPNotFound() from None
    return web.Response(body=data, content_type=STATIC_TYPES[suffix], charset="utf-8")


async def favicon(request: web.Request) -> web.StreamResponse:
    raise web.HTTPFound("/static/corvid.svg")
