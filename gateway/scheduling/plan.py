"""The one plan of scheduled jobs, shared by ``corvid run``, ``corvid jobs`` and the doctor."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from gateway.config.loader import Config
from gateway.contract.events import WEB_OWNER, SessionKey
from gateway.contract.ports import Clock
from gateway.scheduling.jobs import BACKUP, CONSOLIDATION, DAILY_SUMMARY, HEARTBEAT, Job, JobKind
from gateway.scheduling.ledger import Ledger
from gateway.scheduling.reminders import JobStore
from gateway.scheduling.scheduler import Scheduler

__all__ = [
    "BACKUP",
    "CONFIGURED",
    "CONSOLIDATION",
    "DAILY_SUMMARY",
    "HEARTBEAT",
    "JobState",
    "finished_states",
    "job_states",
    "listed_states",
    "planned_jobs",
    "unplanned",
]

# The jobs config.yaml makes; the others are made in chat.
CONFIGURED = (DAILY_SUMMARY, HEARTBEAT, BACKUP, CONSOLIDATION)


def planned_jobs(config: Config, store: JobStore, now: datetime) -> list[Job]:
    """Every scheduled job, the configured ones first. A configured job is made ``now``: the
    scheduler counts it from when it first planned it (``Ledger.first_planned``), so neither a
    new install nor an edit of ``config.yaml`` (its date says nothing about when Corvid ran)
    moves which slots are owed. Raises what reading ``state/jobs.json`` raises."""
    jobs: list[Job] = []
    ds = config.schedule.daily_summary
    if ds.enabled and ds.target:
        hour, minute = ds.time.split(":")
        jobs.append(
            Job(
                id=DAILY_SUMMARY,
                kind=JobKind.CRON,
                spec=f"{int(minute)} {int(hour)} * * *",
                timezone=ds.timezone or config.timezone,
                target=ds.target,
                created=now,
                grace=timedelta(hours=ds.grace_hours),
            )
        )
    hb = config.schedule.heartbeat
    if hb.enabled and hb.target:
        jobs.append(
            Job(
                id=HEARTBEAT,
                kind=JobKind.INTERVAL,
                spec=str(hb.every_minutes * 60),
                timezone=config.timezone,
                target=hb.target,
                created=now,
                # A heartbeat is only worth it on time: missed beats are not caught up.
                grace=timedelta(minutes=min(hb.every_minutes, 5)),
            )
        )
    if config.backup.schedule:
        jobs.append(backup_job(config, now))
    consolidation = _consolidation(config, now)
    if consolidation is not None:
        jobs.append(consolidation)
    jobs.extend(store.load())
    return jobs


def backup_job(config: Config, now: datetime) -> Job:
    """The scheduled backup; its target names the folder the backups go to."""
    from gateway.backups.names import backup_folder

    return Job(
        id=BACKUP,
        kind=JobKind.CRON,
        spec=config.backup.cron(),
        timezone=config.timezone,
        target=str(backup_folder(config.layout, config.backup.dir)),
        created=now,
        grace=timedelta(hours=12),
    )


def consolidation_target(config: Config) -> str | None:
    """Where memory consolidation sends its proposals: its own target, else the daily
    summary's (when private), else the owner's private chat on the first platform that has one,
    else the control page's chat; None when there is none of these."""
    cs, ds = config.memory.consolidation, config.schedule.daily_summary
    if cs.target:
        return cs.target
    if ds.target and SessionKey.parse(ds.target).private:
        return ds.target
    owners = config.channels.owner_chats()
    if owners:
        return str(next(iter(owners.values())))
    return str(WEB_OWNER) if config.web.enabled else None


def unplanned(config: Config) -> list[tuple[str, str]]:
    """The configured jobs that are on but cannot run, each with why and what to do."""
    if config.memory.consolidation.enabled and consolidation_target(config) is None:
        return [
            (
                CONSOLIDATION,
                "on, but has no chat to send its proposals to: set "
                "memory.consolidation.target to your private chat (telegram:private:<your id>), "
                "or turn a chat platform on with your id in its allow_from",
            )
        ]
    return []


def _consolidation(config: Config, now: datetime) -> Job | None:
    """The memory consolidation job: on by default, half an hour after the daily summary,
    proposing to the owner's chat (``consolidation_target``)."""
    cs, ds = config.memory.consolidation, config.schedule.daily_summary
    target = consolidation_target(config)
    if not cs.enabled or not target:
        return None
    if cs.time:
        hour, minute = (int(part) for part in cs.time.split(":"))
        tz = config.timezone
    else:
        hour, minute = (int(part) for part in ds.time.split(":"))
        hour, minute = divmod(hour * 60 + minute + 30, 60)
        hour %= 24
        tz = ds.timezone or config.timezone
    return Job(
        id=CONSOLIDATION,
        kind=JobKind.CRON,
        spec=f"{minute} {hour} * * *",
        timezone=tz,
        target=target,
        created=now,
        grace=timedelta(hours=ds.grace_hours),
    )


def replan(scheduler: Scheduler, planned: list[Job]) -> None:
    """Give the running ``scheduler`` the configured jobs as ``planned`` (``planned_jobs`` of a
    new configuration): a job whose schedule did not change is left alone (a run in progress
    goes on), and reminders made in chat are not touched."""
    wanted = {j.id: j for j in planned if j.id in CONFIGURED}
    running = {j.id: j for j in scheduler.jobs() if j.id in CONFIGURED}
    for job_id in CONFIGURED:
        old, job = running.get(job_id), wanted.get(job_id)
        if old is not None and job is not None and _same(old, job):
            continue
        scheduler.remove(job_id)
        if job is not None:
            scheduler.add(job)


def _same(a: Job, b: Job) -> bool:
    return _when_and_where(a) == _when_and_where(b)


def _when_and_where(job: Job) -> tuple[object, ...]:
    return (job.kind, job.spec, job.timezone, job.target, job.grace)


@dataclass(frozen=True)
class JobState:
    """A planned job as ``corvid jobs`` and ``corvid doctor`` show it."""

    job: Job
    next_run: datetime | None
    last: dict[str, Any] | None  # the newest ledger row, runs started by hand included
    problem: str | None = None  # why it cannot be scheduled (a hand-edited jobs.json)
    finished: datetime | None = None  # a one-off job that ran (or was missed): when it ended


def job_states(jobs: list[Job], ledger: Ledger, clock: Clock) -> list[JobState]:
    """Each job's next run and last run, from the ledger, without claiming anything."""
    scheduler = Scheduler(ledger, clock)
    states: list[JobState] = []
    for job in jobs:
        try:
            nxt = scheduler.next_run(job)
        except (ValueError, KeyError, TypeError) as exc:  # KeyError: an unknown time zone
            states.append(JobState(job, None, None, f"{type(exc).__name__}: {exc}"))
            continue
        last = ledger.history(job.id)
        states.append(JobState(job, nxt, last[0] if last else None))
    return states


def finished_states(store: JobStore, ledger: Ledger, now: datetime) -> list[JobState]:
    """The one-off jobs that finished in the last day, with the outcome of their run."""
    states = []
    for job, when in store.finished(now):
        last = ledger.history(job.id)
        states.append(JobState(job, None, last[0] if last else None, finished=when))
    return states


def listed_states(config: Config, store: JobStore, ledger: Ledger, clock: Clock) -> list[JobState]:
    """What the Jobs page lists: every planned job, then the one-off jobs finished lately."""
    now = clock.now()
    planned = job_states(planned_jobs(config, store, now), ledger, clock)
    return planned + finished_states(store, ledger, now)
