"""Tools from MCP servers (``mcp.servers``), offered as ``<server>__<tool>``: the hub that holds
every ``Server`` and is the tool registry's ``ToolSource``. Nothing here imports the ``mcp``
SDK, which ``start`` imports in a thread."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from agent.settings import McpServerSettings
from agent.tools.registry import Tool

log = logging.getLogger(__name__)

# The first pause before a server is started again (it doubles each time, up to
# LONGEST_PAUSE); a server that stayed up for STABLE_SECONDS starts over from the first.
FIRST_PAUSE = 1.0
LONGEST_PAUSE = 60.0
STABLE_SECONDS = 60.0
# How long a turn waits, at most, for servers still starting before it is answered.
SETTLE_SECONDS = 10.0


@dataclass(frozen=True)
class ServerView:
    """What ``corvid status``, ``corvid mcp list`` and the doctor say about a server."""

    name: str
    transport: str
    shared: bool
    # off, starting, ready, waiting (to start again), failed (for good, or a probe), stopped
    state: str
    tools: tuple[str, ...] = ()
    error: str = ""
    restarts: int = 0
    skipped: tuple[str, ...] = ()  # tools whose names the API would refuse

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "transport": self.transport,
            "shared": self.shared,
            "state": self.state,
            "tools": list(self.tools),
            "error": self.error,
            "restarts": self.restarts,
            "skipped": list(self.skipped),
        }


def lasting(exc: BaseException, spec: McpServerSettings) -> bool:
    """A failure that starting again cannot mend: the command is missing or not executable."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:  # the SDK's task groups
        exc = exc.exceptions[0]
    return bool(spec.command) and isinstance(exc, (FileNotFoundError, PermissionError))


class Restarts:
    """When a server that stopped is started again: after a pause that doubles, never after
    a failure a restart cannot mend (the command is missing) or once Corvid is shutting down,
    and with one warning per reason however many tries fail alike."""

    def __init__(self, name: str, first_pause: float) -> None:
        self.name, self.first, self.pause = name, first_pause, first_pause
        self.count = 0
        self._winding_down = False
        self._said = ""  # the reason last warned about
        self._pausing: asyncio.Event | None = None

    def ready(self) -> None:
        self._said = ""

    def wind_down(self) -> None:
        """Shutting down: a server that is up stays up for the replies still running, but
        one that ends is not started again."""
        self._winding_down = True
        if self._pausing is not None:
            self._pausing.set()

    def after(self, reason: str, up_for: float, lasting: bool) -> tuple[str, str]:
        """The state of a server that just stopped, and its error."""
        if self._winding_down:
            return "stopped", ""
        if lasting:  # until the machine or the config changes, and a restart reads both
            log.error(
                "MCP server %s cannot start: %s; it is off until Corvid restarts", self.name, reason
            )
            return "failed", f"{reason} (fix it, then restart Corvid)"
        if up_for >= STABLE_SECONDS:
            self.pause = self.first
        if reason == self._said:
            log.debug("MCP server %s: %s; again in %g s", self.name, reason, self.pause)
        else:
            self._said = reason
            log.warning(
                "MCP server %s stopped: %s; starting it again in %g s (then longer "
                "apart while it keeps failing)",
                self.name,
                reason,
                self.pause,
            )
        return "waiting", reason

    async def wait(self, cut_short: asyncio.Event) -> str:
        """The pause before the next start: then "starting", or "stopped" (shutting down)."""
        self._pausing = cut_short
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(cut_short.wait(), self.pause)
        self._pausing = None
        if self._winding_down:
            return "stopped"
        self.pause = min(self.pause * 2, LONGEST_PAUSE)
        self.count += 1
        return "starting"


class Server(Protocol):
    """One server as the hub sees it (``agent.mcp.client.McpServer``, imported later)."""

    tools: tuple[Tool, ...]
    first_try: asyncio.Event

    @property
    def starting(self) -> bool: ...

    def start(self) -> None: ...

    def wind_down(self) -> None: ...

    async def stop(self) -> None: ...

    def view(self) -> ServerView: ...


class McpHub:
    """Every configured server, and the tools they offer now."""

    def __init__(
        self,
        servers: Mapping[str, McpServerSettings],
        logs: Path,
        *,
        first_pause: float = FIRST_PAUSE,
        settle_seconds: float = SETTLE_SECONDS,
    ) -> None:
        self.specs = dict(servers)
        self.servers: list[Server] = []  # once the client is imported
        self._logs = logs
        self._first_pause = first_pause
        self._settle_seconds = settle_seconds
        self._generation = 0
        self._tools: tuple[Tool, ...] = ()
        self._task: asyncio.Task[None] | None = None
        self._up = asyncio.Event()  # the servers exist and have been started
        self._launched = asyncio.Event()  # start() was called (after the channels poll)

    @property
    def generation(self) -> int:
        return self._generation

    def tools(self) -> Sequence[Tool]:
        return self._tools

    def _changed(self) -> None:
        # One order (servers as configured, each one's tools by name), changed only when what
        # is offered changes, so the prompt cache keeps its prefix across turns and restarts.
        tools = tuple(t for server in self.servers for t in server.tools)
        shape = [(t.schema(), t.private_only) for t in tools]
        if shape != [(t.schema(), t.private_only) for t in self._tools]:
            self._tools = tools
            self._generation += 1

    def start(self) -> None:
        """Start every enabled server in the background; returns at once."""
        if self._task is None:
            self._task = asyncio.create_task(self._start(), name="mcp")
            self._launched.set()

    async def _start(self) -> None:
        try:
            # The SDK is imported in a thread, so the channels poll no later for it.
            client = await asyncio.to_thread(importlib.import_module, "agent.mcp.client")
        except ImportError as exc:  # a broken install: say so, and run on without the tools
            log.error("MCP servers are off: the mcp package cannot be imported (%s)", exc)
            return
        finally:
            self._up.set()
        self.servers = [
            client.McpServer(
                name, spec, self._logs, first_pause=self._first_pause, changed=self._changed
            )
            for name, spec in self.specs.items()
        ]
        for server in self.servers:
            server.start()

    async def settle(self) -> None:
        """Wait (bounded) for servers whose first start is still under way (or not yet
        begun: they start once the channels poll)."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self._settle_seconds):
                await self._launched.wait()
                await self._up.wait()
                await asyncio.gather(*(s.first_try.wait() for s in self.servers if s.starting))

    def wind_down(self) -> None:
        """Shutting down: servers that are up stay up, none is started again."""
        for server in self.servers:
            server.wind_down()

    async def close(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()
            await asyncio.wait({self._task}, timeout=10)
        await asyncio.gather(*(s.stop() for s in self.servers))

    def describe(self) -> list[ServerView]:
        if self.servers:
            return [s.view() for s in self.servers]
        return [
            ServerView(name, spec.transport, spec.shared, "starting" if spec.enabled else "off")
            for name, spec in self.specs.items()
        ]
