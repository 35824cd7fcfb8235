"""A small MCP server for the tests, written with the SDK's MCPServer: run as a script it speaks
stdio; ``http_app`` gives the same tools over streamable HTTP.

Its tools: ``echo``, ``add``, ``image`` (a PNG), ``fail`` (an error the tool reports),
``crash`` (the process exits mid-call), ``hang`` (never answers) and ``env`` (reads an
environment variable, to see what the server was given).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import sys
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.utilities.types import Image

# A 1x1 red PNG.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)


def make_server(name: str = "fake") -> MCPServer:
    server = MCPServer(name)

    @server.tool()
    def echo(text: str) -> str:
        """Say the text back."""
        return f"echo: {text}"

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two whole numbers."""
        return a + b

    @server.tool()
    def image() -> Image:
        """A tiny picture."""
        return Image(data=PNG, format="png")

    @server.tool()
    def fail(why: str) -> str:
        """Always fails, saying why."""
        raise ToolError(why)

    @server.tool()
    def crash() -> str:
        """The server exits in the middle of the call."""
        sys.stdout.flush()
        os._exit(3)

    @server.tool()
    async def hang() -> str:
        """Never answers."""
        await asyncio.Event().wait()
        return "never"

    @server.tool()
    async def grow(ctx: Context) -> str:
        """Offers one more tool, ``extra``, and says so to the client."""

        def extra() -> str:
            """The tool that came later."""
            return "extra!"

        server.add_tool(extra)
        await ctx.notify_tools_changed()  # to subscribers (the 2026 protocol)
        with contextlib.suppress(Exception):  # on the connection (older protocols)
            await ctx.session.send_tool_list_changed()
        return "grown"

    @server.tool()
    def env(name: str) -> str:
        """The value of an environment variable of the server, or (unset)."""
        return os.environ.get(name, "(unset)")

    return server


def http_app(name: str = "fake", token: str | None = None) -> Any:
    """The server over streamable HTTP, as an ASGI app; with ``token``, requests without
    ``Authorization: Bearer <token>`` are answered 401."""
    app = make_server(name).streamable_http_app()
    if token is None:
        return app

    async def guarded(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            if headers.get(b"authorization") != f"Bearer {token}".encode():
                await send({"type": "http.response.start", "status": 401, "headers": []})
                await send({"type": "http.response.body", "body": b"no"})
                return
        await app(scope, receive, send)

    return guarded


if __name__ == "__main__":
    make_server(sys.argv[1] if len(sys.argv) > 1 else "fake").run("stdio")
