"""What a tool call runs with: the turn's context, what an unwatched turn may do (``Grant``),
and what the session has read from outside the owner's audience (``Exposure``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

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


class Exposure:
    """What a session's context holds from outside the owner's own audience: another chat's
    log or files, a web page, an MCP server's result, a file someone sent. The model may follow
    instructions hidden in any of it, so once a session has read such text (until ``/new``),
    what it writes where the owner's other chats read it is marked with where it came from,
    and it cannot change the files every chat reads.

    ``sources`` is shared with the session's state; ``record`` makes a new one durable."""

    __slots__ = ("_record", "sources")

    def __init__(
        self, sources: list[str] | None = None, record: Callable[[str], None] | None = None
    ) -> None:
        self.sources = sources if sources is not None else []
        self._record = record

    def saw(self, source: str) -> None:
        if source in self.sources:
            return
        self.sources.append(source)
        if self._record is not None:
            self._record(source)

    @property
    def clean(self) -> bool:
        return not self.sources

    def describe(self) -> str:
        """The sources, for a note to the model or a quoted entry's heading."""
        shown = self.sources[:3]
        more = len(self.sources) - len(shown)
        return ", ".join(shown) + (f" and {more} more" if more > 0 else "")


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
