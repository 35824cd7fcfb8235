"""What scheduled jobs do: the daily summary (an isolated turn that reads the day's log and
conversations and writes a digest for the owner).

A job's turn runs in a session of its own (``cron:<scope>:<job>``), never in the chat it is
delivered to, so its prompt and output do not enter that chat's history. Its privacy follows the
target: a digest for a private chat may read every conversation; one for a shared chat reads
only shared ones.
"""

from __future__ import annotations

import json
import logging
import os
import re
import secrets
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from agent.tools import Tool, TurnContext
from gateway.errors import PathRefused, ToolError
from gateway.events import InboundMessage, OutboundMessage, SessionKey
from gateway.scheduler import Job, Scheduler, Skip, next_fire

if TYPE_CHECKING:
    from gateway.app import Gateway

log = logging.getLogger(__name__)

CONVERSATION_MAX_CHARS = 40_000
LINE_MAX_CHARS = 600

DIGEST_PROMPT = """It is the end of {day}. Write the owner's daily summary, to be sent to them \
as a message: what was discussed, what was decided, what was promised (by whom), open to-dos, \
and anything scheduled for tomorrow. Short and concrete, a few bullet points per heading; leave \
out headings with nothing under them. Write it directly, with no preamble.

## Today's log ({log_path})

{log}

## Today's conversations

{conversations}"""


def cron_key(job_id: str, target: SessionKey) -> SessionKey:
    return SessionKey("cron", "private" if target.private else "shared", job_id)


async def isolated_turn(gateway: Gateway, job: Job, target: SessionKey, prompt: str) -> str:
    """A fresh turn in the job's own session; returns the reply (stripped)."""
    agent = gateway.agent
    key = cron_key(job.id, target)
    agent.reset(key)  # each run starts afresh
    outcome = await agent.run_turn(
        key, [InboundMessage(key, prompt, sender_id="scheduler", sender_name="scheduler")]
    )
    return outcome.text.strip()


def conversations(sessions: Path, day: date, tz: ZoneInfo, include_private: bool) -> str:
    """The day's user and assistant messages from every chat session, oldest first, capped
    (the newest kept)."""
    lines: list[tuple[str, str]] = []
    for path in sorted(sessions.glob("*.jsonl")):
        key: SessionKey | None = None
        try:
            with path.open(encoding="utf-8") as f:
                for raw in f:
                    try:
                        entry = json.loads(raw)
                    except ValueError:
                        continue
                    if entry.get("t") == "session":
                        key = SessionKey.parse(entry["key"])
                        continue
                    if entry.get("t") != "msg" or key is None or key.channel == "cron":
                        continue
                    if key.private and not include_private:
                        continue
                    when = datetime.fromisoformat(entry["ts"]).astimezone(tz)
                    if when.date() != day:
                        continue
                    text = _text(entry["msg"])
                    if text:
                        who = "user" if entry["msg"]["role"] == "user" else "assistant"
                        lines.append((when.isoformat(), f"[{when:%H:%M} {key} {who}] {text}"))
        except (OSError, ValueError) as exc:
            log.warning("daily summary: skipped %s: %s", path.name, exc)
    lines.sort()
    out: list[str] = []
    total = 0
    for _, line in reversed(lines):
        total += len(line) + 1
        if total > CONVERSATION_MAX_CHARS:
            out.append("[... earlier messages left out ...]")
            break
        out.append(line)
    return "\n".join(reversed(out))


def _text(msg: dict[str, Any]) -> str:
    content = msg.get("content")
    if isinstance(content, str):
        text = content
    else:
        text = " ".join(
            b.get("text", "")
            for b in content or []
            if isinstance(b, dict) and b.get("type") == "text"
        )
    text = " ".join(text.split())
    return text if len(text) <= LINE_MAX_CHARS else text[: LINE_MAX_CHARS - 1] + "…"


@dataclass
class DailySummary:
    gateway: Gateway
    skip_inactive: bool = True

    async def __call__(self, job: Job, slot: str) -> None:
        gw = self.gateway
        agent = gw.agent
        target = SessionKey.parse(job.target)
        tz = ZoneInfo(job.timezone)
        day = date.fromisoformat(slot[:10])
        memory = agent.memory
        log_rel = f"memory/{day.isoformat()}.md"
        log_text = ""
        if memory is not None:
            log_text = memory.read_visible(log_rel, target.private)
        convo = conversations(agent.store.dir, day, tz, include_private=target.private)
        if self.skip_inactive and not log_text.strip() and not convo:
            raise Skip("no activity today")
        prompt = DIGEST_PROMPT.format(
            day=day.strftime("%A %d %B %Y"),
            log_path=log_rel,
            log=log_text.strip() or "(empty)",
            conversations=convo or "(none)",
        )
        text = await isolated_turn(gw, job, target, prompt)
        if not text or text == "NO_REPLY":
            raise Skip("the model had nothing to report")
        await gw.deliver(OutboundMessage(target, text))
        if memory is not None:
            # Into the log of the day it summarises, even when sent after midnight.
            when = datetime.fromisoformat(slot).replace(tzinfo=tz)
            try:
                memory.append(f"Daily summary sent to {target}:\n\n{text}", when, source=job.id)
            except PathRefused as exc:  # sent already: a failed run would be sent again
                log.warning("job %s: summary not written to the log: %s", job.id, exc)


# -- jobs made in chat: reminders and recurring tasks --------------------------------------------

REMINDER_GRACE = timedelta(hours=1)
MAX_JOBS_PER_SESSION = 50

REMINDER_PROMPT = """A job you scheduled in this chat is due now ({when}). Its instruction:

{instruction}

Carry it out and write the message to send to the chat now, addressed to the people there. \
Write it directly, with no preamble about being a scheduled job."""


class JobStore:
    """Jobs made in chat, in ``state/jobs.json`` (written atomically; the file is the truth)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self) -> list[Job]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return []
        return [Job.from_dict(d) for d in data.get("jobs", [])]

    def _save(self, jobs: list[Job]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".jobs.", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump({"jobs": [j.to_dict() for j in jobs]}, f, indent=2)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def add(self, job: Job) -> None:
        self._save([*self.load(), job])

    def remove(self, job_id: str) -> bool:
        jobs = self.load()
        kept = [j for j in jobs if j.id != job_id]
        if len(kept) != len(jobs):
            self._save(kept)
        return len(kept) != len(jobs)


def describe(job: Job) -> str:
    if job.kind == "once":
        return f"once at {job.spec} ({job.timezone})"
    if job.kind == "interval":
        return f"every {float(job.spec) / 60:g} minutes"
    return f"cron '{job.spec}' ({job.timezone})"


def reminder_tools(
    store: JobStore, scheduler: Scheduler, clock: Callable[[], datetime]
) -> tuple[Tool, ...]:
    def schedule(ctx: TurnContext, args: dict[str, Any]) -> str:
        if ctx.key.channel == "cron":
            raise ToolError("Scheduled jobs cannot schedule further jobs.")
        if not scheduler.running:
            raise ToolError(
                "Scheduling works in the chats Corvid serves as a bot (`corvid run`), not in "
                "this terminal chat."
            )
        instruction = str(args.get("instruction", "")).strip()
        if not instruction:
            raise ToolError("instruction is required: what should happen when it fires.")
        tz_name = str(args.get("timezone") or ctx.tz.key)
        try:
            tz = ZoneInfo(tz_name)
        except (ZoneInfoNotFoundError, ValueError):
            raise ToolError(f"Unknown time zone {tz_name!r}; use an IANA name.") from None
        given = [k for k in ("at", "every_minutes", "cron") if args.get(k) not in (None, "")]
        if len(given) != 1:
            raise ToolError("Give exactly one of: at, every_minutes, cron.")
        mine = [j for j in scheduler.jobs() if j.target == str(ctx.key)]
        if len(mine) >= MAX_JOBS_PER_SESSION:
            raise ToolError(f"This chat already has {len(mine)} jobs; cancel some first.")
        now = clock()
        kind = given[0]
        if kind == "at":
            try:
                when = datetime.fromisoformat(str(args["at"]).strip().replace(" ", "T", 1))
            except ValueError:
                raise ToolError("at must look like 2026-11-22 09:00 (local time).") from None
            when = when.replace(tzinfo=tz) if when.tzinfo is None else when.astimezone(tz)
            if when <= now:
                raise ToolError(
                    f"{when:%Y-%m-%d %H:%M} is in the past "
                    f"(now: {now.astimezone(tz):%Y-%m-%d %H:%M})."
                )
            spec, job_kind = when.isoformat(), "once"
        elif kind == "every_minutes":
            minutes = float(args["every_minutes"])
            if minutes < 1:
                raise ToolError("every_minutes must be at least 1.")
            spec, job_kind = str(minutes * 60), "interval"
        else:
            spec, job_kind = str(args["cron"]).strip(), "cron"
        job = Job(
            id="job-" + secrets.token_hex(3),
            kind=job_kind,
            spec=spec,
            timezone=tz.key,
            target=str(ctx.key),
            created=now,
            grace=REMINDER_GRACE,
            instruction=instruction,
        )
        try:
            first = next_fire(job.trigger(), None, now)
        except ValueError as exc:
            raise ToolError(f"Not a valid schedule: {exc}") from None
        if first is None:
            raise ToolError("That schedule never fires.")
        store.add(job)
        scheduler.add(job)
        return (
            f"Scheduled {job.id}: {describe(job)}; first run "
            f"{first.astimezone(tz):%a %Y-%m-%d %H:%M %Z}. It will post in this chat."
        )

    def list_jobs(ctx: TurnContext, args: dict[str, Any]) -> str:
        mine = [j for j in scheduler.jobs() if j.target == str(ctx.key)]
        if not mine:
            return "No jobs are scheduled in this chat."
        lines = []
        for j in mine:
            nxt = scheduler.next_run(j)
            when = f"{nxt.astimezone(ZoneInfo(j.timezone)):%Y-%m-%d %H:%M}" if nxt else "none"
            lines.append(f"{j.id}: {describe(j)}; next {when}; {j.instruction}")
        return "\n".join(lines)

    def cancel(ctx: TurnContext, args: dict[str, Any]) -> str:
        job_id = str(args.get("id", "")).strip()
        job = next(
            (j for j in scheduler.jobs() if j.id == job_id and j.target == str(ctx.key)), None
        )
        if job is None:
            raise ToolError(f"No job {job_id!r} in this chat (list_schedules shows them).")
        scheduler.remove(job_id)
        store.remove(job_id)
        return f"Cancelled {job_id}."

    return (
        Tool(
            "schedule",
            "Schedule something to happen later in this chat: a reminder or a recurring task. "
            "Exactly one of: at (a local date and time, e.g. '2026-11-22 09:00' — work it out "
            "from the current date and time at the top of the message), every_minutes, or cron "
            "(5 fields: minute hour day month weekday). When it fires you get the instruction "
            "and your reply is posted here.",
            {
                "type": "object",
                "properties": {
                    "instruction": {
                        "type": "string",
                        "description": "What to do or say when it fires, e.g. 'Remind Ada to "
                        "call the bank'.",
                    },
                    "at": {"type": "string", "description": "Local time: YYYY-MM-DD HH:MM."},
                    "every_minutes": {"type": "number"},
                    "cron": {"type": "string"},
                    "timezone": {
                        "type": "string",
                        "description": "IANA zone; defaults to the owner's.",
                    },
                },
                "required": ["instruction"],
            },
            schedule,
        ),
        Tool(
            "list_schedules",
            "List the jobs scheduled in this chat, with their next run.",
            {"type": "object", "properties": {}},
            list_jobs,
        ),
        Tool(
            "cancel_schedule",
            "Cancel a job scheduled in this chat, by its id (from list_schedules).",
            {
                "type": "object",
                "properties": {"id": {"type": "string"}},
                "required": ["id"],
            },
            cancel,
        ),
    )


async def run_reminder(gateway: Gateway, job: Job, slot: str) -> None:
    """An isolated turn with the job's instruction; the reply goes to the chat that made it."""
    target = SessionKey.parse(job.target)
    prompt = REMINDER_PROMPT.format(when=slot.replace("T", " "), instruction=job.instruction)
    text = await isolated_turn(gateway, job, target, prompt)
    if not text or text == "NO_REPLY":
        raise Skip("the model had nothing to send")
    await gateway.deliver(OutboundMessage(target, text))


# -- heartbeat ------------------------------------------------------------------------------------

HEARTBEAT_OK = "HEARTBEAT_OK"
HEARTBEAT_PROMPT = """Heartbeat check ({when}). Go through your HEARTBEAT.md checklist below and \
act on what is due. If nothing needs the owner's attention, reply exactly HEARTBEAT_OK. \
Otherwise write the message to send them.

{checklist}"""
_EMPTY_LINE = re.compile(r"^\s*(#.*|[-*+]\s*\[\s?\]\s*|[-*+]\s*)?$")


def has_real_content(text: str) -> bool:
    """Anything besides headings, blank lines, HTML comments and empty checkboxes?"""
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    return any(not _EMPTY_LINE.match(line) for line in text.splitlines())


def strip_heartbeat_ok(text: str) -> str:
    """The message without a HEARTBEAT_OK at its start or end ("" if that was all)."""
    text = text.strip()
    found = False
    if text.startswith(HEARTBEAT_OK):
        text, found = text[len(HEARTBEAT_OK) :], True
    if text.endswith(HEARTBEAT_OK):
        text, found = text[: -len(HEARTBEAT_OK)], True
    return text.strip(" \n.,:;-—") if found else text


def in_active_hours(active: str, local: datetime) -> bool:
    start, end = (time.fromisoformat(h.strip().zfill(5)) for h in active.split("-"))
    now = local.time()
    return start <= now < end if start <= end else (now >= start or now < end)


async def run_heartbeat(gateway: Gateway, job: Job, slot: str, active_hours: str) -> None:
    agent = gateway.agent
    tz = ZoneInfo(job.timezone)
    if not in_active_hours(active_hours, datetime.fromisoformat(slot).replace(tzinfo=tz)):
        raise Skip("outside active hours")
    path = agent.workspace / "HEARTBEAT.md"
    checklist = path.read_text(encoding="utf-8") if path.exists() else ""
    if not has_real_content(checklist):
        raise Skip("HEARTBEAT.md has nothing to check")
    target = SessionKey.parse(job.target)
    if gateway.router.busy(target):
        raise Skip("the owner's chat is mid-turn")
    prompt = HEARTBEAT_PROMPT.format(when=slot.replace("T", " "), checklist=checklist.strip())
    text = strip_heartbeat_ok(await isolated_turn(gateway, job, target, prompt))
    if not text or text == "NO_REPLY":
        raise Skip("nothing needs the owner")
    await gateway.deliver(OutboundMessage(target, text))
