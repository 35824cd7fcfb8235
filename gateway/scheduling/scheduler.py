"""Scheduled jobs that run exactly once per slot, on an injected clock."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import replace
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from gateway.contract.ports import Clock
from gateway.scheduling.jobs import Job, JobKind, RunStatus, Skip, Trigger, next_fire
from gateway.scheduling.ledger import Ledger

log = logging.getLogger(__name__)

# Retries of a failed run, while still inside its grace period.
RETRY_DELAYS = (30.0, 120.0, 600.0, 1800.0)

RunJob = Callable[[Job, str], Awaitable[None]]


class Scheduler:
    """Runs each job's due slots through ``run`` (which must raise unless delivery was
    confirmed), one run at a time per job, with retries inside the grace period.

    APScheduler computes the fire times, but its scheduler is not used: it reads the wall clock
    itself, and re-adding a job at start silently drops a run missed while the bot was down.
    Here the ledger resumes every job from its last settled slot; a slot missed within the
    grace period runs once (the newest only), older ones are recorded as missed.

    Built without ``run`` (``corvid jobs`` and ``corvid doctor`` only ask for next runs); the
    running gateway passes it to ``start``.
    """

    def __init__(
        self, ledger: Ledger, clock: Clock, finished: Callable[[Job], None] | None = None
    ) -> None:
        self.ledger = ledger
        self.clock = clock
        self.finished = finished  # called when a job has no more runs (a one-shot that ran)
        self._run: RunJob | None = None
        self._jobs: dict[str, Job] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}

    @property
    def running(self) -> bool:
        return self._run is not None

    def jobs(self) -> list[Job]:
        return list(self._jobs.values())

    def add(self, job: Job) -> None:
        try:
            job.trigger()  # a hand-edited jobs.json: a bad cron expression or time zone
        except (ValueError, KeyError, TypeError) as exc:
            log.error("job %s cannot be scheduled (%s); it is left out", job.id, exc)
            return
        job = self._anchored(job)
        self._jobs[job.id] = job
        if job.id in self._tasks:
            self._tasks.pop(job.id).cancel()
        if self._run is not None:
            self._tasks[job.id] = asyncio.get_running_loop().create_task(self._drive(job))

    def remove(self, job_id: str) -> None:
        self._jobs.pop(job_id, None)
        task = self._tasks.pop(job_id, None)
        if task is not None:
            task.cancel()

    def start(self, jobs: Iterable[Job], run: RunJob) -> None:
        self._run = run
        for job in jobs:
            self.add(job)
        for job in self._jobs.values():
            if job.id not in self._tasks:
                self._tasks[job.id] = asyncio.get_running_loop().create_task(self._drive(job))

    async def run_now(self, job_id: str) -> tuple[RunStatus | None, str | None]:
        """Run a job once, now, outside its schedule (``corvid jobs run``); one attempt.
        Returns the status recorded in the ledger (None: no such job) and the error, if any."""
        job = self._jobs.get(job_id)
        if job is None or self._run is None:
            return None, f"no job {job_id!r} (see `corvid jobs`)"
        now = self.clock.now()
        slot = "manual " + now.astimezone(ZoneInfo(job.timezone)).strftime("%Y-%m-%dT%H:%M:%S")
        self.ledger.claim(job, slot, now, now)
        try:
            await self._run(job, slot)
        except Skip as exc:
            self.ledger.settle(job, slot, now, RunStatus.SKIPPED, self.clock.now(), str(exc))
            return RunStatus.SKIPPED, str(exc)
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
            self.ledger.settle(job, slot, now, RunStatus.FAILED, self.clock.now(), error)
            log.warning("job %s: the run started by hand failed: %s", job.id, error)
            return RunStatus.FAILED, error
        self.ledger.settle(job, slot, now, RunStatus.SENT, self.clock.now())
        return RunStatus.SENT, None

    async def join(self, job_id: str) -> None:
        """Wait for a job to have no more runs (a one-shot that ran or was missed)."""
        task = self._tasks.get(job_id)
        if task is not None:
            await asyncio.wait([task])

    async def stop(self) -> None:
        self._run = None
        tasks = list(self._tasks.values())
        self._tasks.clear()
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=10)

    def next_run(self, job: Job) -> datetime | None:
        job = self._anchored(job)
        now = self.clock.now()
        fire = next_fire(job.trigger(), self._resume_after(job, now), now)
        while fire is not None and fire < now - job.grace:
            fire = next_fire(job.trigger(), fire, now)
        return fire

    def _anchored(self, job: Job) -> Job:
        """The job as made when it was first planned: a configured job is planned anew at
        every start and reload, and an interval's beats must keep to the grid they began on."""
        return replace(job, created=self.ledger.first_planned(job))

    def _resume_after(self, job: Job, now: datetime) -> datetime:
        """Where a job's slots resume: after its newest recorded run; with none, from when it
        was first planned (so a first slot missed while Corvid was down is still owed). A
        recurring job looks no further back than its grace period (older slots were missed
        anyway, and a heartbeat would record thousands); a one-shot has one slot to settle."""
        last = self.ledger.last_fire(job.id)
        if last is not None:
            return last
        start = self.ledger.first_planned(job)
        if job.kind != JobKind.ONCE:
            start = max(start, now - job.grace)
        return start - timedelta(seconds=1)  # next_fire looks from a second after this

    async def _drive(self, job: Job) -> None:
        after: datetime | None = self._resume_after(job, self.clock.now())
        await self._finish_claimed(job, self.ledger.last_fire(job.id))
        trigger = job.trigger()
        while True:
            now = self.clock.now()
            fire = self._catch_up(job, trigger, after, now)
            if fire is None:  # a one-shot job that has run (or was missed)
                self._jobs.pop(job.id, None)
                self._tasks.pop(job.id, None)
                if self.finished is not None:
                    self.finished(job)
                return
            if fire < now - job.grace:
                if self.ledger.status(job.id, job.slot(fire)) in (None, RunStatus.CLAIMED):
                    self.ledger.settle(job, job.slot(fire), fire, RunStatus.MISSED, now)
                after = fire
                continue
            await self.clock.sleep_until(fire)
            await self._run_slot(job, fire)
            after = fire

    async def _finish_claimed(self, job: Job, after: datetime | None) -> None:
        """A slot claimed but never confirmed: the process stopped between claim and send (or
        during it). Delivery was not confirmed, so it is still owed, once, if still in time."""
        last = self.ledger.history(job.id, scheduled_only=True)
        if not last or last[0]["status"] != RunStatus.CLAIMED or after is None:
            return
        if after >= self.clock.now() - job.grace:
            await self._run_slot(job, after)
        else:
            self.ledger.settle(job, last[0]["slot"], after, RunStatus.MISSED, self.clock.now())

    def _catch_up(
        self, job: Job, trigger: Trigger, after: datetime | None, now: datetime
    ) -> datetime | None:
        """The next slot to act on after ``after``: everything older than the grace period is
        missed; of the rest that is already due, only the newest runs."""
        fire = next_fire(trigger, after, now)
        if fire is None:
            return None
        newer = next_fire(trigger, fire, now)
        while newer is not None and (fire < now - job.grace or newer <= now):
            if self.ledger.status(job.id, job.slot(fire)) is None:
                self.ledger.settle(job, job.slot(fire), fire, RunStatus.MISSED, now)
                log.warning("job %s: missed the run of %s", job.id, job.slot(fire))
            fire, newer = newer, next_fire(trigger, newer, now)
        return fire

    async def _run_slot(self, job: Job, fire: datetime) -> None:
        assert self._run is not None
        slot = job.slot(fire)
        for attempt, delay in enumerate((*RETRY_DELAYS, None)):
            now = self.clock.now()
            if not self.ledger.claim(job, slot, fire, now):
                return  # already done (the other side of a DST fall-back, or a restart)
            try:
                await self._run(job, slot)
            except asyncio.CancelledError:
                raise
            except Skip as exc:
                self.ledger.settle(job, slot, fire, RunStatus.SKIPPED, self.clock.now(), str(exc))
                log.info("job %s: run %s skipped: %s", job.id, slot, exc)
                return
            except Exception as exc:
                error = f"{type(exc).__name__}: {exc}"
                now = self.clock.now()
                last = delay is None or now + timedelta(seconds=delay) > fire + job.grace
                self.ledger.settle(job, slot, fire, RunStatus.FAILED, now, error)
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
                retry_at = now + timedelta(seconds=delay)
            else:
                self.ledger.settle(job, slot, fire, RunStatus.SENT, self.clock.now())
                log.info("job %s: run %s delivered", job.id, slot)
                return
            # Waited out of the handler, so the failure (its traceback's frames) is not kept.
            await self.clock.sleep_until(retry_at)
