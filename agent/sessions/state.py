"""A session as the process holds it: its messages, token counts, what it read, how a turn ended."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from agent.sessions.history import History
from gateway.contract.events import SessionKey


class TurnEnd(StrEnum):
    """How a turn ended, as its ``turn`` line records it."""

    OK = "ok"
    ERROR = "error"
    CANCELLED = "cancelled"
    ITERATION_CAP = "iteration_cap"
    UNANSWERED = "unanswered"  # shutdown came first; the next turn sees the messages


@dataclass(frozen=True, slots=True)
class Usage:
    input: int = 0
    cache_read: int = 0
    cache_write: int = 0
    output: int = 0

    @property
    def context(self) -> int:
        """Tokens the conversation occupies after this call (its input plus its answer)."""
        return self.input + self.cache_read + self.cache_write + self.output

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input + other.input,
            self.cache_read + other.cache_read,
            self.cache_write + other.cache_write,
            self.output + other.output,
        )


# What the API charges for an image at most (it scales larger ones down to about 1.15
# megapixels): its base64 text would count hundreds of times more.
IMAGE_TOKENS = 1600


def estimate_tokens(obj: Any) -> int:
    """A rough token count for text or JSON-able content: about four characters a token, and
    an image (in a message or a tool result) as what the API charges for one at most."""
    if isinstance(obj, list):
        return sum(estimate_tokens(b) for b in obj) + 1
    if isinstance(obj, dict):
        if obj.get("type") == "image":
            return IMAGE_TOKENS
        if obj.get("type") == "tool_result" and isinstance(obj.get("content"), list):
            return estimate_tokens(obj["content"]) + 10
    text = obj if isinstance(obj, str) else json.dumps(obj, ensure_ascii=False)
    return len(text) // 4 + 1


SUMMARY_PREFIX = "[Summary of the earlier conversation, written when it was compacted]\n\n"


def summary_message(summary: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": SUMMARY_PREFIX + summary}]}


@dataclass
class SessionState:
    key: SessionKey
    session_id: str
    created: str
    system: str
    messages: History = field(default_factory=History)
    usage_total: Usage = field(default_factory=Usage)
    last_usage: Usage | None = None
    turns: int = 0
    flushed: bool = False  # the silent flush ran in this compaction cycle
    compactions: int = 0
    # Tokens added since the last usage report (or since compaction, when there is none yet).
    added_tokens: int = 0
    # Journal numbers of the inbound messages in this transcript: a turn resumed after a crash
    # must not record them a second time.
    seqs: set[int] = field(default_factory=set)
    # Where the current turn's messages begin (what /stop withdraws).
    turn_start: int = 0
    # When ``system`` was taken (ISO): at creation, then at each compaction or renewal.
    snapshot_at: str = ""
    # What it has read from outside the owner's audience, until /new (``Exposure``).
    exposed: list[str] = field(default_factory=list)
    # The web addresses the owner wrote in it and the links of pages it fetched (``Reach``).
    reachable: set[str] = field(default_factory=set)

    @property
    def context_tokens(self) -> int:
        """The API's own count from the last call, plus an estimate for what came after."""
        base = self.last_usage.context if self.last_usage else estimate_tokens(self.system)
        return base + self.added_tokens
