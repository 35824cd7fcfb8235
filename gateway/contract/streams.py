"""The connections of Corvid's HTTP clients (Telegram's, the model's) on asyncio's own streams.

httpx2's connection pool (httpcore2) reaches the network through a backend; its default runs on
anyio, whose streams put a cancel scope around every read and write, open each connection in a
task group, and build a table of lambdas whenever the pool asks an idle connection whether the
server has closed it, which the pool does for every idle connection each time a request starts
or ends. On asyncio's streams a message (its model call and its Telegram calls) costs Corvid
about a fifth less CPU, and a wave of 200 new chats about a seventh less.

``on_asyncio`` gives a client made by httpx2 (or by the anthropic SDK, whose default client is
httpx2's with its own socket options and proxies) this backend for its direct connections; a
proxy from the environment keeps httpx2's own. Timeouts and failures are httpcore2's
exceptions, as its own backends raise them, so httpx2 and the SDK see the errors they expect.

A leaf of the contract: it imports nothing from Corvid.
"""

from __future__ import annotations

import asyncio
import select
import ssl
from collections.abc import Iterable
from typing import Any

import httpcore2
import httpx2

# How long one address family's attempt runs before the next is tried alongside it (RFC 8305),
# as anyio's connect does.
HAPPY_EYEBALLS_DELAY = 0.25


class AsyncioStream(httpcore2.AsyncNetworkStream):
    """One connection: asyncio's stream reader and writer behind httpcore2's interface."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        """Up to ``max_bytes`` once some have come; ``b""`` once the server has closed."""
        try:
            async with asyncio.timeout(timeout):
                return await self._reader.read(max_bytes)
        except TimeoutError:
            raise httpcore2.ReadTimeout(f"no data within {timeout} s") from None
        except OSError as exc:
            raise httpcore2.ReadError(_said(exc)) from exc

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:
            return
        try:
            self._writer.write(buffer)
            async with asyncio.timeout(timeout):
                await self._writer.drain()
        except TimeoutError:
            raise httpcore2.WriteTimeout(f"not sent within {timeout} s") from None
        except OSError as exc:  # ConnectionResetError once the connection is lost
            raise httpcore2.WriteError(_said(exc)) from exc

    async def aclose(self) -> None:
        self._writer.close()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        try:
            await self._writer.start_tls(
                ssl_context, server_hostname=server_hostname, ssl_handshake_timeout=timeout
            )
        except TimeoutError:
            await self.aclose()
            raise httpcore2.ConnectTimeout(f"no TLS handshake within {timeout} s") from None
        except OSError as exc:  # ssl.SSLError (a certificate refused) is one
            await self.aclose()
            raise httpcore2.ConnectError(_said(exc)) from exc
        return self

    def get_extra_info(self, info: str) -> Any:
        writer = self._writer
        if info == "is_readable":
            # Asked of an idle connection: has the server closed it (or sent what no request
            # asked for)? The event loop reads a socket as soon as it can, so an end it has
            # seen shows on the stream; one it has not seen yet, on the socket.
            if writer.is_closing() or self._reader.at_eof():
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
        try:
            async with asyncio.timeout(timeout):
                reader, writer = await asyncio.open_connection(
                    host, port, local_addr=local, happy_eyeballs_delay=HAPPY_EYEBALLS_DELAY
                )
        except TimeoutError:
            raise httpcore2.ConnectTimeout(f"no connection within {timeout} s") from None
        except OSError as exc:  # refused, unreachable, a name not resolved
            raise httpcore2.ConnectError(_said(exc)) from exc
        sock = writer.get_extra_info("socket")
        for option in socket_options or ():  # asyncio has set TCP_NODELAY already
            sock.setsockopt(*option)
        return AsyncioStream(reader, writer)

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        try:
            async with asyncio.timeout(timeout):
                reader, writer = await asyncio.open_unix_connection(path)
        except TimeoutError:
            raise httpcore2.ConnectTimeout(f"no connection within {timeout} s") from None
        except OSError as exc:
            raise httpcore2.ConnectError(_said(exc)) from exc
        return AsyncioStream(reader, writer)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


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


def _readable(fd: int) -> bool:
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(0))


def _said(exc: OSError) -> str:
    return str(exc) or type(exc).__name__
