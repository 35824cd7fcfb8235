"""What a scheduled job needs from the running gateway, and nothing more: the daily summary,
the heartbeat and reminders are written against ``JobHost``, not the concrete gateway, so they
can be tested and reasoned about on their own."""

from __future__ import annotations

from typing import Protocol

from agent.model.charge import Purpose
from agent.tools.context import Grant
from gateway.contract.events import OutboundMessage, SessionKey


class JobHost(Protocol):
    async def isolated_turn(
        self, key: SessionKey, prompt: str, grant: Grant, purpose: Purpose
    ) -> str:
        """A fresh turn in the job's own session ``key``, with only the tools ``grant`` gives,
        its model calls counted as ``purpose``; the reply, stripped. Nothing of it reaches a
        chat by itself."""
        ...

    async def deliver(self, out: OutboundMessage, origin: str | None = None) -> None:
        """Send ``out``; raise ``DeliveryError`` unless the platform took it. ``origin`` names
        the run, so a run repeated after a crash finds its message (``finish_delivery``)."""
        ...

    async def finish_delivery(self, origin: str) -> bool:
        """If the run ``origin`` already wrote its message (a crash came after), finish sending
        it and return True; the run must not write another."""
        ...

    def busy(self, key: SessionKey) -> bool:
        """A turn is running in this chat right now."""
        ...
