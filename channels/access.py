"""Who may talk to the bot, and when it answers: the access policy every chat platform shares."""

from __future__ import annotations

import enum
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass

from channels.pairing import PairingError, PairingRequest, PairingStore
from gateway.contract.events import Attachment, SessionKey, guest_of, parse_command, scrub
from gateway.contract.ports import Clock, SystemClock

log = logging.getLogger(__name__)

# What downloading a message's files yields: the attachments, and notes for the model about
# files that could not be taken (too large, download failed).
Fetched = tuple[tuple[Attachment, ...], tuple[str, ...]]

CONTEXT_LINE_CHARS = 500
# Replies to people the bot will not serve are sent at most this often per person and reason.
NOTICE_INTERVAL = 60.0


@dataclass(frozen=True)
class Arrival:
    """A platform message as the policy sees it, before anything is downloaded."""

    key: SessionKey
    sender_id: str
    sender_name: str
    text: str
    message_id: str | None = None
    # Mentions the bot, replies to it, or is a command for it (only matters outside DMs).
    addressed: bool = False
    is_command: bool = False
    # Ids that may be on the group allowlist (a chat id; or a guild, channel and parent id).
    group_ids: tuple[str, ...] = ()
    # Non-empty when the message is of a kind the bot cannot read ("voice messages").
    unsupported: str = ""
    # What the platform calls a shared chat (a group's title, a channel's name); "" in DMs.
    chat_title: str = ""
    # Downloads the message's files; called only once the message is let through, with the
    # key of the session it goes to (which decides where files are kept).
    fetch: Callable[[SessionKey], Awaitable[Fetched]] | None = None

    def __post_init__(self) -> None:
        # Platforms' JSON can carry a lone surrogate, which no file or database takes.
        object.__setattr__(self, "text", scrub(self.text))
        object.__setattr__(self, "sender_name", scrub(self.sender_name))
        object.__setattr__(self, "chat_title", scrub(self.chat_title))


class Action(enum.Enum):
    DELIVER = "deliver"  # to the agent
    REPLY = "reply"  # a notice from the channel itself (pairing code, not allowed, ...)
    CONTEXT = "context"  # kept as group context, not answered
    DROP = "drop"


@dataclass(frozen=True)
class Verdict:
    action: Action
    text: str = ""
    # Deliver under this key instead of the arrival's (a paired guest's direct chat).
    key: SessionKey | None = None


class Access:
    def __init__(
        self,
        channel: str,
        *,
        allow_from: Iterable[str],
        groups: Iterable[str],
        pairing: PairingStore,
        context_messages: int = 20,
        clock: Clock | None = None,
    ) -> None:
        self.channel = channel
        self.pairing = pairing
        self.apply(allow_from, groups, context_messages)
        self.clock = clock or SystemClock()
        self._context: dict[SessionKey, deque[str]] = {}
        self._noticed: dict[tuple[str, str], float] = {}
        # Told of each new pairing request (the gateway tells the owner in their chat).
        self.on_request: Callable[[PairingRequest], None] | None = None

    def apply(
        self, allow_from: Iterable[str], groups: Iterable[str], context_messages: int
    ) -> None:
        """Who may talk to the bot and where, and the group context kept: at start, and again
        when the configuration is read while running."""
        self.allow_from = frozenset(allow_from)
        self.groups = frozenset(groups)
        self.context_messages = context_messages

    def is_owner(self, user_id: str) -> bool:
        return user_id in self.allow_from

    def is_guest(self, user_id: str) -> bool:
        try:
            return self.pairing.is_approved(self.channel, user_id)
        except PairingError as exc:  # nobody is let in on a file that cannot be read
            log.error("pairing: %s", exc)
            return False

    def press(
        self, key: SessionKey, user_id: str, name: str, command: str, press_id: str
    ) -> Arrival | None:
        """A press of a button under one of the bot's messages, as the chat command it
        carries (``key``: the presser's direct chat, None elsewhere). Only the owner's presses
        in their direct chat count; anyone else's is nothing."""
        if not self.is_owner(user_id) or not command.startswith("/") or not key.private:
            return None
        return Arrival(
            key, user_id, name, command, message_id=f"button-{press_id}", is_command=True
        )

    def allowed(self, user_id: str) -> bool:
        return self.is_owner(user_id) or self.is_guest(user_id)

    def decide(self, a: Arrival) -> Verdict:
        if a.key.private:
            return self._direct(a)
        return self._group(a)

    def _direct(self, a: Arrival) -> Verdict:
        owner = self.is_owner(a.sender_id)
        if owner or self.is_guest(a.sender_id):
            if a.unsupported:
                return Verdict(Action.REPLY, _unsupported(a.unsupported))
            if owner:
                return Verdict(Action.DELIVER)
            # People the owner paired get a chat of their own that is not the owner's private
            # session: no MEMORY.md, no private files, like a group.
            return Verdict(Action.DELIVER, key=guest_of(a.key))
        if not self._may_notice("pairing", a.sender_id):
            return Verdict(Action.DROP)
        try:
            req, created = self.pairing.request(self.channel, a.sender_id, a.sender_name)
        except PairingError as exc:
            log.error("pairing: %s", exc)
            req, created = None, False
        if req is not None and created and self.on_request is not None:
            self.on_request(req)
        if req is None:
            return Verdict(
                Action.REPLY,
                "I'm a private assistant and only talk to people my owner has approved. "
                "I can't take new pairing requests right now; please try again later.",
            )
        minutes = max(1, round((req.expires - self.pairing.now()) / 60))
        return Verdict(
            Action.REPLY,
            f"Hi{' ' + a.sender_name if a.sender_name else ''}! I'm a private assistant and "
            "only talk to people my owner has approved.\n\n"
            f"Your pairing code: {req.code}\n\n"
            "If you know my owner, send them this code. They can let you in with "
            f"`corvid pairing approve {req.code}` within {minutes} minutes; then write to me "
            "again.",
        )

    def _group(self, a: Arrival) -> Verdict:
        if not any(g in self.groups for g in a.group_ids):
            if a.addressed and self.allowed(a.sender_id) and self._may_notice("group", a.key.id):
                where = a.group_ids[0] if a.group_ids else a.key.id
                return Verdict(
                    Action.REPLY,
                    "I don't answer in this chat yet. To allow it, add "
                    f"{where} to channels.{self.channel}.groups in config.yaml, then run "
                    "`corvid reload`.",
                )
            return Verdict(Action.DROP)
        if not a.addressed:
            return Verdict(Action.CONTEXT if a.text.strip() else Action.DROP)
        # The gateway decides what is a command from the text alone; so does this check.
        is_command = a.is_command or parse_command(a.text) is not None
        if is_command and not self.allowed(a.sender_id):
            if self._may_notice("command", a.sender_id):
                return Verdict(Action.REPLY, "Only my owner can use commands here.")
            return Verdict(Action.DROP)
        if a.unsupported:
            return Verdict(Action.REPLY, _unsupported(a.unsupported))
        return Verdict(Action.DELIVER)

    # -- group context --------------------------------------------------------------------------

    def remember(self, a: Arrival) -> None:
        if self.context_messages <= 0:
            return
        text = " ".join(a.text.split())
        if len(text) > CONTEXT_LINE_CHARS:
            text = text[: CONTEXT_LINE_CHARS - 1] + "…"
        buf = self._context.get(a.key)
        if buf is None:
            buf = self._context[a.key] = deque(maxlen=self.context_messages)
        buf.append(f"{a.sender_name or a.sender_id}: {text}")

    def take_context(self, key: SessionKey) -> tuple[str, ...]:
        buf = self._context.pop(key, None)
        return tuple(buf) if buf else ()

    # -- rate limit for notices -----------------------------------------------------------------

    def _may_notice(self, reason: str, who: str) -> bool:
        now = self.clock.monotonic()
        if len(self._noticed) > 10_000:
            self._noticed = {k: t for k, t in self._noticed.items() if now - t < NOTICE_INTERVAL}
        last = self._noticed.get((reason, who))
        if last is not None and now - last < NOTICE_INTERVAL:
            return False
        self._noticed[(reason, who)] = now
        return True


def _unsupported(kind: str) -> str:
    return f"I can't read {kind} yet. Please send text, a photo or a file instead."
