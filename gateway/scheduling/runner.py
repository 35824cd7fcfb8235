"""Runs one slot of a scheduled job: its kind's handler, never a second message after a crash."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping

from gateway.logcontext import turn_scope
from gateway.scheduling.host import JobHost
from gateway.scheduling.jobs import Job, run_origin

log = logging.getLogger(__name__)

Handler = Callable[[Job, str], Awaitable[None]]


class JobRunner:
    """``handlers`` by job id (the daily summary, the heartbeat); every other job is one made
    in chat and goes to ``default`` (a reminder)."""

    def __init__(self, host: JobHost, handlers: Mapping[str, Handler], default: Handler) -> None:
        self.host = host
        self.handlers = handlers
        self.default = default

    async def __call__(self, job: Job, slot: str) -> None:
        origin = run_origin(job, slot)
        if await self.host.finish_delivery(origin):
            # The run was claimed again after a crash, and had already written its message.
            log.info("job %s: run %s already produced its message", job.id, slot)
            return
        with turn_scope(f"cron:{job.id}"):
            await self.handlers.get(job.id, self.default)(job, slot)
