"""Messages a platform could not take for now, sent again with backoff, in order per chat."""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from channels.live import LiveReply
from gateway.contract.errors import DeliveryError
from gateway.contract.events import OutboundMessage, SessionKey
from gateway.contract.ports import Clock
from gateway.infra.tasks import settle

log = logging.getLogger(__name__)

FIRST_WAIT = 2.0
LONGEST_WAIT = 30.0  # so a chat hears back within this long once its platform is back


class Unreachable(Exception):
    """The platform did not take the message, but may later (the first cause attached)."""


@dataclass(slots=True)
class Held:
    """An outbox row waiting to be sent; ``live`` is the reply it finishes, while this
    process still has it."""

    oid: int
    out: OutboundMessage
    created: datetime
    live: LiveReply[Any] | None = None
    error: str = ""


# Sends a held message once: returns when the platform took it; raises ``Unreachable`` to be
# tried again later, ``DeliveryError`` when it was refused for good or may have been posted
# (which the sender records).
Attempt = Callable[[Held], Awaitable[None]]
# Records a message given up at the end of the window, with its last error.
GiveUp = Callable[[Held], None]


class Retries:
    def __init__(self, attempt: Attempt, give_up: GiveUp, clock: Clock, window: timedelta):
        self._attempt = attempt
        self._give_up = give_up
        self.clock = clock
        self.window = window
        self._lanes: dict[SessionKey, deque[Held]] = {}
        self._workers: dict[SessionKey, asyncio.Task[None]] = {}

    def waiting(self, key: SessionKey) -> bool:
        """Does a message to this chat wait already? (Then a new one goes behind it.)"""
        return bool(self._lanes.get(key))

    def count(self) -> int:
        return sum(len(lane) for lane in self._lanes.values())

    def hold(self, held: Held, *, tried: bool) -> None:
        """Send ``held`` after those waiting for its chat; ``tried``: it failed just now, so
        its first retry waits a moment."""
        key = held.out.key
        lane = self._lanes.setdefault(key, deque())
        lane.append(held)
        if key not in self._workers:
            worker = asyncio.create_task(self._work(key, tried), name=f"retry {key}")
            self._workers[key] = worker
            worker.add_done_callback(lambda _: self._workers.pop(key, None))

    async def idle(self) -> None:
        """Return once nothing waits any more (each sent or given up)."""
        await settle(self._workers.values(), None)

    async def stop(self) -> None:
        """Shutting down: stop trying; the rows stay waiting in the outbox for the next start.
        A message held while this waits (a reply failing during the stop) is stopped too."""
        await settle(self._workers.values(), None, cancel=True)
        self._lanes.clear()

    async def _work(self, key: SessionKey, tried: bool) -> None:
        lane = self._lanes[key]
        wait = FIRST_WAIT if tried else 0.0
        while lane:
            held = lane[0]
            if self.clock.now() - held.created > self.window:
                lane.popleft()
                self._give_up(held)
                continue
            if wait:
                await self.clock.sleep(wait)
            try:
                await self._attempt(held)
            except Unreachable as exc:
                held.error = str(exc)
                wait = min(max(wait * 2, FIRST_WAIT), LONGEST_WAIT)
                log.info("%s: still cannot send (%s); next try in %.0f s", key, held.error, wait)
                continue
            except DeliveryError as exc:
                # Refused, or perhaps posted (its row says which): never tried again, and the
                # messages behind it still go.
                log.error("%s: a message that waited was not delivered: %s", key, exc)
            lane.popleft()
            wait = 0.0
        del self._lanes[key]
