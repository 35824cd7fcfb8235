"""The control page's address, held from the start; its server, loaded by the first browser."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import socket
from types import ModuleType
from typing import TYPE_CHECKING

from gateway.web.access import address, load_token, new_access
from gateway.web.backend import Backend

if TYPE_CHECKING:
    from gateway.web.server import WebServer

log = logging.getLogger(__name__)


def import_server() -> ModuleType:
    """The page's server (aiohttp's), imported when a browser first connects: most gateways
    serve the page to nobody most of the time."""
    return importlib.import_module("gateway.web.server")


BACKLOG = 100  # connections the kernel holds while the server is imported (asyncio's default)


class PageListener:
    """The page's listening sockets, then (from the first connection) its server."""

    def __init__(self, backend: Backend, sockets: list[socket.socket]) -> None:
        self.backend = backend
        self._sockets = sockets
        self.port: int = sockets[0].getsockname()[1]
        self.server: WebServer | None = None
        self._starting: asyncio.Task[None] | None = None
        self._watching = False
        self._token = load_token(backend.config.layout.web_token)  # made now if there is none

    @property
    def url(self) -> str:
        return address(self.backend.config.web.host, self.port)

    @property
    def token(self) -> str:
        return self.server.token if self.server is not None else self._token

    def rotate_token(self) -> bool:
        """A new access token: the old address stops working, every browser is signed out."""
        if self.server is not None:
            return self.server.rotate_token()
        layout = self.backend.config.layout
        self._token = new_access(layout.web_token, layout.web_sessions)
        log.info("control page: a new access token; every browser was signed out")
        return True

    def watch(self) -> None:
        loop = asyncio.get_running_loop()
        for sock in self._sockets:
            loop.add_reader(sock.fileno(), self._connected)
        self._watching = True

    def _unwatch(self) -> None:
        if self._watching:
            self._watching = False
            loop = asyncio.get_running_loop()
            for sock in self._sockets:
                loop.remove_reader(sock.fileno())

    def _connected(self) -> None:
        """A browser is at the door: the server is imported and takes the sockets over."""
        self._unwatch()
        if self._starting is None:
            self._starting = asyncio.create_task(self._serve(), name="control page start")

    async def _serve(self) -> None:
        try:
            module = await asyncio.to_thread(import_server)
            server: WebServer = module.WebServer(self.backend)
            await server.start(self._sockets)
        except Exception as exc:
            log.error(
                "control page unavailable: its server could not start (%s: %s)",
                type(exc).__name__,
                exc,
            )
            self._close()
            return
        self.server = server

    async def stop(self) -> None:
        if self._starting is not None and not self._starting.done():
            self._starting.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._starting
        if self.server is not None:
            await self.server.stop()  # closes the sockets with the server
            self.server = None
        else:
            self._unwatch()
            self._close()

    def _close(self) -> None:
        for sock in self._sockets:
            sock.close()
        self._sockets = []


async def listen(backend: Backend) -> PageListener | None:
    """The control page's address, bound and listening; None (and a warning) when it cannot
    be. Chats matter more than the page, so the gateway runs on without it."""
    cfg = backend.config.web
    try:
        sockets = await _bind(cfg.host, cfg.port)
    except OSError as exc:
        log.warning(
            "control page unavailable: cannot listen on %s:%s (%s); set web.port to a free "
            "port, or web.enabled: false",
            cfg.host,
            cfg.port,
            exc.strerror or exc,
        )
        return None
    listener = PageListener(backend, sockets)
    listener.watch()
    log.info("control page at %s (`corvid web` prints the address to sign in)", listener.url)
    return listener


async def _bind(host: str, port: int) -> list[socket.socket]:
    """A listening socket for each address ``host`` has, as asyncio's ``create_server`` makes
    them (address reuse, IPv6 sockets for IPv6 alone); with port 0, one port for them all."""
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(
        host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )
    sockets: list[socket.socket] = []
    try:
        for family, kind, proto, _, addr in dict.fromkeys(infos):
            sock = socket.socket(family, kind, proto)
            sockets.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            if port == 0 and len(sockets) > 1:
                addr = (addr[0], sockets[0].getsockname()[1], *addr[2:])
            sock.bind(addr)
            sock.listen(BACKLOG)
            sock.setblocking(False)
    except OSError:
        for sock in sockets:
            sock.close()
        raise
    if not sockets:
        raise OSError(f"{host!r} has no address to listen on")
    return sockets
