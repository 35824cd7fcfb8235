"""Scheduled jobs that run exactly once per slot, with an injected clock.

APScheduler computes the fire times (its cron, interval and date triggers handle time zones
and daylight saving); Corvid decides what runs, from a ledger in ``state/scheduler.sqlite``:
a run is claimed before it starts and marked sent only after the platform confirmed delivery.
APScheduler's own scheduler is not used: it reads the wall clock itself (tests could not move
time), and re-adding a job at start-up with ``replace_existing=True`` silently drops a run that
was missed while the bot was down. Here the ledger is the memory: on start every job resumes
from its last settled slot; a slot missed within the job's grace period runs once (only the
newest, if several were missed), older ones are recorded as missed.

A slot is the scheduled time in the job's time zone, to the minute. When clocks fall back and
02:30 happens twice, both fire times are the same slot, so the day is not doubled; when 02:30
does not exist, APScheduler moves it to 03:30 and the day is not skipped.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Protocol
from zoneinfo import ZoneInfo

log = logging.getLogger(__name__)

# Retries of a failed run, while still inside its grace period.
RETRY_DELAYS = (30.0, 120.0, 600.0, 1800.0)


class Skip(Exception):
    """Raised by a job when a slot has nothing to do; recorded as skipped, not retried."""


class Clock(Protocol):
    def now(self) -> datetime: ...

    async def sleep_until(self, when: datetime) -> None: ...


class SystemClock:
    """The real clock. Sleeps in slices, so a suspended machine or a clock change is noticed."""

    def now(self) -> datetime:
        return datetime.now(UTC)

    async def sleep_until(self, when: datetime) -> None:
        while (left := (when - self.now()).total_seconds()) > 0:  # noqa: ASYNC110
            await asyncio.sleep(min(left, 60.0))


@dataclass(frozen=True)
class Job:
    id: str
    kind: str  # "cron" (5-field expression), "interval" (seconds) or "once" (ISO time)
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
            kind=d["kind"],
            spec=d["spec"],
            timezone=d["timezone"],
            target=d["target"],
            created=datetime.fromisoformat(d["created"]),
            grace=timedelta(seconds=float(d.get("grace_seconds", 3600))),
            instruction=d.get("instruction", ""),
        )

    def trigger(self) -> Any:
        from apscheduler.triggers.cron import CronTrigger
        from apscheduler.triggers.date import DateTrigger
        from apscheduler.triggers.interval import IntervalTrigger

        tz = ZoneInfo(self.timezone)
        if self.kind == "cron":
            return CronTrigger.from_crontab(self.spec, timezone=tz)
        if self.kind == "interval":
            return IntervalTrigger(seconds=float(self.spec), start_date=self.created, timezone=tz)
        if self.kind == "once":
            return DateTrigger(run_date=datetime.fromisoformat(self.spec), timezone=tz)
        raise ValueError(f"unknown job kind {self.kind!r}")

    def slot(self, fire: datetime) -> str:
        return fire.astimezone(ZoneInfo(self.timezone)).strftime("%Y-%m-%dT%H:%M")


def next_fire(trigger: Any, after: datetime | None, now: datetime) -> datetime | None:
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


class Ledger:
    """Runs per job and slot: claimed → sent, or failed / missed. SQLite, so a claim survives
    a crash and two claims of one slot cannot both win."""

    def __init__(self, path: Path, *, read_only: bool = False) -> None:
        if read_only:
            # For looking only (`corvid doctor`): nothing is claimed, and no file is created,
            # since a -wal or -shm made by another user (root) would lock the gateway out. While
            # a gateway has the database open its -shm exists and is shared; without one the
            # WAL has been folded into the file, which can then be read as immutable.
            wal = any(Path(f"{path}{end}").exists() for end in ("-wal", "-shm"))
            uri = f"{path.absolute().as_uri()}?{'mode=ro' if wal else 'immutable=1'}"
            self.db = sqlite3.connect(uri if path.exists() else ":memory:", uri=True)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(path, isolation_level=None)
            self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS runs (job TEXT, slot TEXT, fire TEXT, target TEXT,"
            " status TEXT, attempts INTEGER DEFAULT 0, error TEXT, updated TEXT,"
            " PRIMARY KEY (job, slot))"
        )

    def close(self) -> None:
        self.db.close()

    def status(self, job: str, slot: str) -> str | None:
        row = self.db.execute(
            "SELECT status FROM runs WHERE job = ? AND slot = ?", (job, slot)
        ).fetchone()
        return row[0] if row else None

    def claim(self, job: Job, slot: str, fire: datetime, now: datetime) -> bool:
        """True if this slot should run now: new, or claimed/failed earlier and never sent
        (a crash between claim and send must not lose the run)."""
        with self.db:
            row = self.db.execute(
                "SELECT status FROM runs WHERE job = ? AND slot = ?", (job.id, slot)
            ).fetchone()
            if row is not None and row[0] in ("sent", "skipped", "missed", "cancelled"):
                return False
            self.db.execute(
                "INSERT INTO runs (job, slot, fire, target, status, attempts, updated)"
                " VALUES (?, ?, ?, ?, 'claimed', 1, ?)"
                " ON CONFLICT (job, slot) DO UPDATE SET status = 'claimed',"
                " attempts = attempts + 1, updated = excluded.updated",
                (job.id, slot, _utc(fire), job.target, _utc(now)),
            )
        return True

    def settle(self, job: Job, slot: str, fire: datetime, status: str, now: datetime,
               error: str | None = None) -> None:  # fmt: skip
        self.db.execute(
            "INSERT INTO runs (job, slot, fire, target, status, error, updated)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT (job, slot) DO UPDATE SET status = excluded.status,"
            " error = excluded.error, updated = excluded.updated",
            (job.id, slot, _utc(fire), job.target, status, error, _utc(now)),
        )

    def last_fire(self, job: str) -> datetime | None:
        """The newest slot that is settled or in progress: where the job resumes from."""
        row = self.db.execute(
            "SELECT MAX(fire) FROM runs WHERE job = ? AND slot NOT LIKE 'manual %'", (job,)
        ).fetchone()
        return datetime.fromisoformat(row[0]) if row and row[0] else None

    def history(
        self, job: str, limit: int = 1, scheduled_only: bool = False
    ) -> list[dict[str, Any]]:
        """Newest first; ``scheduled_only`` leaves out runs started by hand."""
        extra = " AND slot NOT LIKE 'manual %'" if scheduled_only else ""
        cur = self.db.execute(
            "SELECT slot, fire, target, status, attempts, error, updated FROM runs"
            f" WHERE job = ?{extra} ORDER BY fire DESC LIMIT ?",
            (job, limit),
        )
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


def _utc(when: datetime) -> str:
    """Stored as UTC ISO text, so that MAX() over the column is the latest instant."""
    return when.astimezone(UTC).isoformat()


RunJob = Callable[[Job, str], Awaitable[None]]


class Scheduler:
    """Runs each job's due slots through ``run`` (which must raise unless delivery was
    confirmed), one job at a time per job, with retries inside the grace period."""

    def __init__(
        self,
        ledger: Ledger,
        clock: Clock,
        run: RunJob,
        finished: Callable[[Job], None] | None = None,
    ) -> None:
        self.ledger = ledger
        self.clock = clock
        self.run = run
        self.finished = finished  # called when a job has no more runs (a one-shot that ran)
        self._jobs: dict[str, Job] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self.running = False

    def jobs(self) -> list[Job]:
        return list(self._jobs.values())

    def add(self, job: Job) -> None:
        self._jobs[job.id] = job
        if job.id in self._tasks:
            self._tasks.pop(job.id).cancel()
        if self.running:
            self._tasks[job.id] = asyncio.get_running_loop().create_task(self._drive(job))

    def remove(self, job_id: str) -> None:
        self._jobs.pop(job_id, None)
        task = self._tasks.pop(job_id, None)
        if task is not None:
            task.cancel()

    def start(self, jobs: Iterable[Job] = ()) -> None:
        self.running = True
        for job in jobs:
            self.add(job)
        for job in self._jobs.values():
            if job.id not in self._tasks:
                self._tasks[job.id] = asyncio.get_running_loop().create_task(self._drive(job))

    async def run_now(self, job_id: str) -> tuple[str, str | None]:
        """Run a job once, now, outside its schedule (``corvid jobs run``); one attempt.
        Returns the status recorded in the ledger and the error, if any."""
        job = self._jobs.get(job_id)
        if job is None:
            return "unknown", f"no job {job_id!r} (see `corvid jobs`)"
        now = self.clock.now()
        slot = "manual " + now.astimezone(ZoneInfo(job.timezone)).strftime("%Y-%m-%dT%H:%M:%S")
        self.ledger.claim(job, slot, now, now)
        try:
            await self.run(job, slot)
        except Skip as exc:
            self.ledger.settle(job, slot, now, "skipped", self.clock.now(), str(exc))
            return "skipped", str(exc)
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
            self.ledger.settle(job, slot, now, "failed", self.clock.now(), error)
            return "failed", error
        self.ledger.settle(job, slot, now, "sent", self.clock.now())
        return "sent", None

    async def join(self, job_id: str) -> None:
        """Wait for a job to have no more runs (a one-shot that ran or was missed)."""
        task = self._tasks.get(job_id)
        if task is not None:
            await asyncio.wait([task])

    async def stop(self) -> None:
        self.running = False
        tasks = list(self._tasks.values())
        self._tasks.clear()
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=10)

    def next_run(self, job: Job) -> datetime | None:
        now = self.clock.now()
        fire = next_fire(job.trigger(), self.ledger.last_fire(job.id), now)
        while fire is not None and fire < now - job.grace:
            fire = next_fire(job.trigger(), fire, now)
        return fire

    async def _drive(self, job: Job) -> None:
        trigger = job.trigger()
        after = self.ledger.last_fire(job.id)
        last = self.ledger.history(job.id, scheduled_only=True)
        if last and last[0]["status"] == "claimed" and after is not None:
            # Claimed but never confirmed: the process stopped between claim and send (or
            # during it). Delivery was not confirmed, so it is still owed, once.
            if after >= self.clock.now() - job.grace:
                await self._run_slot(job, after)
            else:
                self.ledger.settle(job, last[0]["slot"], after, "missed", self.clock.now())
        while True:
            now = self.clock.now()
            fire = next_fire(trigger, after, now)
            if fire is None:  # a one-shot job that has run (or was missed)
                self._jobs.pop(job.id, None)
                self._tasks.pop(job.id, None)
                if self.finished is not None:
                    self.finished(job)
                return
            # Catch up: everything older than the grace period is missed; of the rest that is
            # already due, only the newest runs.
            newer = next_fire(trigger, fire, now)
            while newer is not None and (fire < now - job.grace or newer <= now):
                if self.ledger.status(job.id, job.slot(fire)) is None:
                    self.ledger.settle(job, job.slot(fire), fire, "missed", now)
                    log.warning("job %s: missed the run of %s", job.id, job.slot(fire))
                fire, newer = newer, next_fire(trigger, newer, now)
            if fire < now - job.grace:
                if self.ledger.status(job.id, job.slot(fire)) in (None, "claimed"):
                    self.ledger.settle(job, job.slot(fire), fire, "missed", now)
                after = fire
                continue
            await self.clock.sleep_until(fire)
            await self._run_slot(job, fire)
            after = fire

    async def _run_slot(self, job: Job, fire: datetime) -> None:
        slot = job.slot(fire)
        for attempt, delay in enumerate((*RETRY_DELAYS, None)):
            now = self.clock.now()
            if not self.ledger.claim(job, slot, fire, now):
                return  # already done (the other side of a DST fall-back, or a restart)
            try:
                await self.run(job, slot)
            except asyncio.CancelledError:
                raise
            except Skip as exc:
                self.ledger.settle(job, slot, fire, "skipped", self.clock.now(), str(exc))
                log.info("job %s: run %s skipped: %s", job.id, slot, exc)
                return
            except Exception as exc:
                error = f"{type(exc).__name__}: {exc}"
                now = self.clock.now()
                last = delay is None or now + timedelta(seconds=delay) > fire + job.grace
                self.ledger.settle(job, slot, fire, "failed", now, error)
                log.warning(
                    "job %s: run %s failed (attempt %d)%s: %s",
                    job.id,
                    slot,
                    attempt + 1,
                    "; giving up" if last else f"; retrying in {delay:.0f} s",
                    error,
                )
                if last:
                    return
                assert delay is not None
                await self.clock.sleep_until(now + timedelta(seconds=delay))
                continue
            self.ledger.settle(job, slot, fire, "sent", self.clock.now())
            log.info("job %s: run %s delivered", job.id, slot)
            return
