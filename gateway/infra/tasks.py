"""Waiting at a stop for a set of tasks that may still grow while it waits."""

from __future__ import annotations

import asyncio
from collections.abc import Collection
from typing import Any


async def settle(
    tasks: Collection[asyncio.Future[Any]], within: float | None, *, cancel: bool = False
) -> bool:
    """Wait until no task in ``tasks`` (a live collection) is running, cancelling each first
    if ``cancel``, those added meanwhile too; at most ``within`` seconds in all (None: no
    limit). True if none is left running.

    A copy of the set taken once would miss a task started during the wait (a message arriving
    while the gateway stops), which would outlive the stop and what it uses; so it looks again.
    It gives the loop a turn whenever ``tasks`` is not empty, even when all of them are done:
    the callbacks that take them out of it run then, and a caller that asks again whether
    anything is left (``App.idle``) sees them gone instead of asking forever."""
    loop = asyncio.get_running_loop()
    until = None if within is None else loop.time() + within
    while True:
        present = list(tasks)
        running = [task for task in present if not task.done()]
        if not running:
            if present:
                await asyncio.sleep(0)
            return True
        left = None if until is None else until - loop.time()
        if left is not None and left <= 0:
            return False
        if cancel:
            for task in running:
                task.cancel()
        await asyncio.wait(running, timeout=left)
