"""The connections of Corvid's HTTP clients (Telegram's, the model's) on asyncio's own streams.

httpx2's connection pool (httpcore2) reaches the network through a backend; its default runs on
anyio, whose streams put a cancel scope around every read and write, open each connection in a
task group, and build a table of lambdas whenever the pool asks an idle connection whether the
server has closed it, which the pool does for every idle connection each time a request starts
or ends. On asyncio's streams a message (its model call and its Telegram calls) costs Corvid
about 15 % less CPU, and so does a wave of 200 new chats.

``on_asyncio`` gives a client made by httpx2 (or by the anthropic SDK, whose default client is
httpx2's with its own socket options and proxies) this backend for its direct connections; a
proxy from the environment keeps httpx2's own. Timeouts and failures are httpcore2's
exceptions, as its own backends raise them, so httpx2 and the SDK see the errors they expect.

A leaf: it imports nothing from Corvid.
"""

from __future__ import annotations

import asyncio
import ipaddress
import select
import ssl
from collections.abc import Coroutine, Iterable
from typing import Any

import httpcore2
import httpx2

# How long one address family's attempt runs before the next is tried alongside it (RFC 8305),
# as anyio's connect does.
HAPPY_EYEBALLS_DELAY = 0.25
# asyncio's own bound on a TLS handshake (it takes no "none"); the caller's timeout is the one
# that counts, as it is with anyio.
HANDSHAKE_LIMIT = 24 * 3600.0


class AsyncioStream(httpcore2.AsyncNetworkStream):
    """One connection: asyncio's stream reader and writer behind httpcore2's interface.

    A timeout is told from a failure by the timeout's own scope: the kernel's ETIMEDOUT (a
    keep-alive probe unanswered) is a ``TimeoutError`` too, and a read error, as anyio says it.
    """

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        """Up to ``max_bytes`` once some have come; ``b""`` once the server has closed."""
        scope = asyncio.timeout(timeout)
        try:
            async with scope:
                return await self._reader.read(max_bytes)
        except OSError as exc:
            if scope.expired():
                raise httpcore2.ReadTimeout(f"no data within {timeout} s") from None
            raise httpcore2.ReadError(_said(exc)) from exc

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:
            return
        scope = asyncio.timeout(timeout)
        try:
            self._writer.write(buffer)
            async with scope:
                await self._writer.drain()
        except OSError as exc:  # ConnectionResetError once the connection is lost
            if scope.expired():
                raise httpcore2.WriteTimeout(f"not sent within {timeout} s") from None
            raise httpcore2.WriteError(_said(exc)) from exc

    async def aclose(self) -> None:
        # At once, as anyio closes: no TLS close_notify waited for (asyncio would wait up to
        # 30 s for the server's), no unsent bytes held on to (after a write timed out).
        self._writer.transport.abort()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        scope = asyncio.timeout(timeout)
        try:
            async with scope:
                await self._writer.start_tls(
                    ssl_context,
                    server_hostname=server_hostname,
                    ssl_handshake_timeout=HANDSHAKE_LIMIT,
                )
        except OSError as exc:  # ssl.SSLError (a certificate refused) is one
            await self.aclose()
            if scope.expired():
                raise httpcore2.ConnectTimeout(f"no TLS handshake within {timeout} s") from None
            raise httpcore2.ConnectError(_said(exc)) from exc
        except BaseException:  # cancelled: the connection is not left open
            await self.aclose()
            raise
        return self

    def get_extra_info(self, info: str) -> Any:
        writer = self._writer
        if info == "is_readable":
            # Asked of an idle connection: has the server closed it, or sent what no request
            # asked for (a 408 before it closes)? The event loop reads a socket as soon as it
            # can, into the reader's buffer, which has no public size; what it has not read
            # yet, the socket shows.
            if writer.is_closing() or self._reader.at_eof():
                return True
            if getattr(self._reader, "_buffer", None):
                return True
            sock = writer.get_extra_info("socket")
            return sock is None or _readable(sock.fileno())
        if info == "ssl_object":
            return writer.get_extra_info("ssl_object")
        if info == "client_addr":
            return writer.get_extra_info("sockname")
        if info == "server_addr":
            return writer.get_extra_info("peername")
        if info == "socket":
            return writer.get_extra_info("socket")
        return None


class AsyncioBackend(httpcore2.AsyncNetworkBackend):
    """Opens connections for httpcore2's pool with ``asyncio.open_connection``."""

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        local = (local_address, 0) if local_address else None
        # Happy eyeballs for a name only: an address has nothing to race, and asyncio's race
        # can drop a socket it has just connected when cancelled at that moment.
        eyeballs = None if _is_address(host) else HAPPY_EYEBALLS_DELAY
        opening = asyncio.open_connection(
            host, port, local_addr=local, happy_eyeballs_delay=eyeballs
        )
        return await _connected(opening, timeout, socket_options)

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        opening = asyncio.open_unix_connection(path)
        return await _connected(opening, timeout, socket_options)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


async def _connected(
    opening: Coroutine[Any, Any, tuple[asyncio.StreamReader, asyncio.StreamWriter]],
    timeout: float | None,
    socket_options: Iterable[Any] | None,
) -> AsyncioStream:
    """The connection ``opening`` makes within ``timeout``, with the pool's socket options set
    (asyncio has set TCP_NODELAY)."""
    scope = asyncio.timeout(timeout)
    try:
        async with scope:
            reader, writer = await opening
    except OSError as exc:  # refused, unreachable, a name not resolved
        if scope.expired():
            raise httpcore2.ConnectTimeout(f"no connection within {timeout} s") from None
        raise httpcore2.ConnectError(_said(exc)) from exc
    try:
        sock = writer.get_extra_info("socket")
        for option in socket_options or ():
            sock.setsockopt(*option)
    except OSError as exc:
        writer.transport.abort()
        raise httpcore2.ConnectError(_said(exc)) from exc
    return AsyncioStream(reader, writer)


def on_asyncio(client: httpx2.AsyncClient) -> httpx2.AsyncClient:
    """``client``, its direct connections opened on asyncio's streams from now on.

    httpx2 has no option for its pool's backend; the pool takes one when made, and reads it
    each time it opens a connection. A client whose default transport is not httpx2's own
    (a test's mock) is left as it is."""
    transport = client._transport  # httpx2's default transport; proxies are mounts apart
    pool = getattr(transport, "_pool", None)
    if isinstance(transport, httpx2.AsyncHTTPTransport) and isinstance(
        pool, httpcore2.AsyncConnectionPool
    ):
        pool._network_backend = AsyncioBackend()
    return client


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _readable(fd: int) -> bool:
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(0))


def _said(exc: OSError) -> str:
    return str(exc) or type(exc).__name__
