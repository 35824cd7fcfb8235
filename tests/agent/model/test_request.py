"""The request body: a history that needs no repair is sent as stored, and the API gets the
same request either way."""

from __future__ import annotations

import json
import random
from typing import Any

from agent.model.request import request_body, with_cache_breakpoints
from agent.model.wire import normalize_messages, sent_as_stored
from agent.sessions.history import History

TOOLS = [{"name": "note", "description": "Write a note.", "input_schema": {"type": "object"}}]


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def slow_body(system: str, messages: list[dict[str, Any]], note: str | None, cache: bool) -> Any:
    """What the body must be: the repaired messages, marked, beside the system and tools."""
    sys_blocks, msgs, tools = with_cache_breakpoints(system, messages, TOOLS, note, cache)
    return {
        "model": "m",
        "max_tokens": 9,
        "tools": tools,
        "system": sys_blocks,
        "messages": msgs,
        "stream": True,
    }


def random_message(rng: random.Random, ids: list[str]) -> dict[str, Any]:
    """A stored message as a crash, a cancellation or an odd model reply can leave it."""
    role = rng.choice(["user", "assistant"])
    blocks: list[Any] = []
    for _ in range(rng.choice([0, 1, 1, 2, 3])):
        kind = rng.choice(["text", "text", "blank", "use", "result", "image"])
        if kind == "text":
            blocks.append(text(rng.choice(["hi", "Grüße 東京 😀", "a\nb", "\u2028"])))
        elif kind == "blank":
            blocks.append(text(rng.choice(["", "  ", "\n"])))
        elif kind == "use":
            ids.append(f"t{len(ids)}")
            blocks.append({"type": "tool_use", "id": ids[-1], "name": "note", "input": {}})
        elif kind == "result" and ids:
            blocks.append({"type": "tool_result", "tool_use_id": rng.choice(ids), "content": "ok"})
        else:
            blocks.append({"type": "image", "source": {"type": "url", "url": "https://x/y.png"}})
    message: dict[str, Any] = {"role": role, "content": blocks}
    if rng.random() < 0.05:
        message["content"] = "plain text"
    if rng.random() < 0.03:
        message["paused"] = True
    return message


def well_formed(rng: random.Random, turns: int) -> list[dict[str, Any]]:
    """A history as turns that finished leave it: questions, tool rounds, answers."""
    out: list[dict[str, Any]] = []
    for n in range(turns):
        out.append({"role": "user", "content": [text(f"question {n} — ¿qué?")]})
        for r in range(rng.choice([0, 0, 1, 2])):
            ids = [f"u{n}-{r}-{k}" for k in range(rng.choice([1, 2]))]
            uses = [{"type": "tool_use", "id": i, "name": "note", "input": {}} for i in ids]
            out.append({"role": "assistant", "content": [text("let me look"), *uses]})
            results = [{"type": "tool_result", "tool_use_id": i, "content": "ok"} for i in ids]
            out.append({"role": "user", "content": rng.sample(results, len(results))})
        out.append({"role": "assistant", "content": [text(f"answer {n} ✓")]})
    return out


def test_a_history_is_sent_as_stored_exactly_when_nothing_in_it_needs_repair():
    """Over thousands of histories, broken in every way the repair knows and whole: the
    stored JSON is used if and only if the repair would change nothing, and the API receives
    the same request either way (cache breakpoints, system note and tools included)."""
    rng = random.Random(20261125)
    used = repaired = 0
    for case in range(3000):
        ids: list[str] = []
        if case % 3 == 0:
            messages = well_formed(rng, rng.randint(1, 6))
            messages.append({"role": "user", "content": [text("and now?")]})
            if rng.random() < 0.5:  # one thing broken somewhere
                messages[rng.randrange(len(messages))] = random_message(rng, ids)
        else:
            messages = [random_message(rng, ids) for _ in range(rng.randint(0, 7))]
        history = History(messages)
        unchanged = normalize_messages(messages) == messages
        stored = sent_as_stored(history)
        assert (stored is not None) == unchanged, messages
        used += stored is not None
        repaired += stored is None
        note = rng.choice([None, "Reminder: be brief."])
        cache = rng.random() < 0.8
        body = request_body("m", 9, ("You are Corvid.", history, TOOLS), note, cache)
        assert json.loads(body) == slow_body("You are Corvid.", messages, note, cache), messages
        assert list(history) == messages  # the stored history is never changed
    assert used > 500 and repaired > 500  # both ways were taken, many times


def test_what_was_found_fit_is_not_checked_again_and_any_change_but_an_append_forgets_it():
    history = History(
        [
            {"role": "user", "content": [text("q")]},
            {"role": "assistant", "content": [text("a")]},
            {"role": "user", "content": [text("q2")]},
        ]
    )
    assert sent_as_stored(history) is not None and history.checked == 3
    history.append({"role": "assistant", "content": [text("a2")]})
    history.append({"role": "user", "content": [text("q3")]})
    assert history.checked == 3  # appending keeps what was checked
    assert sent_as_stored(history) is not None and history.checked == 5
    history.append({"role": "user", "content": [text("q4")]})  # two user messages in a row
    assert sent_as_stored(history) is None
    for change in (
        lambda h: h.__setitem__(0, {"role": "assistant", "content": [text("x")]}),
        lambda h: h.__delitem__(0),
        lambda h: h.insert(0, {"role": "user", "content": [text("x")]}),
        lambda h: h.__setitem__(slice(0, 1), [{"role": "user", "content": "x"}]),
    ):
        changed = History([{"role": "user", "content": [text("q")]}])
        assert sent_as_stored(changed) is not None and changed.checked == 1
        change(changed)
        assert changed.checked == 0
        assert (sent_as_stored(changed) is not None) == (
            normalize_messages(list(changed)) == list(changed)
        )


def test_a_history_ending_in_unanswered_tool_calls_is_repaired_every_time():
    """The last message's tool calls get "interrupted" results whenever they are last, even
    after the history was found fit up to them."""
    history = History([{"role": "user", "content": [text("q")]}])
    assert sent_as_stored(history) is not None
    use = {"type": "tool_use", "id": "t1", "name": "note", "input": {}}
    history.append({"role": "assistant", "content": [use]})
    for _ in range(2):
        assert sent_as_stored(history) is None
        sent = json.loads(request_body("m", 9, ("s", history, []), None, True))["messages"]
        assert sent[-1]["content"][0]["tool_use_id"] == "t1" and sent[-1]["content"][0]["is_error"]


def test_the_tools_are_written_once_per_list_and_the_head_is_as_json_writes_it(monkeypatch):
    """The head's bytes are what ``json.dumps`` makes of it, keys in the same order; a list of
    tools offered again is not written again, and another list (the registry's next, a grant's)
    gets its own JSON, however many there have been."""
    import agent.model.request as request

    written: list[Any] = []
    dumps = request._dumps
    monkeypatch.setattr(request, "_dumps", lambda v: written.append(v) or dumps(v))
    history = History([{"role": "user", "content": [text("hi")]}])
    lists = [
        [{"name": f"t{n}", "description": "d", "input_schema": {"type": "object"}}]
        for n in range(12)
    ]
    for cache in (True, False):
        for tools in [*lists, lists[-1], lists[-1], lists[0]]:
            body = request_body("m", 9, ("s", history, tools), "note", cache)
            head = body[: body.index(b',"messages":')] + b"}"
            sys_blocks, _, marked = with_cache_breakpoints("s", [], tools, "note", cache)
            want = {"model": "m", "max_tokens": 9, "tools": marked, "system": sys_blocks}
            assert head == json.dumps(want, separators=(",", ":")).encode()
    tools_written = [v for v in written if isinstance(v, list) and v and "name" in v[0]]
    # Each of the twelve lists once per cache setting, the first again after being dropped.
    assert len(tools_written) == 2 * 13


def test_the_list_offered_at_every_call_keeps_its_json_among_passing_lists(monkeypatch):
    """A grant's turn makes a new list at each call; the list of every other turn, asked for
    in between, is not pushed out by them."""
    import agent.model.request as request

    written: list[Any] = []
    dumps = request._dumps
    monkeypatch.setattr(request, "_dumps", lambda v: written.append(v) or dumps(v))
    history = History([{"role": "user", "content": [text("hi")]}])
    offered = [{"name": "kept", "description": "d", "input_schema": {"type": "object"}}]
    for n in range(30):
        passing = [{"name": f"p{n}", "description": "d", "input_schema": {"type": "object"}}]
        request_body("m", 9, ("s", history, passing), None, True)
        request_body("m", 9, ("s", history, offered), None, True)
    assert sum(1 for v in written if isinstance(v, list) and v and v[0].get("name") == "kept") == 1
