"""How much conversation the model calls in flight may carry at once.

While a call runs it holds its whole conversation several times over (read back from the
compact history, the SDK's prepared copy, the request's JSON), so what a burst costs in memory
follows the size of the conversations in flight, not their number. Calls are admitted while
the JSON they carry fits a budget: a burst of short chats goes out at once, a burst of long
conversations takes turns. One call counts at most a quarter of the budget, so a very long
conversation neither waits for every other call to end nor holds the others back.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import AsyncIterator

# What a call counts at least: its request carries the system prompt and the tools besides.
FLOOR = 1024
# Conversation JSON in flight at once. About 256 KB of JSON is 2–4 MB as the copies a call
# holds; a hundred new chats (under a kilobyte each) fit at once, and so do eight to ten
# conversations of a hundred turns.
BUDGET = 256 * 1024


class InFlight:
    def __init__(self, budget: int = BUDGET, floor: int = FLOOR) -> None:
        self.budget = budget
        self.floor = floor
        self.used = 0
        self._waiters: deque[tuple[int, asyncio.Future[None]]] = deque()

    def weight(self, size: int) -> int:
        return min(max(size, self.floor), max(self.budget // 4, 1))

    @property
    def waiting(self) -> int:
        return len(self._waiters)

    @contextlib.asynccontextmanager
    async def hold(self, size: int) -> AsyncIterator[None]:
        """Wait until a call carrying ``size`` bytes of conversation fits, then run it."""
        weight = self.weight(size)
        await self._acquire(weight)
        try:
            yield
        finally:
            self._release(weight)

    async def _acquire(self, weight: int) -> None:
        # First come, first served: a call that fits does not pass one that waits.
        if not self._waiters and self.used + weight <= self.budget:
            self.used += weight
            return
        granted = asyncio.get_running_loop().create_future()
        entry = (weight, granted)
        self._waiters.append(entry)
        try:
            await granted
        except asyncio.CancelledError:
            if granted.done() and not granted.cancelled():
                self._release(weight)  # admitted and cancelled in the same moment
            else:
                with contextlib.suppress(ValueError):  # _wake may have dropped it already
                    self._waiters.remove(entry)
                self._wake()  # the calls behind it may fit now
            raise

    def _release(self, weight: int) -> None:
        self.used -= weight
        self._wake()

    def _wake(self) -> None:
        while self._waiters:
            weight, granted = self._waiters[0]
            if granted.done():  # cancelled: its own handler takes it out
                self._waiters.popleft()
                continue
            if self.used + weight > self.budget:
                return
            self._waiters.popleft()
            self.used += weight
            granted.set_result(None)
