"""Replies on Telegram: the model's Markdown split under Telegram's limit and rendered as
Telegram HTML; if Telegram refuses a piece's HTML, the same piece goes out as plain text. In
groups the first piece quotes the message it answers; in forum topics replies stay in the topic.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from channels.markdown import split_markdown, utf16_len
from channels.telegram.api import call
from channels.telegram.html import to_telegram_html, visible_text
from gateway.events import OutboundMessage, Scope, SessionKey
from gateway.ports import Clock

if TYPE_CHECKING:
    from telegram import Bot

log = logging.getLogger(__name__)

TEXT_LIMIT = 4096
# Pieces are cut a little under the limit: rendering can add a character here and there.
SPLIT_AT = 4000
TYPING_EVERY = 4.5  # Telegram shows "typing…" for 5 seconds per action


def target(key: SessionKey) -> tuple[int, int | None]:
    """The chat id and forum topic a session's messages go to."""
    return int(key.id), int(key.topic) if key.topic else None


async def send(bot: Bot, msg: OutboundMessage, clock: Clock, backoff: float) -> None:
    chat_id, thread = target(msg.key)
    quote = int(msg.reply_to) if msg.reply_to and msg.key.scope is Scope.GROUP else None
    for piece, html in pieces(msg.text):
        await _send_piece(bot, (chat_id, thread), piece, html, quote, clock, backoff)
        quote = None  # only the first piece quotes the message it answers


async def _send_piece(
    bot: Bot,
    where: tuple[int, int | None],
    piece: str,
    html: str | None,
    quote: int | None,
    clock: Clock,
    backoff: float,
) -> None:
    from telegram import ReplyParameters
    from telegram.constants import ParseMode
    from telegram.error import BadRequest

    chat_id, thread = where
    reply = ReplyParameters(quote, allow_sending_without_reply=True) if quote else None
    if html is not None:
        try:
            await call(
                lambda: bot.send_message(
                    chat_id,
                    html,
                    parse_mode=ParseMode.HTML,
                    reply_parameters=reply,
                    message_thread_id=thread,
                ),
                clock,
                backoff,
            )
            return
        except BadRequest as exc:
            if "parse entities" not in str(exc).lower():
                raise
            log.warning(
                "telegram:%s: Telegram refused the HTML (%s); sending plain text", chat_id, exc
            )
    await call(
        lambda: bot.send_message(chat_id, piece, reply_parameters=reply, message_thread_id=thread),
        clock,
        backoff,
    )


async def keep_typing(bot: Bot, key: SessionKey) -> None:
    """Show "typing…" until cancelled."""
    from telegram.constants import ChatAction
    from telegram.error import Forbidden, TelegramError

    chat_id, thread = target(key)
    while True:
        try:
            await bot.send_chat_action(chat_id, ChatAction.TYPING, message_thread_id=thread)
        except Forbidden:
            return
        except TelegramError as exc:
            log.debug("%s: typing indicator failed: %s", key, exc)
        await asyncio.sleep(TYPING_EVERY)  # a display refresh, not a wait for time to pass


def pieces(text: str) -> list[tuple[str, str | None]]:
    """(Markdown, its Telegram HTML) pieces that fit Telegram's limit; the HTML is None when
    the piece is best sent as plain text."""
    out: list[tuple[str, str | None]] = []
    for piece in split_markdown(text, SPLIT_AT):
        _fit(piece, SPLIT_AT, out)
    return out


def _fit(piece: str, limit: int, out: list[tuple[str, str | None]]) -> None:
    html = to_telegram_html(piece)
    shown = visible_text(html)
    if not shown.strip():
        # Renders to nothing (only link definitions, an empty quote): the source is the text.
        out.append((piece, None))
    elif utf16_len(shown) <= TEXT_LIMIT:
        out.append((piece, html))
    elif limit >= 400:  # rendering made it longer (deeply nested lists): cut it finer
        for sub in split_markdown(piece, limit // 2):
            _fit(sub, limit // 2, out)
    else:  # the source itself is short enough
        out.append((piece, None))
