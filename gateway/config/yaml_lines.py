"""Editing ``config.yaml`` line by line, so that its comments stay."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import yaml

KEY = re.compile(r"^(?P<indent> *)(?P<key>[A-Za-z_][\w-]*)\s*:(?P<rest>.*)$")


def find_key(lines: list[str], path: list[str]) -> int | None:
    """The line of the block-style key ``path``; None when it is not there."""
    stack: list[tuple[int, str]] = []
    for i, line in enumerate(lines):
        m = KEY.match(line)
        if m is None or line.lstrip().startswith("#"):
            continue
        indent = len(m["indent"])
        while stack and stack[-1][0] >= indent:
            stack.pop()
        stack.append((indent, m["key"]))
        if [k for _, k in stack] == path:
            return i
    return None


def key_span(lines: list[str], path: list[str]) -> tuple[int, int] | None:
    """The lines of the key ``path`` with its block and the comments just above it (which
    describe it), up to the next key as far out."""
    at = find_key(lines, path)
    if at is None:
        return None
    indent = len(lines[at]) - len(lines[at].lstrip(" "))
    end = at + 1
    while end < len(lines):
        nxt = KEY.match(lines[end])
        if nxt and not lines[end].lstrip().startswith("#") and len(nxt["indent"]) <= indent:
            break
        end += 1
    while end > at + 1 and comment_or_blank(lines[end - 1]):
        end -= 1  # the comments before the next key are that key's
    start = at
    while start > 0 and lines[start - 1].strip().startswith("#"):
        start -= 1
    return start, end


def comment_or_blank(line: str) -> bool:
    return not line.strip() or line.lstrip().startswith("#")


def set_values(text: str, values: Mapping[str, Any]) -> str | None:
    """``text`` with each dotted key's value replaced on its own line (the key must be there,
    with a value that fits on one line); None when one cannot be set so."""
    lines = text.splitlines(keepends=True)
    for dotted, value in values.items():
        at = find_key(lines, dotted.split("."))
        if at is None:
            return None
        m = KEY.match(lines[at])
        assert m is not None  # find_key matched it
        rest = m["rest"].strip()
        if rest and not rest.startswith("#") and rest.endswith(("|", ">")):
            return None  # a block scalar
        if at + 1 < len(lines) and _nested(lines[at], lines[at + 1]):
            return None  # a block mapping or list under it
        shown = yaml.safe_dump(value, default_flow_style=True, width=10_000).strip()
        shown = shown.removesuffix("\n...").removesuffix("...").strip()
        lines[at] = f"{m['indent']}{m['key']}: {shown}\n"
    return "".join(lines)


def _nested(line: str, following: str) -> bool:
    if comment_or_blank(following):
        return False
    indent = len(line) - len(line.lstrip(" "))
    return len(following) - len(following.lstrip(" ")) > indent or following.lstrip().startswith(
        "- "
    )
