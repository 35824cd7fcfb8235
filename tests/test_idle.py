"""Idle costs nothing: a simulated week with the heartbeat and the daily summary on and no
messages makes no model call, but for what the summary's own configuration asks for."""

from __future__ import annotations

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from agent.usage.ledger import UsageLedger
from tests.conftest import OWNER, make_config, running
from tests.fakes.anthropic_api import Reply
from tests.fakes.clock import FakeClock

BERLIN = ZoneInfo("Europe/Berlin")


@pytest.mark.parametrize("skip_inactive", [True, False])
async def test_a_quiet_week_costs_only_what_the_summary_is_set_to(
    home, fake_api, fake_telegram, skip_inactive
):
    target = f"telegram:private:{OWNER}"
    config = make_config(
        home,
        fake_api.base_url,
        channels={"telegram": fake_telegram.channel_config(allow_from=[str(OWNER)])},
        schedule={
            "heartbeat": {"enabled": True, "every_minutes": 30, "target": target},
            "daily_summary": {
                "enabled": True,
                "time": "21:00",
                "target": target,
                "skip_inactive": skip_inactive,
            },
        },
    )
    fake_api.brain = lambda body: Reply("A quiet day: nothing happened.")
    start = datetime(2026, 11, 16, 0, 0, tzinfo=BERLIN)
    clock = FakeClock(start)
    async with running(config, clock):
        wakes = digests = 0
        while (wake := await clock.next_wake()) <= start + timedelta(days=7):
            await clock.advance()
            wakes += 1
            local = wake.astimezone(BERLIN)
            if not skip_inactive and (local.hour, local.minute) == (21, 0):
                digests += 1  # each digest is sent before the clock moves on
                await fake_telegram.wait_for(lambda n=digests: len(fake_telegram.sent) >= n)
    assert wakes >= 7 * 28  # the heartbeat's beats within active hours, and the summaries
    ledger = UsageLedger(home / "state" / "usage.sqlite", BERLIN)
    try:
        rows = {r["key"]: r["calls"] for r in ledger.totals("purpose")}
    finally:
        ledger.close()
    if skip_inactive:
        assert fake_api.message_requests == []
        assert rows == {}
    else:
        # The summary was told to write even on quiet days: one call a day, nothing else.
        assert len(fake_api.message_requests) == 7
        assert rows == {"digest": 7}
