"""What a tool call runs with: the turn's context and what an unwatched turn may do (``Grant``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path, PurePosixPath
from zoneinfo import ZoneInfo

from agent.tools.exposure import Exposure, Reach
from agent.workspace.audience import (
    WRITTEN_AFTER,
    guest_notes,
    note_written,
    read_from_outside,
    readable,
    untrusted,
    written_after_outside,
)
from agent.workspace.history import History
from agent.workspace.quota import Quota
from gateway.contract.errors import ToolError
from gateway.contract.events import Audience, SessionKey, audience_of


@dataclass(frozen=True, slots=True)
class Grant:
    """The tools a turn nobody watches may use (the memory flush, a scheduled job): each says
    what it needs, and anything else it calls is refused in code. ``tools`` None: every tool
    the session is offered, but those in ``without``."""

    purpose: str  # "the memory flush", as the refusal names it
    tools: frozenset[str] | None = frozenset()
    without: frozenset[str] = frozenset()
    # The model is still shown every tool of its session, and calls beyond the grant are
    # refused (the flush: the tool list opens every request, and another list would miss the
    # prompt cache). Tools the API runs itself are never shown beyond it: no call of theirs
    # can be refused.
    show_all: bool = False

    def permits(self, name: str) -> bool:
        return (self.tools is None or name in self.tools) and name not in self.without


@dataclass(frozen=True, slots=True)
class TurnContext:
    """What a tool may know about the turn that called it."""

    key: SessionKey
    workspace: Path  # resolved, absolute
    now: datetime  # aware, in the owner's time zone
    tz: ZoneInfo
    # A turn nobody watches (the memory flush, a scheduled job): only what it grants may run.
    grant: Grant | None = None
    # What shared chats may store; None: no limit (tests, the owner's own tools).
    quota: Quota | None = None
    # What of outside the owner's audience the session has read (shared with its state).
    exposure: Exposure = field(default_factory=Exposure)
    # The web addresses it may fetch without asking after that (shared with its state).
    reach: Reach = field(default_factory=Reach)
    # Who wrote the messages this turn answers (platform ids; none for a scheduled job).
    senders: frozenset[str] = frozenset()
    # The owner approved this very call (``agent/approvals``): a file every chat reads may be
    # changed although the conversation has read text from outside.
    owner_approved: bool = False
    # Where the changes its writes make are kept; None: not kept (tests of other things).
    history: History | None = None
    # The owner's chats are kept out of guests' notes (memory.owner_reads_guest_notes off).
    guest_notes_hidden: bool = False

    def may_read(self, rel: PurePosixPath) -> bool:
        """May this session read the workspace file at ``rel`` (``audience.readable``, and a
        guest's notes only where the settings allow)?"""
        if not readable(self.audience, rel):
            return False
        return not (self.private and self.guest_notes_hidden and guest_notes(rel))

    def check_room(self, adding: int) -> None:
        """Refuse a write that would take this chat past its share of the disk."""
        if self.quota is not None and adding > 0:
            problem = self.quota.refusal(self.audience, adding)
            if problem is not None:
                raise ToolError(problem)

    @property
    def audience(self) -> Audience:
        return audience_of(self.key)

    @property
    def private(self) -> bool:
        return self.key.private

    def saw(self, source: str) -> None:
        """This turn read ``source``, from outside the owner's audience (see ``Exposure``)."""
        self.exposure.saw(source)

    def saw_file(self, rel: PurePosixPath, text: str) -> None:
        """This turn read ``text`` from the workspace file at ``rel``
        (``audience.read_from_outside``)."""
        source = read_from_outside(rel, text)
        if source is None and (read := written_after_outside(self.workspace).get(str(rel))):
            source = f"{rel}, written after reading {read}"
        if source is not None:
            self.saw(source)

    def wrote(self, rel: PurePosixPath) -> None:
        """This turn writes the owner's file at ``rel``: remembered for good when the
        conversation has read from outside, so that reading the file back counts as reading
        from outside (``saw_file``)."""
        if self.private and not self.exposure.clean:
            note_written(self.workspace, str(rel), self.exposure.describe())

    def marked(self, text: str) -> str:
        """What the model writes where the owner's later conversations read it without asking
        (their memory, their prompts), quoted with its provenance when this conversation has
        read text from outside the owner's audience: an instruction carried in from a group or
        a web page stays marked as such."""
        if not self.private or self.exposure.clean:
            return text
        source = f"written after reading {self.exposure.describe()}"
        return untrusted(source, text.strip(), WRITTEN_AFTER)
