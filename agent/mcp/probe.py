"""One-off checks of an MCP server (``corvid doctor``, ``corvid mcp list``): start, list, stop."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import anyio
from mcp import Client

from agent.mcp.client import McpServer
from agent.mcp.hub import ServerView
from agent.mcp.wire import describe_error, server_log
from agent.settings import McpServerSettings


async def probe(name: str, spec: McpServerSettings, logs: Path, limit: float) -> ServerView:
    """Start a server once, list its tools, and stop it."""
    server = McpServer(name, replace(spec, start_timeout=min(limit, spec.start_timeout)), logs)
    if not spec.enabled:
        return server.view()
    try:
        with anyio.CancelScope() as scope:
            scope.deadline = anyio.current_time() + limit
            with server_log(logs, name) as errlog:
                async with Client(server.transport(errlog), cache=None) as client:
                    await server.list_tools(client)
                    server.state = "ready"
        if scope.cancelled_caught:
            server.state, server.error = "failed", f"it did not start within {limit:g} s"
    except Exception as exc:
        server.state, server.error = "failed", describe_error(exc, spec, server.http_status)
    return server.view()
