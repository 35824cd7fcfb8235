"""A group's digest on Discord across a crash: real discord.py ↔ fake Discord, fake clock."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import AsyncIterator
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

from tests.conftest import make_config
from tests.fakes.anthropic_api import Reply
from tests.fakes.clock import FakeClock
from tests.fakes.discord_api import CHANNEL_ID

BERLIN = ZoneInfo("Europe/Berlin")
TODAY = date(2026, 3, 12)
NINE = datetime(TODAY.year, TODAY.month, TODAY.day, 21, 0, tzinfo=BERLIN)
DIGEST = "The group agreed on Sunday."


@contextlib.asynccontextmanager
async def _running(home, fake_api, fake_discord, clock) -> AsyncIterator:
    from gateway.app import build_app
    from gateway.channel_setup import build_channels

    config = make_config(
        home,
        fake_api.base_url,
        channels={"discord": fake_discord.channel_config()},
        schedule={"daily_summary": {"enabled": True, "time": "21:00",
                                    "target": f"discord:channel:{CHANNEL_ID}"}},
    )  # fmt: skip
    channels = build_channels(config, clock)
    for channel in channels:
        channel.guild_ready_timeout = 0.1  # type: ignore[attr-defined]
    app = build_app(config, channels, clock=clock)
    await app.start()
    try:
        yield app
    finally:
        await app.stop()


async def test_a_digest_cut_off_by_a_crash_is_sent_again_with_its_nonce_and_posted_once(
    home, fake_api, fake_discord
):
    """Discord posted the group's digest, but Corvid died before the answer came back (its
    outbox row still "sending", its run still claimed). Discord drops a repeat that carries
    the same nonce, so after the restart the digest is sent again, answered with the message
    already posted, and counted as delivered: once in the channel, not written again."""
    clock = FakeClock(NINE - timedelta(minutes=30))
    async with _running(home, fake_api, fake_discord, clock):
        fake_discord.message("Sunday works for everyone?", author=5, mentions_bot=True)
        await fake_discord.wait_sent(1)
        await clock.idle_until(NINE)
        fake_api.enqueue(Reply(DIGEST))
        await clock.set(NINE)
        [_, first] = await fake_discord.wait_sent(2)
        await clock.idle_until(NINE + timedelta(days=1))
    assert first["content"] == DIGEST and first["channel_id"] == CHANNEL_ID
    assert first["enforce_nonce"] is True
    with sqlite3.connect(home / "state" / "gateway.sqlite") as db:  # as the crash left it
        changed = db.execute("UPDATE outbox SET status = 'sending' WHERE text = ?", (DIGEST,))
        assert changed.rowcount == 1
    with sqlite3.connect(home / "state" / "scheduler.sqlite") as db:
        claimed = db.execute("UPDATE runs SET status = 'claimed' WHERE job = 'daily-summary'")
        assert claimed.rowcount == 1

    requests = len(fake_api.message_requests)
    clock = FakeClock(NINE + timedelta(minutes=5))
    async with _running(home, fake_api, fake_discord, clock) as app:
        await fake_discord.wait_for(lambda: fake_discord.deduplicated == 1)
        await clock.idle_until(NINE + timedelta(days=1))
        assert app.undelivered() == []
        with sqlite3.connect(home / "state" / "gateway.sqlite") as db:
            [(status,)] = db.execute("SELECT status FROM outbox WHERE text = ?", (DIGEST,))
    assert status == "sent"
    assert [m["content"] for m in fake_discord.sent].count(DIGEST) == 1
    assert len(fake_api.message_requests) == requests  # the digest was not written again
