"""The fake Messages API's prompt-cache units, which the cache tests take as their oracle."""

from __future__ import annotations

import json
from collections import deque
from typing import Any

from tests.fakes.anthropic_api import FakeAnthropic, _segments_and_marks


def test_each_cache_unit_is_its_block_as_sorted_json_with_its_role_and_without_its_mark():
    mark = {"type": "ephemeral"}
    body = {
        "tools": [{"name": "t", "input_schema": {"type": "object"}, "cache_control": mark}],
        "system": "You are Corvid.",
        "messages": [
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "content": [{"type": "text", "text": "1 == 1.0", "cache_control": mark}, "raw"],
            },
        ],
    }
    segments, marks = _segments_and_marks(body)
    assert segments == [
        json.dumps({"name": "t", "input_schema": {"type": "object"}}, sort_keys=True),
        json.dumps({"type": "text", "text": "You are Corvid."}, sort_keys=True),
        json.dumps({"type": "text", "text": "hi", "_role": "user"}, sort_keys=True),
        json.dumps({"type": "text", "text": "1 == 1.0", "_role": "assistant"}, sort_keys=True),
        json.dumps("raw"),
    ]
    assert marks == [0, 3]
    assert body["tools"][0]["cache_control"] == mark  # the request is left as it came
    system_blocks = {**body, "system": [{"type": "text", "text": "S", "cache_control": mark}]}
    assert _segments_and_marks(system_blocks)[1] == [0, 1, 3]


def _body(turns: list[str], marked: int, system: str = "You are Corvid.") -> dict[str, Any]:
    """A conversation of ``turns`` (user and assistant in turn), the message at ``marked``
    carrying the cache mark, as a client moving its breakpoint forward sends it."""
    messages: list[dict[str, Any]] = []
    for i, text in enumerate(turns):
        block: dict[str, Any] = {"type": "text", "text": text}
        if i == marked:
            block["cache_control"] = {"type": "ephemeral"}
        messages.append({"role": "user" if i % 2 == 0 else "assistant", "content": [block]})
    tools = [{"name": "t", "input_schema": {"type": "object"}, "cache_control": {"type": "x"}}]
    return {"tools": tools, "system": system, "messages": messages}


def test_a_request_that_starts_like_a_recent_one_is_counted_as_if_hashed_whole():
    """The fake hashes only what a request adds to a recent one. Every request's usage must
    be what hashing each request whole gives: conversations that grow, branch, lose a mark,
    change their system prompt, and interleave."""
    turns = [f"turn {i} " * 20 for i in range(12)]
    other = [f"other {i} " * 20 for i in range(6)]
    bodies = [_body(turns[: n + 1], n) for n in range(8)]
    bodies += [_body(other[: n + 1], n) for n in range(5)]  # another chat, in between
    bodies += [_body(turns[:9], 8), _body(turns[:5] + ["edited"] * 4, 8)]  # a branch
    bodies += [_body(turns[:10], -1), _body(turns[:10], 9, system="changed")]
    bodies += [_body(other[:6], 5), _body(turns[:12], 11)]
    reused, whole = FakeAnthropic(), FakeAnthropic()
    whole._recent = deque(maxlen=0)  # nothing kept: each request hashed from its start
    for body in bodies:
        assert reused._usage(body) == whole._usage(body)
    assert any(reused._usage(b)["cache_read_input_tokens"] for b in bodies[-2:])
