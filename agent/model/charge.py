"""What a model call is for and whose it is, so the ledger and the caps can count it."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from gateway.contract.events import SessionKey, audience_of


class Purpose(StrEnum):
    """Why a paid call was made. The silent ones run on the background model when one is set."""

    CHAT = "chat"  # a turn someone is waiting for
    FLUSH = "flush"  # the silent turn that saves memory before compaction
    COMPACTION = "compaction"  # the summary that replaces older messages
    NEW_SUMMARY = "new_summary"  # the summary of a session ended with /new
    DIGEST = "digest"  # the daily summary
    HEARTBEAT = "heartbeat"
    REMINDER = "reminder"  # a reminder or recurring job made in chat
    CONSOLIDATION = "consolidation"  # tidying the long-term memory
    TRANSCRIPTION = "transcription"
    EMBEDDING = "embedding"
    WEB_SEARCH = "web_search"

    @property
    def background(self) -> bool:
        """Work nobody reads as it is written: a cheaper model does it as well."""
        return self in BACKGROUND

    def caches(self, offers_tools: bool) -> bool:
        """Whether a call marks its prompt for caching. Writing the cache costs a quarter more
        than plain input and pays only when a later call reads it within minutes: a chat's
        next message does, and so does the next call of a turn that may use tools. Silent
        work offered no tools (a summary) is one call whose prompt is never sent again, and
        so, nearly always, is consolidation: its search is offered every night and needed on
        few, so a write each night would cost more than the rare second call saves."""
        return not self.background or (offers_tools and self is not Purpose.CONSOLIDATION)


BACKGROUND = frozenset(
    {
        Purpose.FLUSH,
        Purpose.COMPACTION,
        Purpose.NEW_SUMMARY,
        Purpose.DIGEST,
        Purpose.HEARTBEAT,
        Purpose.CONSOLIDATION,
    }
)

OWNER = "owner"  # the audience of the owner's own chats and jobs, in the ledger


@dataclass(frozen=True, slots=True)
class Charge:
    """Who pays for a call: its purpose and the session it was made for (None: no session,
    such as an embedding of memory files)."""

    purpose: Purpose
    key: SessionKey | None = None

    @property
    def audience(self) -> str:
        if self.key is None:
            return OWNER
        return audience_of(self.key).chat or OWNER

    @property
    def job(self) -> str | None:
        """The scheduled job's id, for a call made in a job's session."""
        if self.key is None or not self.key.job:
            return None
        return self.key.id.partition("@")[0]

    @property
    def owner_private(self) -> bool:
        """A call for the owner's own chat, which a spent budget answers in words."""
        return self.key is not None and self.key.private and not self.key.job
