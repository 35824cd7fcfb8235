"""A loop's nudge: one message in the chat it came from when it is due, as a job made in chat."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo

from agent.loops.book import Loop, State
from agent.loops.store import Loops, open_loops
from agent.loops.tools import Follow
from agent.tools.context import TurnContext
from gateway.config.loader import ScheduleConfig
from gateway.contract.errors import ToolError
from gateway.contract.events import OWNER, Audience, OutboundMessage, SessionKey, audience_of
from gateway.scheduling.host import JobHost
from gateway.scheduling.jobs import Job, JobKind, Skip, run_origin
from gateway.scheduling.reminder_tools import REMINDER_GRACE, ReminderTools
from gateway.scheduling.reminders import JobStore
from gateway.scheduling.runner import Handler
from gateway.scheduling.scheduler import Scheduler

log = logging.getLogger(__name__)

PREFIX = "loop-"
OWNERS = "owner"  # no shared chat is named so: theirs are "<channel>-<scope>-<id>"


def nudge_id(audience: Audience, loop_id: int) -> str:
    return f"{PREFIX}{audience.chat or OWNERS}-{loop_id}"


def nudged(job_id: str) -> tuple[Audience, int] | None:
    """The audience and number of the loop a nudge's job is for; None for any other job."""
    if not job_id.startswith(PREFIX):
        return None
    whose, _, number = job_id.removeprefix(PREFIX).rpartition("-")
    if not whose or not number.isdigit():
        return None
    return (OWNER if whose == OWNERS else Audience(whose)), int(number)


def buttons(loop: Loop) -> tuple[tuple[str, str], ...]:
    return (("Done", f"/done {loop.id}"), ("Drop", f"/done {loop.id} drop"))


def nudge(target: SessionKey, loop: Loop) -> OutboundMessage:
    """The message: the loop, and how to close it (buttons only in the owner's private chat,
    where a press counts)."""
    text = f"Due now: {loop.what} (loop #{loop.id}" + (
        f", opened {loop.opened})." if loop.opened else ")."
    )
    if target.private:
        return OutboundMessage(target, text, buttons=buttons(loop))
    return OutboundMessage(target, f"{text}\nWhen it is done: /done {loop.id}")


class Nudges(Follow):
    """``Follow`` for the running gateway: a loop opened with a due time gets its nudge
    scheduled, a loop closed loses it.

    A nudge is a one-off job in ``state/jobs.json``, so it has what a reminder has: the same
    caps and refusals (``ReminderTools.may_schedule``), the ledger's exactly-once across
    restarts, a grace of an hour. Its id names the loop (``loop-owner-3``)."""

    def __init__(
        self,
        store: JobStore,
        scheduler: Scheduler,
        clock: Callable[[], datetime],
        rules: ScheduleConfig,
    ) -> None:
        self.store = store
        self.scheduler = scheduler
        self.clock = clock
        self.rules = ReminderTools(store, scheduler, clock, rules)

    def opened(self, ctx: TurnContext, loop: Loop) -> str:
        at = loop.due_at(ctx.tz)
        if at is None or loop.id is None:
            return ""
        try:
            self.rules.may_schedule(ctx)
        except ToolError as exc:
            return f"No nudge will be sent: {exc}"
        job = Job(
            id=nudge_id(ctx.audience, loop.id),
            kind=JobKind.ONCE,
            spec=at.isoformat(),
            timezone=ctx.tz.key,
            target=str(ctx.key),
            created=self.clock(),
            grace=REMINDER_GRACE,
            instruction=f"Nudge about loop #{loop.id}: {loop.what}",
        )
        self.cancel(job.id)  # a number used again after a loop was removed by hand
        self.store.add(job)
        self.scheduler.add(job)
        return f"A nudge will be sent here at {at:%a %Y-%m-%d %H:%M} unless it is closed first."

    def closed(self, audience: Audience, loop: Loop) -> None:
        if loop.id is not None:
            self.cancel(nudge_id(audience, loop.id))

    def cancel(self, job_id: str) -> None:
        self.scheduler.remove(job_id)
        self.store.remove(job_id)

    def plan(self, loops: Loops, tz: ZoneInfo) -> int:
        """At start: a loop whose due time was written or changed by hand gets its nudge (as
        made in its own chat, within the same caps); how many were planned."""
        now = self.clock()
        planned = {job.id: job for job in self.store.load()}
        made = 0
        for audience, book in loops.every():
            if any(lp.id is None and lp.due_at(tz) for lp in open_loops(book)):
                book = loops.change(audience, lambda book: book)  # numbered, to be named
            for loop in open_loops(book):
                at = loop.due_at(tz)
                if at is None or loop.id is None or at <= now:
                    continue
                old = planned.get(nudge_id(audience, loop.id))
                if old is not None and datetime.fromisoformat(old.spec) == at:
                    continue
                try:
                    key = SessionKey.parse(loop.chat)
                except ValueError:
                    continue  # no chat to nudge in (a loop written by hand without one)
                if key.job or audience_of(key) != audience:
                    continue
                ctx = TurnContext(key, loops.workspace, now, tz)
                made += self.opened(ctx, loop).startswith("A nudge")
        if made:
            log.info("planned %d nudge(s) for loops whose due time was set by hand", made)
        return made


@dataclass
class Nudge:
    """Runs a nudge's job: the loop read again, the message sent only if it is still open and
    due then, and only to a chat of the loop's own audience. No model call."""

    host: JobHost
    loops: Loops | None

    async def __call__(self, job: Job, slot: str) -> None:
        found = nudged(job.id)
        if found is None or self.loops is None:
            raise Skip("no loops are kept here")
        audience, number = found
        target = SessionKey.parse(job.target)
        if audience_of(target) != audience:
            raise Skip(f"{job.target} is not a chat of the loop's own")  # a hand-edited job
        loop = self.loops.read(audience).get(number)
        if loop is None or loop.state != State.OPEN:
            raise Skip(f"loop #{number} is closed or gone")
        if not slot.startswith("manual "):
            at = loop.due_at(ZoneInfo(job.timezone))
            if at is None or job.slot(at) != slot:
                raise Skip(f"loop #{number} is no longer due then")
        await self.host.deliver(nudge(target, loop), run_origin(job, slot))


@dataclass
class ChatJobs:
    """Jobs made in chat: a loop's nudge, or a reminder for every other one."""

    reminder: Handler
    nudge: Handler

    async def __call__(self, job: Job, slot: str) -> None:
        handler = self.nudge if nudged(job.id) is not None else self.reminder
        await handler(job, slot)
