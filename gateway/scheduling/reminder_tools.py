"""The tools the model schedules, lists and cancels jobs made in chat with."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Annotated, NotRequired, TypedDict
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from agent.tools.context import TurnContext
from agent.tools.registry import Tool
from gateway.config.loader import ScheduleConfig
from gateway.contract.errors import ToolError
from gateway.contract.events import SessionKey
from gateway.scheduling.jobs import Job, JobKind, next_fire
from gateway.scheduling.reminders import JobStore
from gateway.scheduling.scheduler import Scheduler

REMINDER_GRACE = timedelta(hours=1)


class ScheduleArgs(TypedDict):
    instruction: Annotated[
        str, "What to do or say when it fires, e.g. 'Remind Ada to call the bank'."
    ]
    at: NotRequired[Annotated[str, "Local time: YYYY-MM-DD HH:MM."]]
    every_minutes: NotRequired[float]
    cron: NotRequired[str]
    timezone: NotRequired[Annotated[str, "IANA zone; defaults to the owner's."]]


class NoArgs(TypedDict):
    pass


class CancelArgs(TypedDict):
    id: str


SCHEDULE_HELP = (
    "Schedule something to happen later in this chat: a reminder or a recurring task. "
    "Exactly one of: at (a local date and time, e.g. '2026-11-22 09:00' — work it out from the "
    "current date and time at the top of the message), every_minutes, or cron (5 fields: minute "
    "hour day month weekday). When it fires you get the instruction and your reply is posted "
    "here."
)


def _zone(args: ScheduleArgs, ctx: TurnContext) -> ZoneInfo:
    name = str(args.get("timezone") or ctx.tz.key)
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ToolError(f"Unknown time zone {name!r}; use an IANA name.") from None


def _given(args: ScheduleArgs) -> str:
    """Which one of at, every_minutes and cron the model gave."""
    given = [k for k in ("at", "every_minutes", "cron") if args.get(k) not in (None, "")]
    if len(given) != 1:
        raise ToolError("Give exactly one of: at, every_minutes, cron.")
    return given[0]


def _when(given: str, args: ScheduleArgs, tz: ZoneInfo, now: datetime) -> tuple[JobKind, str]:
    """The job's kind and spec."""
    if given == "every_minutes":
        return JobKind.INTERVAL, str(float(args["every_minutes"]) * 60)
    if given == "cron":
        return JobKind.CRON, str(args["cron"]).strip()
    try:
        when = datetime.fromisoformat(str(args["at"]).strip().replace(" ", "T", 1))
    except ValueError:
        raise ToolError("at must look like 2026-11-22 09:00 (local time).") from None
    when = when.replace(tzinfo=tz) if when.tzinfo is None else when.astimezone(tz)
    if when <= now:
        raise ToolError(
            f"{when:%Y-%m-%d %H:%M} is in the past (now: {now.astimezone(tz):%Y-%m-%d %H:%M})."
        )
    return JobKind.ONCE, when.isoformat()


# Runs of a new recurring job whose gaps are checked against schedule.min_interval_minutes.
GAPS_CHECKED = 1000


def _chat(key: SessionKey) -> SessionKey:
    """The chat a session is in: a forum topic's is its group."""
    return SessionKey(key.channel, key.scope, key.id)


class ReminderTools:
    """The tools, acting on the jobs of the chat they are called from."""

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
        self.rules = rules

    def _mine(self, ctx: TurnContext) -> list[Job]:
        return [j for j in self.scheduler.jobs() if j.target == str(ctx.key)]

    def _made_in(self, chat: SessionKey) -> list[Job]:
        """Jobs made in chat for ``chat``, its forum topics included (one group, one count)."""
        return [j for j in self._made() if _chat(SessionKey.parse(j.target)) == chat]

    def _made(self) -> list[Job]:
        return [j for j in self.scheduler.jobs() if j.instruction]

    def _owners_room(self) -> int:
        """Of ``max_jobs``, how many shared chats can never take: the owner always has room."""
        return min(self.rules.max_jobs_per_chat, self.rules.max_jobs // 2)

    def may_schedule(self, ctx: TurnContext) -> None:
        """Refuse (``ToolError``) when this chat may not make another job now."""
        if ctx.key.job:
            raise ToolError("Scheduled jobs cannot schedule further jobs.")
        if not self.scheduler.running:
            raise ToolError(
                "Scheduling works in the chats Corvid serves as a bot (`corvid run`), not in "
                "this terminal chat."
            )
        if not ctx.private and not self.rules.allow_shared:
            raise ToolError(
                "Only the owner schedules reminders and recurring jobs, from their private chat "
                "(the owner can allow it here with schedule.allow_shared in config.yaml)."
            )
        made = self._made()
        if len(made) >= self.rules.max_jobs:
            raise ToolError(f"There are {len(made)} scheduled jobs already; cancel some first.")
        shared = [j for j in made if not SessionKey.parse(j.target).private]
        if not ctx.private and len(shared) >= self.rules.max_jobs - self._owners_room():
            raise ToolError(
                f"Shared chats have {len(shared)} scheduled jobs already, as many as they may; "
                "cancel some first."
            )
        here = len(self._made_in(_chat(ctx.key)))
        if here >= self.rules.max_jobs_per_chat:
            raise ToolError(f"This chat already has {here} jobs; cancel some first.")

    def _check_often(self, job: Job, now: datetime) -> datetime:
        """The first run; a job that would ever fire more often than allowed is refused. Every
        gap is looked at over two days of runs (a cron's hours and minutes repeat every day it
        runs, and the gap from one day to the next is in there too), at most ``GAPS_CHECKED``."""
        try:
            trigger = job.trigger()
            first = next_fire(trigger, None, now)
        except ValueError as exc:
            raise ToolError(f"Not a valid schedule: {exc}") from None
        if first is None:
            raise ToolError("That schedule never fires.")
        least = timedelta(minutes=self.rules.min_interval_minutes)
        fire, end = first, first + timedelta(days=2)
        for _ in range(GAPS_CHECKED):
            following = next_fire(trigger, fire, now)
            if following is None or following > end:
                break
            if following - fire < least:
                raise ToolError(
                    f"That would run more often than every {self.rules.min_interval_minutes:g} "
                    f"minutes (at {fire:%H:%M} and again at {following:%H:%M}); choose a "
                    "longer interval."
                )
            fire = following
        return first

    def schedule(self, ctx: TurnContext, args: ScheduleArgs) -> str:
        self.may_schedule(ctx)
        instruction = str(args.get("instruction", "")).strip()
        if not instruction:
            raise ToolError("instruction is required: what should happen when it fires.")
        # Its run has the tools of this chat and reads nothing of this conversation: an order
        # carried in from outside stays quoted, and the run counts as having read it.
        instruction = ctx.marked(instruction)
        tz = _zone(args, ctx)
        given = _given(args)
        now = self.clock()
        kind, spec = _when(given, args, tz, now)
        job = Job(
            id="job-" + secrets.token_hex(3),
            kind=kind,
            spec=spec,
            timezone=tz.key,
            target=str(ctx.key),
            created=now,
            grace=REMINDER_GRACE,
            instruction=instruction,
        )
        first = self._check_often(job, now)
        self.store.add(job)
        self.scheduler.add(job)
        return (
            f"Scheduled {job.id}: {job.describe()}; first run "
            f"{first.astimezone(tz):%a %Y-%m-%d %H:%M %Z}. It will post in this chat."
        )

    def list_jobs(self, ctx: TurnContext, args: NoArgs) -> str:
        mine = self._mine(ctx)
        if not mine:
            return "No jobs are scheduled in this chat."
        lines = []
        for j in mine:
            nxt = self.scheduler.next_run(j)
            when = f"{nxt.astimezone(ZoneInfo(j.timezone)):%Y-%m-%d %H:%M}" if nxt else "none"
            lines.append(f"{j.id}: {j.describe()}; next {when}; {j.instruction}")
        return "\n".join(lines)

    def cancel(self, ctx: TurnContext, args: CancelArgs) -> str:
        job_id = str(args.get("id", "")).strip()
        if not any(j.id == job_id for j in self._mine(ctx)):
            raise ToolError(f"No job {job_id!r} in this chat (list_schedules shows them).")
        self.scheduler.remove(job_id)
        self.store.remove(job_id)
        return f"Cancelled {job_id}."


def reminder_tools(
    store: JobStore, scheduler: Scheduler, clock: Callable[[], datetime], rules: ScheduleConfig
) -> tuple[Tool, ...]:
    tools = ReminderTools(store, scheduler, clock, rules)
    return (
        Tool.typed("schedule", SCHEDULE_HELP, ScheduleArgs, tools.schedule),
        Tool.typed(
            "list_schedules",
            "List the jobs scheduled in this chat, with their next run.",
            NoArgs,
            tools.list_jobs,
        ),
        Tool.typed(
            "cancel_schedule",
            "Cancel a job scheduled in this chat, by its id (from list_schedules).",
            CancelArgs,
            tools.cancel,
        ),
    )
