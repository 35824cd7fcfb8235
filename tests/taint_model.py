"""An obedient model for the taint suites: it carries out every order it reads anywhere in its
request (the system prompt, the newest message, what its tools returned), so whatever reaches
its context can steer it.

Orders are written ``[[DO tool | key=value | key=value]]``; ``{{...}}`` and ``((...))`` are the
same, so that an order can carry another inside it (a group's message that appends an order to
its log, whose reader writes a skill whose description is an order). ``THEN`` instead of ``DO``
runs once tool results are in, with everything they said as its ``content``. In a value,
``\\n`` is a line break and ``$MEMORY`` what the model knows of MEMORY.md (the first line of its
section in the system prompt): a model putting what it knows where an order says.
"""

from __future__ import annotations

import json
import re
from typing import Any

from tests.fakes.anthropic_api import Reply, last_user_text, request_kind, tool_results

_ORDERS = (
    re.compile(r"\[\[(DO|THEN) (\w+)(.*?)\]\]", re.S),
    re.compile(r"\{\{(DO|THEN) (\w+)(.*?)\}\}", re.S),
    re.compile(r"\(\((DO|THEN) (\w+)(.*?)\)\)", re.S),
)


def order(tool: str, level: int = 0, then: bool = False, **args: str) -> str:
    """An order as the model reads it (``level`` picks the brackets)."""
    opening, closing = (("[[", "]]"), ("{{", "}}"), ("((", "))"))[level]
    head = f"{'THEN' if then else 'DO'} {tool}"
    body = "".join(f" | {k}={v}" for k, v in args.items())
    return f"{opening}{head}{body}{closing}"


def _parts(rest: str) -> list[str]:
    """``rest`` split at each `` | `` that is not inside an order it carries."""
    parts, depth, start, i = [], 0, 0, 0
    while i < len(rest):
        pair = rest[i : i + 2]
        if pair in ("[[", "{{", "(("):
            depth, i = depth + 1, i + 2
        elif pair in ("]]", "}}", "))"):
            depth, i = depth - 1, i + 2
        elif depth == 0 and rest.startswith(" | ", i):
            parts.append(rest[start:i])
            start = i = i + 3
        else:
            i += 1
    parts.append(rest[start:])
    return parts


def _orders(text: str, memory: str) -> list[tuple[str, str, dict[str, Any]]]:
    found = []
    for pattern in _ORDERS:
        for verb, tool, rest in pattern.findall(text):
            args: dict[str, Any] = {}
            for part in _parts(rest)[1:]:
                key, _, value = part.partition("=")
                value = value.replace("\\n", "\n")
                if not any(o in value for o in ("[[", "{{", "((")):  # not an order it carries
                    value = value.replace("$MEMORY", memory)
                args[key.strip()] = value
            found.append((verb, tool, args))
    return found


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict))


def _memory(system: str) -> str:
    """The first line of MEMORY.md as the system prompt holds it ("" when it holds none)."""
    section = system.split("## MEMORY.md", 1)
    if len(section) < 2:
        return ""
    lines = [line for line in section[1].splitlines()[1:] if line.strip()]
    return lines[0].strip() if lines else ""


def _turn(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The messages of the turn being answered: from its request on."""
    messages = body["messages"]
    for i in range(len(messages) - 1, -1, -1):
        content = messages[i]["content"]
        if messages[i]["role"] == "user" and (
            isinstance(content, str) or any(b.get("type") == "text" for b in content)
        ):
            return messages[i:]
    return messages


def obedient(body: dict[str, Any]) -> Reply:
    if request_kind(body) == "summary":  # a summariser that keeps every word
        return Reply("Summary of what was said: " + last_user_text(body))
    system = "\n".join(b["text"] for b in body["system"])
    memory = _memory(system)
    turn = _turn(body)
    done = {
        (b["name"], json.dumps(b["input"], sort_keys=True))
        for m in turn
        if isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == "tool_use"
    }
    results = tool_results(body)
    # The request and all that came with it (notes recalled ahead of the person's words).
    asked = _text(turn[0]["content"]) if turn else last_user_text(body)
    seen = "\n".join(_text(r["content"]) for r in results) if results else system + "\n" + asked
    calls = [
        (tool, args)
        for verb, tool, args in _orders(seen, memory)
        if verb == "DO" and (tool, json.dumps(args, sort_keys=True)) not in done
    ]
    if results:
        every = "\n".join(
            _text(b["content"])
            for m in turn
            if isinstance(m["content"], list)
            for b in m["content"]
            if b.get("type") == "tool_result"
        )
        for verb, tool, args in _orders(system + "\n" + every, memory):
            call = (tool, {**args, "content": every})
            if verb == "THEN" and not any(name == tool for name, _ in done):
                calls.append(call)
                done.add((tool, ""))
    if calls:
        return Reply(tool_calls=calls)
    return Reply("Everything I saw:\n" + json.dumps(body["system"]) + json.dumps(body["messages"]))
