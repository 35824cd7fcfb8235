"""Without schedule.allow_shared no shared chat schedules: real Telegram and Discord clients."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

from channels.pairing import PairingStore
from tests.conftest import OWNER, TG_GROUP
from tests.fakes.anthropic_api import Reply, last_user_text, tool_results
from tests.fakes.discord_api import CHANNEL_ID, OWNER_ID, THREAD_ID
from tests.fakes.telegram_api import BOT_USERNAME

GUEST = 77


def _schedules(body: dict[str, Any]) -> Reply:
    """A model that schedules whatever it is asked to, then says how that went."""
    results = tool_results(body)
    if results:
        return Reply("error" if results[0].get("is_error") else "scheduled")
    asked = last_user_text(body)
    return Reply(tool_calls=[("schedule", {"instruction": asked[-20:], "every_minutes": 60})])


def _paired(home, channel: str, user: int) -> None:
    """Someone the owner approved before Corvid started: their direct chat is a guest's."""
    store = PairingStore(home / "state" / "pairing.json")
    request, _ = store.request(channel, str(user), "Eve")
    assert request is not None
    store.approve(request.code)


def _jobs(home) -> list[dict[str, Any]]:
    path = home / "state" / "jobs.json"
    return json.loads(path.read_text())["jobs"] if path.exists() else []


def _refusals(fake_api) -> dict[str, str]:
    """What the schedule tool said, by the session it was called in."""
    said = {}
    for request in fake_api.message_requests:
        if results := tool_results(request.body):
            session = re.search(r"Session: ([\w:.@-]+)", request.raw)
            assert session is not None
            said[session[1]] = str(results[0]["content"])
    return said


def _only_refusals(home, fake_api, *sessions: str) -> None:
    """The schedule tool was called in exactly these sessions, refused each, made no job."""
    refused = _refusals(fake_api)
    assert set(refused) == set(sessions)
    assert all("Only the owner schedules" in r for r in refused.values()), refused
    assert _jobs(home) == []


async def test_no_shared_telegram_chat_schedules_a_group_a_forum_topic_or_a_guest(
    home, fake_api, fake_telegram, telegram_gateway
):
    _paired(home, "telegram", GUEST)
    fake_api.brain = _schedules
    app = await telegram_gateway()
    group = {"chat": TG_GROUP, "chat_type": "supergroup"}
    fake_telegram.text(f"@{BOT_USERNAME} remind us hourly (group)", user=5, **group)
    fake_telegram.text(f"@{BOT_USERNAME} remind us hourly (topic)", user=5, thread=7, **group)
    fake_telegram.text("remind me hourly (guest)", user=GUEST, first_name="Eve")
    await fake_telegram.wait_sent(3)
    await asyncio.wait_for(app.idle(), 10)
    _only_refusals(
        home,
        fake_api,
        f"telegram:group:{TG_GROUP}",
        f"telegram:group:{TG_GROUP}:topic:7",
        f"telegram:guest:{GUEST}",
    )
    # The owner's own chat, on the same gateway, does schedule: the refusals were the rule's.
    fake_telegram.text("remind me hourly (owner)", user=OWNER)
    await fake_telegram.wait_sent(4)
    assert [j["target"] for j in _jobs(home)] == [f"telegram:private:{OWNER}"]


async def test_no_shared_discord_chat_schedules_a_channel_a_thread_or_a_guest(
    home, fake_api, fake_discord, discord_gateway
):
    _paired(home, "discord", GUEST)
    fake_api.brain = _schedules
    app = await discord_gateway()
    fake_discord.message("remind us hourly (channel)", author=5, mentions_bot=True)
    fake_discord.message(
        "remind us hourly (thread)", author=5, channel=THREAD_ID, mentions_bot=True
    )
    fake_discord.message("remind me hourly (guest)", author=GUEST, guild=False)
    await fake_discord.wait_sent(3)
    await asyncio.wait_for(app.idle(), 10)
    _only_refusals(
        home,
        fake_api,
        f"discord:channel:{CHANNEL_ID}",
        f"discord:thread:{THREAD_ID}",
        f"discord:guest:{GUEST}",
    )
    fake_discord.message("remind me hourly (owner)", author=OWNER_ID, guild=False)
    await fake_discord.wait_sent(4)
    assert [j["target"] for j in _jobs(home)] == [f"discord:dm:{OWNER_ID}"]
