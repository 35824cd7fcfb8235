"""A clock for tests: time moves only when the test says so.

It implements ``gateway.contract.ports.Clock``; sleepers are visible, so a test can wait until the
scheduler is idle until a given instant, and ``sleep`` returns once the test has moved time far
enough (or at once with ``instant_sleep``, for backoff that should not cost a test real time).
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta


class FakeClock:
    def __init__(self, start: datetime | None = None, *, instant_sleep: bool = False) -> None:
        self._now = start or datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
        self._origin = self._now
        self._changed = asyncio.Condition()
        self.instant_sleep = instant_sleep
        self._sleepers: list[datetime] = []  # when each task asleep on this clock wakes
        self.slept: list[float] = []  # every sleep(seconds) asked for

    def now(self) -> datetime:
        return self._now

    @property
    def sleeping_until(self) -> datetime | None:
        """The earliest wake-up of the tasks asleep on this clock; None when none is."""
        return min(self._sleepers, default=None)

    def monotonic(self) -> float:
        return (self._now - self._origin).total_seconds()

    def tick(self, seconds: float) -> None:
        """Move time forward now (from synchronous test code, with no sleeper to wake)."""
        self._now += timedelta(seconds=seconds)

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        if self.instant_sleep:
            self._now += timedelta(seconds=max(0.0, seconds))
            await asyncio.sleep(0)
            return
        await self.sleep_until(self._now + timedelta(seconds=seconds))

    async def sleep_until(self, when: datetime) -> None:
        async with self._changed:
            self._sleepers.append(when)
            self._changed.notify_all()
            try:
                await self._changed.wait_for(lambda: self._now >= when)
            finally:
                self._sleepers.remove(when)
                self._changed.notify_all()

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
