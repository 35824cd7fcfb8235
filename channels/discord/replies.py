"""Replies on Discord, split under its length limit and sent with mentions disabled."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from channels.discord import buttons
from channels.markdown import split_markdown
from gateway.contract.events import OutboundMessage, SessionKey, blank

log = logging.getLogger(__name__)

TEXT_LIMIT = 2000
LONG = 20_000  # characters: replies longer than this are split off the event loop
UNSENDABLE = "(Discord refused part of this reply, so it is left out here.)"


async def send(
    msg: OutboundMessage,
    interaction: Any | None,
    resolve: Callable[[SessionKey], Awaitable[Any]],
) -> Any:
    """Send ``msg``: as follow-ups to the slash command it answers (``interaction``), else in
    its channel (``resolve``), replying to the message it answers. Returns the last message
    sent in the channel (the one with the buttons), None for follow-ups only."""
    import discord

    # A very long reply takes a while to parse: not on the loop every chat shares.
    if len(msg.text) > LONG:
        split = await asyncio.to_thread(split_markdown, msg.text, TEXT_LIMIT)
    else:
        split = split_markdown(msg.text, TEXT_LIMIT)
    pieces = [p for p in split if not blank(p)] or ["…"]
    total = len(pieces)
    none = discord.AllowedMentions.none()
    if interaction is not None:
        try:
            for piece in pieces:
                await interaction.followup.send(piece, allowed_mentions=none, suppress_embeds=True)
                pieces = pieces[1:]
            return None
        except discord.NotFound:
            # The interaction expired (15 minutes) while the command waited its turn:
            # post the rest in the channel instead.
            log.info("%s: interaction expired; answering in the channel", msg.key)
    channel = await resolve(msg.key)
    ref = None
    if msg.reply_to and msg.reply_to.isdigit():
        ref = discord.MessageReference(
            message_id=int(msg.reply_to), channel_id=channel.id, fail_if_not_exists=False
        )
    first = total - len(pieces)  # pieces already sent as interaction follow-ups
    last = None
    for number, piece in enumerate(pieces, first):
        # Discord returns the existing message for a nonce it has seen (enforce_nonce); stable
        # across restarts, so a send cut off by a crash is repeated without posting twice.
        nonce = f"{msg.ident}.{number}" if msg.ident else None
        # Discord's servers would fetch an address in the text to embed a preview: a way out
        # for anything a model was told to put in a link.
        extra: dict[str, Any] = {"suppress_embeds": True}
        if nonce is not None:
            extra["nonce"] = nonce
        if number == total - 1 and msg.buttons:
            extra["view"] = buttons.view(msg.buttons)  # under the last piece
        try:
            last = await channel.send(piece, reference=ref, allowed_mentions=none, **extra)
        except discord.HTTPException as exc:
            if exc.status != 400:
                raise
            log.warning("%s: Discord refused a piece (%s); sending a notice instead", msg.key, exc)
            last = await channel.send(UNSENDABLE, reference=ref, allowed_mentions=none, **extra)
        ref = None  # only the first piece points at the message it answers
    return last
