"""The streamed answer read from the API's events: the same message the SDK's own stream puts
together, for every kind of block and delta, and the failures a stream can bring."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from anthropic.lib.streaming._messages import accumulate_event
from anthropic.types import RawMessageStreamEvent

from agent.model.answer import Answer, BadToolInput, BrokenStream, server_events
from agent.model.wire import content_to_dicts

START = {
    "type": "message_start",
    "message": {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {
            "input_tokens": 12,
            "output_tokens": 1,
            "cache_read_input_tokens": 3000,
            "cache_creation_input_tokens": 40,
        },
    },
}


def _pieces(text: str, rng: random.Random) -> list[str]:
    out, i = [], 0
    while i < len(text):
        n = rng.randint(1, 12)
        out.append(text[i : i + n])
        i += n
    return out


def _start(index: int, block: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": block}


def _delta(index: int, delta: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": delta}


def _stream(rng: random.Random) -> list[dict[str, Any]]:
    """The events of one answer: text, tool calls, thinking, citations, a server tool's
    result, in a random mix, each delta cut at random places."""
    events: list[dict[str, Any]] = [START]
    kinds = rng.choices(["text", "tool", "thinking", "cited", "server"], k=rng.randint(1, 5))
    for index, kind in enumerate(kinds):
        if kind in ("text", "cited"):
            events.append(_start(index, {"type": "text", "text": "", "citations": None}))
            for piece in _pieces("Sure — the answer is 42, ünïcode too. " * 3, rng):
                events.append(_delta(index, {"type": "text_delta", "text": piece}))
            if kind == "cited":
                citation = {
                    "type": "web_search_result_location",
                    "url": "https://example.org/a",
                    "title": "A page",
                    "encrypted_index": "abc",
                    "cited_text": "the answer is 42",
                }
                events.append(_delta(index, {"type": "citations_delta", "citation": citation}))
        elif kind == "tool":
            tool = {"type": "tool_use", "id": f"toolu_{index}", "name": "recall", "input": {}}
            events.append(_start(index, tool))
            written = json.dumps({"query": "dentist", "limit": 5, "nested": {"a": [1, 2]}})
            for piece in _pieces(written, rng):
                events.append(_delta(index, {"type": "input_json_delta", "partial_json": piece}))
        elif kind == "thinking":
            events.append(_start(index, {"type": "thinking", "thinking": "", "signature": ""}))
            for piece in _pieces("Let me think about what was asked. " * 2, rng):
                events.append(_delta(index, {"type": "thinking_delta", "thinking": piece}))
            events.append(_delta(index, {"type": "signature_delta", "signature": "sig=="}))
        else:
            found = {
                "type": "web_search_result",
                "url": "https://example.org/a",
                "title": "A page",
                "encrypted_content": "xyz",
                "page_age": None,
            }
            result = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1"}
            events.append(_start(index, {**result, "content": [found]}))
        events.append({"type": "content_block_stop", "index": index})
    events.append(
        {
            "type": "message_delta",
            "delta": {"type": "message_delta", "stop_reason": "end_turn", "stop_sequence": None},
            "usage": {"output_tokens": 321, "server_tool_use": {"web_search_requests": 1}},
        }
    )
    events.append({"type": "message_stop"})
    return events


def _by_the_sdk(events: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    snapshot: Any = None
    bufs: dict[int, bytes] = {}
    from anthropic._models import construct_type

    for event in events:
        typed = construct_type(type_=RawMessageStreamEvent, value=event)
        snapshot = accumulate_event(event=typed, current_snapshot=snapshot, json_bufs=bufs)
    blocks = [b.model_dump(mode="json") for b in snapshot.content]
    return content_to_dicts(blocks), snapshot.usage.model_dump(mode="json", exclude_none=True)


def _read_here(events: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, Any], str]:
    answer, shown = Answer(), []
    for event in events:
        if (text := answer.feed(json.loads(json.dumps(event)))) is not None:
            shown.append(text)
    message = answer.final()
    usage = {k: v for k, v in message["usage"].items() if v is not None}
    return content_to_dicts(message["content"]), usage, "".join(shown)


def test_answers_read_here_are_the_ones_the_sdk_puts_together():
    rng = random.Random(7)
    for _ in range(300):
        events = _stream(rng)
        content, usage, shown = _read_here(events)
        assert (content, usage) == _by_the_sdk(events)
        # What is shown as it comes is the text of the text blocks, in order.
        assert shown == "".join(b["text"] for b in content if b["type"] == "text")
    assert usage["cache_read_input_tokens"] == 3000 and usage["output_tokens"] == 321


def test_a_tool_input_cut_short_gives_what_it_holds_and_a_wrong_one_is_refused():
    def with_input(written: str) -> list[dict[str, Any]]:
        block = {"type": "tool_use", "id": "t", "name": "n", "input": {}}
        return [
            START,
            _start(0, block),
            _delta(0, {"type": "input_json_delta", "partial_json": written}),
            {"type": "content_block_stop", "index": 0},
        ]

    cut_short = with_input('{"path": "notes.md", "text": "unfinish')  # max_tokens came first
    content, _, _ = _read_here(cut_short)
    assert content[0]["input"] == _by_the_sdk(cut_short)[0][0]["input"] == {"path": "notes.md"}
    with pytest.raises(BadToolInput):
        _read_here(with_input('{"path" "notes.md"}'))


def test_events_out_of_order_or_unfinished_are_a_broken_stream():
    with pytest.raises(BrokenStream):
        Answer().feed({"type": "content_block_start", "index": 0, "content_block": {}})
    answer = Answer()
    answer.feed(START)
    with pytest.raises(BrokenStream):
        answer.feed({"type": "content_block_delta", "index": 3, "delta": {"type": "text_delta"}})
    with pytest.raises(BrokenStream):
        Answer().final()
    # A text block the stream never closed keeps the text that came.
    answer = Answer()
    answer.feed(START)
    answer.feed({"type": "content_block_start", "index": 0, "content_block": {"type": "text"}})
    answer.feed(
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hi"}}
    )
    assert answer.final()["content"] == [{"type": "text", "text": "hi"}]


STREAM = (
    ": a comment",
    "event: ping",
    'data: {"type": "ping"}',
    "",
    "event: message_start",
    "data:{",
    'data: "a": 1, "text": "naïve – 日本"}',
    "",
    "",
    "data: last, without an end",
)
EVENTS = [
    ("ping", '{"type": "ping"}'),
    ("message_start", '{\n"a": 1, "text": "naïve – 日本"}'),
    (None, "last, without an end"),
]


async def _events(chunks: list[bytes]) -> list[tuple[str | None, str]]:
    async def body():
        for chunk in chunks:
            yield chunk

    return [e async for e in server_events(body())]


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"], ids=["LF", "CRLF", "CR"])
async def test_server_events_follow_the_event_stream_format(newline):
    """Read however the body is cut into chunks: between CR and LF, inside a character of
    several bytes, a byte at a time."""
    body = newline.join(STREAM).encode()
    assert await _events([body]) == EVENTS
    for size in (1, 2, 3, 7, 64):
        chunks = [body[i : i + size] for i in range(0, len(body), size)]
        assert await _events(chunks) == EVENTS, size
    for cut in range(len(body) + 1):
        assert await _events([body[:cut], b"", body[cut:]]) == EVENTS, cut


async def test_server_events_of_a_body_that_ends_in_a_blank_line_or_is_empty():
    assert await _events([b"data: x\n\n"]) == [(None, "x")]
    assert await _events([b"data: x\r"]) == [(None, "x")]
    assert await _events([]) == []
    assert await _events([b"\n\n: only a comment\n"]) == []
    assert await _events([b"data: \xff\n\n"]) == [(None, "\ufffd")]  # not UTF-8: replaced
