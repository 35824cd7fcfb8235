"""A clock for scheduler tests: time moves only when the test says so."""

from __future__ import annotations

import asyncio
from datetime import datetime


class FakeClock:
    """Time moves only when the test says so; sleepers are visible, so a test can wait until
    the scheduler is idle until a given instant."""

    def __init__(self, start: datetime) -> None:
        self._now = start
        self._changed = asyncio.Condition()
        self.sleeping_until: datetime | None = None

    def now(self) -> datetime:
        return self._now

    async def sleep_until(self, when: datetime) -> None:
        async with self._changed:
            self.sleeping_until = when
            self._changed.notify_all()
            await self._changed.wait_for(lambda: self._now >= when)
            self.sleeping_until = None

    async def set(self, when: datetime) -> None:
        async with self._changed:
            self._now = when
            self._changed.notify_all()

    async def idle_until(self, when: datetime, timeout: float = 5.0) -> None:
        async with asyncio.timeout(timeout), self._changed:
            await self._changed.wait_for(lambda: self.sleeping_until == when)

    async def next_wake(self, timeout: float = 5.0) -> datetime:
        """When the scheduler will act next (once it is idle)."""
        async with asyncio.timeout(timeout), self._changed:
            await self._changed.wait_for(lambda: self.sleeping_until is not None)
            assert self.sleeping_until is not None
            return self.sleeping_until

    async def advance(self, timeout: float = 5.0) -> datetime:
        """Jump to the scheduler's next wake-up and wait until it is idle again."""
        when = await self.next_wake(timeout)
        await self.set(when)
        async with asyncio.timeout(timeout), self._changed:
            await self._changed.wait_for(
                lambda: self.sleeping_until is not None and self.sleeping_until > when
            )
        return when
