"""How python-telegram-bot's requests reach Telegram: over httpx2, each one run to its end."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

import httpx2
from telegram.error import NetworkError, TimedOut
from telegram.request import BaseRequest, RequestData

from gateway.infra.tasks import settle
from gateway.infra.tls import tls_context

log = logging.getLogger(__name__)

# PTB's own request class sits on httpcore 1.0, whose pool can keep a slot taken for good when a
# request is cancelled while it waits; httpx2's reclaims them, and requests here are never
# cancelled once started. Should the pool still stop giving out connections, a run of pool
# timeouts, each waited out while no more of our requests than its connections were in it, and
# while Telegram answered our other client (the long poll's), makes a fresh client.
STUCK_AFTER = 3  # pool timeouts in a row, no request answered between them...
ANSWERED_LATELY = 90.0  # ...and Telegram answered our other client within this many seconds
# Replaced clients kept open for what they still carry; older ones are closed.
MAX_RETIRED = 2
# Request addresses kept parsed: one per Bot API method used (and per file path downloaded).
URLS_KEPT = 256


class AnswerLate(TimedOut):
    """Telegram took the whole request but did not answer in time: it may have been carried
    out (a message posted), so repeating it may do it twice."""


class Transport(BaseRequest):
    """A PTB request class on an httpx2 client (see the note above ``STUCK_AFTER``)."""

    def __init__(
        self,
        *,
        pool_size: int = 32,
        read_timeout: float = 30.0,
        write_timeout: float = 30.0,
        connect_timeout: float = 10.0,
        pool_timeout: float = 5.0,
        others_answered: Callable[[], float] | None = None,
        cancellable: bool = False,
    ) -> None:
        """``others_answered``: when Telegram last answered our other client (monotonic time),
        which tells a stuck pool from Telegram being down; None: never replace the client.
        ``cancellable``: a request ends when its caller stops waiting (the long poll, which
        is only cancelled when the channel stops and nothing waits for its answer)."""
        self._cancellable = cancellable
        self._timeout = httpx2.Timeout(
            connect=connect_timeout, read=read_timeout, write=write_timeout, pool=pool_timeout
        )
        self._limits = httpx2.Limits(max_connections=pool_size, max_keepalive_connections=pool_size)
        self.pool_size = pool_size
        self._client = self._new_client()
        # For each client: our requests in its pool now (holding or awaiting a connection),
        # and when last there were more of them than it has connections.
        self._inside: dict[httpx2.AsyncClient, int] = {}
        self._crowded: dict[httpx2.AsyncClient, float] = {}
        self._retired: list[httpx2.AsyncClient] = []
        self._running: set[asyncio.Future[tuple[int, bytes]]] = set()
        self._others = others_answered
        self.last_answer = 0.0  # monotonic time Telegram last answered a request of this one
        self.pool_timeouts = 0  # in a row
        self.replaced = 0  # stuck clients replaced since the start
        # The same few addresses over and over (the bot's token and a method): parsing one
        # costs more than the rest of building the request.
        self._urls: dict[str, httpx2.URL] = {}

    def _new_client(self) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(
            timeout=self._timeout,
            limits=self._limits,
            verify=tls_context(),
            headers={"User-Agent": self.USER_AGENT},
        )

    def _url(self, url: str) -> httpx2.URL:
        parsed = self._urls.get(url)
        if parsed is None:
            if len(self._urls) >= URLS_KEPT:
                self._urls.clear()
            parsed = self._urls[url] = httpx2.URL(url)
        return parsed

    @property
    def read_timeout(self) -> float | None:
        return self._timeout.read

    async def initialize(self) -> None:
        if self._client.is_closed:
            self._client = self._new_client()

    async def shutdown(self) -> None:
        # Requests still running get a moment to finish (a reply being sent at shutdown).
        await settle(self._running, 5)
        for client in (*self._retired, self._client):
            await client.aclose()
        self._retired.clear()

    def pool(self) -> dict[str, int]:
        """Requests under way on the client now (using or waiting for a connection), and how
        often a stuck client was replaced."""
        return {"requests": self._inside.get(self._client, 0), "replaced": self.replaced}

    async def do_request(
        self,
        url: str,
        method: str,
        request_data: RequestData | None = None,
        read_timeout: Any = BaseRequest.DEFAULT_NONE,
        write_timeout: Any = BaseRequest.DEFAULT_NONE,
        connect_timeout: Any = BaseRequest.DEFAULT_NONE,
        pool_timeout: Any = BaseRequest.DEFAULT_NONE,
    ) -> tuple[int, bytes]:
        t = self._timeout

        def chosen(given: Any, default: float | None) -> float | None:
            return default if given is BaseRequest.DEFAULT_NONE else given

        timeout = httpx2.Timeout(
            connect=chosen(connect_timeout, t.connect),
            read=chosen(read_timeout, t.read),
            write=chosen(write_timeout, t.write),
            pool=chosen(pool_timeout, t.pool),
        )
        if self._cancellable:
            return await self._request(url, method, request_data, timeout)
        task = asyncio.ensure_future(self._request(url, method, request_data, timeout))
        self._running.add(task)
        task.add_done_callback(self._running.discard)
        # Its caller may have stopped waiting: an error nobody awaits is not logged as lost.
        task.add_done_callback(lambda t: t.cancelled() or t.exception())
        # The caller may stop waiting; the request does not stop (see ``STUCK_AFTER``'s note).
        try:
            return await asyncio.shield(task)
        finally:
            del task  # no cycle frame → task → its exception → traceback → frame

    async def _request(
        self, url: str, method: str, data: RequestData | None, limits: httpx2.Timeout
    ) -> tuple[int, bytes]:
        client = self._client
        entered = time.monotonic()
        self._enter(client)
        try:
            response = await client.request(
                method,
                self._url(url),
                timeout=limits,
                files=data.multipart_data if data else None,
                data=data.json_parameters if data else None,
            )
        except httpx2.PoolTimeout as exc:
            self._pool_timed_out(client, entered)
            raise TimedOut(
                "Pool timeout: every connection to Telegram is in use; the request was not sent"
            ) from exc
        except httpx2.ReadTimeout as exc:
            raise AnswerLate(
                "Timed out waiting for Telegram's answer; the request may have been carried out"
            ) from exc
        except httpx2.TimeoutException as exc:
            raise TimedOut from exc
        except httpx2.HTTPError as exc:
            raise NetworkError(f"httpx2.{type(exc).__name__}: {exc}") from exc
        finally:
            self._left(client)
        self.pool_timeouts = 0
        self.last_answer = time.monotonic()
        return response.status_code, response.content

    def _enter(self, client: httpx2.AsyncClient) -> None:
        inside = self._inside[client] = self._inside.get(client, 0) + 1
        if inside > self.pool_size:
            self._crowded[client] = time.monotonic()

    def _left(self, client: httpx2.AsyncClient) -> None:
        inside = self._inside[client]
        if inside > self.pool_size:  # crowded until now
            self._crowded[client] = time.monotonic()
        if inside > 1:
            self._inside[client] = inside - 1
        else:  # nobody waits: what came before tells nothing about the next request
            del self._inside[client]
            self._crowded.pop(client, None)

    def _pool_timed_out(self, client: httpx2.AsyncClient, entered: float) -> None:
        """A request that came into ``client``'s pool at ``entered`` found no connection."""
        self.pool_timeouts += 1
        if self.pool_timeouts < STUCK_AFTER or client is not self._client:
            return
        if self._others is None or time.monotonic() - self._others() > ANSWERED_LATELY:
            return  # Telegram may be down or slow: every connection busy waiting for it
        if self._crowded.get(client, -1.0) >= entered:
            return  # more requests of ours than connections while it waited: busy, not stuck
        # A fresh client for the requests to come. The stuck one stays open until shutdown:
        # requests it still carries finish on it, and it holds no more than the sockets it has.
        self._retired.append(client)
        if len(self._retired) > MAX_RETIRED:  # long done with what it carried
            oldest = asyncio.ensure_future(self._retired.pop(0).aclose())
            oldest.add_done_callback(lambda t: t.cancelled() or t.exception())
        self._client = self._new_client()
        self.pool_timeouts = 0
        self.replaced += 1
        log.warning(
            "telegram: no connection to Telegram came free for %d requests in a row while "
            "Telegram answered our long poll, and some were held by no request; the HTTP "
            "client was replaced (%d time(s) since the start)",
            STUCK_AFTER,
            self.replaced,
        )
