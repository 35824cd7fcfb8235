"""Requests to act answered in the owner's Discord DM: the buttons, a press from anyone else,
and the request settled once answered."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from gateway.app import build_app
from gateway.channel_setup import build_channels
from gateway.running import App
from tests.conftest import make_config
from tests.fakes.discord_api import OWNER_ID, dm_channel_id
from tests.test_approvals import CALENDAR, calendar_log, obedient


@pytest.fixture
async def gateway(home: Path, fake_api, fake_discord, tmp_path: Path) -> AsyncIterator[App]:
    fake_api.brain = obedient
    server = {
        "command": sys.executable,
        "args": [CALENDAR],
        "env": {"CAL_LOG": str(tmp_path / "calendar.log")},
    }
    config = make_config(
        home,
        fake_api.base_url,
        channels={"discord": fake_discord.channel_config()},
        mcp={"servers": {"cal": server}},
    )
    channels = build_channels(config)
    for channel in channels:  # short waits, as the other Discord tests have them
        channel.guild_ready_timeout = 0.1  # type: ignore[attr-defined]
        channel.ready_timeout = 10  # type: ignore[attr-defined]
    app = build_app(config, channels)
    await app.start()
    try:
        yield app
    finally:
        await app.stop()


def _requests(fake_discord: Any) -> list[dict[str, Any]]:
    return [m for m in fake_discord.sent if m.get("components")]


async def test_the_owner_approves_in_their_dm_and_a_strangers_press_counts_for_nothing(
    gateway, fake_discord, tmp_path
):
    fake_discord.message("DO cal__delete_calendar name=work", guild=False)
    await fake_discord.wait_for(lambda: bool(_requests(fake_discord)))
    [request] = _requests(fake_discord)
    assert request["channel_id"] == dm_channel_id(OWNER_ID)
    assert "cal__delete_calendar" in request["content"]
    labels = [c["label"] for row in request["components"] for c in row["components"]]
    assert labels == ["Approve once", "Always for this tool", "Deny"]
    fake_discord.press(request, "Approve once", user=99)  # not the owner
    await fake_discord.wait_for(lambda: len(fake_discord.interaction_responses) == 1)
    assert calendar_log(tmp_path / "calendar.log") == []
    fake_discord.press(request, "Approve once")
    await fake_discord.wait_for(
        lambda: any("Calendar work deleted." in m["content"] for m in fake_discord.sent), 30
    )
    assert calendar_log(tmp_path / "calendar.log") == ["deleted work"]
    shown = fake_discord.messages[int(request["message_id"])]
    await fake_discord.wait_for(lambda: not shown["components"])
    assert shown["content"].endswith("Approved once.")
    await gateway.idle()
