"""What passes between Corvid and an MCP server besides the calls: a tool's result as the
Messages API takes it (text, images), the transport whose end is noticed, and where a stdio
server's own output goes."""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import json
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from types import TracebackType
from typing import Any, Self, TextIO

import anyio
import httpx2
import mcp_types as mt
from mcp.client import Transport
from mcp.shared.message import SessionMessage

from agent.tools import ToolResult

# Image types the Messages API takes, and how much of them one result may carry.
_IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
MAX_IMAGE_BYTES = 5_000_000
MAX_IMAGES = 8
# A server's stderr goes to state/mcp/<name>.log; beyond this it starts over (one old copy).
MAX_LOG_BYTES = 1_000_000


def tool_result(result: mt.CallToolResult) -> ToolResult:
    """An MCP tool's result as the Messages API takes it: text, and images as image blocks."""
    texts: list[str] = []
    images: list[dict[str, Any]] = []
    for block in result.content:
        if isinstance(block, mt.TextContent):
            texts.append(block.text)
        elif isinstance(block, mt.ImageContent):
            texts += _image(block.data, block.mime_type, images)
        elif isinstance(block, mt.AudioContent):
            texts.append(f"[audio ({block.mime_type}) left out: it cannot be shown to the model]")
        elif isinstance(block, mt.ResourceLink):
            texts.append(f"[resource: {block.name} <{block.uri}>]")
        elif isinstance(block, mt.EmbeddedResource):
            res = block.resource
            if isinstance(res, mt.TextResourceContents):
                texts.append(f"[resource <{res.uri}>]\n{res.text}")
            elif (res.mime_type or "") in _IMAGE_TYPES:
                texts += _image(res.blob, res.mime_type or "", images)
            else:
                texts.append(f"[binary resource <{res.uri}> ({res.mime_type}) left out]")
    if not result.content and result.structured_content is not None:
        texts.append(json.dumps(result.structured_content, ensure_ascii=False, indent=1))
    text = "\n\n".join(t for t in texts if t)
    if not text and not images:
        text = "(no output)"
    return ToolResult(text, result.is_error, tuple(images))


def _image(data: str, mime: str, images: list[dict[str, Any]]) -> list[str]:
    """Add one image block to ``images``; the note to put in the text instead, if any."""
    if mime not in _IMAGE_TYPES:
        return [f"[an image of type {mime} left out: the model takes JPEG, PNG, GIF and WebP]"]
    try:
        size = len(base64.b64decode(data, validate=True))
    except (binascii.Error, ValueError):
        return ["[an image that was not valid base64 left out]"]
    if size > MAX_IMAGE_BYTES or len(images) >= MAX_IMAGES:
        return [f"[an image of {size:,} bytes left out: over what one result may carry]"]
    images.append({"type": "image", "source": {"type": "base64", "media_type": mime, "data": data}})
    return []


class Watched:
    """A transport whose end is noticed: ``ended`` is set when the server's stream ends (the
    process exited, the connection closed), so the keeper can start it again."""

    def __init__(self, inner: Transport, ended: asyncio.Event) -> None:
        self._inner = inner
        self._ended = ended
        self.closed = False

    async def __aenter__(self) -> tuple[Any, Any]:
        read, write = await self._inner.__aenter__()
        return _WatchedRead(read, self._end), write

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        return await self._inner.__aexit__(exc_type, exc, tb)

    def _end(self) -> None:
        self.closed = True
        self._ended.set()


class _WatchedRead:
    """The read side of a transport, telling when it runs out."""

    def __init__(self, inner: Any, on_end: Callable[[], None]) -> None:
        self._inner = inner
        self._on_end = on_end

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        try:
            item: SessionMessage | Exception = await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._on_end()
            raise
        return item

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


@contextlib.asynccontextmanager
async def with_client(http: httpx2.AsyncClient, inner: Transport) -> AsyncIterator[Any]:
    """The HTTP transport, and the HTTP client (with the configured headers) it uses."""
    async with http, inner as streams:
        yield streams


@contextlib.contextmanager
def server_log(folder: Path, name: str) -> Iterator[TextIO]:
    """The file a stdio server's stderr goes to (state/mcp/NAME.log), kept to a size."""
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = folder / f"{name}.log"
    with contextlib.suppress(FileNotFoundError):
        if path.stat().st_size > MAX_LOG_BYTES:
            path.replace(path.with_suffix(".log.1"))
    with path.open("a", encoding="utf-8", errors="replace") as fh:
        fh.write(f"--- started {time.strftime('%Y-%m-%d %H:%M:%S')}\n")
        fh.flush()
        yield fh
