"""Telegram messages as the access policy sees them (``Arrival``), and their files."""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from channels import inbox
from channels.access import Access, Arrival, Fetched
from channels.inbox import Intake
from channels.telegram.api import call
from channels.voice import Hearing, Recording, hear
from gateway.contract.commands import COMMAND_NAMES
from gateway.contract.events import (
    Attachment,
    SessionKey,
    sniff_image,
    telegram_group,
    telegram_private,
)
from gateway.contract.ports import Clock

if TYPE_CHECKING:
    from telegram import Bot, CallbackQuery, Message

log = logging.getLogger(__name__)

_UNSUPPORTED = (
    ("voice", "voice messages"),
    ("video_note", "video messages"),
    ("audio", "audio files"),
    ("video", "videos"),
    ("animation", "GIFs"),
    ("sticker", "stickers"),
    ("location", "locations"),
    ("venue", "locations"),
    ("contact", "contacts"),
    ("poll", "polls"),
    ("dice", "dice"),
    ("game", "games"),
    ("story", "stories"),
)


@dataclass
class Reader:
    """Reads messages for one bot (``username``, ``bot_id`` once known from getMe)."""

    intake: Intake
    clock: Clock
    backoff: float = 1.0
    hearing: Hearing | None = None  # voice notes and audio transcribed, when configured
    bot: Bot | None = None
    username: str = ""
    bot_id: int = 0

    async def button(self, query: CallbackQuery, access: Access | None) -> Arrival | None:
        """A press of a button under one of the bot's messages, as the chat command it
        carries, from the person who pressed it. Only the owner's presses, in their private
        chat, count; anyone else's is answered with nothing."""
        with contextlib.suppress(Exception):  # stops the button's spinner, whoever pressed it
            await query.answer()
        user, message = query.from_user, query.message
        if access is None or message is None or message.chat.type != "private":
            return None
        key = telegram_private(user.id)
        return access.press(key, str(user.id), user.full_name, query.data or "", str(query.id))

    def arrival(self, msg: Message) -> Arrival | None:
        chat = msg.chat
        user = msg.from_user
        assert user is not None
        if chat.type == "private":
            key = telegram_private(user.id)
        elif chat.type in ("group", "supergroup"):
            topic = msg.message_thread_id if msg.is_topic_message else None
            key = telegram_group(chat.id, topic or None)
        else:
            return None
        text = msg.text or msg.caption or ""
        entities = msg.parse_entities() if msg.text else msg.parse_caption_entities()
        command = self._command(entities)
        if command is False:
            return None  # a command for another bot
        heard = self.hearing is not None and bool(msg.voice or msg.audio)
        unsupported = (
            ""
            if heard
            else next((label for attr, label in _UNSUPPORTED if getattr(msg, attr, None)), "")
        )
        has_file = bool(msg.photo or msg.document or heard)
        if not text and not has_file and not unsupported:
            return None  # service messages: joins, pins, topic changes...
        if unsupported and text:
            text += f"\n[Something I cannot open ({unsupported}) came with this message.]"
            unsupported = ""
        return Arrival(
            key=key,
            sender_id=str(user.id),
            sender_name=user.full_name,
            text=text,
            message_id=str(msg.message_id),
            addressed=bool(command) or self._mentions_me(msg, entities),
            is_command=bool(command),
            group_ids=(str(chat.id),),
            unsupported=unsupported,
            chat_title=chat.title or "",
            fetch=(lambda final_key: self.fetch(msg, final_key)) if has_file else None,
        )

    def _command(self, entities: dict[Any, str]) -> bool | None:
        """True: a command for us; False: a command for another bot; None: not a command."""
        for entity, value in entities.items():
            if entity.type == "bot_command" and entity.offset == 0:
                name, _, target = value[1:].partition("@")
                if target:
                    return target.casefold() == self.username.casefold()
                return name.casefold() in COMMAND_NAMES or None
        return None

    def _mentions_me(self, msg: Message, entities: dict[Any, str]) -> bool:
        me = "@" + self.username.casefold()
        for entity, value in entities.items():
            if entity.type == "mention" and value.casefold() == me:
                return True
            if entity.type == "text_mention" and entity.user and entity.user.id == self.bot_id:
                return True
        reply = msg.reply_to_message
        # In forum topics every message "replies" to the topic's opening service message.
        return bool(
            reply is not None
            and reply.from_user is not None
            and reply.from_user.id == self.bot_id
            and reply.forum_topic_created is None
        )

    async def fetch(self, msg: Message, key: SessionKey) -> Fetched:
        attachments: list[Attachment] = []
        notes: list[str] = []
        try:
            if msg.photo:
                await self._fetch_photo(msg, attachments, notes)
            if msg.document:
                await self._fetch_document(msg, key, attachments, notes)
            if self.hearing is not None and (msg.voice or msg.audio):
                await self._fetch_recording(msg, key, attachments, notes)
        except Exception as exc:
            from telegram.error import TelegramError

            if not isinstance(exc, TelegramError | OSError):
                raise
            log.warning("%s: could not download a file: %s", key, exc)
            notes.append("[A file came with this message, but downloading it failed.]")
        return tuple(attachments), tuple(notes)

    async def _download(self, file_id: str) -> bytes:
        bot = self.bot
        assert bot is not None
        file = await call(lambda: bot.get_file(file_id), self.clock, self.backoff)
        return bytes(await call(file.download_as_bytearray, self.clock, self.backoff))

    async def _fetch_photo(
        self, msg: Message, attachments: list[Attachment], notes: list[str]
    ) -> None:
        fitting = [p for p in msg.photo if (p.file_size or 0) <= self.intake.max_image_bytes]
        if not fitting:
            notes.append(
                "[A photo came with this message but is larger than "
                f"{inbox.mb(self.intake.max_image_bytes)}, so I cannot see it.]"
            )
            return
        best = max(fitting, key=lambda p: p.width * p.height)
        data = await self._download(best.file_id)
        mime = sniff_image(data)
        if mime is None or len(data) > self.intake.max_image_bytes:
            notes.append("[A photo came with this message, but it could not be read as an image.]")
            return
        attachments.append(Attachment("image", mime, name="photo", data=data))

    async def _fetch_recording(
        self, msg: Message, key: SessionKey, attachments: list[Attachment], notes: list[str]
    ) -> None:
        assert self.hearing is not None
        media = msg.voice or msg.audio
        assert media is not None
        name = getattr(media, "file_name", None) or ""
        rec = Recording(
            "voice note" if msg.voice else "audio file",
            name,
            media.mime_type or "audio/ogg",
            media.file_size or 0,
            _seconds(media.duration),
            lambda: self._download(media.file_id),
        )
        kept, words = await hear(self.hearing, self.intake, key, rec)
        if kept is not None:
            attachments.append(kept)
        notes.append(words)

    async def _fetch_document(
        self, msg: Message, key: SessionKey, attachments: list[Attachment], notes: list[str]
    ) -> None:
        doc = msg.document
        assert doc is not None
        got = await self.intake.take(
            key,
            doc.file_name or "file",
            doc.mime_type or "",
            doc.file_size or 0,
            lambda: self._download(doc.file_id),
        )
        if isinstance(got, Attachment):
            attachments.append(got)
        else:
            notes.append(got)


def _seconds(length: object) -> float | None:
    """A recording's length as PTB gives it: a timedelta (or whole seconds in older versions)."""
    if isinstance(length, dt.timedelta):
        return length.total_seconds()
    return float(length) if isinstance(length, int | float) else None
