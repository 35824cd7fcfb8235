"""The fake Messages API's prompt-cache units, which the cache tests take as their oracle."""

from __future__ import annotations

import json

from tests.fakes.anthropic_api import _segments_and_marks


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
