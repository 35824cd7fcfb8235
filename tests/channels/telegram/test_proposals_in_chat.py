"""Memory proposals in the owner's Telegram chat: what goes and what comes told apart, each
message's buttons gone once answered, and a rejection after some changes were applied that
says they stay."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from gateway.app import build_app
from gateway.channel_setup import build_channels
from gateway.running import App
from tests.conftest import OWNER, make_config
from tests.fakes.clock import FakeClock
from tests.test_consolidation_e2e import MEMORY, NOW, changes, consolidating_brain, week_of_logs


@pytest.fixture
async def gateway(home: Path, fake_api, fake_telegram) -> AsyncIterator[App]:
    (home / "workspace" / "MEMORY.md").write_text(MEMORY)
    week_of_logs(home)
    fake_api.brain = consolidating_brain([], changes(NOW.date().isoformat()))
    config = make_config(
        home,
        fake_api.base_url,
        channels={"telegram": fake_telegram.channel_config(allow_from=[str(OWNER)])},
        memory={"consolidation": {"target": f"telegram:private:{OWNER}", "time": "23:30"}},
    )
    clock = FakeClock(NOW)
    app = build_app(config, build_channels(config, clock), clock=clock)
    await app.start()
    try:
        yield app
    finally:
        await app.stop()


def buttons_of(fake_telegram: Any, sent: dict[str, Any]) -> str | None:
    """The keyboard a message shows now (None: no buttons)."""
    return fake_telegram.markup.get((int(sent["chat_id"]), sent["message_id"]))


async def newest_with(
    fake_telegram: Any, label: str, after: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The newest message with a button ``label``, sent after the message ``after``."""
    since = after["message_id"] if after is not None else 0

    def found() -> dict[str, Any] | None:
        return next(
            (
                m
                for m in reversed(fake_telegram.sent)
                if label in str(m.get("reply_markup")) and m["message_id"] > since
            ),
            None,
        )

    await fake_telegram.wait_for(lambda: found() is not None, 30)
    message = found()
    assert message is not None
    return message


async def test_a_proposal_shows_old_and_new_apart_and_its_buttons_go_once_answered(
    gateway, fake_telegram
):
    assert gateway.scheduler is not None
    await asyncio.wait_for(gateway.scheduler.run_now("memory-consolidation"), 30)
    proposal = await newest_with(fake_telegram, "Apply all")
    shown = proposal["shown"].splitlines()
    # Each change's passages as a diff: the old line and the new one, told apart.
    assert "- - Anna lives in Porto." in shown
    assert any(line.startswith("+ - Anna lives in Lisbon. (learned ") for line in shown), shown
    assert not any(line.strip() in ("•", "• •") for line in shown), proposal["shown"]

    fake_telegram.press(proposal, "Choose")
    choices = await newest_with(fake_telegram, "Apply 2")
    await fake_telegram.wait_for(lambda: buttons_of(fake_telegram, proposal) is None, 30)
    assert any(line.startswith("+ - Likes tea a lot.") for line in choices["shown"].splitlines())

    fake_telegram.press(choices, "Apply 2")
    rest = await newest_with(fake_telegram, "Reject the rest", after=choices)
    assert "Apply 2" not in str(rest["reply_markup"])
    await fake_telegram.wait_for(lambda: buttons_of(fake_telegram, choices) is None, 30)

    fake_telegram.press(rest, "Reject the rest")
    said = "the change(s) 2 applied before stay."
    await fake_telegram.wait_for(lambda: any(said in m["shown"] for m in fake_telegram.sent), 30)
    await fake_telegram.wait_for(lambda: buttons_of(fake_telegram, rest) is None, 30)
    assert not any("nothing was changed" in m["shown"] for m in fake_telegram.sent)
    memory = (gateway.config.workspace / "MEMORY.md").read_text()
    assert memory.count("Likes tea") == 1 and "Porto" in memory
    # The messages that asked read how it ended.
    edited = [e["shown"] for e in fake_telegram.edits]
    assert any("Applied change(s) 2 of memory proposal" in text for text in edited)
