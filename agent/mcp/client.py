"""The MCP client: one server's connection, its tools and their results, through the ``mcp`` SDK."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

import anyio
import anyio.lowlevel
import httpx2
import mcp_types as mt
from mcp import Client, MCPError, StdioServerParameters, stdio_client
from mcp.client import Transport
from mcp.client.session import IncomingMessage
from mcp.client.streamable_http import streamable_http_client

from agent.mcp.hub import FIRST_PAUSE, Restarts, ServerView, lasting
from agent.mcp.wire import Watched, describe_error, mcp_tool, server_log, tool_result, with_client
from agent.settings import McpServerSettings
from agent.tools.context import TurnContext
from agent.tools.registry import Tool, ToolResult
from gateway.infra.tls import tls_context

log = logging.getLogger(__name__)


class McpServer:
    """One server: its connection, kept up by a task that starts it again when it ends."""

    def __init__(
        self,
        name: str,
        spec: McpServerSettings,
        logs: Path,
        *,
        first_pause: float = FIRST_PAUSE,
        changed: Callable[[], None] = lambda: None,
    ) -> None:
        self.name = name
        self.spec = spec
        self._logs = logs
        self._again = Restarts(name, first_pause)
        self._changed = changed
        self.tools: tuple[Tool, ...] = ()
        self.skipped: tuple[str, ...] = ()
        self.state = "starting" if spec.enabled else "off"
        self.error = ""
        self.restarts = 0
        self.first_try = asyncio.Event()
        self._change = asyncio.Event()  # set, and replaced, at every change of state
        self.http_status: int | None = None  # the last error status an HTTP server answered
        self._client: Client | None = None
        self._ended: asyncio.Event | None = None
        self._relist = False
        self._stop = asyncio.Event()
        self._starting_scope: anyio.CancelScope | None = None
        self._spawning: asyncio.Event | None = None
        self._ready_at: float | None = None
        self._task: asyncio.Task[None] | None = None

    def _moved(self, state: str, error: str = "") -> None:
        self.state, self.error = state, error
        self._change.set()
        self._change = asyncio.Event()

    async def wait_until(self, done: Callable[[McpServer], bool], within: float) -> None:
        """Return once ``done(self)`` holds, checked at every change of state (bounded)."""
        async with asyncio.timeout(within):
            while not done(self):
                await self._change.wait()

    @property
    def starting(self) -> bool:
        return self.spec.enabled and not self.first_try.is_set()

    def view(self) -> ServerView:
        spec, tools = self.spec, tuple(t.name for t in self.tools)
        return ServerView(
            self.name,
            spec.transport,
            spec.shared,
            self.state,
            tools,
            self.error,
            self.restarts,
            self.skipped,
        )

    def start(self) -> None:
        if self.spec.enabled and self._task is None:
            self._task = asyncio.create_task(self._keep_up(), name=f"mcp:{self.name}")

    def wind_down(self) -> None:
        self._again.wind_down()

    async def stop(self) -> None:
        self._stop.set()
        if self._ended is not None:
            self._ended.set()
        if self._starting_scope is not None:  # a start under way is given up at once,
            if self._spawning is not None:  # once its process exists (a spawn is quick)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._spawning.wait(), 5)
            if self._starting_scope is not None:
                self._starting_scope.cancel()
        task, self._task = self._task, None
        if task is None:
            return
        # The SDK closes stdin, then terminates the process; each step is bounded by it.
        done, _ = await asyncio.wait({task}, timeout=10)
        if not done:
            task.cancel()
            await asyncio.wait({task}, timeout=5)
        self._moved("stopped")

    # -- the connection -------------------------------------------------------------------------

    async def _keep_up(self) -> None:
        while not self._stop.is_set():
            self._ready_at = None
            mendless = False
            try:
                reason = await self._serve_once()
            except Exception as exc:
                reason = describe_error(exc, self.spec, self.http_status)
                mendless = lasting(exc, self.spec)
            self._set_tools((), ())
            self._client = None
            self.first_try.set()
            if self._stop.is_set():
                break
            state, error = self._again.after(reason, self._up_for(), mendless)
            self._moved(state, error)
            if state == "waiting":
                ended = self._ended = asyncio.Event()  # stop() cuts the pause short
                state = await self._again.wait(ended)
                self.restarts = self._again.count
                self._moved(state)
            if state != "starting":
                break

    async def _serve_once(self) -> str:
        """Connect, list the tools, and hold the connection until it ends; why it ended."""
        ended = self._ended = asyncio.Event()
        if self._stop.is_set():
            return "stopped"
        with server_log(self._logs, self.name) as errlog:
            transport = Watched(self.transport(errlog), ended)
            self._spawning = transport.spawned
            with anyio.CancelScope() as scope:
                # The deadline covers starting up only: spawn, handshake and tool list.
                scope.deadline = anyio.current_time() + self.spec.start_timeout
                self._starting_scope = scope
                async with Client(
                    transport,
                    cache=None,
                    client_info=mt.Implementation(name="corvid", version="1"),
                    message_handler=self._on_message,
                ) as client:
                    # Subscribed before the first list, so no change falls in between.
                    subscribed = asyncio.Event()
                    watcher = asyncio.create_task(self._watch_list(client, ended, subscribed))
                    try:
                        with anyio.move_on_after(5):  # a server that never acknowledges
                            await subscribed.wait()
                        await self.list_tools(client)
                        scope.deadline = math.inf
                        self._starting_scope = None
                        self._client = client
                        self._ready_at = time.monotonic()
                        self._again.ready()
                        self._moved("ready")
                        log.info("MCP server %s ready: %d tool(s)", self.name, len(self.tools))
                        self.first_try.set()
                        await self._hold(client, ended, transport)
                    finally:
                        watcher.cancel()
                        await asyncio.wait({watcher})
            self._starting_scope = None
            if scope.cancelled_caught and not self._stop.is_set():
                return f"it did not start within {self.spec.start_timeout:g} s"
        if self._stop.is_set():
            return "stopped"
        return "its connection ended" if transport.closed else "a call found it gone"

    def _up_for(self) -> float:
        """How long the last connection was ready (0: it never was)."""
        return 0.0 if self._ready_at is None else time.monotonic() - self._ready_at

    async def _hold(self, client: Client, ended: asyncio.Event, transport: Watched) -> None:
        """Until the connection ends, listing the tools again when the server says they
        changed (bounded like a start)."""
        while True:
            await ended.wait()
            if not self._relist or self._stop.is_set() or transport.closed:
                return
            ended.clear()
            self._relist = False
            with anyio.move_on_after(self.spec.start_timeout) as relisting:
                await self.list_tools(client)
            if relisting.cancelled_caught:
                log.warning("MCP server %s did not list its tools again in time", self.name)
                return

    async def _watch_list(
        self, client: Client, ended: asyncio.Event, subscribed: asyncio.Event
    ) -> None:
        """On connections of the 2026 protocol, a change of tools reaches only those who
        subscribe; older servers send it on the connection (``_on_message``)."""
        from mcp.client.subscriptions import ListenNotSupportedError

        try:
            async with client.listen(tools_list_changed=True) as changes:
                subscribed.set()
                async for _ in changes:
                    self._relist = True
                    ended.set()
        except ListenNotSupportedError:
            pass
        except Exception as exc:  # the subscription is a convenience: the connection goes on
            log.info(
                "MCP server %s: no tool-change subscription (%s)", self.name, type(exc).__name__
            )
        finally:
            subscribed.set()

    def transport(self, errlog: TextIO) -> Transport:
        spec = self.spec
        if spec.command:
            params = StdioServerParameters(
                command=spec.command,
                args=list(spec.args),
                env={k: v.value for k, v in spec.env.items()},
            )
            return stdio_client(params, errlog=errlog)
        headers = {k: v.value for k, v in spec.headers.items()}
        self.http_status = None

        async def seen(response: httpx2.Response) -> None:
            if response.status_code >= 400:  # the SDK's error leaves the status out
                self.http_status = response.status_code

        http = httpx2.AsyncClient(
            verify=tls_context(),
            headers=headers,
            timeout=httpx2.Timeout(30, read=300),
            event_hooks={"response": [seen]},
        )
        return with_client(http, streamable_http_client(spec.url, http_client=http))

    async def list_tools(self, client: Client) -> None:
        found: list[mt.Tool] = []
        cursor: str | None = None
        for _ in range(100):  # a paginator that never ends cannot hold the start forever
            page = await client.list_tools(cursor=cursor)
            found += page.tools
            cursor = page.next_cursor
            if cursor is None:
                break
        tools, skipped = [], []
        for item in sorted(found, key=lambda t: t.name):
            tool = self._tool(item)
            if tool is None:
                skipped.append(item.name)
            else:
                tools.append(tool)
        if skipped:
            log.warning(
                "MCP server %s: tools left out, their names do not fit the API's rule: %s",
                self.name,
                ", ".join(skipped),
            )
        self._set_tools(tuple(tools), tuple(skipped))

    def _set_tools(self, tools: tuple[Tool, ...], skipped: tuple[str, ...]) -> None:
        self.tools, self.skipped = tools, skipped
        self._changed()
        self._moved(self.state, self.error)  # wakes whoever waits on this server

    def _tool(self, item: mt.Tool) -> Tool | None:
        original = item.name

        async def handler(ctx: TurnContext, args: dict[str, Any]) -> ToolResult:
            return await self.call(original, args)

        return mcp_tool(self.name, item, handler, shared=self.spec.shared)

    async def _on_message(self, message: IncomingMessage) -> None:
        if isinstance(message, mt.ToolListChangedNotification):
            # Listed again by the keeper's task, not here: this runs in the SDK's reader.
            self._relist = True
            if self._ended is not None:
                self._ended.set()
        elif isinstance(message, Exception):
            log.debug("MCP server %s: %s", self.name, type(message).__name__)
        await anyio.lowlevel.checkpoint()

    async def call(self, tool: str, args: dict[str, Any]) -> ToolResult:
        """Call one of this server's tools; every failure is a tool error, never an exception."""
        client = self._client
        if client is None:
            return ToolResult(
                f"The {self.name} server is not connected right now ({self.error or self.state}).",
                True,
            )
        limit = self.spec.timeout
        self.http_status = None  # what this call's answer said, if it was an HTTP error
        try:
            # The SDK's own limit answers first; this one catches what it could not.
            async with asyncio.timeout(limit + 5):
                result = await client.call_tool(tool, args, read_timeout_seconds=limit)
        except MCPError as exc:
            if exc.code == mt.REQUEST_TIMEOUT:
                log.warning("MCP %s__%s: no answer within %g s", self.name, tool, limit)
                return ToolResult(
                    f"The {self.name} server did not answer within {limit:g} s.", True
                )
            if exc.code == mt.CONNECTION_CLOSED:
                self._lost()
                return ToolResult(
                    f"The connection to the {self.name} server ended during the call; it is "
                    "being started again. The call may or may not have taken effect.",
                    True,
                )
            if self._answered(404):
                # An HTTP server that restarted (or dropped the session) answers 404 to it.
                self._lost()
                log.warning("MCP %s: the server lost the session (%s)", self.name, exc.message)
                return ToolResult(
                    f"The {self.name} server lost the connection's session; it is being "
                    "connected again. Try the call once more in a moment.",
                    True,
                )
            log.info("MCP %s__%s refused: %s", self.name, tool, exc.message)
            return ToolResult(f"The {self.name} server refused the call: {exc.message}", True)
        except TimeoutError:
            log.warning("MCP %s__%s: no answer within %g s", self.name, tool, limit)
            return ToolResult(f"The {self.name} server did not answer within {limit:g} s.", True)
        except (
            httpx2.HTTPError,
            OSError,
            anyio.BrokenResourceError,
            anyio.ClosedResourceError,
        ) as exc:
            self._lost()
            log.warning("MCP %s__%s: connection failed: %s", self.name, tool, type(exc).__name__)
            return ToolResult(
                f"The {self.name} server could not be reached ({type(exc).__name__}); it is "
                "being started again.",
                True,
            )
        return tool_result(result, self.name)

    def _answered(self, status: int) -> bool:
        """Whether an HTTP server's answer to the last request had this status."""
        return self.http_status == status

    def _lost(self) -> None:
        """A call found the connection broken: end it, so the keeper starts it again."""
        if self._ended is not None:
            self._ended.set()


__all__ = ["McpServer"]
