"""How a Discord message is read: its chat, whether it is addressed to the bot, its ``Arrival``."""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING, Any

from channels.access import Arrival
from channels.discord.files import fetch
from channels.inbox import Intake
from channels.voice import Hearing
from gateway.contract.events import SessionKey, discord_channel, discord_dm, discord_thread

if TYPE_CHECKING:
    import discord

log = logging.getLogger(__name__)


def place(channel: Any, user: Any) -> tuple[SessionKey, tuple[str, ...]]:
    """The session of a message in ``channel`` from ``user``, and the ids an allowlisted group
    may be named by (the channel, a thread's parent, the guild); LookupError when a guild
    channel is not cached, since it must never be taken for a private chat."""
    import discord

    guild = getattr(channel, "guild", None)
    if guild is None:
        if not isinstance(channel, discord.DMChannel):
            # A guild channel that is not cached: never guess it is a private chat.
            raise LookupError(f"cannot place channel {getattr(channel, 'id', '?')}")
        return discord_dm(user.id), ()
    if isinstance(channel, discord.Thread):
        ids = (str(channel.id), str(channel.parent_id), str(guild.id))
        return discord_thread(channel.id), ids
    return discord_channel(channel.id), (str(channel.id), str(guild.id))


def arrival(
    message: discord.Message, me: discord.ClientUser, intake: Intake, hearing: Hearing | None
) -> Arrival | None:
    """What ``message`` brings to the access policy, or None for what is not a message (a
    join, a pin) or comes from a channel that cannot be placed."""
    import discord

    if message.type not in (discord.MessageType.default, discord.MessageType.reply):
        return None  # joins, pins, thread starts...
    try:
        key, group_ids = place(message.channel, message.author)
    except LookupError as exc:
        log.warning("discord: ignored a message: %s", exc)
        return None
    text = re.sub(rf"<@!?{me.id}>", f"@{me.name}", message.content)
    unsupported = ""
    voice = bool(message.flags.voice)
    if voice and hearing is None:
        unsupported = "voice messages"
    elif message.stickers and not text.strip() and not message.attachments:
        unsupported = "stickers"
    elif not text.strip() and not message.attachments:
        unsupported = "messages like that (forwards, polls and embeds)"
    files = [a for a in message.attachments if hearing is not None or not voice]
    return Arrival(
        key=key,
        sender_id=str(message.author.id),
        sender_name=message.author.display_name,
        text=text,
        message_id=str(message.id),
        addressed=addressed(message, me),
        group_ids=group_ids,
        unsupported=unsupported,
        fetch=(lambda k: fetch(files, k, intake, hearing, voice)) if files else None,
        chat_title=title_of(message.channel),
    )


def title_of(channel: Any) -> str:
    """A server channel or thread as Discord shows it: ``#name (Server)``; "" in DMs."""
    guild = getattr(channel, "guild", None)
    name = getattr(channel, "name", None)
    if guild is None or not name:
        return ""
    return f"#{name} ({guild.name})"


def addressed(message: discord.Message, me: discord.ClientUser) -> bool:
    """Whether a message asks the bot: it mentions the bot or its own role, or replies to one
    of its messages."""
    import discord

    if any(u.id == me.id for u in message.mentions):
        return True
    # The bot's own (managed) role, not any role it happens to hold: @Moderators is not
    # a question for the bot.
    own_role = message.guild.self_role if message.guild is not None else None
    if own_role is not None and any(r.id == own_role.id for r in message.role_mentions):
        return True
    ref = message.reference
    resolved = ref.resolved if ref is not None else None
    return isinstance(resolved, discord.Message) and resolved.author.id == me.id
