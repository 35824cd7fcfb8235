"""The daily summary: an isolated turn that reads the day's log and conversations and writes a
digest for the owner, sent once per day and kept in that day's log.

The turn runs in a session of its own (``cron:<scope>:daily-summary``), never in the chat it is
delivered to, so its prompt and output do not enter that chat's history. Its privacy follows the
target: a digest for a private chat may read every conversation; one for a shared chat reads
only shared ones.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from agent.memory import Memory
from gateway.errors import PathRefused
from gateway.events import OutboundMessage, SessionKey, job_key
from gateway.scheduling.host import JobHost
from gateway.scheduling.jobs import Job, Skip, run_origin

log = logging.getLogger(__name__)

NO_REPLY = "NO_REPLY"
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
    host: JobHost
    memory: Memory | None
    sessions: Path  # the transcripts folder
    skip_inactive: bool = True

    async def __call__(self, job: Job, slot: str) -> None:
        target = SessionKey.parse(job.target)
        tz = ZoneInfo(job.timezone)
        day = date.fromisoformat(slot[:10])
        log_rel = f"memory/{day.isoformat()}.md"
        log_text = ""
        if self.memory is not None:
            log_text = self.memory.read_visible(log_rel, target.private)
        convo = conversations(self.sessions, day, tz, include_private=target.private)
        if self.skip_inactive and not log_text.strip() and not convo:
            raise Skip("no activity today")
        prompt = DIGEST_PROMPT.format(
            day=day.strftime("%A %d %B %Y"),
            log_path=log_rel,
            log=log_text.strip() or "(empty)",
            conversations=convo or "(none)",
        )
        text = await self.host.isolated_turn(job_key(job.id, target), prompt)
        if not text or text == NO_REPLY:
            raise Skip("the model had nothing to report")
        await self.host.deliver(OutboundMessage(target, text), run_origin(job, slot))
        if self.memory is not None:
            # Into the log of the day it summarises, even when sent after midnight.
            when = datetime.fromisoformat(slot).replace(tzinfo=tz)
            try:
                self.memory.append(
                    f"Daily summary sent to {target}:\n\n{text}", when, source=job.id
                )
            except PathRefused as exc:  # sent already: a failed run would be sent again
                log.warning("job %s: summary not written to the log: %s", job.id, exc)
