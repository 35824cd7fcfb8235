"""Request building: history normalisation and cache breakpoints."""

from __future__ import annotations

import copy

from agent.model.llm import with_cache_breakpoints
from agent.model.wire import normalize_messages


def text(t):
    return {"type": "text", "text": t}


def test_consecutive_user_messages_merge():
    msgs = [{"role": "user", "content": [text("a")]}, {"role": "user", "content": "b"}]
    assert normalize_messages(msgs) == [{"role": "user", "content": [text("a"), text("b")]}]


def test_dangling_tool_use_gets_an_interrupted_result_before_new_text():
    msgs = [
        {"role": "user", "content": [text("q")]},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "x", "input": {}}],
        },
        {"role": "user", "content": [text("next question")]},
    ]
    out = normalize_messages(msgs)
    first, second = out[2]["content"]
    assert first["type"] == "tool_result" and first["tool_use_id"] == "t1" and first["is_error"]
    assert second == text("next question")


def test_trailing_tool_use_and_orphan_results():
    msgs = [
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "ghost", "content": "?"},
                text("hi"),
            ],
        },
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t2", "name": "x", "input": {}}],
        },
    ]
    out = normalize_messages(msgs)
    assert out[0]["content"] == [text("hi")]
    assert out[-1]["role"] == "user" and out[-1]["content"][0]["tool_use_id"] == "t2"


def test_leading_assistant_message_gets_a_user_turn_before_it():
    out = normalize_messages([{"role": "assistant", "content": [text("hello")]}])
    assert [m["role"] for m in out] == ["user", "assistant"]


def test_breakpoints_do_not_touch_the_stored_history():
    tools = [{"name": "a", "input_schema": {}}, {"name": "b", "input_schema": {}}]
    msgs = [{"role": "user", "content": [text("q")]}]
    saved = copy.deepcopy((tools, msgs))
    system, out, cached_tools = with_cache_breakpoints("sys", msgs, tools)
    assert (tools, msgs) == saved
    assert system == [{"type": "text", "text": "sys", "cache_control": {"type": "ephemeral"}}]
    assert "cache_control" not in cached_tools[0] and cached_tools[1]["cache_control"]
    assert out[-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
