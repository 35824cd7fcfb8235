"""Which tools a configuration gives the agent beyond its own (files, memory, reminders): the
web tools, the API's own web search, and the MCP servers; and the memory's search index, which
``corvid run`` and ``corvid memory`` open alike. ``build_app`` calls these."""

from __future__ import annotations

import contextlib
from dataclasses import replace
from typing import TYPE_CHECKING

from agent.model.port import LLM
from agent.tools.registry import Tool, ToolSource
from gateway.config.loader import Config

if TYPE_CHECKING:
    from agent.mcp.hub import McpHub
    from agent.memory.index import MemoryIndex


def memory_index(config: Config) -> MemoryIndex:
    """The memory's search index over the workspace, cut as configured."""
    from agent.memory.index import MemoryIndex

    m = config.memory
    return MemoryIndex(
        config.layout.index,
        config.workspace.resolve(),
        chunk_size=m.chunk_lines,
        overlap=m.chunk_overlap_lines,
    )


def mcp_hub(config: Config, resources: contextlib.AsyncExitStack) -> McpHub | None:
    """The configured MCP servers (started by ``App.start``), or None when there are none."""
    if not config.mcp.servers:
        return None
    from agent.mcp.hub import McpHub

    hub = McpHub(config.mcp.servers, config.layout.mcp)
    resources.push_async_callback(hub.close)
    return hub


def web_tools(config: Config) -> tuple[Tool, ...]:
    """web_fetch and web_search, as configured; private chats only unless tools.web.shared."""
    web = config.tools.web
    tools: list[Tool] = []
    if web.enabled:
        from agent.web.fetch import WebFetcher, web_tools

        tools += web_tools(WebFetcher())
    if web.search.provider not in ("", "anthropic"):  # the API's own: _server_search
        from agent.web.search import provider_from, search_tools

        provider = provider_from(web.search)
        assert provider is not None
        tools += search_tools(provider, web.search.max_results)
    return tuple(replace(t, private_only=not web.shared) for t in tools)


def server_search(config: Config, model: LLM) -> ToolSource | None:
    """The API's own web search, offered once the API says it takes it."""
    search = config.tools.web.search
    if search.provider != "anthropic":
        return None
    from agent.web.search import OfferedOnceAccepted, server_search_tool

    tool = replace(server_search_tool(search.max_uses), private_only=not config.tools.web.shared)
    return OfferedOnceAccepted([tool], model.accepts_tools)
