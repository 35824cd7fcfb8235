"""A log entry marked out of date by a newer one: the mark's text, and where it points."""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import PurePosixPath
from typing import Any

from agent.workspace.audience import log_path
from gateway.contract.errors import ToolError
from gateway.contract.events import Audience

log = logging.getLogger(__name__)

# At the end of the older entry, in place of the blank line after it, so that no line of the
# log moves (a line number the model got from a search stays right); readable by the owner and
# the model alike. The newer note is named by its day, heading and, when several entries
# share that heading (one turn writes them all in the same minute), its place among them.
_MARK = re.compile(
    r"^\(Out of date: replaced by (?:the note|note (\d+)) of (\d{4}-\d\d-\d\d) (\d\d:\d\d)\.\)$"
)
_HEADING = re.compile(r"^## (\d\d:\d\d)(?: |$)")
# How the model names a note: as memory_search shows a hit ("memory/x.md lines 4-6"), or
# "memory/x.md line 4", or "memory/x.md:4"; no longer a number than a line's (``int`` refuses
# thousands of digits).
_REFERENCE = re.compile(r"^\s*(\S+?\.md)(?::|\s+lines?\s+)(\d{1,9})(?:\s*-\s*\d{1,9})?\s*$")


@dataclass(frozen=True)
class Newer:
    """The note a mark names: in the log of ``day`` (same folder), the ``nth`` entry headed
    ``## {time}``."""

    day: str
    time: str
    nth: int = 1

    def mark(self) -> str:
        which = "the note" if self.nth == 1 else f"note {self.nth}"
        return f"(Out of date: replaced by {which} of {self.day} {self.time}.)"


def replaced_by(text: str) -> Newer | None:
    """The newer note an entry's mark names (the last mark, if several)."""
    found = [m for x in text.splitlines() if (m := _MARK.match(x.strip()))]
    if not found:
        return None
    nth, day, time = found[-1].groups()
    return Newer(day, time, int(nth or 1))


def reference(raw: object) -> tuple[str, int]:
    """A note named as the model names it: its file and a line within it."""
    found = _REFERENCE.match(str(raw))
    if found is None:
        raise ToolError(
            "replaces names a note as memory_search shows it: 'memory/YYYY-MM-DD.md lines "
            f"4-6' (or 'memory/YYYY-MM-DD.md:4'), not {str(raw)[:80]!r}."
        )
    return found[1], int(found[2])


def own_log_day(rel: str, audience: Audience) -> date | None:
    """The day of ``rel`` when it is one of the audience's own daily logs; else None."""
    try:
        day = date.fromisoformat(PurePosixPath(rel).stem)
    except ValueError:
        return None
    return day if rel == log_path(audience, day) else None


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


def marked(text: str, line: int, newer: Newer) -> str:
    """``text`` of a log with the entry at 1-based ``line`` marked as replaced by ``newer``;
    an earlier mark of that entry gives way to this one, and no other line moves."""
    lines = text.splitlines(keepends=True)
    start, end = entry_at(lines, line)
    mark = newer.mark()
    at = next((i for i in range(start + 1, end) if _MARK.match(lines[i].strip())), None)
    if at is None and end < len(lines) and not lines[end].strip():
        at = end  # the blank line after the entry's text
    if at is not None:
        lines[at] = mark + lines[at][len(lines[at].splitlines()[0]) :]  # its own line break
    else:  # the file's end, or a log written by hand with no blank line before the next entry
        if lines[end - 1] == lines[end - 1].splitlines()[0]:  # no line break at the end
            lines[end - 1] += "\n"
        lines.insert(end, mark + "\n")
    return "".join(lines)


def headed(text: str, time: str) -> bool:
    """Whether a chunk holds an entry headed ``## {time}`` (a source may follow the time)."""
    heading = f"## {time}"
    return any(x == heading or x.startswith(heading + " ") for x in text.splitlines())


def replaced_at(text: str, line: int) -> bool:
    """Whether the entry of a log at 1-based ``line`` is marked out of date already (False
    when the line is in no entry)."""
    lines = text.splitlines()
    try:
        start, end = entry_at(lines, line)
    except ToolError:
        return False
    return any(_MARK.match(x.strip()) for x in lines[start:end])


def holding(text: str, words: str) -> tuple[int, str] | None:
    """The last entry of a log whose text holds ``words`` (spacing aside): its heading's line
    (1-based) and its time, ``HH:MM``. None when no entry does."""
    wanted = " " + " ".join(words.split()) + " "
    lines = text.splitlines()
    starts = [i for i, x in enumerate(lines) if x.startswith("## ")]
    for n, start in reversed(list(enumerate(starts))):
        end = starts[n + 1] if n + 1 < len(starts) else len(lines)
        found = _HEADING.match(lines[start])
        if found and wanted in " " + " ".join(" ".join(lines[start + 1 : end]).split()) + " ":
            return start + 1, found[1]
    return None


def entry_body(lines: list[str], line: int) -> tuple[int, int, str]:
    """The entry of a log's ``lines`` that holds 1-based ``line``: its heading's line and last
    line (1-based), and its text without heading or mark."""
    start, end = entry_at(lines, line)
    body = [x for x in lines[start + 1 : end] if not _MARK.match(x.strip())]
    return start + 1, end, "\n".join(body).strip()  # ``end`` is past the heading at least


def newer_at(rel: str, text: str, line: int) -> Newer:
    """The entry headed at 1-based ``line`` of the log ``rel`` (``text``), as a mark names it."""
    time = heading_time(text.splitlines()[line - 1])
    if time is None:
        raise ToolError(f"line {line} of {rel} is not an entry's heading.")
    return Newer(PurePosixPath(rel).stem, time, heading_place(text, line))


def heading_place(text: str, line: int) -> int:
    """Which of the log's entries headed as the one at 1-based ``line`` is (1: the first)."""
    lines = text.splitlines()
    time = _HEADING.match(lines[line - 1])
    assert time is not None, "a heading's line"
    return sum(1 for x in lines[:line] if (m := _HEADING.match(x)) and m[1] == time[1])


def heading_time(text: str) -> str | None:
    """The time of the first entry heading in ``text`` (a chunk, a log), ``HH:MM``."""
    return next((m[1] for x in text.splitlines() if (m := _HEADING.match(x))), None)


@dataclass(frozen=True)
class Offer:
    """An older entry of the owner's logs shown to the model under a new entry, as one the
    new entry may make out of date: the one pair a ``replaces`` change may name. Each entry
    is its log and heading's line, its last line, and its text."""

    newer: str  # "memory/2026-11-28.md:14"
    newer_end: int
    newer_text: str
    older: str
    older_end: int
    older_text: str

    def names(self, newer: tuple[str, int], older: tuple[str, int]) -> bool:
        """Whether what the model named is a line of each entry."""
        return _within(newer, self.newer, self.newer_end) and _within(
            older, self.older, self.older_end
        )


def _within(named: tuple[str, int], ref: str, end: int) -> bool:
    rel, _, line = ref.rpartition(":")
    return named[0] == rel and int(line) <= named[1] <= end


def chosen(change: dict[str, Any], offered: Sequence[Offer]) -> Offer | None:
    """The offer a ``replaces`` change of the model's answer names; None (logged) when it
    names no pair the run offered: only those were checked fit to be marked."""
    sources = change.get("sources")
    source = change.get("source") or (sources[0] if isinstance(sources, list) and sources else "")
    try:
        newer, older = reference(source), reference(change.get("old"))
    except ToolError:
        log.info(
            "consolidation: a replaces change without two notes named left out: %.200r", change
        )
        return None
    offer = next((o for o in offered if o.names(newer, older)), None)
    if offer is None:
        log.info("consolidation: a replaces change naming no pair offered left out: %.200r", change)
    return offer
