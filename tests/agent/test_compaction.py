"""Choosing what compaction keeps: recent messages within budget, tool pairs never split."""

from __future__ import annotations

from agent.compaction import FLUSH_PROMPT, NO_REPLY, choose_split, render, starts_exchange


def user(text):
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def tool_call(i):
    return {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": f"t{i}", "name": "x", "input": {}}],
    }


def tool_result(i, size=10):
    return {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": "r" * size}],
    }


def test_split_never_lands_between_a_tool_use_and_its_result():
    messages = [
        user("a" * 400),
        tool_call(1),
        tool_result(1),
        user("b" * 40),
        tool_call(2),
        tool_result(2, 200),
    ]
    for budget in range(1, 400, 7):
        split = choose_split(messages, budget)
        assert split == len(messages) or starts_exchange(messages[split])
        kept = messages[split:]
        ids_used = {b["id"] for m in kept for b in m["content"] if b["type"] == "tool_use"}
        ids_answered = {
            b["tool_use_id"] for m in kept for b in m["content"] if b["type"] == "tool_result"
        }
        assert ids_used == ids_answered


def test_split_keeps_what_fits_and_summarises_the_rest():
    messages = [user("old " * 500), user("recent question"), tool_call(1), tool_result(1)]
    assert choose_split(messages, 100) == 1
    assert choose_split(messages, 10_000) == 0  # everything fits: nothing to summarise
    assert choose_split(messages, 1) == len(messages)  # nothing fits: summarise it all


def test_render_for_the_summariser_keeps_the_newest_part():
    messages = [user("first " * 100), tool_call(1), tool_result(1), user("last words")]
    text = render(messages, 10_000)
    assert text.startswith("User: first") and "Assistant used x({})" in text
    assert "Tool result: rrrrrrrrrr" in text and text.endswith("User: last words")
    short = render(messages, 50)
    assert short.startswith("[the oldest part is left out]") and short.endswith("last words")


def test_render_leaves_out_the_silent_flush_exchange():
    messages = [
        user("real talk"),
        user(FLUSH_PROMPT),
        {"role": "assistant", "content": [{"type": "text", "text": NO_REPLY}]},
    ]
    assert render(messages, 10_000) == "User: real talk"
