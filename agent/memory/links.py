"""A log entry marked out of date by a newer one: the mark's text, and where it points."""

from __future__ import annotations

import re

from gateway.contract.errors import ToolError

# On its own line at the end of the older entry, readable by the owner and the model alike.
_MARK = re.compile(
    r"^\(Out of date: replaced by the note of (\d{4}-\d\d-\d\d) (\d\d:\d\d)\.\)$", re.M
)
# How the model names a note: as memory_search shows a hit ("memory/x.md lines 4-6"), or
# "memory/x.md line 4", or "memory/x.md:4".
_REFERENCE = re.compile(r"^\s*(\S+?\.md)(?::|\s+lines?\s+)(\d+)(?:\s*-\s*\d+)?\s*$")


# Named by its day and heading, not its line: a mark put in above it would move its lines.
def mark(day: str, time: str) -> str:
    return f"(Out of date: replaced by the note of {day} {time}.)"


def replaced_by(text: str) -> tuple[str, str] | None:
    """The day and time (``HH:MM``) of the newer note an entry's mark names, in a log of the
    same folder (the last mark, if several)."""
    found = _MARK.findall(text)
    if not found:
        return None
    day, time = found[-1]
    return day, time


def reference(raw: object) -> tuple[str, int]:
    """A note named as the model names it: its file and a line within it."""
    found = _REFERENCE.match(str(raw))
    if found is None:
        raise ToolError(
            "replaces names a note as memory_search shows it: 'memory/YYYY-MM-DD.md lines "
            f"4-6' (or 'memory/YYYY-MM-DD.md:4'), not {str(raw)[:80]!r}."
        )
    return found[1], int(found[2])


def entry_at(lines: list[str], line: int) -> tuple[int, int]:
    """The entry of a log that holds 1-based ``line``: its heading's index and the index
    after its last line of text (0-based, trailing blank lines left out)."""
    if not 1 <= line <= len(lines):
        raise ToolError(f"the log has {len(lines)} lines; line {line} is not in it.")
    start = next((i for i in range(line - 1, -1, -1) if lines[i].startswith("## ")), None)
    if start is None:  # above the first entry: the day's heading, which a hit on it includes
        start = next((i for i in range(line, len(lines)) if lines[i].startswith("## ")), None)
    if start is None:
        raise ToolError(f"line {line} is not inside a log entry (one under a '## ' heading).")
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    while end > start + 1 and not lines[end - 1].strip():
        end -= 1
    return start, end


def marked(text: str, line: int, day: str, time: str) -> str:
    """``text`` of a log with the entry at ``line`` marked as replaced by the note of ``day``
    and ``time``; an earlier mark of that entry gives way to this one."""
    lines = text.split("\n")
    start, end = entry_at(lines, line)
    body = [x for x in lines[start:end] if not _MARK.match(x)]
    while len(body) > 1 and not body[-1].strip():
        body.pop()
    lines[start:end] = [*body, "", mark(day, time)]
    return "\n".join(lines)


def headed(text: str, time: str) -> bool:
    """Whether a chunk holds an entry headed ``## {time}`` (a source may follow the time)."""
    heading = f"## {time}"
    return any(x == heading or x.startswith(heading + " ") for x in text.splitlines())
