"""What a turn produced: its reply, what it cost, and how it ended (``agent.loop`` makes it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from agent.sessions.state import Usage


class TurnStatus(StrEnum):
    OK = "ok"
    RESUMED = "resumed"  # the reply was written before a restart; sent without a model call
    ITERATION_CAP = "iteration_cap"


@dataclass(frozen=True, slots=True)
class TurnOutcome:
    text: str
    usage: Usage
    calls: int
    status: TurnStatus = TurnStatus.OK
    model_seconds: float = 0.0  # waiting for the model, all calls together
    tool_calls: int = 0
    # Text the model wrote before its tool calls: finished pieces of the answer, in order.
    # ``text`` is the final reply alone; a listener heard each of these as it was finished.
    earlier: tuple[str, ...] = ()

    @property
    def full_text(self) -> str:
        """The whole answer: the earlier pieces and the final reply."""
        return "\n\n".join(t for t in (*self.earlier, self.text) if t)


@dataclass(slots=True)
class Tally:
    """What a turn has cost so far."""

    usage: Usage = field(default_factory=Usage)
    calls: int = 0
    tool_calls: int = 0
    waited: float = 0.0
    retried_overflow: bool = False
    earlier: list[str] = field(default_factory=list)

    def outcome(self, text: str, status: TurnStatus = TurnStatus.OK) -> TurnOutcome:
        return TurnOutcome(
            text, self.usage, self.calls, status, self.waited, self.tool_calls, tuple(self.earlier)
        )
