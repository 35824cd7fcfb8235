"""A fake Anthropic Messages API on 127.0.0.1 for the real ``anthropic`` client to talk to.

Replies come from a script (``enqueue``) or, when the script is empty, from a "brain" function
of the request body. Faults (HTTP errors, an ``event: error`` mid-stream, a connection cut
mid-reply) are scripted the same way. Usage numbers include a prompt-cache simulation: each
cache_control breakpoint stores the hash of the prefix up to it (tools → system → messages), and
a later request reads the longest stored prefix it starts with.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web


@dataclass
class Reply:
    text: str = ""
    tool_calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    stop_reason: str | None = None
    delay: float = 0.0
    # Streamed as the tool calls' input instead of their JSON (a model that writes bad JSON).
    raw_tool_input: str | None = None
    # The stream pauses once this many characters of text are out, until ``hold`` is set.
    hold: asyncio.Event | None = None
    hold_after: int = 0
    chunk: int = 40  # characters per text delta
    # Content blocks given as they are, before the text and tool calls: the API's own tools
    # (server_tool_use, web_search_tool_result) and text that cites a search.
    blocks: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Fault:
    status: int
    error_type: str
    message: str = "fault injected by the fake"
    retry_after_ms: int = 5
    error_code: str | None = None  # the API's finer code (``error.details.error_code``)


@dataclass
class StreamError:
    """An ``event: error`` after the stream has started (HTTP status 200)."""

    error_type: str = "overloaded_error"
    text_before: str = "partial "


@dataclass
class CutStream:
    """The connection is closed in the middle of a streamed reply."""

    text_before: str = "partial "


Action = Reply | Fault | StreamError | CutStream
Brain = Callable[[dict[str, Any]], "Action | Awaitable[Action]"]


@dataclass
class Served:
    body: dict[str, Any]
    model: str
    usage: dict[str, int]


@dataclass
class Recorded:
    path: str
    body: dict[str, Any]
    headers: dict[str, str]
    raw: str
    peer: Any = None  # the client's (host, port): which connection the request came over


# How far back from a breakpoint the API looks for a cached prefix, in blocks.
LOOKBACK = 20


def tokens(text: str) -> int:
    return max(1, len(text) // 4)


def last_user_text(body: dict[str, Any]) -> str:
    for msg in reversed(body.get("messages", [])):
        if msg["role"] != "user":
            continue
        content = msg["content"]
        if isinstance(content, str):
            return content
        texts = [str(b["text"]) for b in content if b.get("type") == "text"]
        if texts:
            return texts[-1]
    return ""


def tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool_result blocks of the newest user message."""
    msg = body["messages"][-1]
    if msg["role"] != "user" or isinstance(msg["content"], str):
        return []
    return [b for b in msg["content"] if b.get("type") == "tool_result"]


def request_kind(body: dict[str, Any]) -> str:
    """What Corvid asked for: "summary" (compaction or /new), "flush" (silent turn) or "chat"."""
    system = body.get("system", [])
    first = system if isinstance(system, str) else (system[0]["text"] if system else "")
    if first.startswith("You condense chat transcripts"):
        return "summary"
    if not isinstance(system, str) and len(system) > 1 and "Memory flush" in system[1]["text"]:
        return "flush"
    return "chat"


def echo_brain(body: dict[str, Any]) -> Action:
    text = last_user_text(body)
    return Reply("echo: " + text.split("\n", 1)[-1])


class FakeAnthropic:
    def __init__(
        self,
        brain: Brain = echo_brain,
        latency: float = 0.0,
        min_cache_tokens: int = 0,
        api_key: str | None = None,
    ):
        self.brain = brain
        # When set, requests with another key get the API's 401 (any key passes otherwise).
        self.api_key = api_key
        # False: like an API without server tools, requests that define one get a 400.
        self.server_tools = True
        self.latency = latency
        self.min_cache_tokens = min_cache_tokens
        self.requests: list[Recorded] = []
        # With ``keep_served``, every answer sent whole: the request, the model named and the
        # usage reported, as a bill would have them (an answer cut off or never sent is not
        # here). Off by default: it keeps every request body.
        self.keep_served = False
        self.served: list[Served] = []
        # Seconds each Messages request kept the fake busy: from its arrival to its answer's
        # last byte, less the latency it was told to add. A bench takes it out of a reply's
        # time to see the bot's own part (the fake's cache bookkeeping grows with the request).
        self.spent: list[float] = []
        self._script: deque[Action] = deque()
        self._cache: set[bytes] = set()
        # The cache units of the last few requests with their prefix hashes: a conversation's
        # next request starts with its last one, and only its new units are encoded and hashed.
        self._recent: deque[_Hashed] = deque(maxlen=16)
        self._ids = itertools.count(1)
        self._arrived = asyncio.Condition()
        self._runner: web.AppRunner | None = None
        self.base_url = ""

    # -- control ------------------------------------------------------------------------------

    def enqueue(self, *actions: Action) -> None:
        self._script.extend(actions)

    @property
    def message_requests(self) -> list[Recorded]:
        return [r for r in self.requests if r.path == "/v1/messages"]

    async def wait_for_requests(self, n: int, timeout: float = 10.0) -> None:
        async with self._arrived:
            await asyncio.wait_for(
                self._arrived.wait_for(lambda: len(self.message_requests) >= n), timeout
            )

    async def start(self) -> str:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/messages", self._messages)
        app.router.add_post("/v1/messages/count_tokens", self._count_tokens)
        app.router.add_get("/v1/models", self._models)
        # handler_cancellation: a request whose client went away (a cancelled turn) stops here too.
        self._runner = web.AppRunner(
            app, access_log=None, handler_cancellation=True, shutdown_timeout=1.0
        )
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.base_url = f"http://127.0.0.1:{port}"
        return self.base_url

    async def close(self) -> None:
        """Stop serving and drop every connection; closing again does nothing."""
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()

    # -- handlers -----------------------------------------------------------------------------

    async def _record(self, request: web.Request) -> dict[str, Any]:
        raw = await request.text()
        body: dict[str, Any] = json.loads(raw)
        async with self._arrived:
            peer = request.transport.get_extra_info("peername") if request.transport else None
            self.requests.append(Recorded(request.path, body, dict(request.headers), raw, peer))
            self._arrived.notify_all()
        return body

    def _rejected(self, request: web.Request) -> web.Response | None:
        """The API's answer to a wrong key (the SDK sends it as a Bearer token, or x-api-key)."""
        if self.api_key is None:
            return None
        sent = {request.headers.get("x-api-key"), request.headers.get("Authorization")}
        if self.api_key in sent or f"Bearer {self.api_key}" in sent:
            return None
        error = {"type": "authentication_error", "message": "invalid x-api-key"}
        return _json({"type": "error", "error": error}, status=401)

    def _refused_tools(self, body: dict[str, Any]) -> web.Response | None:
        server = [t for t in body.get("tools", []) if t.get("type", "custom") != "custom"]
        if self.server_tools or not server:
            return None
        message = f"tools.0: unknown tool type {server[0]['type']!r}"
        return _json({"type": "error", "error": {"type": "invalid_request_error",
                                                  "message": message}}, status=400)  # fmt: skip

    async def _models(self, request: web.Request) -> web.StreamResponse:
        """The models list: free, and the way to ask whether a key is accepted."""
        self.requests.append(Recorded(request.path, {}, dict(request.headers), ""))
        rejected = self._rejected(request)
        if rejected is not None:
            return rejected
        model = {"type": "model", "id": "claude-sonnet-5-5", "display_name": "Claude Sonnet 5.5",
                 "created_at": "2026-01-01T00:00:00Z"}  # fmt: skip
        return _json({"data": [model], "has_more": False, "first_id": model["id"],
                      "last_id": model["id"]})  # fmt: skip

    async def _count_tokens(self, request: web.Request) -> web.StreamResponse:
        body = await self._record(request)
        rejected = self._rejected(request) or self._refused_tools(body)
        if rejected is not None:
            return rejected
        return _json({"input_tokens": sum(tokens(s) for s in _segments(body))})

    async def _messages(self, request: web.Request) -> web.StreamResponse:
        start, slept = time.monotonic(), [0.0]
        try:
            return await self._answer(request, slept)
        finally:
            self.spent.append(time.monotonic() - start - slept[0])

    async def _answer(self, request: web.Request, slept: list[float]) -> web.StreamResponse:
        """``slept``: set to the latency this answer was given."""
        body = await self._record(request)
        rejected = self._rejected(request) or self._refused_tools(body)
        if rejected is not None:
            return rejected
        if self._script:
            action = self._script.popleft()
        else:
            out = self.brain(body)
            action = await out if asyncio.iscoroutine(out) else out  # type: ignore[assignment]
        delay = self.latency + (action.delay if isinstance(action, Reply) else 0.0)
        if delay:
            await asyncio.sleep(delay)
            slept[0] = delay
        if isinstance(action, Fault):
            error: dict[str, Any] = {"type": action.error_type, "message": action.message}
            if action.error_code is not None:
                error["details"] = {"error_code": action.error_code}
            return _json(
                {"type": "error", "error": error},
                status=action.status,
                headers={"retry-after-ms": str(action.retry_after_ms)},
            )
        usage = self._usage(body)
        blocks = self._blocks(action)
        if not body.get("stream"):
            assert isinstance(action, Reply)
            self._served(body, usage, blocks)
            return _json(self._message(body, blocks, _stop(action), usage))
        return await self._stream(request, body, action, blocks, usage)

    def _blocks(self, action: Action) -> list[dict[str, Any]]:
        if isinstance(action, StreamError | CutStream):
            return [{"type": "text", "text": action.text_before}]
        assert isinstance(action, Reply)
        blocks: list[dict[str, Any]] = [dict(b) for b in action.blocks]
        if action.text:
            blocks.append({"type": "text", "text": action.text})
        for name, args in action.tool_calls:
            blocks.append(
                {
                    "type": "tool_use",
                    "id": f"toolu_{next(self._ids):04d}",
                    "name": name,
                    "input": args,
                }
            )
        return blocks

    def _message(
        self, body: dict[str, Any], blocks: list[dict[str, Any]], stop: str, usage: dict[str, int]
    ) -> dict[str, Any]:
        return {
            "id": f"msg_{next(self._ids):06d}",
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": blocks,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": usage,
        }

    async def _stream(
        self,
        request: web.Request,
        body: dict[str, Any],
        action: Action,
        blocks: list[dict[str, Any]],
        usage: dict[str, int],
    ) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)

        async def send(event: str, data: dict[str, Any]) -> None:
            await resp.write(f"event: {event}\ndata: {json.dumps(data)}\n\n".encode())

        start = self._message(body, [], "", {**usage, "output_tokens": 1})
        start["stop_reason"] = None
        await send("message_start", {"type": "message_start", "message": start})
        for i, block in enumerate(blocks):
            if block["type"] == "web_search_tool_result":  # arrives whole
                await send(
                    "content_block_start",
                    {"type": "content_block_start", "index": i, "content_block": block},
                )
            elif block["type"] == "text":
                await send(
                    "content_block_start",
                    {
                        "type": "content_block_start",
                        "index": i,
                        "content_block": {"type": "text", "text": ""},
                    },
                )
                text = block["text"]
                size = action.chunk if isinstance(action, Reply) else 40
                for j in range(0, len(text), size):
                    part = text[j : j + size]
                    held = isinstance(action, Reply) and action.hold is not None
                    if held and j >= action.hold_after:  # type: ignore[union-attr]
                        await action.hold.wait()  # type: ignore[union-attr]
                    await send(
                        "content_block_delta",
                        {
                            "type": "content_block_delta",
                            "index": i,
                            "delta": {"type": "text_delta", "text": part},
                        },
                    )
                for citation in block.get("citations") or ():
                    await send(
                        "content_block_delta",
                        {
                            "type": "content_block_delta",
                            "index": i,
                            "delta": {"type": "citations_delta", "citation": citation},
                        },
                    )
            else:
                head = {**block, "input": {}}
                await send(
                    "content_block_start",
                    {"type": "content_block_start", "index": i, "content_block": head},
                )
                await send(
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": i,
                        "delta": {
                            "type": "input_json_delta",
                            "partial_json": (
                                action.raw_tool_input
                                if isinstance(action, Reply) and action.raw_tool_input is not None
                                else json.dumps(block["input"])
                            ),
                        },
                    },
                )
            if isinstance(action, CutStream):
                assert request.transport is not None
                request.transport.close()
                return resp
            if isinstance(action, StreamError):
                await send(
                    "error",
                    {"type": "error", "error": {"type": action.error_type, "message": "injected"}},
                )
                await resp.write_eof()
                return resp
            await send("content_block_stop", {"type": "content_block_stop", "index": i})
        assert isinstance(action, Reply)
        out_tokens = sum(tokens(json.dumps(b)) for b in blocks)
        await send(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": _stop(action), "stop_sequence": None},
                "usage": {"output_tokens": out_tokens},
            },
        )
        await send("message_stop", {"type": "message_stop"})
        await resp.write_eof()
        self._served(body, usage, blocks)
        return resp

    def _served(
        self, body: dict[str, Any], usage: dict[str, int], blocks: list[dict[str, Any]]
    ) -> None:
        if self.keep_served:
            out_tokens = sum(tokens(json.dumps(b)) for b in blocks)
            self.served.append(Served(body, body["model"], {**usage, "output_tokens": out_tokens}))

    # -- prompt-cache simulation --------------------------------------------------------------

    def _usage(self, body: dict[str, Any]) -> dict[str, int]:
        units, marks = _units_and_marks(body)
        hashed = self._hash(units)
        total = hashed.sizes[-1] if units else 0
        last_mark = max(marks) if marks else -1
        read_upto = -1
        for mark in marks:
            # As the API does: from each breakpoint back, at most LOOKBACK blocks before it.
            for i in range(mark, max(mark - LOOKBACK, 0) - 1, -1):
                if i > read_upto and hashed.digest(i) in self._cache:
                    read_upto = i
                    break
        cache_read = hashed.sizes[read_upto] if read_upto >= 0 else 0
        cache_write = 0
        if last_mark >= 0 and hashed.sizes[last_mark] >= self.min_cache_tokens:
            cache_write = hashed.sizes[last_mark] - cache_read
            for i in marks:
                self._cache.add(hashed.digest(i))
        return {
            "input_tokens": total - cache_read - cache_write,
            "cache_read_input_tokens": cache_read,
            "cache_creation_input_tokens": cache_write,
            "output_tokens": 0,
        }

    def _hash(self, units: list[Unit]) -> _Hashed:
        """The running hash and token count after each unit, taken over from the recent request
        that shares the longest prefix with this one."""
        known, best = 0, None
        for prev in reversed(self._recent):  # the newest first: most often, all of it is shared
            n = _common(prev.units, units)
            if n > known:
                known, best = n, prev
            if n and n == len(prev.units):
                break
        hashers = best.hashers[:known] if best else []
        sizes = best.sizes[:known] if best else []
        h = hashers[-1].copy() if hashers else hashlib.sha256()
        running = sizes[-1] if sizes else 0
        for unit in units[known:]:
            seg = _encode(unit)
            h.update(seg.encode())
            running += tokens(seg)
            sizes.append(running)
            hashers.append(h.copy())
        hashed = _Hashed(units, hashers, sizes)
        self._recent.append(hashed)
        return hashed


# A cache unit: the role of the message it is in (None for tools and system) and the block
# without its cache_control.
Unit = tuple[str | None, Any]


@dataclass
class _Hashed:
    units: list[Unit]
    hashers: list[Any]  # the sha256 state after each unit (hashlib's type is private)
    sizes: list[int]  # the tokens up to and including each unit

    def digest(self, i: int) -> bytes:
        return bytes(self.hashers[i].digest())


def _common(a: list[Unit], b: list[Unit]) -> int:
    """How many units two requests share from the start. Units are compared as Python values,
    which is their sorted JSON's equality except where 1, 1.0 and true meet at one place."""
    if len(a) <= len(b) and a == b[: len(a)]:
        return len(a)
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


# Blocks are hashed as JSON with sorted keys, all written by one encoder: ``json.dumps`` with
# ``sort_keys`` makes a new one for every block, which was a third of this fake's time on a
# long conversation.
_CANONICAL = json.JSONEncoder(sort_keys=True)


def _units_and_marks(body: dict[str, Any]) -> tuple[list[Unit], list[int]]:
    """Every cacheable unit in the API's cache order (tools, then system, then message blocks),
    and where the units that carry a cache_control are, in one pass."""
    units: list[Unit] = []
    marks: list[int] = []

    def add(block: Any, role: str | None = None) -> None:
        if isinstance(block, dict) and "cache_control" in block:
            marks.append(len(units))
            block = {k: v for k, v in block.items() if k != "cache_control"}
        units.append((role, block))

    for tool in body.get("tools", []):
        add(tool)
    system = body.get("system", [])
    for block in [{"type": "text", "text": system}] if isinstance(system, str) else system:
        add(block)
    for msg in body.get("messages", []):
        content = msg["content"]
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        for block in content:
            add(block, msg["role"])
    return units, marks


def _encode(unit: Unit) -> str:
    """A unit as sorted JSON, a block tagged with its role."""
    role, block = unit
    if role is not None and isinstance(block, dict):
        block = {**block, "_role": role}
    return _CANONICAL.encode(block)


def _segments_and_marks(body: dict[str, Any]) -> tuple[list[str], list[int]]:
    """Every cacheable unit as sorted JSON without its ``cache_control``, each block tagged
    with its role; and where the units that carry one are."""
    units, marks = _units_and_marks(body)
    return [_encode(u) for u in units], marks


def _segments(body: dict[str, Any]) -> list[str]:
    return _segments_and_marks(body)[0]


def _stop(action: Reply) -> str:
    return action.stop_reason or ("tool_use" if action.tool_calls else "end_turn")


def _json(
    data: dict[str, Any], status: int = 200, headers: dict[str, str] | None = None
) -> web.Response:
    # Exactly application/json, without a charset parameter, like the real API.
    return web.Response(
        body=json.dumps(data).encode(),
        status=status,
        headers={"Content-Type": "application/json", **(headers or {})},
    )


async def _serve_forever(latency: float) -> None:
    api = FakeAnthropic(latency=latency)
    print(await api.start(), flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        await api.close()


if __name__ == "__main__":
    # Standalone, for benchmarks that want the fake in another process: prints its base URL.
    import argparse

    parser = argparse.ArgumentParser(description="fake Anthropic Messages API on 127.0.0.1")
    parser.add_argument("--latency", type=float, default=0.0)
    asyncio.run(_serve_forever(parser.parse_args().latency))
