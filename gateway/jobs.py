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
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

from gateway.events import InboundMessage, OutboundMessage, SessionKey
from gateway.scheduler import Job, Skip

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
            path = memory.workspace / log_rel
            log_text = path.read_text(encoding="utf-8") if path.exists() else ""
        convo = conversations(agent.store.dir, day, tz, include_private=target.private)
        if self.skip_inactive and not log_text.strip() and not convo:
            raise Skip("no activity today")
        key = cron_key(job.id, target)
        agent.reset(key)  # each run starts afresh
        prompt = DIGEST_PROMPT.format(
            day=day.strftime("%A %d %B %Y"),
            log_path=log_rel,
            log=log_text.strip() or "(empty)",
            conversations=convo or "(none)",
        )
        outcome = await agent.run_turn(
            key, [InboundMessage(key, prompt, sender_id="scheduler", sender_name="scheduler")]
        )
        text = outcome.text.strip()
        if not text or text == "NO_REPLY":
            raise Skip("the model had nothing to report")
        await gw.deliver(OutboundMessage(target, text))
        if memory is not None:
            # Into the log of the day it summarises, even when sent after midnight.
            when = datetime.fromisoformat(slot).replace(tzinfo=tz)
            memory.append(f"Daily summary sent to {target}:\n\n{text}", when, source=job.id)
