"""The channel port: a chat platform adapter turns platform events into ``InboundMessage``s and
delivers ``OutboundMessage``s back. Channels know nothing of the agent.

Lifecycle: ``start(sink)`` begins receiving and hands every accepted message to ``sink``, which
returns a future that resolves once the message has been answered; ``stop()`` ends receiving and
releases the platform client. ``send`` must raise on failure (the gateway logs and records it);
``typing`` is an async context manager held while a turn runs.
"""

from __future__ import annotations

import asyncio
import contextlib
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable
from typing import ClassVar

from gateway.events import InboundMessage, OutboundMessage, SessionKey

Sink = Callable[[InboundMessage], "asyncio.Future[None]"]


class Channel(ABC):
    name: ClassVar[str]
    # The bot's own handle on the platform, once known: "/new@other_bot" is not for us.
    bot_username: str = ""

    @abstractmethod
    async def start(self, sink: Sink) -> None: ...

    @abstractmethod
    async def stop(self) -> None: ...

    @abstractmethod
    async def send(self, msg: OutboundMessage) -> None: ...

    @contextlib.asynccontextmanager
    async def typing(self, key: SessionKey) -> AsyncIterator[None]:
        """Show that a reply is being written. The default shows nothing."""
        yield
