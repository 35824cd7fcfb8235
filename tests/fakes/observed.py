"""What the fake platforms share: a record of what was sent, and bounded waits on it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

# A bound, not a pause: a wait ends as soon as what it waits for happens. It covers a fresh
# gateway's first reply on a machine loaded by other jobs, which includes importing the SDK.
WAIT = 30.0


class Observed:
    """Every change calls ``_notify``; tests wait for a predicate, always with a timeout."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []
        self._changed = asyncio.Condition()
        self._tasks: set[asyncio.Task[None]] = set()

    async def wait_for(self, predicate: Callable[[], bool], timeout: float = WAIT) -> None:
        async with asyncio.timeout(timeout):
            async with self._changed:
                await self._changed.wait_for(predicate)

    async def wait_sent(self, n: int, timeout: float = WAIT) -> list[dict[str, Any]]:
        await self.wait_for(lambda: len(self.sent) >= n, timeout)
        return self.sent

    def _notify(self) -> None:
        async def notify() -> None:
            async with self._changed:
                self._changed.notify_all()

        task = asyncio.get_running_loop().create_task(notify())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
