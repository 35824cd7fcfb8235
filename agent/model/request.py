"""The Messages request as the API is sent it: the prompt-cache breakpoints placed on the
stable prefix and the newest message, and the body serialized once, here."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from agent.model.wire import normalize_messages

if TYPE_CHECKING:
    from anthropic.types import (
        CacheControlEphemeralParam,
        MessageParam,
        TextBlockParam,
        ToolParam,
    )

EPHEMERAL: CacheControlEphemeralParam = {"type": "ephemeral"}


def with_cache_breakpoints(
    system: str,
    messages: Sequence[dict[str, Any]],
    tools: list[dict[str, Any]],
    system_note: str | None = None,
    cache: bool = True,
) -> tuple[list[TextBlockParam], list[MessageParam], list[ToolParam]]:
    """The request's system blocks, messages and tools, in the SDK's parameter types, with the
    stable prefix (tools, system) and the newest message marked for prompt caching.

    Three of the API's four breakpoints (none when ``cache`` is False). The stored messages are
    not modified: the newest one is copied before it is marked. Stored messages are plain JSON
    (they come from the transcript), so they are the SDK's types by construction rather than
    by checking.
    """
    cached_tools = [cast("ToolParam", dict(t)) for t in tools]
    if cached_tools and cache:
        cached_tools[-1]["cache_control"] = EPHEMERAL
    sys_blocks: list[TextBlockParam] = [{"type": "text", "text": system}]
    if cache:
        sys_blocks[0]["cache_control"] = EPHEMERAL
    if system_note:
        sys_blocks.append({"type": "text", "text": system_note})
    msgs = normalize_messages(messages)
    if msgs and cache:
        last = msgs[-1]
        blocks = list(last["content"])
        blocks[-1] = {**blocks[-1], "cache_control": EPHEMERAL}
        msgs[-1] = {"role": last["role"], "content": blocks}
    return sys_blocks, cast("list[MessageParam]", msgs), cached_tools


def request_body(
    model: str,
    max_tokens: int,
    system: list[TextBlockParam],
    messages: list[MessageParam],
    tools: list[ToolParam],
) -> bytes:
    """A streamed Messages request, as the JSON the API is sent: compact and ASCII (what
    cannot be ASCII is escaped, as the SDK's own encoder does)."""
    body: dict[str, Any] = {"model": model, "max_tokens": max_tokens}
    if tools:
        body["tools"] = tools
    body.update(system=system, messages=messages, stream=True)
    return json.dumps(body, separators=(",", ":")).encode()
