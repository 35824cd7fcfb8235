"""Discord, through discord.py: gateway events in, Markdown replies out, slash commands."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from channels.access import Access
from channels.base import Channel, ChannelStartError
from channels.discord import buttons, replies
from channels.discord.inbound import arrival
from channels.discord.live import DiscordLive, replace_text, take_back
from channels.discord.slash import SlashCommands
from channels.inbox import Intake
from channels.live import LiveReply
from channels.voice import Hearing
from gateway.contract.events import OutboundMessage, SessionKey
from gateway.contract.ports import Check, Clock

if TYPE_CHECKING:
    import discord
    from discord import app_commands

log = logging.getLogger(__name__)

INTENT_HELP = (
    "Discord refused the connection because the Message Content intent is not enabled for this "
    "bot: open the Developer Portal → your application → Bot → Privileged Gateway Intents, turn "
    "on Message Content Intent, and start Corvid again"
)


class DiscordChannel(Channel):
    name = "discord"
    idempotent_sends = True  # every channel message carries a nonce from OutboundMessage.ident

    def __init__(
        self,
        token: str,
        access: Access,
        *,
        intake: Intake,
        api_base_url: str = "https://discord.com/api/v10",
        gateway_url: str = "wss://gateway.discord.gg/",
        ready_timeout: float = 60.0,
        guild_ready_timeout: float = 2.0,
        clock: Clock | None = None,
        hearing: Hearing | None = None,
    ) -> None:
        super().__init__(access, clock)
        self._token = token
        self.intake = intake
        self.hearing = hearing
        self.api_base_url = api_base_url.rstrip("/")
        self.gateway_url = gateway_url
        self.ready_timeout = ready_timeout
        self.guild_ready_timeout = guild_ready_timeout
        self._client: discord.Client | None = None
        self._runner: asyncio.Task[None] | None = None
        self._stopping = False
        self._slash = SlashCommands(self)

    # -- lifecycle ------------------------------------------------------------------------------

    async def start(self) -> None:
        import aiohttp
        import discord

        from channels.discord.connection import UNTRUSTED

        client, tree = self._make_client()
        try:
            await client.login(self._token)
        except discord.LoginFailure:
            await client.close()
            raise ChannelStartError(
                "Discord rejected the bot token (channels.discord.token): copy it again from "
                "the Developer Portal → your application → Bot → Reset Token"
            ) from None
        except aiohttp.ClientConnectorCertificateError:
            await client.close()
            raise ChannelStartError(
                f"could not reach Discord at {self.api_base_url}: {UNTRUSTED}"
            ) from None
        except (aiohttp.ClientError, OSError, discord.HTTPException) as exc:
            await client.close()
            raise ChannelStartError(
                f"could not reach Discord at {self.api_base_url} ({type(exc).__name__}); check "
                "the network or channels.discord.api_base_url"
            ) from None
        self._client = client
        self._runner = asyncio.create_task(client.connect(reconnect=True), name="discord-gateway")
        try:
            await self._await_ready(client, self._runner)
            assert client.user is not None
            self.bot_username = client.user.name
            try:
                await tree.sync()
            except (discord.HTTPException, aiohttp.ClientError) as exc:
                log.warning("discord: could not register the slash commands: %s", exc)
        except BaseException:
            await self.stop()
            raise
        self._runner.add_done_callback(self._on_runner_done)
        log.info("discord: %s is connected to %d guild(s)", client.user, len(client.guilds))

    def _make_client(self) -> tuple[discord.Client, app_commands.CommandTree[discord.Client]]:
        """The client, with the intents Corvid needs and the chat commands as slash commands."""
        import discord

        from channels.discord.connection import connector, quiet_voice_warnings

        quiet_voice_warnings()
        intents = discord.Intents.none()
        intents.guilds = True
        intents.guild_messages = True
        intents.dm_messages = True
        intents.message_content = True
        client = discord.Client(
            intents=intents,
            # discord.py names Discord's hosts itself; this leads them to the configured servers.
            connector=connector(self.api_base_url, self.gateway_url),
            # Nothing the model writes can ping @everyone, a role or a user.
            allowed_mentions=discord.AllowedMentions.none(),
            chunk_guilds_at_startup=False,
            guild_ready_timeout=self.guild_ready_timeout,
            max_messages=200,
        )
        client.on_message = self._on_message  # type: ignore[attr-defined]  # the event hook
        client.on_interaction = self._on_button  # type: ignore[attr-defined]
        return client, self._slash.tree(client)

    async def _await_ready(self, client: discord.Client, runner: asyncio.Task[None]) -> None:
        ready = asyncio.create_task(client.wait_until_ready())
        done, _ = await asyncio.wait(
            (runner, ready), timeout=self.ready_timeout, return_when=asyncio.FIRST_COMPLETED
        )
        if ready in done:
            return
        ready.cancel()
        if runner in done and not runner.cancelled() and runner.exception() is not None:
            raise ChannelStartError(_connection_problem(runner.exception()))
        raise ChannelStartError(f"no answer from the Discord gateway at {self.gateway_url}")

    async def stop(self) -> None:
        self._stopping = True
        client, self._client = self._client, None
        await self.cancel_pending()
        if client is not None:
            await client.close()
        runner, self._runner = self._runner, None
        if runner is not None:
            await asyncio.wait([runner], timeout=10)

    def _on_runner_done(self, task: asyncio.Task[None]) -> None:
        if self._stopping:
            return
        exc = None if task.cancelled() else task.exception()
        self.fail(
            _connection_problem(exc) if exc is not None else "the Discord connection was closed"
        )

    async def probe(self, limit: float, token_source: str) -> Check:
        from channels.discord.probe import probe

        return await probe(
            self._token,
            self.api_base_url,
            self.gateway_url,
            limit=limit,
            token_source=token_source,
        )

    # -- inbound --------------------------------------------------------------------------------

    async def _on_message(self, message: discord.Message) -> None:
        client = self._client
        if client is None or client.user is None or message.author.bot:
            return
        if message.author.id == client.user.id:
            return
        self.in_order(message.channel.id, self._take(message))

    async def _take(self, message: discord.Message) -> None:
        client = self._client
        if client is None or client.user is None:
            return
        found = arrival(message, client.user, self.intake, self.hearing)
        if found is not None:
            await self.admit(found)

    async def _on_button(self, interaction: discord.Interaction) -> None:
        pressed = await buttons.pressed(interaction, self.access)
        if pressed is not None:
            if interaction.message is not None:
                self.pressed_under(pressed.text, pressed.key, str(interaction.message.id))
            await self.admit(pressed)

    # -- outbound -------------------------------------------------------------------------------

    async def _resolve(self, key: SessionKey) -> Any:
        client = self._client
        if client is None:
            raise RuntimeError("the Discord channel is not running")
        if key.scope.direct:
            user = client.get_user(int(key.id)) or await client.fetch_user(int(key.id))
            return user.dm_channel or await user.create_dm()
        return client.get_channel(int(key.id)) or await client.fetch_channel(int(key.id))

    async def send(self, msg: OutboundMessage) -> None:
        interaction = self._slash.answering(msg.reply_to)
        last = await replies.send(msg, interaction, self._resolve)
        if msg.buttons and last is not None:
            self.sent_buttons(msg, str(last.id))

    async def replace_text(self, key: SessionKey, ref: str, text: str) -> None:
        await replace_text(self._resolve, key, ref, text)

    def live(
        self, key: SessionKey, reply_to: str | None, placed: Callable[[str], None]
    ) -> LiveReply[Any] | None:
        if self._client is None or not self.streaming:
            return None
        if reply_to is not None and self._slash.waiting(reply_to):
            return None  # a slash command is answered by follow-ups, whole
        return DiscordLive(self._resolve, key, reply_to, placed)

    async def take_back(self, key: SessionKey, ref: str) -> None:
        await take_back(self._resolve, key, ref)

    def transient(self, exc: BaseException) -> bool:
        import aiohttp
        import discord

        if isinstance(exc, discord.HTTPException):
            return exc.status == 429 or exc.status >= 500
        return isinstance(exc, (aiohttp.ClientError, OSError)) or super().transient(exc)

    typing_every = 8.0  # Discord shows "typing…" for 10 seconds after each request

    async def show_typing(self, key: SessionKey) -> bool:
        import discord

        channel = await self._resolve(key)
        try:
            await channel.typing()  # one request (discord.py's loop of them cancels mid-request)
        except discord.Forbidden:
            return False
        return True


def _connection_problem(exc: BaseException | None) -> str:
    import discord

    if isinstance(exc, discord.PrivilegedIntentsRequired):
        return INTENT_HELP
    if isinstance(exc, discord.LoginFailure):
        return "Discord no longer accepts the bot token; put the new one in channels.discord.token"
    if isinstance(exc, discord.ConnectionClosed) and exc.code == 4004:
        return "Discord rejected the bot token on the gateway (4004); check channels.discord.token"
    return f"the Discord connection failed: {type(exc).__name__}: {exc}"
