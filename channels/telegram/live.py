"""Replies on Telegram shown while they are written: a draft in private chats, else edits."""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from channels.live import LiveReply
from channels.telegram.api import call
from channels.telegram.replies import LONG, UNSENDABLE, pieces, refused_text, send_piece, target
from gateway.contract.events import Scope, SessionKey
from gateway.contract.ports import Clock

if TYPE_CHECKING:
    from telegram import Bot

log = logging.getLogger(__name__)

Piece = tuple[str, str | None]  # Markdown, and its Telegram HTML (None: sent as plain text)

INTERRUPTED = "(A restart cut this reply off while it was being written; it follows again.)"


class TelegramLive(LiveReply[Piece]):
    def __init__(
        self,
        bot: Bot,
        key: SessionKey,
        reply_to: str | None,
        placed: Callable[[str], None],
        clock: Clock,
        backoff: float,
    ) -> None:
        super().__init__(key, reply_to, placed)
        self.bot = bot
        self.clock = clock
        self.backoff = backoff
        self.chat_id, self.thread = target(key)
        # Drafts exist in private chats only; a group sees a message edited in place. A draft
        # is a preview Telegram drops by itself, so a crash leaves nothing of it behind.
        self.drafts = key.scope is not Scope.GROUP
        self.every = 0.5 if self.drafts else 1.0
        self._draft_id = secrets.randbelow(2**31 - 1) + 1  # frames of one draft animate

    async def cut(self, text: str) -> list[Piece]:
        return await asyncio.to_thread(pieces, text) if len(text) > LONG else pieces(text)

    async def post(self, piece: Piece, first: bool) -> str:
        quote = None
        if first and self.reply_to and self.key.scope is Scope.GROUP:
            quote = int(self.reply_to)
        md, html = piece
        where = (self.chat_id, self.thread)
        return str(await send_piece(self.bot, where, md, html, quote, self.clock, self.backoff))

    async def edit(self, ref: str, piece: Piece) -> None:
        await edit_piece(self.bot, (self.chat_id, int(ref)), piece, self.clock, self.backoff)

    async def delete(self, ref: str) -> None:
        await take_back(self.bot, self.key, ref, self.clock, self.backoff)

    async def draft(self, piece: Piece) -> None:
        from telegram.constants import ParseMode
        from telegram.error import BadRequest

        md, html = piece
        request = partial(
            self.bot.send_message_draft,
            self.chat_id,
            self._draft_id,
            html if html is not None else md,
            message_thread_id=self.thread,
            parse_mode=ParseMode.HTML if html is not None else None,
        )
        try:
            await call(request, self.clock, self.backoff)
        except BadRequest as exc:
            if html is None or not refused_text(exc):
                raise
            await call(partial(request, text=md, parse_mode=None), self.clock, self.backoff)


async def edit_piece(
    bot: Bot, where: tuple[int, int], piece: Piece, clock: Clock, backoff: float
) -> None:
    """Edit a message to show ``piece``: as HTML, else plain text, else a notice. An edit that
    changes nothing is no error."""
    from telegram import LinkPreviewOptions
    from telegram.constants import ParseMode
    from telegram.error import BadRequest

    chat_id, message_id = where
    md, html = piece
    attempts: list[tuple[str, str | None]] = [(html, ParseMode.HTML)] if html is not None else []
    attempts += [(md, None), (UNSENDABLE, None)]
    for number, (text, mode) in enumerate(attempts, 1):
        request = partial(
            bot.edit_message_text,
            text,
            chat_id=chat_id,
            message_id=message_id,
            parse_mode=mode,
            link_preview_options=LinkPreviewOptions(is_disabled=True),  # as replies.send says
        )
        try:
            await call(request, clock, backoff)
            return
        except BadRequest as exc:
            if "not modified" in str(exc).lower():
                return
            if number == len(attempts) or not refused_text(exc):
                raise
            log.warning("telegram:%s: Telegram refused an edit (%s); trying again", chat_id, exc)


async def take_back(bot: Bot, key: SessionKey, ref: str, clock: Clock, backoff: float) -> None:
    """Delete a message of ours; where Telegram will not (too old, no right), say in it that it
    was cut off."""
    from telegram.error import BadRequest

    chat_id, _ = target(key)
    try:
        await call(partial(bot.delete_message, chat_id, int(ref)), clock, backoff)
    except BadRequest as exc:
        log.info("telegram:%s: could not delete message %s (%s); marking it", chat_id, ref, exc)
        await edit_piece(bot, (chat_id, int(ref)), (INTERRUPTED, None), clock, backoff)
