"""The message types every part of Corvid speaks: session keys, inbound and outbound messages.

This module is a leaf: it imports nothing from Corvid, so channels can depend on it alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime

# Scopes of a direct chat with the owner. Everything else (groups, guild channels, threads, and
# "guest" direct chats with people the owner paired) is shared, and shared sessions never see
# the owner's long-term memory.
PRIVATE_SCOPES = frozenset({"private", "dm"})
GUEST_SCOPE = "guest"

_PART = re.compile(r"^[A-Za-z0-9_.@-]+$")


@dataclass(frozen=True, slots=True)
class SessionKey:
    """Identifies one conversation: ``channel:scope:id`` plus an optional ``:topic:<id>``.

    Examples: ``telegram:private:42``, ``telegram:group:-100:topic:7``, ``discord:thread:9``,
    ``telegram:guest:77``, ``terminal:private:local``. Whether a session is private follows from
    its scope alone.
    """

    channel: str
    scope: str
    id: str
    topic: str | None = None

    def __post_init__(self) -> None:
        for name in ("channel", "scope", "id"):
            value = getattr(self, name)
            if not value or not _PART.match(value):
                raise ValueError(f"invalid session key part {name}={value!r}")
        if self.topic is not None and not _PART.match(self.topic):
            raise ValueError(f"invalid session key topic {self.topic!r}")

    @property
    def private(self) -> bool:
        return self.scope in PRIVATE_SCOPES

    def __str__(self) -> str:
        base = f"{self.channel}:{self.scope}:{self.id}"
        return base if self.topic is None else f"{base}:topic:{self.topic}"

    @classmethod
    def parse(cls, text: str) -> SessionKey:
        parts = text.split(":")
        if len(parts) == 3:
            return cls(*parts)
        if len(parts) == 5 and parts[3] == "topic":
            return cls(parts[0], parts[1], parts[2], parts[4])
        raise ValueError(f"not a session key: {text!r} (expected channel:scope:id)")


@dataclass(frozen=True, slots=True)
class Attachment:
    """A file that came with a message. ``data`` is set for images passed to the model."""

    kind: str  # "image", "document", ...
    mime_type: str
    name: str = ""
    data: bytes | None = None
    path: str | None = None  # workspace-relative path where a document was saved


@dataclass(frozen=True, slots=True)
class InboundMessage:
    """One message from a person, already accepted by the channel's access policy."""

    key: SessionKey
    text: str
    sender_id: str
    sender_name: str = ""
    message_id: str | None = None
    received_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    attachments: tuple[Attachment, ...] = ()
    # Recent messages in a group that were not addressed to the bot ("Name: text"), oldest
    # first, so it can follow the conversation it is pulled into.
    context: tuple[str, ...] = ()
    # Set by the gateway once the message is in its journal (gateway/journal.py): the message
    # is then owed an answer even if the process dies before the turn runs.
    seq: int | None = None


@dataclass(frozen=True, slots=True)
class OutboundMessage:
    """A reply for a session. ``reply_to`` is the platform id of the message to quote, if any.

    ``ident`` is stable across restarts for one delivery; a platform that deduplicates sends
    (Discord's nonce) uses it so that sending again after a crash cannot post twice.
    """

    key: SessionKey
    text: str
    reply_to: str | None = None
    ident: str | None = None


# The chat commands every channel offers (name, short description), e.g. for a platform's
# command menu. The gateway answers them; see ``gateway/commands.py``.
CHAT_COMMANDS: tuple[tuple[str, str], ...] = (
    ("new", "Start a fresh session"),
    ("reset", "Same as /new"),
    ("status", "Model, session and context use"),
    ("compact", "Summarise the conversation to free context"),
    ("stop", "Cancel the reply in progress"),
    ("help", "List the commands"),
)


_COMMAND = re.compile(r"^/([A-Za-z][A-Za-z0-9_]{0,31})(?:@([A-Za-z0-9_]+))?(?:\s+(.*))?$", re.S)


@dataclass(frozen=True, slots=True)
class Command:
    name: str
    args: str
    target: str = ""  # the bot named in /cmd@bot, if any; commands for other bots are dropped


def parse_command(text: str) -> Command | None:
    """``/name@bot args`` → Command; None when the text is not a command (``/etc/hosts``).

    The one parser for both the access policy and the gateway, so they never disagree about
    whether a message is a command.
    """
    m = _COMMAND.match(text.strip())
    if m is None:
        return None
    return Command(m.group(1).lower(), (m.group(3) or "").strip(), m.group(2) or "")
