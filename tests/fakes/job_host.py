"""A JobHost played by the test: scripted replies for the jobs' turns, and a record of what
they asked for and sent, so scheduled jobs are tested without a gateway."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from agent.model.charge import Purpose
from agent.tools.context import Grant
from gateway.contract.events import OutboundMessage, SessionKey


@dataclass(frozen=True)
class Turn:
    key: SessionKey
    prompt: str
    grant: Grant
    purpose: Purpose | None = None


@dataclass
class FakeJobHost:
    replies: deque[str] = field(default_factory=deque)
    turns: list[Turn] = field(default_factory=list)
    sent: list[tuple[OutboundMessage, str | None]] = field(default_factory=list)
    busy_chats: set[SessionKey] = field(default_factory=set)
    # Runs whose message was written before a crash: finish_delivery completes them.
    written: set[str] = field(default_factory=set)

    def reply(self, *texts: str) -> None:
        self.replies.extend(texts)

    async def isolated_turn(
        self, key: SessionKey, prompt: str, grant: Grant, purpose: Purpose
    ) -> str:
        self.turns.append(Turn(key, prompt, grant, purpose))
        if not self.replies:
            raise AssertionError(f"a turn in {key} that the test did not script")
        return self.replies.popleft().strip()

    async def deliver(self, out: OutboundMessage, origin: str | None = None) -> None:
        self.sent.append((out, origin))

    async def finish_delivery(self, origin: str) -> bool:
        return origin in self.written

    def busy(self, key: SessionKey) -> bool:
        return key in self.busy_chats
