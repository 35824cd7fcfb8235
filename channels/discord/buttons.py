"""Buttons under the bot's messages on Discord: each carries a chat command for the owner."""

from __future__ import annotations

import contextlib
from typing import Any

from channels.access import Access, Arrival
from gateway.contract.events import discord_dm


def view(buttons: tuple[tuple[str, str], ...]) -> Any:
    """A row of buttons for ``channel.send(view=...)``; None when there are none."""
    if not buttons:
        return None
    import discord

    row = discord.ui.View(timeout=None)
    for n, (label, command) in enumerate(buttons):
        style = discord.ButtonStyle.primary if n == 0 else discord.ButtonStyle.secondary
        row.add_item(discord.ui.Button(label=label, custom_id=command[:100], style=style))
    return row


async def pressed(interaction: Any, access: Access | None) -> Arrival | None:
    """The command a button press carries, if it counts; every press is acknowledged."""
    import discord

    if interaction.type is not discord.InteractionType.component:
        return None  # slash commands are the command tree's
    with contextlib.suppress(discord.HTTPException):
        await interaction.response.defer()
    command = str((interaction.data or {}).get("custom_id", ""))
    user = interaction.user
    if access is None or interaction.guild_id is not None:
        return None
    key = discord_dm(user.id)
    return access.press(key, str(user.id), user.display_name, command, str(interaction.id))
