"""The system prompt: identity, session facts and the workspace's bootstrap files, each capped."""

from __future__ import annotations

import logging
from pathlib import Path
from zoneinfo import ZoneInfo

from agent.memory.store import Memory
from agent.settings import AgentSettings
from agent.skills.catalog import SkillCatalog
from agent.workspace.audience import (
    BOOTSTRAP_FILES,
    SHARED_BOOTSTRAP,
    files_folder,
    is_guest,
    log_folder,
    notes_path,
    reopened,
    written_after_outside,
)
from agent.workspace.visible import Unreadable, read_visible
from gateway.contract.events import Scope, SessionKey, audience_of
from gateway.contract.ports import Clock

log = logging.getLogger(__name__)


def cap_text(text: str, limit: int, name: str) -> str:
    """Keep the head and tail of an over-long text and say what was cut and how to read it."""
    if len(text) <= limit:
        return text
    head = int(limit * 0.7)
    tail = int(limit * 0.2)
    cut = len(text) - head - tail
    marker = (
        f"\n\n[... {cut} characters of {name} cut to fit the prompt; "
        f"read the file with read_file to see all of it ...]\n\n"
    )
    return text[:head] + marker + reopened(text[len(text) - tail :])


def _places(key: SessionKey) -> str:
    """Where this session's notes and files go, as the code enforces it."""
    audience = audience_of(key)
    if audience.private:
        return (
            "\n- Private matters go in MEMORY.md or your own log (memory_append); the shared "
            "chats' places (chats/, memory/chats/, inbox/chats/) are theirs, and you do not "
            "write there."
        )
    notes = notes_path(audience)
    about = "this person" if is_guest(audience) else "this chat"
    kept = (
        f" What is worth knowing about {about} for good: memory_update keeps it in {notes}."
        if notes is not None
        else ""
    )
    return (
        f"\n- This chat's notes: memory_append adds to its log in {log_folder(audience)}/.{kept} "
        f"Its files: {files_folder(audience)}/ (the only place you can write files here). "
        "The owner's memory and other chats' notes are not available here."
    )


# Built once when a session starts and stored in its transcript, so every request sends the
# same bytes to the prompt cache; the current time travels in each user message instead.
def build_system_prompt(
    workspace: Path,
    key: SessionKey,
    *,
    timezone: str,
    per_file_chars: int,
    total_chars: int,
    extra_sections: tuple[str, ...] = (),
) -> str:
    if key.private:
        where = "a private chat with your owner"
    elif key.scope is Scope.GUEST:
        where = "a direct chat with someone your owner allowed to talk to you (not your owner)"
    else:
        where = "a shared chat (group or channel)"
    parts = [
        "You are Corvid, a personal assistant. Your workspace files below define who you are "
        "and how you work.",
        f"## This session\n- Session: {key}\n- Setting: {where}\n- Owner's time zone: {timezone}\n"
        "- Each user message starts with a bracketed line giving the local date and time"
        + (" and the sender's name." if not key.private else ".")
        + _places(key),
    ]
    budget = total_chars
    audience = audience_of(key)
    root = workspace.resolve()
    noted = written_after_outside(root)
    # USER.md and TOOLS.md are about the owner: in the owner's own sessions only.
    for name in BOOTSTRAP_FILES if audience.private else SHARED_BOOTSTRAP:
        try:
            # As the file tools resolve it: no link out, nothing this chat may not read, no
            # FIFO; quoted when written after reading from outside.
            text = read_visible(root, name, audience, strict=True, noted=noted).strip()
        except FileNotFoundError:
            continue
        except Unreadable as exc:
            log.warning("%s: %s is left out of the prompt: %s", key, name, exc.why)
            continue
        except (OSError, UnicodeDecodeError) as exc:
            log.warning("%s: cannot read %s: %s", key, name, exc)
            continue
        if not text:
            continue
        if budget <= 200:
            parts.append(f"[{name} and later files left out: bootstrap size limit reached]")
            break
        text = cap_text(text, min(per_file_chars, budget), name)
        budget -= len(text)
        parts.append(f"# {name}\n\n{text}")
    parts.extend(extra_sections)
    return "\n\n".join(parts)


class SystemPrompts:
    """Makes the snapshot a session's prompt starts with: the bootstrap files and, with memory
    on, the memory section (``Memory.snapshot``) as of now."""

    def __init__(
        self,
        workspace: Path,
        settings: AgentSettings,
        tz: ZoneInfo,
        memory: Memory | None,
        clock: Clock,
    ) -> None:
        self.workspace = workspace
        self.settings = settings
        self.tz = tz
        self.memory = memory
        self.clock = clock
        # The skills listed in each new session's prompt (``agent/skills``); None: none.
        self.skills: SkillCatalog | None = None

    def __call__(self, key: SessionKey) -> str:
        extra: tuple[str, ...] = ()
        if self.skills is not None and (listed := self.skills.section(key.private)):
            extra = (listed,)
        if self.memory is not None:
            now = self.clock.now().astimezone(self.tz)
            # Scheduled jobs run unattended and may read what shared chats wrote: they get no
            # MEMORY.md in their prompt (a private one can still look things up).
            long_term = not key.job
            extra += (self.memory.snapshot(audience_of(key), now, long_term=long_term),)
        return build_system_prompt(
            self.workspace,
            key,
            timezone=self.tz.key,
            per_file_chars=self.settings.bootstrap_max_chars,
            total_chars=self.settings.bootstrap_total_max_chars,
            extra_sections=extra,
        )
