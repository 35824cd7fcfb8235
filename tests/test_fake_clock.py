"""The tests' clock (tests/fakes/clock.py) with more than one task asleep on it: each wakes at
its own time, and the next wake-up is always the earliest of those still asleep."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from tests.fakes.clock import FakeClock


async def test_two_sleepers_wake_each_at_its_time():
    clock = FakeClock()
    start = clock.now()
    woke: list[str] = []

    async def sleeper(name: str, seconds: float) -> None:
        await clock.sleep(seconds)
        woke.append(name)

    late = asyncio.create_task(sleeper("late", 60))
    early = asyncio.create_task(sleeper("early", 10))
    await clock.idle_until(start + timedelta(seconds=10))
    assert clock.sleeping_until == start + timedelta(seconds=10)

    await clock.set(start + timedelta(seconds=10))
    await asyncio.wait_for(early, 5)
    # The early sleeper gone, the late one is the next wake-up, not nothing.
    assert woke == ["early"]
    assert await clock.next_wake() == start + timedelta(seconds=60)

    await clock.set(start + timedelta(seconds=60))
    await asyncio.wait_for(late, 5)
    assert woke == ["early", "late"] and clock.sleeping_until is None


async def test_a_cancelled_sleeper_is_no_longer_waited_for():
    clock = FakeClock()
    start = clock.now()
    stays = asyncio.create_task(clock.sleep(30))
    cancelled = asyncio.create_task(clock.sleep(5))
    await clock.idle_until(start + timedelta(seconds=5))
    cancelled.cancel()
    await asyncio.wait({cancelled}, timeout=5)
    assert cancelled.cancelled()
    assert await clock.next_wake() == start + timedelta(seconds=30)
    stays.cancel()
    await asyncio.wait({stays}, timeout=5)
    assert clock.sleeping_until is None
