"""The Telegram adapter: long polling (or a webhook) in, replies out, via python-telegram-bot."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from channels.access import Access
from channels.base import Channel, ChannelStartError
from channels.inbox import Intake
from channels.live import LiveReply
from channels.telegram import replies
from channels.telegram.api import call
from channels.telegram.inbound import Reader
from channels.telegram.live import TelegramLive, edit_piece, take_back
from channels.telegram.polling import UPDATES, Poller
from channels.voice import Hearing
from gateway.contract.commands import CHAT_COMMANDS
from gateway.contract.events import OutboundMessage, SessionKey
from gateway.contract.ports import Check, Clock
from gateway.infra.tasks import settle

if TYPE_CHECKING:
    from telegram import Bot, Update
    from telegram.ext import Application

    from channels.telegram.transport import Transport

log = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass(frozen=True)
class Webhook:
    url: str
    listen: str
    port: int
    path: str
    secret_token: str


class TelegramChannel(Channel):
    name = "telegram"
    polls = True  # sets ``receiving`` as its first getUpdates goes out (or the webhook is set)

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
        clock: Clock | None = None,
        hearing: Hearing | None = None,
        pool_size: int = 32,
    ) -> None:
        super().__init__(access, clock)
        self.pool_size = pool_size  # connections for requests other than the long poll
        self.transport: Transport | None = None
        self._token = token
        self.intake = intake
        self._reader = Reader(intake, self.clock, retry_backoff, hearing=hearing)
        self.base_url = base_url
        self.base_file_url = base_file_url
        self.poll_timeout = poll_timeout
        self.webhook = webhook
        self.retry_backoff = retry_backoff
        self.bot_id = 0
        self._bot: Bot | None = None  # while running
        self._app: Application[Any, Any, Any, Any, Any, Any] | None = None  # a webhook's
        self._poller: asyncio.Task[None] | None = None
        self._updates = Poller(self._dispatch, self.fail, self.receiving, self.clock)
        self._tasks: set[asyncio.Task[None]] = set()

    # -- lifecycle ------------------------------------------------------------------------------

    async def start(self) -> None:
        from telegram import BotCommand
        from telegram.error import TelegramError

        bot = await self._initialized_bot()
        self._bot = bot
        self.bot_username = bot.username or ""
        self.bot_id = bot.id
        self._reader.bot = bot
        self._reader.username = self.bot_username
        self._reader.bot_id = self.bot_id
        self._reader.backoff = self.retry_backoff
        # The command menu is not needed to receive messages; set it while polling starts.
        self._spawn(self._set_commands([BotCommand(n, d) for n, d in CHAT_COMMANDS]))
        try:
            if self.webhook is not None:
                assert self._app is not None and self._app.updater is not None
                await self._app.start()
                await self._app.updater.start_webhook(
                    listen=self.webhook.listen,
                    port=self.webhook.port,
                    url_path=self.webhook.path,
                    webhook_url=self.webhook.url,
                    secret_token=self.webhook.secret_token,
                    allowed_updates=UPDATES,
                )
                self.receiving.set()
            else:
                # getUpdates is refused while a webhook is set (say, from an earlier setup).
                await self._call(lambda: bot.delete_webhook())
                polling = self._updates.run(bot, self.poll_timeout, self.retry_backoff)
                self._poller = asyncio.create_task(polling, name="telegram-poll")
        except (TelegramError, OSError) as exc:
            await self.stop()
            how = "set the webhook" if self.webhook is not None else "start polling"
            raise ChannelStartError(f"could not {how} on Telegram: {exc}") from None
        how = "receiving by webhook" if self.webhook is not None else "polling"
        log.info("telegram: @%s is %s", self.bot_username, how)

    async def _initialized_bot(self) -> Bot:
        """PTB's bot, initialised (``getMe``); start errors say what to fix. Polling needs
        nothing but the bot (the loop is Corvid's own); a webhook is received by PTB's
        application, whose updater runs the webhook's server (``self._app``)."""
        from telegram import Bot
        from telegram.error import InvalidToken, TelegramError

        from channels.telegram.transport import Transport

        # The long poll stops with the channel: it is not waited out.
        poll = Transport(pool_size=1, read_timeout=self.poll_timeout + 10, cancellable=True)
        self.transport = Transport(
            pool_size=self.pool_size, others_answered=lambda: poll.last_answer
        )
        requests = (self.transport, poll)
        if self.webhook is None:
            bot = Bot(
                self._token,
                base_url=self.base_url,
                base_file_url=self.base_file_url,
                request=requests[0],
                get_updates_request=requests[1],
            )
            initialize = bot.initialize
        else:
            self._app = self._webhook_app(requests)
            bot, initialize = self._app.bot, self._app.initialize
        try:
            await initialize()  # getMe
        except TelegramError as exc:
            # Not initialised, so shutting down would do nothing: close the clients here.
            self._app = None
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
        return bot

    def _webhook_app(
        self, requests: tuple[Transport, Transport]
    ) -> Application[Any, Any, Any, Any, Any, Any]:
        from telegram import Update
        from telegram.ext import ApplicationBuilder, TypeHandler

        app = (
            ApplicationBuilder()
            .token(self._token)
            .base_url(self.base_url)
            .base_file_url(self.base_file_url)
            .request(requests[0])
            .get_updates_request(requests[1])
            .job_queue(None)  # Corvid's scheduler is its own
            .build()
        )
        app.add_handler(TypeHandler(Update, self._on_webhook_update))
        app.add_error_handler(self._on_handler_error)
        return app

    async def _set_commands(self, commands: list[Any]) -> None:
        from telegram.error import TelegramError

        assert self._bot is not None
        bot = self._bot
        try:
            await self._call(lambda: bot.set_my_commands(commands))
        except TelegramError as exc:
            log.warning("telegram: could not register the command menu: %s", exc)

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def _dispatch(self, update: Update) -> asyncio.Task[None] | None:
        query = update.callback_query
        msg = update.message
        if query is not None:  # a button press, in order with its chat's messages
            chat = query.message.chat.id if query.message is not None else query.from_user.id
            return self.in_order(chat, self._on_update(update))
        if msg is None:
            return None
        return self.in_order(msg.chat_id, self._on_update(update))

    async def stop(self) -> None:
        bot, self._bot = self._bot, None
        app, self._app = self._app, None
        if bot is None:
            return
        if self._poller is not None:
            self._poller.cancel()
            await asyncio.wait([self._poller])
            self._poller = None
        await self.cancel_pending()
        await settle(self._tasks, 5, cancel=True)
        if app is None:
            await self._updates.confirm(bot)
            await bot.shutdown()
            return
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
        query = update.callback_query
        if query is not None:
            button = await self._reader.button(query, self.access)
            if button is not None:
                if query.message is not None:
                    self.pressed_under(button.text, button.key, str(query.message.message_id))
                await self.admit(button)
            return
        msg = update.message  # edits, channel posts and the rest are not for us
        if msg is None or msg.from_user is None or msg.from_user.is_bot:
            return
        arrival = self._reader.arrival(msg)
        if arrival is not None:
            await self.admit(arrival)

    # -- outbound -------------------------------------------------------------------------------

    async def send(self, msg: OutboundMessage) -> None:
        if self._bot is None:
            raise RuntimeError("the Telegram channel is not running")
        last = await replies.send(self._bot, msg, self.clock, self.retry_backoff)
        if msg.buttons:
            self.sent_buttons(msg, str(last))

    async def replace_text(self, key: SessionKey, ref: str, text: str) -> None:
        if self._bot is None:
            return
        chat_id, _ = replies.target(key)
        # An edit that leaves out the keyboard removes it.
        piece = replies.pieces(text)[0]
        await edit_piece(self._bot, (chat_id, int(ref)), piece, self.clock, self.retry_backoff)

    @property
    def hearing(self) -> Hearing | None:
        """How voice notes are heard (the app counts what a paid service hears)."""
        return self._reader.hearing

    @hearing.setter
    def hearing(self, hearing: Hearing | None) -> None:
        self._reader.hearing = hearing

    def health(self) -> dict[str, int]:
        return self.transport.pool() if self.transport is not None else {}

    def transient(self, exc: BaseException) -> bool:
        from telegram.error import BadRequest, NetworkError, RetryAfter

        # BadRequest is a NetworkError in PTB's tree, and a refusal of the message itself.
        unreachable = isinstance(exc, NetworkError) and not isinstance(exc, BadRequest)
        return unreachable or isinstance(exc, RetryAfter) or super().transient(exc)

    def maybe_sent(self, exc: BaseException) -> bool:
        from channels.telegram.transport import AnswerLate

        return isinstance(exc, AnswerLate)

    def live(
        self, key: SessionKey, reply_to: str | None, placed: Callable[[str], None]
    ) -> LiveReply[Any] | None:
        if self._bot is None or not self.streaming:
            return None
        return TelegramLive(self._bot, key, reply_to, placed, self.clock, self.retry_backoff)

    async def take_back(self, key: SessionKey, ref: str) -> None:
        if self._bot is not None:
            await take_back(self._bot, key, ref, self.clock, self.retry_backoff)

    typing_every = 4.5  # Telegram shows "typing…" for 5 seconds per action

    async def show_typing(self, key: SessionKey) -> bool:
        from telegram.constants import ChatAction
        from telegram.error import Forbidden

        if self._bot is None:
            return False
        chat_id, thread = replies.target(key)
        try:
            await self._bot.send_chat_action(chat_id, ChatAction.TYPING, message_thread_id=thread)
        except Forbidden:
            return False
        return True

    async def probe(self, limit: float, token_source: str) -> Check:
        from channels.telegram.probe import probe

        return await probe(
            self._token,
            self.base_url,
            self.base_file_url,
            has_groups=bool(self.access is not None and self.access.groups),
            limit=limit,
            token_source=token_source,
        )

    async def _call(self, request: Callable[[], Awaitable[T]]) -> T:
        return await call(request, self.clock, self.retry_backoff)
