"""Telegram, through python-telegram-bot: long polling (or a webhook) in, HTML replies out.

Inbound, each message becomes an ``Arrival`` for the shared access policy: private chats are
``telegram:private:<user_id>``, groups ``telegram:group:<chat_id>`` (plus ``:topic:<id>`` in forum
topics). In a group, a message is addressed to the bot when it mentions it (``@username`` or a
text mention), replies to it, or is a command for it. Photos become images for the model; other
files are saved to the inbox. Edited messages and messages from bots are ignored.

Outbound, the model's Markdown is split under Telegram's limit and rendered as Telegram HTML; if
Telegram refuses the HTML, the same piece goes out as plain text. Flood waits (429) are waited
out, network errors retried with backoff; anything else raises, for the gateway to record.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from channels import inbox
from channels.access import Access, Arrival, Fetched
from channels.base import Channel, ChannelStartError
from channels.inbox import Intake
from channels.markdown import split_markdown, to_telegram_html, utf16_len, visible_text
from gateway.events import CHAT_COMMANDS, Attachment, OutboundMessage, SessionKey

if TYPE_CHECKING:
    from telegram import Message, Update
    from telegram.ext import Application

log = logging.getLogger(__name__)

# Opt in to PTB's coming behaviour (time periods as timedelta); otherwise every flood-limit
# error (RetryAfter) raises a deprecation warning when it is built.
os.environ.setdefault("PTB_TIMEDELTA", "1")

T = TypeVar("T")

TEXT_LIMIT = 4096
# Pieces are cut a little under the limit: rendering can add a character here and there.
SPLIT_AT = 4000
TYPING_EVERY = 4.5  # Telegram shows "typing…" for 5 seconds per action
MAX_ATTEMPTS = 5
LONGEST_FLOOD_WAIT = 300.0
CONFLICTS_BEFORE_GIVING_UP = 4

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
_OUR_COMMANDS = frozenset(name for name, _ in CHAT_COMMANDS) | {"start"}


@dataclass(frozen=True)
class Webhook:
    url: str
    listen: str
    port: int
    path: str
    secret_token: str


class TelegramChannel(Channel):
    name = "telegram"

    def __init__(
        self,
        token: str,
        access: Access,
        *,
        intake: Intake,
        base_url: str = "https://api.telegram.org/bot",
        base_file_url: str = "https://api.telegram.org/file/bot",
        poll_timeout: float = 30,
        webhook: Webhook | None = None,
        retry_backoff: float = 1.0,
    ) -> None:
        super().__init__(access)
        self._token = token
        self.intake = intake
        self.base_url = base_url
        self.base_file_url = base_file_url
        self.poll_timeout = poll_timeout
        self.webhook = webhook
        self.retry_backoff = retry_backoff
        self.bot_id = 0
        self._app: Application | None = None
        self._poller: asyncio.Task[None] | None = None
        self._offset: int | None = None
        # Updates still being taken in (a download, say), by update id. Telegram is not told
        # they were received until the gateway has them, so a crash meanwhile loses none.
        self._taking: dict[int, asyncio.Task[None]] = {}
        self._next_update = 0  # updates below this were dispatched by this process
        self._tasks: set[asyncio.Task[None]] = set()

    # -- lifecycle ------------------------------------------------------------------------------

    async def start(self) -> None:
        from telegram import BotCommand, Update
        from telegram.error import InvalidToken, TelegramError
        from telegram.ext import ApplicationBuilder, TypeHandler
        from telegram.request import HTTPXRequest

        requests = (
            HTTPXRequest(connection_pool_size=32, read_timeout=30, write_timeout=30),
            HTTPXRequest(read_timeout=self.poll_timeout + 10),
        )
        app = (
            ApplicationBuilder()
            .token(self._token)
            .base_url(self.base_url)
            .base_file_url(self.base_file_url)
            .request(requests[0])
            .get_updates_request(requests[1])
            .build()
        )
        app.add_handler(TypeHandler(Update, self._on_webhook_update))
        app.add_error_handler(self._on_handler_error)
        try:
            await app.initialize()  # getMe
        except TelegramError as exc:
            # Not initialised, so app.shutdown() would do nothing: close the clients here.
            await asyncio.gather(*(r.shutdown() for r in requests))
            if isinstance(exc, InvalidToken):
                raise ChannelStartError(
                    "Telegram rejected the bot token (channels.telegram.token). Check it with "
                    "@BotFather (/token) and set it again."
                ) from None
            raise ChannelStartError(
                f"could not reach the Telegram Bot API at {self.base_url} ({exc}); check the "
                "network or channels.telegram.base_url"
            ) from None
        self._app = app
        self.bot_username = app.bot.username or ""
        self.bot_id = app.bot.id
        # The command menu is not needed to receive messages; set it while polling starts.
        self._spawn(self._set_commands([BotCommand(n, d) for n, d in CHAT_COMMANDS]))
        await app.start()
        assert app.updater is not None
        try:
            if self.webhook is not None:
                await app.updater.start_webhook(
                    listen=self.webhook.listen,
                    port=self.webhook.port,
                    url_path=self.webhook.path,
                    webhook_url=self.webhook.url,
                    secret_token=self.webhook.secret_token,
                    allowed_updates=["message"],
                )
            else:
                # getUpdates is refused while a webhook is set (say, from an earlier setup).
                await self._call(lambda: app.bot.delete_webhook())
                self._poller = asyncio.create_task(self._poll(), name="telegram-poll")
        except (TelegramError, OSError) as exc:
            await self.stop()
            how = "set the webhook" if self.webhook is not None else "start polling"
            raise ChannelStartError(f"could not {how} on Telegram: {exc}") from None
        log.info(
            "telegram: @%s is %s",
            self.bot_username,
            "receiving by webhook" if self.webhook is not None else "polling",
        )

    async def _set_commands(self, commands: list[Any]) -> None:
        from telegram.error import TelegramError

        assert self._app is not None
        bot = self._app.bot
        try:
            await self._call(lambda: bot.set_my_commands(commands))
        except TelegramError as exc:
            log.warning("telegram: could not register the command menu: %s", exc)

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _poll(self) -> None:
        """Long polling. Unlike PTB's Updater, it stops the channel when the token is revoked
        or another process keeps polling the same bot, instead of retrying forever."""
        from telegram.error import Conflict, InvalidToken, RetryAfter, TelegramError, TimedOut

        assert self._app is not None
        bot = self._app.bot
        failures = conflicts = 0
        while True:
            try:
                updates = await bot.get_updates(
                    offset=self._offset,
                    timeout=dt.timedelta(seconds=self.poll_timeout),
                    allowed_updates=["message"],
                )
            except InvalidToken:
                self.fail(
                    "Telegram no longer accepts the bot token (revoked or changed in "
                    "@BotFather); put the new one in channels.telegram.token"
                )
                return
            except Conflict:
                # Right after a restart the previous process's poll may still be open for a
                # moment; only a conflict that persists means a second instance.
                conflicts += 1
                if conflicts >= CONFLICTS_BEFORE_GIVING_UP:
                    self.fail(
                        "another program is receiving updates for this Telegram bot token (409 "
                        "Conflict): stop the other Corvid instance, or give each one its own "
                        "bot token"
                    )
                    return
                await asyncio.sleep(self.retry_backoff * 2 ** (conflicts - 1))
                continue
            except RetryAfter as exc:
                await asyncio.sleep(_retry_after_seconds(exc))
                continue
            except TimedOut:
                continue  # a long poll that outlived the read timeout: just poll again
            except TelegramError as exc:
                failures += 1
                wait = min(30.0, self.retry_backoff * 2 ** min(failures - 1, 5))
                log.warning("telegram: polling failed (%s); retrying in %.0f s", exc, wait)
                await asyncio.sleep(wait)
                continue
            failures = conflicts = 0
            fresh = [u for u in updates if u.update_id >= self._next_update]
            for update in fresh:
                self._next_update = update.update_id + 1
                task = self._dispatch(update)
                if task is not None:
                    self._taking[update.update_id] = task
            # One pass of the loop lets plain messages, which need no I/O, reach the gateway,
            # so the next poll confirms them instead of receiving them again.
            await asyncio.sleep(0)
            self._offset = self._confirmable()
            if updates and not fresh and self._taking:
                # All Telegram returned is still being taken in: asking again now would only
                # return the same updates, so wait for one of them to be done.
                await asyncio.wait(list(self._taking.values()), return_when=asyncio.FIRST_COMPLETED)
                self._offset = self._confirmable()

    def _confirmable(self) -> int | None:
        """The offset that confirms every update the gateway has (or has turned away). An
        intake cancelled by stop() stays unconfirmed, for the next start to receive."""
        for uid, task in list(self._taking.items()):
            if task.done() and not task.cancelled():
                del self._taking[uid]
        if self._taking:
            return min(self._taking)
        return self._next_update or self._offset

    def _dispatch(self, update: Update) -> asyncio.Task[None] | None:
        msg = update.message
        if msg is None:
            return None
        return self.in_order(msg.chat_id, self._on_update(update))

    async def stop(self) -> None:
        app, self._app = self._app, None
        if app is None:
            return
        if self._poller is not None:
            self._poller.cancel()
            await asyncio.wait([self._poller])
            self._poller = None
        await self.cancel_pending()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=5)
        self._offset = self._confirmable()
        if self.webhook is None and self._offset is not None:
            # Confirm what the gateway has, so a restart does not receive it again. Updates
            # whose intake was cut short stay unconfirmed and come again after the restart.
            with contextlib.suppress(Exception):
                await app.bot.get_updates(offset=self._offset, timeout=dt.timedelta(0))
        if app.updater is not None and app.updater.running:
            await app.updater.stop()
        if app.running:
            await app.stop()
        await app.shutdown()

    async def _on_webhook_update(self, update: Update, context: Any) -> None:
        self._dispatch(update)

    async def _on_handler_error(self, update: object, context: Any) -> None:
        log.error("telegram: handling an update failed", exc_info=context.error)

    # -- inbound --------------------------------------------------------------------------------

    async def _on_update(self, update: Update) -> None:
        msg = update.message  # edits, channel posts and the rest are not for us
        if msg is None or msg.from_user is None or msg.from_user.is_bot:
            return
        arrival = self._arrival(msg)
        if arrival is not None:
            await self.admit(arrival)

    def _arrival(self, msg: Message) -> Arrival | None:
        chat = msg.chat
        user = msg.from_user
        assert user is not None
        if chat.type == "private":
            key = SessionKey("telegram", "private", str(user.id))
        elif chat.type in ("group", "supergroup"):
            topic = (
                str(msg.message_thread_id)
                if msg.is_topic_message and msg.message_thread_id
                else None
            )
            key = SessionKey("telegram", "group", str(chat.id), topic)
        else:
            return None
        text = msg.text or msg.caption or ""
        entities = msg.parse_entities() if msg.text else msg.parse_caption_entities()
        command = self._command(text, entities)
        if command is False:
            return None  # a command for another bot
        unsupported = next((label for attr, label in _UNSUPPORTED if getattr(msg, attr, None)), "")
        has_file = bool(msg.photo or msg.document)
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
            fetch=(lambda final_key: self._fetch(msg, final_key)) if has_file else None,
        )

    def _command(self, text: str, entities: dict[Any, str]) -> bool | None:
        """True: a command for us; False: a command for another bot; None: not a command."""
        for entity, value in entities.items():
            if entity.type == "bot_command" and entity.offset == 0:
                name, _, target = value[1:].partition("@")
                if target:
                    return target.casefold() == self.bot_username.casefold()
                return name.casefold() in _OUR_COMMANDS or None
        return None

    def _mentions_me(self, msg: Message, entities: dict[Any, str]) -> bool:
        me = "@" + self.bot_username.casefold()
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

    async def _fetch(self, msg: Message, key: SessionKey) -> Fetched:
        attachments: list[Attachment] = []
        notes: list[str] = []
        try:
            if msg.photo:
                await self._fetch_photo(msg, attachments, notes)
            if msg.document:
                await self._fetch_document(msg, key, attachments, notes)
        except Exception as exc:
            from telegram.error import TelegramError

            if not isinstance(exc, TelegramError | OSError):
                raise
            log.warning("%s: could not download a file: %s", key, exc)
            notes.append("[A file came with this message, but downloading it failed.]")
        return tuple(attachments), tuple(notes)

    async def _download(self, file_id: str) -> bytes:
        assert self._app is not None
        bot = self._app.bot
        file = await self._call(lambda: bot.get_file(file_id))
        return bytes(await self._call(file.download_as_bytearray))

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
        mime = inbox.sniff_image(data)
        if mime is None or len(data) > self.intake.max_image_bytes:
            notes.append("[A photo came with this message, but it could not be read as an image.]")
            return
        attachments.append(Attachment("image", mime, name="photo", data=data))

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

    # -- outbound -------------------------------------------------------------------------------

    def _target(self, key: SessionKey) -> tuple[int, int | None]:
        return int(key.id), int(key.topic) if key.topic else None

    async def send(self, msg: OutboundMessage) -> None:
        if self._app is None:
            raise RuntimeError("the Telegram channel is not running")
        chat_id, thread = self._target(msg.key)
        quote = int(msg.reply_to) if msg.reply_to and msg.key.scope == "group" else None
        for piece, html in _pieces(msg.text):
            await self._send_piece(chat_id, thread, piece, html, quote)
            quote = None  # only the first piece quotes the message it answers

    async def _send_piece(
        self, chat_id: int, thread: int | None, piece: str, html: str | None, quote: int | None
    ) -> None:
        from telegram import ReplyParameters
        from telegram.constants import ParseMode
        from telegram.error import BadRequest

        assert self._app is not None
        bot = self._app.bot
        reply = ReplyParameters(quote, allow_sending_without_reply=True) if quote else None
        if html is not None:
            try:
                await self._call(
                    lambda: bot.send_message(
                        chat_id,
                        html,
                        parse_mode=ParseMode.HTML,
                        reply_parameters=reply,
                        message_thread_id=thread,
                    )
                )
                return
            except BadRequest as exc:
                if "parse entities" not in str(exc).lower():
                    raise
                log.warning(
                    "telegram:%s: Telegram refused the HTML (%s); sending plain text", chat_id, exc
                )
        await self._call(
            lambda: bot.send_message(
                chat_id, piece, reply_parameters=reply, message_thread_id=thread
            )
        )

    async def _call(self, request: Callable[[], Awaitable[T]]) -> T:
        """Run a Bot API request, waiting out flood limits and retrying network failures."""
        from telegram.error import BadRequest, NetworkError, RetryAfter

        for attempt in range(1, MAX_ATTEMPTS + 1):
            try:
                return await request()
            except RetryAfter as exc:
                wait = _retry_after_seconds(exc)
                if attempt == MAX_ATTEMPTS or wait > LONGEST_FLOOD_WAIT:
                    raise
                log.info("telegram: flood limit, waiting %.0f s", wait)
                await asyncio.sleep(wait)
            except BadRequest:
                raise
            except NetworkError as exc:  # includes TimedOut
                if attempt == MAX_ATTEMPTS:
                    raise
                wait = self.retry_backoff * 2 ** (attempt - 1)
                log.info("telegram: %s; retrying in %.1f s", exc, wait)
                await asyncio.sleep(wait)
        raise AssertionError("unreachable")

    @contextlib.asynccontextmanager
    async def typing(self, key: SessionKey) -> AsyncIterator[None]:
        task = asyncio.create_task(self._keep_typing(key))
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _keep_typing(self, key: SessionKey) -> None:
        from telegram.constants import ChatAction
        from telegram.error import Forbidden, TelegramError

        if self._app is None:
            return
        chat_id, thread = self._target(key)
        while True:
            try:
                await self._app.bot.send_chat_action(
                    chat_id, ChatAction.TYPING, message_thread_id=thread
                )
            except Forbidden:
                return
            except TelegramError as exc:
                log.debug("%s: typing indicator failed: %s", key, exc)
            await asyncio.sleep(TYPING_EVERY)


def _pieces(text: str) -> list[tuple[str, str | None]]:
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


def _retry_after_seconds(exc: Any) -> float:
    value = exc.retry_after
    return value.total_seconds() if isinstance(value, dt.timedelta) else float(value)
