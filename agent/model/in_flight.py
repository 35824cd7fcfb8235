"""How much conversation the model calls in flight may carry at once."""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import AsyncIterator

# What a call counts at least: its request carries the system prompt and the tools besides.
FLOOR = 1024
# Conversation JSON in flight at once: a burst of new chats goes out together, a burst of long
# conversations takes turns.
BUDGET = 256 * 1024


# A call holds its conversation several times over while it runs, so what a burst costs in
# memory follows the size of the conversations in flight, not their number.
class InFlight:
    def __init__(self, budget: int = BUDGET, floor: int = FLOOR) -> None:
        self.budget = budget
        self.floor = floor
        self.used = 0
        self._waiters: deque[tuple[int, asyncio.Future[None]]] = deque()

    # A quarter of the budget at most, so a very long conversation neither waits for every
    # other call to end nor holds the others back.
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
