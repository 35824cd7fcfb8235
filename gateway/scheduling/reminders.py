"""Jobs made in chat, reminders and recurring tasks: where they are kept and how one runs."""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from agent.model.charge import Purpose
from agent.tools.context import Grant
from gateway.contract.events import OutboundMessage, SessionKey, blank, job_key, silent
from gateway.infra.atomic import write_atomic
from gateway.scheduling.host import JobHost
from gateway.scheduling.jobs import CONFIGURED, Job, Skip, run_origin, slot_time
from gateway.statefiles import set_aside

REMINDER_PROMPT = """A job you scheduled in this chat is due now ({when}). Its instruction:

{instruction}

Carry it out and write the message to send to the chat now, addressed to the people there. \
Write it directly, with no preamble about being a scheduled job."""


# A one-off job that has run stays listed (``corvid jobs``, the Jobs page) this long.
KEEP_FINISHED = timedelta(days=1)


class JobStore:
    """Jobs made in chat, in ``state/jobs.json``; one-off jobs that ran are kept a day under
    ``finished``, with when they finished, so their outcome can still be seen."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _data(self) -> Any:
        try:
            return json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}

    def load(self) -> list[Job]:
        return [Job.from_dict(d) for d in self._data().get("jobs", [])]

    def _finished(self) -> list[dict[str, Any]]:
        data = self._data()
        kept = data.get("finished", []) if isinstance(data, dict) else []
        return [d for d in kept if isinstance(d, dict)] if isinstance(kept, list) else []

    def finished(self, now: datetime) -> list[tuple[Job, datetime]]:
        """The one-off jobs that finished within ``KEEP_FINISHED`` of ``now``, newest first."""
        out = []
        for d in self._finished():
            with contextlib.suppress(ValueError, KeyError, TypeError):
                when = datetime.fromisoformat(d["finished"])
                if now - when < KEEP_FINISHED:
                    out.append((Job.from_dict(d), when))
        return sorted(out, key=lambda pair: pair[1], reverse=True)

    def _save(self, jobs: list[Job], finished: list[dict[str, Any]] | None = None) -> None:
        if finished is None:
            finished = self._finished()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data = {"jobs": [j.to_dict() for j in jobs], "finished": finished}
        write_atomic(self.path, json.dumps(data, indent=2))

    def add(self, job: Job) -> None:
        self._save([*self.load(), job])

    def remove(self, job_id: str) -> bool:
        jobs = self.load()
        kept = [j for j in jobs if j.id != job_id]
        if len(kept) != len(jobs):
            self._save(kept)
        return len(kept) != len(jobs)

    def repair(self) -> None:
        """At start: a file that cannot be read is moved aside (and logged), so the configured
        jobs still run and new reminders can be made."""
        try:
            self.load()
        except (OSError, ValueError, KeyError, TypeError) as exc:
            if self.path.exists():
                set_aside(
                    self.path,
                    f"{type(exc).__name__}: {exc}",
                    "the reminders made in chat are in the old copy",
                )

    def forget(self, job: Job, when: datetime) -> None:
        """For the scheduler: a job that will never run again (a one-shot that ran or was
        missed) moves to the finished ones; those older than ``KEEP_FINISHED`` go."""
        jobs = self.load()
        if not any(j.id == job.id for j in jobs):
            return  # cancelled meanwhile
        finished = [d for d in self._finished() if _recent(d.get("finished"), when)]
        finished.append({**job.to_dict(), "finished": when.isoformat()})
        self._save([j for j in jobs if j.id != job.id], finished)


def _recent(stamp: object, now: datetime) -> bool:
    try:
        return now - datetime.fromisoformat(str(stamp)) < KEEP_FINISHED
    except (ValueError, TypeError):
        return False


def cancellable(store: JobStore, job_id: str) -> str | None:
    """Remove a job made in chat from ``store``; None when done, else why not (the scheduler,
    if running, must drop it too)."""
    if job_id in CONFIGURED:
        return f"{job_id} is set up in config.yaml (schedule:); turn it off there."
    if not store.remove(job_id):
        return f"no job {job_id!r} (see `corvid jobs`)"
    return None


# A job made in chat may need what its chat's turns have (the web for "send me the weather"),
# but it does not make or cancel jobs: nobody watches it, and it would outlive its maker.
REMINDER_GRANT = Grant(
    "a scheduled job", tools=None, without=frozenset({"schedule", "cancel_schedule"})
)


@dataclass
class Reminder:
    """Runs a job made in chat: an isolated turn with its instruction, posted to its chat."""

    host: JobHost

    async def __call__(self, job: Job, slot: str) -> None:
        target = SessionKey.parse(job.target)
        when = f"{slot_time(slot, ZoneInfo(job.timezone)):%Y-%m-%d %H:%M}"
        prompt = REMINDER_PROMPT.format(when=when, instruction=job.instruction)
        text = await self.host.isolated_turn(
            job_key(job.id, target), prompt, REMINDER_GRANT, Purpose.REMINDER
        )
        if blank(text) or silent(text):
            raise Skip("the model had nothing to send")
        await self.host.deliver(OutboundMessage(target, text), run_origin(job, slot))
