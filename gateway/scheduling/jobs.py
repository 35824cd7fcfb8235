"""A scheduled job, its kinds, the statuses of its runs, and when it fires next."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any, Protocol
from zoneinfo import ZoneInfo

# The jobs the configuration makes (schedule: in config.yaml); the others are made in chat.
DAILY_SUMMARY = "daily-summary"
HEARTBEAT = "heartbeat"
BACKUP = "backup"
CONSOLIDATION = "memory-consolidation"
CONFIGURED = frozenset({DAILY_SUMMARY, HEARTBEAT, BACKUP, CONSOLIDATION})


class JobKind(StrEnum):
    CRON = "cron"  # spec: a 5-field cron expression
    INTERVAL = "interval"  # spec: seconds between runs, from ``created``
    ONCE = "once"  # spec: an ISO date and time


class RunStatus(StrEnum):
    """A run of one slot, as the ledger records it."""

    CLAIMED = "claimed"  # started, delivery not yet confirmed
    SENT = "sent"
    FAILED = "failed"
    SKIPPED = "skipped"  # nothing to do (no activity, outside active hours, ...)
    MISSED = "missed"  # too late to run when the scheduler got to it
    CANCELLED = "cancelled"

    @property
    def final(self) -> bool:
        """Settled for good: the slot never runs again."""
        return self in (RunStatus.SENT, RunStatus.SKIPPED, RunStatus.MISSED, RunStatus.CANCELLED)


class Skip(Exception):
    """Raised by a job when a slot has nothing to do; recorded as skipped, not retried."""


class Trigger(Protocol):
    """What Corvid uses of an APScheduler trigger."""

    def get_next_fire_time(
        self, previous_fire_time: datetime | None, now: datetime
    ) -> datetime | None: ...


@dataclass(frozen=True)
class Job:
    id: str
    kind: JobKind
    spec: str
    timezone: str
    target: str  # session key the result goes to
    created: datetime
    grace: timedelta = timedelta(hours=12)
    instruction: str = ""  # for jobs made in chat: what to do when it fires

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "spec": self.spec,
            "timezone": self.timezone,
            "target": self.target,
            "created": self.created.isoformat(),
            "grace_seconds": self.grace.total_seconds(),
            "instruction": self.instruction,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Job:
        return cls(
            id=d["id"],
            kind=d["kind"],  # an unknown kind fails when the job is scheduled, named
            spec=d["spec"],
            timezone=d["timezone"],
            target=d["target"],
            created=datetime.fromisoformat(d["created"]),
            grace=timedelta(seconds=float(d.get("grace_seconds", 3600))),
            instruction=d.get("instruction", ""),
        )

    def trigger(self) -> Trigger:
        from apscheduler.triggers.cron import CronTrigger
        from apscheduler.triggers.date import DateTrigger
        from apscheduler.triggers.interval import IntervalTrigger

        tz = ZoneInfo(self.timezone)
        trigger: Trigger
        if self.kind == JobKind.CRON:
            trigger = CronTrigger.from_crontab(self.spec, timezone=tz)
        elif self.kind == JobKind.INTERVAL:
            trigger = IntervalTrigger(
                seconds=float(self.spec), start_date=self.created, timezone=tz
            )
        elif self.kind == JobKind.ONCE:
            trigger = DateTrigger(run_date=datetime.fromisoformat(self.spec), timezone=tz)
        else:  # a hand-edited jobs.json
            raise ValueError(f"unknown job kind {self.kind!r}")
        return trigger

    def slot(self, fire: datetime) -> str:
        return fire.astimezone(ZoneInfo(self.timezone)).strftime("%Y-%m-%dT%H:%M")

    def describe(self) -> str:
        if self.kind == JobKind.ONCE:
            return f"once at {self.spec} ({self.timezone})"
        if self.kind == JobKind.INTERVAL:
            minutes = float(self.spec) / 60
            return "every minute" if minutes == 1 else f"every {minutes:g} minutes"
        return f"cron '{self.spec}' ({self.timezone})"


def slot_time(slot: str, tz: ZoneInfo) -> datetime:
    """The local time a slot names. A run started by hand (``manual 2026-11-22T10:15:03``, from
    ``corvid jobs run``) names the moment it was started."""
    return datetime.fromisoformat(slot.removeprefix("manual ")).replace(tzinfo=tz)


def run_origin(job: Job, slot: str) -> str:
    """The name a run's message is kept under in the outbox, so that a run claimed again after
    a crash finds the message it wrote instead of writing another."""
    return f"job:{job.id}:{slot}"


def next_fire(trigger: Trigger, after: datetime | None, now: datetime) -> datetime | None:
    """The first fire time after ``after`` (or from ``now`` when there is none).

    Asked as "first fire time from this UTC instant on": APScheduler 3.11 loses the fold of an
    ambiguous local time (02:30 on a fall-back night) when stepping from a previous fire time,
    and then returns the same time again."""
    # Everything in UTC: aware datetimes that share a tzinfo compare by wall time, fold ignored,
    # so the two 02:30s of a fall-back night would compare equal.
    if after is None:
        fire = trigger.get_next_fire_time(None, now)
        return fire.astimezone(UTC) if fire is not None else None
    after = after.astimezone(UTC)
    fire = trigger.get_next_fire_time(None, after + timedelta(seconds=1))
    if fire is None or fire.astimezone(UTC) <= after:
        return None
    return fire.astimezone(UTC)
