"""A model on the agent's model port, scripted in process: each call takes the next step.

For tests of the turn loop and compaction that need no HTTP (the fake Messages API in
``anthropic_api.py`` is for the real client). A step is a reply, an ``LLMError`` to raise, or a
function of the request that returns a reply.
"""

from __future__ import annotations

import copy
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from agent.model.charge import Charge
from agent.model.port import LLMResponse, PlainModel
from agent.sessions.state import Usage
from agent.stream import Deltas
from gateway.contract.errors import LLMError


@dataclass
class Call:
    system: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    system_note: str | None
    charge: Charge | None = None


Step = LLMResponse | LLMError | Callable[[Call], LLMResponse]


def text(reply: str, usage: Usage | None = None) -> LLMResponse:
    return LLMResponse([{"type": "text", "text": reply}], "end_turn", usage or Usage(100, 0, 0, 10))


def tool_use(name: str, args: dict[str, Any], call_id: str = "t1") -> LLMResponse:
    block = {"type": "tool_use", "id": call_id, "name": name, "input": args}
    return LLMResponse([block], "tool_use", Usage(100, 0, 0, 10))


class ScriptedModel(PlainModel):
    model = "scripted"

    def __init__(self, *steps: Step, context_window: int = 200_000) -> None:
        self.context_window = context_window
        self.script: deque[Step] = deque(steps)
        self.calls: list[Call] = []

    def enqueue(self, *steps: Step) -> None:
        self.script.extend(steps)

    async def complete(
        self,
        system: str,
        messages: Sequence[dict[str, Any]],
        tools: list[dict[str, Any]],
        system_note: str | None = None,
        deltas: Deltas | None = None,
        *,
        charge: Charge,
    ) -> LLMResponse:
        call = Call(system, copy.deepcopy(list(messages)), tools, system_note, charge)
        self.calls.append(call)
        if not self.script:
            raise AssertionError(f"the model was called once more than scripted: {call}")
        step = self.script.popleft()
        if isinstance(step, LLMError):
            raise step
        reply = step(call) if callable(step) else step
        if deltas is not None:  # streamed as the real client does, a few characters at a time
            for block in reply.content:
                if block.get("type") == "text":
                    for i in range(0, len(block["text"]), 16):
                        deltas.text(block["text"][i : i + 16])
        return reply
