"""``corvid doctor``'s look at the schedule: the jobs, their next runs and last failures."""

from __future__ import annotations

import sqlite3
from typing import Any

from gateway.config.loader import Config
from gateway.contract.events import SessionKey
from gateway.contract.ports import Check, Status, SystemClock
from gateway.infra.times import local_time
from gateway.scheduling.jobs import BACKUP

OK, WARN, FAIL = Status.OK, Status.WARN, Status.FAIL

MAX_JOBS_SHOWN = 10


def check_jobs(config: Config) -> Check:
    """The jobs ``corvid run`` would schedule and their next runs, read from the ledger without
    writing to it (no slot is claimed)."""
    from gateway.scheduling.ledger import Ledger
    from gateway.scheduling.plan import job_states, planned_jobs, unplanned
    from gateway.scheduling.reminders import JobStore

    name = "jobs"
    store = JobStore(config.layout.jobs)
    clock = SystemClock()
    try:
        jobs = planned_jobs(config, store, clock.now())
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return Check(
            FAIL,
            name,
            f"{store.path} cannot be read ({type(exc).__name__}: {exc}); corvid run moves it "
            "aside when it starts (the reminders made in chat are then in the moved copy) and "
            "runs the jobs of config.yaml",
            "restore it from a backup if its reminders matter",
        )
    if not jobs and not unplanned(config):
        return Check(OK, name, "none scheduled (the daily summary and the heartbeat are off)")
    try:
        ledger = Ledger(config.layout.ledger, read_only=True)
        try:
            states = job_states(jobs, ledger, clock)
        finally:
            ledger.close()
    except sqlite3.Error as exc:
        return Check(
            WARN,
            name,
            f"{len(jobs)} scheduled, but state/scheduler.sqlite cannot be read ({exc})",
            "corvid jobs shows the same ledger",
        )
    return _jobs_check(config, states)


def _jobs_check(config: Config, states: list[Any]) -> Check:
    enabled = set(config.chat_channels())  # the control page has a chat of its own
    details: list[str] = []
    problems: list[str] = []
    for state in states:
        job = state.job
        if state.problem is not None:  # a hand-edited jobs.json
            details.append(f"{job.id} → {job.target}: cannot be scheduled: {state.problem}")
            problems.append(f"{job.id} cannot be scheduled")
            continue
        nxt = state.next_run
        when = local_time(nxt, config.tz) if nxt else "—"
        line = f"{job.id} → {job.target}: {job.describe()}; next run {when}"
        if state.last is not None and state.last["status"] == "failed":
            line += f"; last run failed: {state.last['error']}"
            problems.append(f"the last run of {job.id} failed")
        details.append(line)
        if job.id == BACKUP:
            continue  # writes to a folder, not to a chat
        try:
            channel = SessionKey.parse(job.target).channel
        except ValueError:
            problems.append(f"{job.id} has no valid target")
            continue
        if channel not in enabled:
            problems.append(f"{job.id} goes to {channel}, which is not enabled")
    from gateway.scheduling.plan import unplanned

    for job_id, why in unplanned(config):
        details.append(f"{job_id}: cannot run: {why}")
        problems.append(f"{job_id} cannot run")
    if len(details) > MAX_JOBS_SHOWN:
        more = len(details) - MAX_JOBS_SHOWN
        details = [*details[:MAX_JOBS_SHOWN], f"… and {more} more (corvid jobs lists them all)"]
    if problems:
        return Check(
            WARN,
            "jobs",
            f"{len(states)} scheduled; " + "; ".join(problems),
            "see corvid jobs",
            tuple(details),
        )
    return Check(OK, "jobs", f"{len(states)} scheduled", details=tuple(details))
