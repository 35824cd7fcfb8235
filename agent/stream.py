"""What a turn tells whoever watches it while it runs: the text as the model writes it, the
pieces it finishes, and the tools it uses. A turn reports them to a ``Listener`` (a plain
callable that must not block); silent turns (flush, summaries, jobs) have none."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True, slots=True)
class TextDelta:
    """More of the text the model is writing."""

    text: str


@dataclass(frozen=True, slots=True)
class TextDone:
    """The text written so far is a finished piece of the answer: the model wrote it before a
    tool call, and the final reply comes after the tools."""

    text: str


@dataclass(frozen=True, slots=True)
class TextVoid:
    """The text streamed since the last finished piece is void: that model call is made again."""


@dataclass(frozen=True, slots=True)
class ToolStarted:
    name: str
    summary: str  # a short description of what the tool does with its input, safe to show


@dataclass(frozen=True, slots=True)
class ToolFinished:
    name: str
    ok: bool


TurnEvent = TextDelta | TextDone | TextVoid | ToolStarted | ToolFinished
Listener = Callable[[TurnEvent], None]


class Deltas(Protocol):
    """What a model call streams to: text as it comes, or word that the call is made again
    (and what it streamed so far is void)."""

    def text(self, delta: str) -> None: ...

    def restart(self) -> None: ...


class ToListener:
    """``Deltas`` passed on to a turn's listener."""

    def __init__(self, listen: Listener) -> None:
        self._listen = listen

    def text(self, delta: str) -> None:
        if delta:
            self._listen(TextDelta(delta))

    def restart(self) -> None:
        self._listen(TextVoid())


# What a tool's progress shows: an emoji and a verb, and the input field worth naming.
_PROGRESS: dict[str, tuple[str, str | None]] = {
    "memory_search": ("🔎 searching memory", "query"),
    "memory_get": ("📖 reading memory", "path"),
    "memory_append": ("📝 noting it down", None),
    "memory_update": ("🧠 updating long-term memory", None),
    "list_files": ("📂 looking through files", "path"),
    "read_file": ("📄 reading", "path"),
    "write_file": ("✏️ writing", "path"),
    "edit_file": ("✏️ editing", "path"),
    "schedule": ("⏰ scheduling", None),
    "list_schedules": ("⏰ checking the schedule", None),
    "cancel_schedule": ("⏰ cancelling a schedule", None),
}
SUMMARY_CHARS = 48


def progress_summary(name: str, args: Any) -> str:
    """A one-line note of what a tool call does, for progress display: a verb and, for some
    tools, a short, single-line quote of one input field (never a file's content)."""
    verb, field = _PROGRESS.get(name, (f"🔧 using {name}", None))
    value = args.get(field) if field is not None and isinstance(args, dict) else None
    if not isinstance(value, str) or not value.strip():
        return f"{verb}…"
    shown = " ".join("".join(c if c.isprintable() else " " for c in value).split())
    if len(shown) > SUMMARY_CHARS:
        shown = shown[: SUMMARY_CHARS - 1] + "…"
    return f"{verb} “{shown}”…"
