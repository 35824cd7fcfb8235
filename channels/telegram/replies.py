"""Replies on Telegram: the model's Markdown in pieces under Telegram's limit, as Telegram HTML."""

from __future__ import annotations

import asyncio
import logging
import re
from functools import partial
from typing import TYPE_CHECKING, Any

from channels.markdown import split_markdown, utf16_len
from channels.telegram.api import call
from channels.telegram.html import to_telegram_html, visible_text
from gateway.contract.events import OutboundMessage, Scope, SessionKey, blank
from gateway.contract.ports import Clock

if TYPE_CHECKING:
    from telegram import Bot

log = logging.getLogger(__name__)

TEXT_LIMIT = 4096
# Pieces are cut a little under the limit: rendering can add a character here and there.
SPLIT_AT = 4000
LONG = 20_000  # characters: replies longer than this are split off the event loop
UNSENDABLE = "(Telegram refused part of this reply, so it is left out here.)"
# Text that Markdown gives back as it is: none of the characters that can begin markup or an
# entity, no whitespace but spaces and newlines, no line that could open a block (indented, a
# list item, a heading, a quote, an underline), no space at a line's edge, no run of blank
# lines, no newline at either end.
_MARKUP = re.compile(
    r"[\\`*_~\[\]<>&|\x00-\x09\x0b-\x1f\x7f]|[^\S\n ]|^[ \-+=#>]|^\d{1,9}[.)]| $|\n\n\n|\A\n|\n\Z",
    re.M,
)
# What Telegram says when it refuses a message for its text, not for where it was going.
_TEXT_REFUSALS = ("parse entities", "text is empty", "too long", "utf-8", "text must be")


def target(key: SessionKey) -> tuple[int, int | None]:
    """The chat id and forum topic a session's messages go to."""
    return int(key.id), int(key.topic) if key.topic else None


async def send(bot: Bot, msg: OutboundMessage, clock: Clock, backoff: float) -> int:
    """Send ``msg`` in pieces; returns the last piece's message id (the buttons are under it)."""
    chat_id, thread = target(msg.key)
    quote = int(msg.reply_to) if msg.reply_to and msg.key.scope is Scope.GROUP else None
    # A very long reply takes a while to parse: not on the loop every chat shares.
    cut = await asyncio.to_thread(pieces, msg.text) if len(msg.text) > LONG else pieces(msg.text)
    for n, (piece, html) in enumerate(cut, 1):
        markup = keyboard(msg.buttons) if n == len(cut) else None  # under the last piece
        last = await send_piece(bot, (chat_id, thread), piece, html, quote, clock, backoff, markup)
        quote = None  # only the first piece quotes the message it answers
    return last


def keyboard(buttons: tuple[tuple[str, str], ...]) -> Any:
    """An inline keyboard whose buttons send their chat command back as callback data."""
    if not buttons:
        return None
    from telegram import InlineKeyboardButton, InlineKeyboardMarkup

    row = [InlineKeyboardButton(label, callback_data=command) for label, command in buttons]
    return InlineKeyboardMarkup([row])


async def send_piece(
    bot: Bot,
    where: tuple[int, int | None],
    piece: str,
    html: str | None,
    quote: int | None,
    clock: Clock,
    backoff: float,
    markup: Any = None,
) -> int:
    """The piece as HTML, else as plain text, else a notice in its place: a refused piece
    never stops the rest of the reply. Returns the message's id."""
    from telegram import LinkPreviewOptions, ReplyParameters
    from telegram.constants import ParseMode
    from telegram.error import BadRequest

    chat_id, thread = where
    reply = ReplyParameters(quote, allow_sending_without_reply=True) if quote else None
    attempts: list[tuple[str, str | None]] = [(html, ParseMode.HTML)] if html is not None else []
    attempts += [(piece, None), (UNSENDABLE, None)]
    for number, (text, mode) in enumerate(attempts, 1):
        send = partial(
            bot.send_message,
            chat_id,
            text,
            parse_mode=mode,
            reply_parameters=reply,
            message_thread_id=thread,
            reply_markup=markup,
            # Telegram's servers would fetch an address in the text to preview it: a way out
            # for anything a model was told to put in a link.
            link_preview_options=LinkPreviewOptions(is_disabled=True),
        )
        try:
            # Posted twice if repeated after Telegram took it but answered late.
            sent = await call(send, clock, backoff, repeatable=False)
            return sent.message_id
        except BadRequest as exc:
            if number == len(attempts) or not refused_text(exc):
                raise
            log.warning(
                "telegram:%s: Telegram refused a piece as %s (%s); trying %s",
                chat_id,
                "HTML" if mode else "text",
                exc,
                "plain text" if attempts[number][0] == piece else "a notice",
            )
    raise AssertionError("unreachable: the last attempt returns or raises")


def refused_text(exc: Exception) -> bool:
    return any(part in str(exc).lower() for part in _TEXT_REFUSALS)


def pieces(text: str) -> list[tuple[str, str | None]]:
    """(Markdown, its Telegram HTML) pieces that fit Telegram's limit; the HTML is None when
    the piece is best sent as plain text."""
    if utf16_len(text) <= SPLIT_AT and not _MARKUP.search(text):
        # Plain text, short (most chat answers): its HTML is itself, nothing to parse.
        return [] if blank(text) else [(text, text)]
    return parsed_pieces(text)


def parsed_pieces(text: str) -> list[tuple[str, str | None]]:
    """``pieces``, the Markdown parsed whatever it holds."""
    out: list[tuple[str, str | None]] = []
    for piece in split_markdown(text, SPLIT_AT, carry_references=True):
        if not blank(piece):  # Telegram refuses a message that shows nothing
            _fit(piece, SPLIT_AT, out)
    return out


def _fit(piece: str, limit: int, out: list[tuple[str, str | None]]) -> None:
    html = to_telegram_html(piece)
    shown = visible_text(html)
    if blank(shown):
        # Renders to nothing (only link definitions, an empty quote): the source is the text.
        out.append((piece, None))
    elif utf16_len(shown) <= TEXT_LIMIT:
        out.append((piece, html))
    elif limit >= 400:  # rendering made it longer (deeply nested lists): cut it finer
        for sub in split_markdown(piece, limit // 2, carry_references=True):
            _fit(sub, limit // 2, out)
    else:  # the source itself is short enough
        out.append((piece, None))
