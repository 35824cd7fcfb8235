"""The heartbeat: an isolated turn over ``HEARTBEAT.md``, messaging the owner only if needed."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from datetime import datetime, time
from pathlib import Path
from zoneinfo import ZoneInfo

from agent.model.charge import Purpose
from agent.tools.context import Grant
from agent.workspace.visible import Unreadable, read_visible
from gateway.contract.events import (
    DRESSING,
    HEARTBEAT_OK,
    OWNER,
    OutboundMessage,
    SessionKey,
    blank,
    job_key,
    silent,
)
from gateway.scheduling.host import JobHost
from gateway.scheduling.jobs import Job, Skip, run_origin, slot_time

log = logging.getLogger(__name__)

HEARTBEAT_PROMPT = """Heartbeat check ({when}). Go through your HEARTBEAT.md checklist below and \
act on what is due. If nothing needs the owner's attention, reply exactly HEARTBEAT_OK. \
Otherwise write the message to send them.

{checklist}"""
# Looking things up in memory and noting what was done; nothing that reaches out (the web, MCP
# servers), writes files or schedules: nobody watches it.
HEARTBEAT_GRANT = Grant(
    "the heartbeat",
    frozenset({"memory_search", "memory_get", "read_file", "list_files", "memory_append"}),
)
_EMPTY_LINE = re.compile(r"^\s*(#.*|[-*+]\s*\[\s?\]\s*|[-*+]\s*)?$")


def has_real_content(text: str) -> bool:
    """Anything besides headings, blank lines, HTML comments and empty checkboxes?"""
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    return any(not _EMPTY_LINE.match(line) for line in text.splitlines())


# The token at the start or the end of a longer answer, dressed as ``silent`` allows.
_DRESS = f"[{re.escape(DRESSING)}]*"
_OK_AT_START = re.compile(rf"^\s*{_DRESS}{HEARTBEAT_OK}{_DRESS}")
_OK_AT_END = re.compile(rf"{_DRESS}{HEARTBEAT_OK}{_DRESS}[\s.!]*$")


def strip_heartbeat_ok(text: str) -> str:
    """The message without a HEARTBEAT_OK at its start or end ("" if that was all)."""
    stripped = _OK_AT_END.sub("", _OK_AT_START.sub("", text.strip()))
    return stripped.strip(" \n.,:;!-—") if stripped != text.strip() else stripped


def checklist_of(workspace: Path) -> str:
    """HEARTBEAT.md as the file tools would read it (no link out, no FIFO; quoted when it was
    written after reading from outside); "" when there is none to read."""
    try:
        return read_visible(workspace.resolve(), "HEARTBEAT.md", OWNER)
    except FileNotFoundError:
        return ""
    except (OSError, Unreadable) as exc:
        log.warning("HEARTBEAT.md cannot be read: %s", exc)
        return ""


def in_active_hours(active: str, local: datetime) -> bool:
    """Is ``local`` within ``active`` (HH:MM-HH:MM, past midnight when the end comes first;
    the same start and end: all day)?"""
    start, end = (time.fromisoformat(h.strip().zfill(5)) for h in active.split("-"))
    now = local.time()
    if start == end:
        return True
    return start <= now < end if start < end else (now >= start or now < end)


@dataclass
class Heartbeat:
    host: JobHost
    workspace: Path
    active_hours: str  # HH:MM-HH:MM, local

    async def __call__(self, job: Job, slot: str) -> None:
        tz = ZoneInfo(job.timezone)
        if not in_active_hours(self.active_hours, slot_time(slot, tz)):
            raise Skip("outside active hours")
        checklist = checklist_of(self.workspace)
        if not has_real_content(checklist):
            raise Skip("HEARTBEAT.md has nothing to check")
        target = SessionKey.parse(job.target)
        if self.host.busy(target):
            raise Skip("the owner's chat is mid-turn")
        when = f"{slot_time(slot, tz):%Y-%m-%d %H:%M}"
        prompt = HEARTBEAT_PROMPT.format(when=when, checklist=checklist.strip())
        key = job_key(job.id, target)
        text = strip_heartbeat_ok(
            await self.host.isolated_turn(key, prompt, HEARTBEAT_GRANT, Purpose.HEARTBEAT)
        )
        if blank(text) or silent(text):
            raise Skip("nothing needs the owner")
        await self.host.deliver(OutboundMessage(target, text), run_origin(job, slot))
