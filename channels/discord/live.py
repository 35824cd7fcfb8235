"""Replies on Discord shown while they are written: posted, then edited in place."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from channels.discord.replies import LONG, TEXT_LIMIT, UNSENDABLE
from channels.live import LiveReply
from channels.markdown import split_markdown
from gateway.contract.events import SessionKey, blank

log = logging.getLogger(__name__)

Resolve = Callable[[SessionKey], Awaitable[Any]]


class DiscordLive(LiveReply[str]):
    def __init__(
        self, resolve: Resolve, key: SessionKey, reply_to: str | None, placed: Callable[[str], None]
    ) -> None:
        super().__init__(key, reply_to, placed)
        self._resolve = resolve
        self._messages: dict[str, Any] = {}  # ref → the discord.Message posted

    async def cut(self, text: str) -> list[str]:
        if len(text) > LONG:
            split = await asyncio.to_thread(split_markdown, text, TEXT_LIMIT)
        else:
            split = split_markdown(text, TEXT_LIMIT)
        return [p for p in split if not blank(p)]

    async def post(self, piece: str, first: bool) -> str:
        import discord

        channel = await self._resolve(self.key)
        ref = None
        if first and self.reply_to and self.reply_to.isdigit():
            ref = discord.MessageReference(
                message_id=int(self.reply_to), channel_id=channel.id, fail_if_not_exists=False
            )
        none = discord.AllowedMentions.none()
        # No embedded previews: Discord would fetch an address the model put in the text.
        try:
            msg = await channel.send(
                piece, reference=ref, allowed_mentions=none, suppress_embeds=True
            )
        except discord.HTTPException as exc:
            if exc.status != 400:
                raise
            log.warning("%s: Discord refused a piece (%s); posting a notice", self.key, exc)
            msg = await channel.send(
                UNSENDABLE, reference=ref, allowed_mentions=none, suppress_embeds=True
            )
        self._messages[str(msg.id)] = msg
        return str(msg.id)

    async def edit(self, ref: str, piece: str) -> None:
        import discord

        msg = self._messages.get(ref) or (await self._resolve(self.key)).get_partial_message(
            int(ref)
        )
        none = discord.AllowedMentions.none()
        try:
            self._messages[ref] = await msg.edit(
                content=piece, allowed_mentions=none, suppress=True
            )
        except discord.HTTPException as exc:
            if exc.status != 400:
                raise
            log.warning("%s: Discord refused an edit (%s); showing a notice", self.key, exc)
            self._messages[ref] = await msg.edit(
                content=UNSENDABLE, allowed_mentions=none, suppress=True
            )

    async def delete(self, ref: str) -> None:
        await take_back(self._resolve, self.key, ref)
        self._messages.pop(ref, None)


async def take_back(resolve: Resolve, key: SessionKey, ref: str) -> None:
    """Delete a message of ours (one already gone is no error)."""
    import discord

    channel = await resolve(key)
    with contextlib.suppress(discord.NotFound):
        await channel.get_partial_message(int(ref)).delete()


async def replace_text(resolve: Resolve, key: SessionKey, ref: str, text: str) -> None:
    """Replace the text of a message of ours; without a view, Discord drops its buttons."""
    channel = await resolve(key)
    await channel.get_partial_message(int(ref)).edit(content=text, view=None)
