"""A loop's nudge in the owner's Discord DM: its buttons, and the loop closed by a press."""

from __future__ import annotations

import asyncio
from datetime import datetime
from zoneinfo import ZoneInfo

from gateway.app import build_app
from gateway.channel_setup import build_channels
from tests.conftest import make_config
from tests.fakes.anthropic_api import Reply
from tests.fakes.clock import FakeClock
from tests.fakes.discord_api import OWNER_ID, dm_channel_id

BERLIN = ZoneInfo("Europe/Berlin")


async def test_a_nudge_in_the_dm_is_closed_by_its_done_button(home, fake_api, fake_discord):
    clock = FakeClock(datetime(2026, 3, 12, 18, 0, tzinfo=BERLIN))
    config = make_config(
        home, fake_api.base_url, channels={"discord": fake_discord.channel_config()}
    )
    channels = build_channels(config, clock)
    for channel in channels:  # short waits, as the other Discord tests have them
        channel.guild_ready_timeout = 0.1  # type: ignore[attr-defined]
        channel.ready_timeout = 10  # type: ignore[attr-defined]
    app = build_app(config, channels, clock=clock)
    await app.start()
    try:
        args = {"what": "Call the landlord", "due": "2026-03-13 09:00"}
        fake_api.enqueue(Reply(tool_calls=[("loop_open", args)]), Reply("Noted."))
        fake_discord.message("I must call the landlord tomorrow at 9", guild=False)
        await fake_discord.wait_for(
            lambda: any(m["content"] == "Noted." for m in fake_discord.sent), 30
        )
        await clock.set(datetime(2026, 3, 13, 9, 0, tzinfo=BERLIN))
        await fake_discord.wait_for(
            lambda: any(m["content"].startswith("Due now") for m in fake_discord.sent), 30
        )
        [nudge] = [m for m in fake_discord.sent if m["content"].startswith("Due now")]
        assert nudge["channel_id"] == dm_channel_id(OWNER_ID)
        labels = [c["label"] for row in nudge["components"] for c in row["components"]]
        assert labels == ["Done", "Drop"]
        fake_discord.press(nudge, "Done")
        shown = fake_discord.messages[int(nudge["message_id"])]
        await fake_discord.wait_for(lambda: not shown["components"])
        assert shown["content"] == "Done: #1 Call the landlord."
        async with asyncio.timeout(10):
            await app.idle()
    finally:
        await app.stop()
    assert "- [x] #1 Call the landlord" in (home / "workspace" / "memory" / "LOOPS.md").read_text()
