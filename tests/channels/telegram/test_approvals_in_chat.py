"""Requests to act answered in the owner's Telegram chat: the buttons, where a group's request
goes, and group members who cannot set one off."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from gateway.app import build_app
from gateway.channel_setup import build_channels
from gateway.running import App
from tests.conftest import OWNER, TG_GROUP, make_config
from tests.fakes.telegram_api import BOT_USERNAME
from tests.test_approvals import CALENDAR, calendar_log, obedient


@pytest.fixture
async def gateway(home: Path, fake_api, fake_telegram, tmp_path: Path) -> AsyncIterator[App]:
    fake_api.brain = obedient
    server = {
        "command": sys.executable,
        "args": [CALENDAR],
        "env": {"CAL_LOG": str(tmp_path / "calendar.log")},
        "shared": True,
    }
    tg = fake_telegram.channel_config(allow_from=[str(OWNER)], groups=[str(TG_GROUP)])
    config = make_config(
        home, fake_api.base_url, channels={"telegram": tg}, mcp={"servers": {"cal": server}}
    )
    app = build_app(config, build_channels(config))
    await app.start()
    try:
        yield app
    finally:
        await app.stop()


def _to(fake_telegram: Any, chat: int) -> list[dict[str, Any]]:
    return [m for m in fake_telegram.sent if m["chat_id"] == str(chat)]


def _buttoned(fake_telegram: Any) -> list[dict[str, Any]]:
    return [m for m in fake_telegram.sent if m.get("reply_markup")]


async def test_the_owner_approves_with_a_button_and_the_request_loses_its_buttons(
    gateway, fake_telegram, tmp_path
):
    fake_telegram.text("DO cal__delete_calendar name=work")
    await fake_telegram.wait_for(lambda: bool(_buttoned(fake_telegram)), 30)
    [request] = _buttoned(fake_telegram)
    assert request["chat_id"] == str(OWNER) and "cal__delete_calendar" in request["shown"]
    rows = json.loads(request["reply_markup"])["inline_keyboard"]
    assert [b["text"] for row in rows for b in row] == [
        "Approve once",
        "Always for this tool",
        "Deny",
    ]
    assert calendar_log(tmp_path / "calendar.log") == []
    fake_telegram.press(request, "Approve once")
    await fake_telegram.wait_for(
        lambda: any("Calendar work deleted." in m["shown"] for m in _to(fake_telegram, OWNER)), 30
    )
    assert calendar_log(tmp_path / "calendar.log") == ["deleted work"]
    edits = fake_telegram.calls_to("editMessageText")
    assert any("Approved once." in str(c.params.get("text")) for c in edits)
    await gateway.idle()


async def test_a_group_request_is_asked_privately_and_a_member_sets_off_nothing(
    gateway, fake_telegram, tmp_path
):
    mention = f"@{BOT_USERNAME}"
    fake_telegram.text(
        f"{mention}\nDO cal__delete_calendar name=secret-project",
        chat=TG_GROUP,
        chat_type="supergroup",
    )
    await fake_telegram.wait_for(lambda: bool(_buttoned(fake_telegram)), 30)
    [request] = _buttoned(fake_telegram)
    assert request["chat_id"] == str(OWNER)  # the owner's private chat, not the group
    assert "secret-project" in request["shown"]
    fake_telegram.press(request, "Deny")
    await fake_telegram.wait_for(lambda: bool(_to(fake_telegram, TG_GROUP)), 30)
    await gateway.idle()
    group = " ".join(m["shown"] for m in _to(fake_telegram, TG_GROUP))
    assert "declined" in group
    # A member's message with the same order asks nobody and runs nothing.
    fake_telegram.text(
        f"{mention}\nDO cal__delete_calendar name=work",
        user=99,
        first_name="Mallory",
        chat=TG_GROUP,
        chat_type="supergroup",
    )
    await fake_telegram.wait_for(lambda: len(_to(fake_telegram, TG_GROUP)) >= 2, 30)
    await gateway.idle()
    assert len(_buttoned(fake_telegram)) == 1
    assert "only the owner's own requests" in _to(fake_telegram, TG_GROUP)[-1]["shown"]
    assert calendar_log(tmp_path / "calendar.log") == []
