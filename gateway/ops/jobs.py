"""``corvid jobs``: the scheduled jobs, and running or cancelling one in the running gateway."""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
from collections.abc import Mapping
from datetime import tzinfo
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gateway.config.loader import Config
from gateway.contract.events import printable
from gateway.infra.times import local_time
from gateway.ops.home import read_config

if TYPE_CHECKING:
    from gateway.scheduling.plan import JobState


def jobs(args: argparse.Namespace, home: Path, environ: Mapping[str, str]) -> int:
    config, _ = read_config(home, environ)
    states = _job_states(config)
    if states is None:
        return 1
    if getattr(args, "json", False):
        print(json.dumps([_job_json(s) for s in states], indent=2, ensure_ascii=False))
        return 0
    from gateway.scheduling.plan import unplanned

    cannot = unplanned(config)
    if not states and not cannot:
        print("No scheduled jobs. (The daily summary is set up under schedule: in config.yaml.)")
    for state in states:
        _print_job(state, config.tz)
    for job_id, why in cannot:
        print(f"{job_id}\n  cannot run: {why}")
    return 0


def _job_states(config: Config) -> list[JobState] | None:
    """Every planned job with its next and last run; None (and why, on stderr) when the
    files they come from cannot be read."""
    from gateway.contract.ports import SystemClock
    from gateway.scheduling.ledger import Ledger
    from gateway.scheduling.plan import finished_states, job_states, planned_jobs
    from gateway.scheduling.reminders import JobStore

    clock = SystemClock()
    store = JobStore(config.layout.jobs)
    try:
        planned = planned_jobs(config, store, clock.now())
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(
            f"corvid: {store.path} cannot be read ({type(exc).__name__}: {exc}); corvid run "
            "moves it aside when it starts, or restore it from a backup",
            file=sys.stderr,
        )
        return None
    if not planned and not store.finished(clock.now()):
        return []
    try:
        ledger = Ledger(config.layout.ledger, read_only=True)
        try:
            finished = finished_states(store, ledger, clock.now())
            return job_states(planned, ledger, clock) + finished
        finally:
            ledger.close()
    except sqlite3.DatabaseError as exc:
        print(
            f"corvid: state/scheduler.sqlite cannot be read ({exc}); corvid run moves it aside "
            "when it starts",
            file=sys.stderr,
        )
        return None


def _job_json(state: JobState) -> dict[str, Any]:
    job, row = state.job, state.last
    return {
        "id": job.id,
        "target": job.target,
        "schedule": job.describe(),
        "instruction": job.instruction,
        "next_run": state.next_run.isoformat() if state.next_run else None,
        "last_run": None
        if row is None
        else {k: row[k] for k in ("slot", "status", "attempts", "error")},
        "problem": state.problem,
        "finished": state.finished.isoformat() if state.finished else None,
    }


def _print_job(state: JobState, tz: tzinfo) -> None:
    job, nxt, row = state.job, state.next_run, state.last
    print(f"{job.id}  → {job.target}")
    print(f"  schedule: {job.describe()}")
    if job.instruction:
        print(f"  does: {printable(job.instruction)}")
    if state.problem:
        print(f"  cannot be scheduled: {state.problem}")
        return
    if state.finished is not None:
        print(f"  finished: {local_time(state.finished, tz)} (no more runs)")
    else:
        print(f"  next run: {local_time(nxt, tz) if nxt else '—'}")
    if row is None:
        print("  last run: never")
        return
    print(
        f"  last run: {row['slot'].replace('T', ' ')}: {row['status']} (attempts {row['attempts']})"
    )
    if row["error"]:
        # A skipped run (a heartbeat with nothing to do) says why; it is no error.
        label = "why" if row["status"] == "skipped" else "last error"
        print(f"  {label}: {printable(str(row['error']))}")


def jobs_run(args: argparse.Namespace, home: Path, environ: Mapping[str, str]) -> int:
    from gateway.services.control import ask_running

    config, _ = read_config(home, environ)

    try:
        request = {"cmd": "run_job", "id": args.job_id}
        # Up to a whole turn, with the model's own retries.
        answer = ask_running(config.layout.control_socket, request, 900)
    except ConnectionError:
        print(
            "corvid: Corvid is not running here; jobs run inside the gateway (`corvid run`).",
            file=sys.stderr,
        )
        return 1
    status, error = answer.get("status"), answer.get("error")
    if status == "skipped":  # nothing to do is no failure: why is said, not as an error
        print(f"{args.job_id}: skipped, {error or 'nothing to do'}")
        return 0
    print(f"{args.job_id}: {status}" + (f" ({error})" if error else ""))
    return 0 if answer.get("ok") else 1


def jobs_cancel(args: argparse.Namespace, home: Path, environ: Mapping[str, str]) -> int:
    """In the running gateway if there is one (it stops scheduling the job at once), else in
    ``state/jobs.json``."""
    from gateway.scheduling.reminders import JobStore, cancellable
    from gateway.services.control import ask_running

    config, _ = read_config(home, environ)
    request = {"cmd": "cancel_job", "id": args.job_id}

    try:
        problem = ask_running(config.layout.control_socket, request, 10).get("error")
    except (ConnectionError, TimeoutError):
        problem = cancellable(JobStore(config.layout.jobs), args.job_id)
    if problem:
        print(f"corvid: {problem}", file=sys.stderr)
        return 1
    print(f"Cancelled {args.job_id}.")
    return 0
