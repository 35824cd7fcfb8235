"""``corvid doctor``'s network checks: the model's API, chat platforms, search, MCP servers."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from gateway.config.loader import Config
from gateway.contract.ports import Check, Status
from gateway.ops.doctor.offline import env_ref, lookup

OK, WARN, FAIL = Status.OK, Status.WARN, Status.FAIL


def preload(config: Config) -> None:
    """The client libraries, imported before any probe starts its clock (anthropic alone
    takes over half a second)."""
    import anthropic  # noqa: F401

    if config.channels.telegram.enabled:
        import telegram  # noqa: F401
    if config.channels.discord.enabled:
        import discord  # noqa: F401


def key_source(raw: Mapping[str, Any], key: str) -> str:
    var = env_ref(lookup(raw, key))
    return f"{key} (the environment variable {var})" if var else key


async def check_model(config: Config, raw: Mapping[str, Any], limit: float) -> Check:
    from agent.model.llm import AnthropicLLM

    if config.llm.api_key is None:
        return Check(FAIL, "anthropic", config.missing("llm.api_key", "your Anthropic API key"))
    async with AnthropicLLM(config.llm) as model:
        return await model.probe(limit, key_source(raw, "llm.api_key"))


async def check_search(config: Config, limit: float) -> Check:
    """One query to the configured search provider: its address and key work."""
    from agent.web.search import provider_from
    from gateway.contract.errors import ConfigError, ToolError

    if config.tools.web.search.provider == "anthropic":
        return await _check_server_search(config, limit)
    try:
        provider = provider_from(config.tools.web.search)
    except ConfigError as exc:
        return Check(FAIL, "web search", str(exc), "set it under tools.web.search in config.yaml")
    assert provider is not None
    try:
        async with asyncio.timeout(limit):
            await provider.search("corvid", 1)
    except ToolError as exc:
        return Check(FAIL, "web search", str(exc), "check tools.web.search in config.yaml")
    except TimeoutError:
        return Check(FAIL, "web search", f"{provider.name} did not answer within {limit:g} s")
    return Check(OK, "web search", f"{provider.name} answers")


async def _check_server_search(config: Config, limit: float) -> Check:
    """Whether the configured API takes its own web search tool with the configured model."""
    from agent.model.llm import AnthropicLLM
    from agent.web.search import server_search_tool

    if config.llm.api_key is None:
        return Check(WARN, "web search", "not checked: llm.api_key is not set")
    tool = server_search_tool(config.tools.web.search.max_uses)
    async with AnthropicLLM(config.llm) as model:
        verdict = await model.accepts_tools([tool.schema()], limit)
    where = config.llm.base_url or "Anthropic's API"
    if verdict is None:
        return Check(WARN, "web search", f"could not ask {where} whether it takes its search tool")
    if not verdict:
        return Check(
            FAIL,
            "web search",
            f"{where} does not take the web search tool with {config.llm.model}",
            "use another provider under tools.web.search (brave or searxng), or another model",
        )
    return Check(
        OK,
        "web search",
        f"{where} runs web_search itself (up to "
        f"{config.tools.web.search.max_uses} searches a request)",
    )


async def check_mcp(config: Config, name: str, limit: float) -> Check:
    """Start one MCP server, list its tools, stop it."""
    from agent.mcp.probe import probe

    spec = config.mcp.servers[name]
    view = await probe(name, spec, config.layout.mcp, limit)
    who = "every chat" if spec.shared else "private chats only"
    if view.state == "off":
        return Check(OK, f"mcp {name}", "off (enabled: false)")
    if view.state != "ready":
        log = (
            f"; its own output is in {config.layout.mcp / (name + '.log')}" if spec.command else ""
        )
        return Check(
            FAIL, f"mcp {name}", f"{view.error}{log}", f"check mcp.servers.{name} in config.yaml"
        )
    tools = ", ".join(t.split("__", 1)[1] for t in view.tools) or "none"
    return Check(
        OK, f"mcp {name}", f"{spec.transport}, {len(view.tools)} tool(s) for {who}: {tools}"
    )


async def check_channel(config: Config, raw: Mapping[str, Any], name: str, limit: float) -> Check:
    from gateway.channel_setup import build_channels

    key = f"channels.{name}.token"
    if getattr(config.channels, name).token is None:
        return Check(FAIL, name, config.missing(key, "the bot token"))
    (channel,) = build_channels(config, only={name})
    return await channel.probe(limit, key_source(raw, key))
