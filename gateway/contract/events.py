"""The message types every part of Corvid speaks: scopes, session keys, messages, chat commands."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum


class Scope(StrEnum):
    """Who is in a conversation. Only a direct chat with the owner is private; shared sessions
    (groups, guild channels, threads, guests' direct chats) never see the owner's private
    memory."""

    PRIVATE = "private"  # the owner's direct chat (Telegram, terminal), or a job for the owner
    DM = "dm"  # the owner's direct chat on Discord
    GUEST = "guest"  # a direct chat with someone the owner paired: shared, like a group
    GROUP = "group"  # a Telegram group or supergroup (a forum topic adds ``:topic:<id>``)
    CHANNEL = "channel"  # a Discord guild channel
    THREAD = "thread"  # a Discord thread, a session apart from its channel
    SHARED = "shared"  # a scheduled job whose target is a shared chat

    @property
    def private(self) -> bool:
        return self in (Scope.PRIVATE, Scope.DM)

    @property
    def direct(self) -> bool:
        """A one-to-one chat on the platform (the owner's or a guest's)."""
        return self in (Scope.PRIVATE, Scope.DM, Scope.GUEST)


_PART = re.compile(r"^[A-Za-z0-9_.@-]+$")


# Every session key (platforms, guests, jobs) is made here and nowhere else, so whether a
# session is private is decided in one place.
@dataclass(frozen=True, slots=True)
class SessionKey:
    """Identifies one conversation: ``channel:scope:id`` plus an optional ``:topic:<id>``.

    Examples: ``telegram:private:42``, ``telegram:group:-100:topic:7``, ``discord:thread:9``,
    ``telegram:guest:77``, ``terminal:private:local``, ``cron:private:daily-summary``.
    Whether a session is private follows from its scope alone. Build keys with the functions
    below rather than by hand.
    """

    channel: str
    scope: Scope
    id: str
    topic: str | None = None

    def __post_init__(self) -> None:
        given: object = self.scope
        if not isinstance(given, Scope):  # a plain string from a test or a caller
            try:
                object.__setattr__(self, "scope", Scope(str(given)))
            except ValueError:
                raise ValueError(f"invalid session key scope {given!r}") from None
        for name in ("channel", "id"):
            value = getattr(self, name)
            if not value or not _PART.match(value):
                raise ValueError(f"invalid session key part {name}={value!r}")
        if self.topic is not None and not _PART.match(self.topic):
            raise ValueError(f"invalid session key topic {self.topic!r}")

    @property
    def private(self) -> bool:
        return self.scope.private

    @property
    def job(self) -> bool:
        """Is this the session of a scheduled job (``job_key``) rather than of a chat?"""
        return self.channel == JOB_CHANNEL

    def __str__(self) -> str:
        base = f"{self.channel}:{self.scope}:{self.id}"
        return base if self.topic is None else f"{base}:topic:{self.topic}"

    @classmethod
    def parse(cls, text: str) -> SessionKey:
        parts = text.split(":")
        if len(parts) == 3 or (len(parts) == 5 and parts[3] == "topic"):
            try:
                scope = Scope(parts[1])
            except ValueError:
                raise ValueError(f"not a session key: {text!r} (unknown scope)") from None
            return cls(parts[0], scope, parts[2], parts[4] if len(parts) == 5 else None)
        raise ValueError(f"not a session key: {text!r} (expected channel:scope:id)")


# -- the one place session keys are made ----------------------------------------------------------


def telegram_private(user_id: int | str) -> SessionKey:
    return SessionKey("telegram", Scope.PRIVATE, str(user_id))


def telegram_group(chat_id: int | str, topic: int | str | None = None) -> SessionKey:
    return SessionKey("telegram", Scope.GROUP, str(chat_id), None if topic is None else str(topic))


def discord_dm(user_id: int | str) -> SessionKey:
    return SessionKey("discord", Scope.DM, str(user_id))


def discord_channel(channel_id: int | str) -> SessionKey:
    return SessionKey("discord", Scope.CHANNEL, str(channel_id))


def discord_thread(thread_id: int | str) -> SessionKey:
    return SessionKey("discord", Scope.THREAD, str(thread_id))


TERMINAL = SessionKey("terminal", Scope.PRIVATE, "local")
# The control page's chat: the owner's private session in the browser.
WEB_OWNER = SessionKey("web", Scope.PRIVATE, "owner")
# The "channel" part of every scheduled job's session key.
JOB_CHANNEL = "cron"


def guest_of(key: SessionKey) -> SessionKey:
    """The session of someone the owner paired, for their direct chat ``key``."""
    return SessionKey(key.channel, Scope.GUEST, key.id, key.topic)


def job_key(job_id: str, target: SessionKey) -> SessionKey:
    """The session a scheduled job's turns run in, with the audience of the chat it reports to:
    ``cron:private:<job>`` for the owner, ``cron:shared:<job>@<chat>`` for a shared chat."""
    if target.private:
        return SessionKey(JOB_CHANNEL, Scope.PRIVATE, job_id)
    return SessionKey(JOB_CHANNEL, Scope.SHARED, f"{job_id}@{audience_of(target).chat}")


# -- audiences ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Audience:
    """Who is in a session, which decides what of the memory it may read and where what it
    writes goes: the owner alone (``chat`` is None), or the people of one shared chat.

    The owner is in every chat, so the owner's private sessions may read everything; a shared
    chat reads only what was written for its own audience."""

    chat: str | None = None  # a shared chat's name, e.g. "telegram-group--1001234567"

    @property
    def private(self) -> bool:
        return self.chat is None

    def __str__(self) -> str:
        return "the owner" if self.chat is None else f"chat {self.chat}"


OWNER = Audience()


def audience_of(key: SessionKey) -> Audience:
    """The audience of a session, from its key alone. A forum topic's audience is its group
    (the same people); a Discord thread is a chat apart (it may have fewer members)."""
    if key.private:
        return OWNER
    if key.job:  # cron:shared:<job>@<chat>
        job, _, chat = key.id.partition("@")
        return Audience(chat or f"cron-{job}")
    return Audience(f"{key.channel}-{key.scope}-{key.id}")


# -- messages -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Attachment:
    """A file that came with a message. ``data`` is set for images passed to the model."""

    kind: str  # "image", "document", ...
    mime_type: str
    name: str = ""
    data: bytes | None = None
    path: str | None = None  # workspace-relative path where a document was saved


# Media types the model reads as images, known by their first bytes (a sender's or a server's
# label may be wrong).
MODEL_IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
_IMAGE_MAGIC = {
    b"\xff\xd8\xff": "image/jpeg",
    b"\x89PNG\r\n\x1a\n": "image/png",
    b"GIF87a": "image/gif",
    b"GIF89a": "image/gif",
}


def sniff_image(data: bytes) -> str | None:
    """The media type of an image the model can read (JPEG, PNG, GIF, WebP), by its bytes."""
    for magic, mime in _IMAGE_MAGIC.items():
        if data.startswith(magic):
            return mime
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


_COMMAND = re.compile(r"^/([A-Za-z][A-Za-z0-9_]{0,31})(?:@([A-Za-z0-9_]+))?(?:\s+(.*))?$", re.S)


@dataclass(frozen=True, slots=True)
class Command:
    name: str
    args: str
    target: str = ""  # the bot named in /cmd@bot, if any; commands for other bots are dropped


def parse_command(text: str) -> Command | None:
    """``/name@bot args`` → Command; None when the text is not a command (``/etc/hosts``).

    Called once, when a channel admits a message (``InboundMessage.command``), and by the access
    policy on the same text, so the two never disagree about what is a command.
    """
    m = _COMMAND.match(text.strip())
    if m is None:
        return None
    return Command(m.group(1).lower(), (m.group(3) or "").strip(), m.group(2) or "")


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
    # Set by the gateway once the message is in its journal: the message is then owed an
    # answer even if the process dies before the turn runs.
    seq: int | None = None
    # The chat command this message is, parsed once when the channel admitted it.
    command: Command | None = None
    # What the platform calls the shared chat it came from (a group's title); "" in DMs.
    chat_title: str = ""


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
    # Buttons under the message, as (label, chat command): pressing one sends that command
    # from the person who pressed it. Platforms without buttons show the commands in the text.
    buttons: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        # No platform accepts a lone surrogate (a model can emit one as a JSON escape).
        object.__setattr__(self, "text", scrub(self.text))


_SURROGATE = re.compile("[\ud800-\udfff]")
# Letters that show as nothing (fillers); other invisible characters are found by category.
_BLANK_LETTERS = frozenset("\u115f\u1160\u3164\uffa0\u2800")


def scrub(text: str) -> str:
    """``text`` with lone surrogates (which no encoder or platform takes) replaced by U+FFFD."""
    return _SURROGATE.sub("\ufffd", text)


def shown(name: str, limit: int = 64) -> str:
    """A display name a stranger chose, safe for a terminal: control characters (escape
    sequences, line breaks, direction marks) spelled out, and not too long."""
    safe = "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in name)
    return safe if len(safe) <= limit else safe[: limit - 1] + "…"


def printable(text: str) -> str:
    """Text from outside (a skill, a page, a model's call) as a terminal or a reviewer may be
    shown it: every control and invisible character (escape sequences, carriage returns,
    direction marks, zero-width and blank letters) spelled out, line breaks and tabs kept. No
    part of it can hide another or change the screen."""
    return "".join(
        c
        if c in "\n\t" or ((c == " " or c.isprintable()) and c not in _BLANK_LETTERS)
        else f"\\x{ord(c):02x}"
        if ord(c) < 0x100
        else f"\\u{ord(c):04x}"
        for c in text
    )


def blank(text: str) -> bool:
    """Would a reader see nothing: only whitespace, zero-width and other format characters?"""
    return all(
        ch.isspace() or ch in _BLANK_LETTERS or unicodedata.category(ch) in ("Cc", "Cf", "Zs")
        for ch in text
    )


# -- silent answers -------------------------------------------------------------------------------

# The whole answer a model gives when nothing is to be said: never sent, never shown.
NO_REPLY = "NO_REPLY"
# The heartbeat's "nothing needs the owner's attention", also never sent.
HEARTBEAT_OK = "HEARTBEAT_OK"
SILENT_ANSWERS = (NO_REPLY, HEARTBEAT_OK)
# How a model dresses a bare word: **NO_REPLY**, `NO_REPLY`, _NO_REPLY_, NO_REPLY.
DRESSING = "*_`~"


def silent(text: str) -> bool:
    """Is this whole answer a silent one, however the model dressed it? The one rule for chats,
    jobs, the flush and the heartbeat."""
    return _bare(text) in SILENT_ANSWERS


def could_be_silent(text: str) -> bool:
    """Could ``text``, as it grows, still become a whole silent answer?"""
    head = text.strip().lstrip(DRESSING)
    return silent(text) or any(word.startswith(head) for word in SILENT_ANSWERS)


def _bare(text: str) -> str:
    return text.lstrip(_SPACE + DRESSING).rstrip(_SPACE + DRESSING + ".!")


_SPACE = " \t\r\n"
