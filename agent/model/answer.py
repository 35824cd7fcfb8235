"""A streamed Messages answer, read from its server-sent events into the JSON of a whole answer."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any


class BadToolInput(ValueError):
    """The model wrote a tool call whose input is not JSON."""


class BrokenStream(ValueError):
    """The stream is not a Messages answer (an event that is not JSON, or out of order)."""


# The events are read here, not by the SDK's stream, which builds a pydantic object for every
# event and parses a tool call's input again at each fragment; ``Answer`` follows, event by
# event, the SDK's ``accumulate_event``.
async def server_events(
    chunks: AsyncIterator[bytes],
) -> AsyncIterator[tuple[str | None, str]]:
    """The (event, data) pairs of a text/event-stream, given its body as it comes: lines end
    with LF, CRLF or CR; the fields of one event end at a blank line, its data lines joined by
    newlines; comments are skipped. The body is split into lines here, a chunk at a time (a
    text decoder and a line iterator over it cost more than the events' own JSON)."""
    event: str | None = None
    data: list[str] = []
    rest = b""
    done = False
    chunk_iter = chunks.__aiter__()
    while not done:
        try:
            buf = rest + await chunk_iter.__anext__()
            if buf.endswith(b"\r"):  # maybe the first half of a CRLF: kept for the next chunk
                buf, held = buf[:-1], b"\r"
            else:
                held = b""
        except StopAsyncIteration:
            buf, held, done = rest + b"\n", b"", True  # the last line needs no end
        if b"\r" in buf:
            buf = buf.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        *lines, rest = buf.split(b"\n")
        rest += held
        for raw in lines:
            if not raw:
                if data:
                    yield event, "\n".join(data)
                event, data = None, []
                continue
            line = raw.decode("utf-8", "replace")
            if line.startswith(":"):
                continue
            field, _, value = line.partition(":")
            if value.startswith(" "):
                value = value[1:]
            if field == "event":
                event = value
            elif field == "data":
                data.append(value)
    if data:
        yield event, "\n".join(data)


def decoded(data: str) -> Any:
    try:
        return json.loads(data)
    except ValueError:
        raise BrokenStream(f"an event that is not JSON: {data[:100]!r}") from None


class Answer:
    """The message as its events build it; ``feed`` each event's data in order."""

    def __init__(self) -> None:
        self.message: dict[str, Any] | None = None
        # What the deltas add to a block's field (text, thinking, a tool's input JSON), kept
        # in pieces and joined once the block ends: adding each to the string so far would
        # copy the whole text at every piece.
        self._pieces: dict[tuple[int, str], list[str]] = {}

    def feed(self, event: dict[str, Any]) -> str | None:
        """Take one event; the text it adds to the answer, if it is text to show."""
        kind = event.get("type")
        if kind == "message_start":
            self.message = dict(event["message"])
            self.message["content"] = list(self.message.get("content") or [])
            return None
        message = self.message
        if message is None:
            raise BrokenStream(f"{kind} before message_start")
        try:
            return self._add(message, kind, event)
        except (KeyError, IndexError, TypeError, AttributeError) as exc:
            raise BrokenStream(f"{kind} that does not fit the message ({exc!r})") from None

    def _add(self, message: dict[str, Any], kind: Any, event: dict[str, Any]) -> str | None:
        content: list[dict[str, Any]] = message["content"]
        if kind == "content_block_start":
            content.append(dict(event["content_block"]))
        elif kind == "content_block_delta":
            index = event["index"]
            return self._delta(content[index]["type"], index, event["delta"])
        elif kind == "content_block_stop":
            self._join(content, event["index"])
        elif kind == "message_delta":
            delta = event.get("delta") or {}
            message["stop_reason"] = delta.get("stop_reason")
            message["stop_sequence"] = delta.get("stop_sequence")
            if delta.get("container") is not None:
                message["container"] = delta["container"]
            usage = message.setdefault("usage", {})
            # Counts on message_delta are totals so far; one left out keeps message_start's.
            for name, value in (event.get("usage") or {}).items():
                if value is not None:
                    usage[name] = value
        return None

    def _delta(self, block: str, index: int, delta: dict[str, Any]) -> str | None:
        kind = delta.get("type")
        if kind == "text_delta" and block == "text":
            self._pieces.setdefault((index, "text"), []).append(delta["text"])
            return str(delta["text"])
        if kind == "input_json_delta":
            self._pieces.setdefault((index, "input"), []).append(delta["partial_json"])
        elif kind == "thinking_delta" and block == "thinking":
            self._pieces.setdefault((index, "thinking"), []).append(delta["thinking"])
        elif kind == "citations_delta" and block == "text":
            self._pieces.setdefault((index, "citations"), []).append(delta["citation"])
        elif kind == "signature_delta" and block == "thinking":
            self._pieces[(index, "signature")] = [delta["signature"]]
        return None

    def _join(self, content: list[dict[str, Any]], index: int) -> None:
        """Put what the deltas brought into block ``index``."""
        block = content[index]
        for field in ("text", "thinking"):
            if (pieces := self._pieces.pop((index, field), None)) is not None:
                block[field] = (block.get(field) or "") + "".join(pieces)
        if (cited := self._pieces.pop((index, "citations"), None)) is not None:
            block["citations"] = [*(block.get("citations") or ()), *cited]
        if (signature := self._pieces.pop((index, "signature"), None)) is not None:
            block["signature"] = signature[0]
        written = "".join(self._pieces.pop((index, "input"), ()))
        if written:
            block["input"] = _tool_input(written)

    def final(self) -> dict[str, Any]:
        """The message; a block the stream left unfinished keeps what came of it."""
        if self.message is None:
            raise BrokenStream("the stream ended before the answer began")
        for index in sorted({i for i, _ in self._pieces}):
            self._join(self.message["content"], index)
        return self.message


def _tool_input(written: str) -> Any:
    """A tool call's input from its JSON. JSON cut short (the answer reached ``max_tokens``)
    gives what it holds, as the SDK reads it; JSON that is wrong is ``BadToolInput``."""
    try:
        return json.loads(written)
    except ValueError:
        pass
    from jiter import from_json  # the SDK's own JSON reader, installed with it

    try:
        return from_json(written.encode(), partial_mode=True)
    except ValueError as exc:
        raise BadToolInput(f"{exc}; input: {written[:200]}") from None
