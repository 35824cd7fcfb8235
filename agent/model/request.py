"""The Messages request as the API is sent it, with its prompt-cache breakpoints."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from agent.model.wire import normalize_messages, sent_as_stored
from agent.sessions.history import History

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
    """The request's system blocks, messages and tools, in the SDK's parameter types, marked
    for prompt caching (``cache``) as ``_repaired`` says. Stored messages are plain JSON from
    the transcript, so they are the SDK's types by construction; they are copied, not changed.
    """
    return (
        _system_blocks(system, system_note, cache),
        cast("list[MessageParam]", _repaired(messages, cache)),
        _marked_tools(tools, cache),
    )


def _system_blocks(system: str, system_note: str | None, cache: bool) -> list[TextBlockParam]:
    """The system prompt's blocks, the stable prefix's end marked (the note after it)."""
    sys_blocks: list[TextBlockParam] = [{"type": "text", "text": system}]
    if cache:
        sys_blocks[0]["cache_control"] = EPHEMERAL
    if system_note:
        sys_blocks.append({"type": "text", "text": system_note})
    return sys_blocks


def _marked_tools(tools: Sequence[dict[str, Any]], cache: bool) -> list[ToolParam]:
    """Copies of the tools, the last marked as the end of the cacheable tools."""
    cached_tools = [cast("ToolParam", dict(t)) for t in tools]
    if cached_tools and cache:
        cached_tools[-1]["cache_control"] = EPHEMERAL
    return cached_tools


def _repaired(messages: Sequence[dict[str, Any]], cache: bool) -> list[dict[str, Any]]:
    """The messages made valid to send, with the API's other two breakpoints: the newest
    message, which the next request reads back, and the user message before it, where the
    request before this one put its own. The API looks for a cached prefix only some twenty
    blocks back from a breakpoint, so a step that adds more (many tool calls at once) would
    otherwise read nothing of the conversation."""
    msgs = normalize_messages(messages)
    if msgs and cache:
        for i in _to_mark([m["role"] for m in msgs]):
            msgs[i] = _marked(msgs[i])
    return msgs


def _to_mark(roles: Sequence[str]) -> list[int]:
    """The newest message and the user message before it, if any."""
    if not roles:
        return []
    earlier = [i for i in range(len(roles) - 2, -1, -1) if roles[i] == "user"][:1]
    return [len(roles) - 1, *earlier]


def _marked(message: dict[str, Any]) -> dict[str, Any]:
    """A copy of the message, its last block marked as the end of the cacheable prefix."""
    blocks = list(message["content"])
    blocks[-1] = {**blocks[-1], "cache_control": EPHEMERAL}
    return {"role": message["role"], "content": blocks}


def request_body(
    model: str,
    max_tokens: int,
    request: tuple[str, Sequence[dict[str, Any]], list[dict[str, Any]]],
    system_note: str | None = None,
    cache: bool = True,
) -> bytes:
    """A streamed Messages request for ``request`` (system prompt, messages, tools) with its
    cache breakpoints, as the compact JSON the API is sent. A history that needs no repair
    (``sent_as_stored``) goes in as its stored JSON, only the messages to mark read back."""
    system, messages, tools = request
    head = b'{"model":' + _dumps(model) + b',"max_tokens":' + _dumps(max_tokens)
    if tools:
        head += b',"tools":' + _tools_json(tools, cache)
    head += b',"system":' + _dumps(_system_blocks(system, system_note, cache)) + b',"messages":['
    end = b'],"stream":true}'
    stored = sent_as_stored(messages) if isinstance(messages, History) else None
    if stored is None:
        return head + _dumps(_repaired(messages, cache))[1:-1] + end
    if not stored:
        return head + end
    if cache:
        # Roles alternate in a history sent as stored: the two to mark are among the last three.
        tail = [json.loads(raw) for raw in stored[-3:]]
        base = len(stored) - len(tail)
        for i in _to_mark([m["role"] for m in tail]):
            stored[base + i] = _dumps(_marked(tail[i]))
    # The conversation is the bulk of the body and is copied once: the head goes on its first
    # message and the end on its last (``stored`` is a list of our own), then one join.
    stored[0] = head + stored[0]
    stored[-1] += end
    return b",".join(stored)


# The tools' JSON by list: a session is offered the same list at every call (the registry makes
# a new one when its tools change and never changes one it has handed out), and its JSON is the
# costliest part of the request's head to write. The list is kept with its JSON, so its id is
# not reused while the entry lasts.
_TOOLS_JSON: dict[tuple[int, bool], tuple[Sequence[dict[str, Any]], bytes]] = {}
_TOOLS_KEPT = 8  # lists: a private, a shared, and what grants and reloads make


def _tools_json(tools: Sequence[dict[str, Any]], cache: bool) -> bytes:
    key = (id(tools), cache)
    hit = _TOOLS_JSON.pop(key, None)
    if hit is not None and hit[0] is tools:
        _TOOLS_JSON[key] = hit  # the newest again: a grant's passing lists do not push it out
        return hit[1]
    encoded = _dumps(_marked_tools(tools, cache))
    while len(_TOOLS_JSON) >= _TOOLS_KEPT:
        del _TOOLS_JSON[next(iter(_TOOLS_JSON))]  # the oldest
    _TOOLS_JSON[key] = (tools, encoded)
    return encoded


def _dumps(value: Any) -> bytes:
    # ASCII, as the SDK's own encoder writes it: a string that is not valid Unicode (a lone
    # surrogate) is escaped rather than failing to encode.
    return json.dumps(value, separators=(",", ":")).encode()
