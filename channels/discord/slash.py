"""The chat commands as Discord application (slash) commands, answered by follow-ups."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from channels.access import Arrival
from channels.base import Channel
from channels.discord.inbound import place
from gateway.contract.commands import CHAT_COMMANDS
from gateway.contract.events import discord_dm

if TYPE_CHECKING:
    import discord
    from discord import app_commands

log = logging.getLogger(__name__)


class SlashCommands:
    """One channel's slash commands, and the uses still waiting for their answer."""

    def __init__(self, channel: Channel) -> None:
        self._channel = channel
        # Slash commands waiting for their answer, by the message id the gateway replies to.
        self._waiting: dict[str, Any] = {}

    def tree(self, client: discord.Client) -> app_commands.CommandTree[discord.Client]:
        """The client's command tree, with every chat command on it."""
        from discord import app_commands

        tree = app_commands.CommandTree(client)
        for name, description in CHAT_COMMANDS:
            callback = self._callback(name)
            tree.add_command(
                app_commands.Command(name=name, description=description, callback=callback)
            )
        return tree

    def waiting(self, msg_id: str) -> bool:
        """Whether ``msg_id`` is a slash command still waiting for its answer."""
        return msg_id in self._waiting

    def answering(self, msg_id: str | None) -> Any:
        """The interaction a reply to ``msg_id`` answers, no longer waiting; None for a reply
        to anything else."""
        return self._waiting.pop(msg_id, None) if msg_id else None

    def _callback(self, name: str) -> Callable[[Any], Any]:
        async def callback(interaction):  # type: ignore[no-untyped-def]
            await self._on_command(interaction, name)

        return callback

    async def _on_command(self, interaction: discord.Interaction, name: str) -> None:
        import discord

        user = interaction.user
        group_ids: tuple[str, ...]
        if interaction.guild_id is None:
            key, group_ids = discord_dm(user.id), ()
        elif interaction.channel is None or getattr(interaction.channel, "guild", None) is None:
            return  # a guild channel we cannot place: never guess it is a private chat
        else:
            key, group_ids = place(interaction.channel, user)
        # Refusals and hints go to the person who asked, not to the whole channel.
        access = self._channel.access
        welcome = access is not None and access.allowed(str(user.id))
        if access is not None and group_ids:
            welcome = welcome and any(g in access.groups for g in group_ids)
        msg_id = f"i{interaction.id}"
        try:
            # Discord wants an answer within 3 seconds; the real one follows from the gateway.
            await interaction.response.defer(thinking=True, ephemeral=not welcome)
        except discord.HTTPException as exc:
            log.warning("%s: could not acknowledge /%s: %s", key, name, exc)
            return
        self._waiting[msg_id] = interaction
        arrival = Arrival(
            key=key,
            sender_id=str(user.id),
            sender_name=user.display_name,
            text=f"/{name}",
            message_id=msg_id,
            addressed=True,
            is_command=True,
            group_ids=group_ids,
        )
        answered: list[asyncio.Future[None] | None] = []

        async def take() -> None:
            answered.append(await self._channel.admit(arrival))

        try:
            # In line with the chat's messages, so /new never overtakes one still downloading.
            await self._channel.in_order(interaction.channel_id, take())
            if answered and answered[0] is not None:
                await answered[0]
        finally:
            pending = self._waiting.pop(msg_id, None)
        if pending is not None:  # refused without a word: say so, to this user only
            with contextlib.suppress(Exception):
                await pending.followup.send("That command isn't available to you here.")
