"""A platform outage in the middle of a reply, through the real clients: python-telegram-bot
against the fake Bot API with every connection dropped, discord.py against the fake Discord
answering 503 with its gateway cut. The reply waits, goes out once when the platform is back,
and the chat goes on; nothing is lost and nothing is sent twice.

The gateway's retry waits run on a clock whose sleeps pass at once; the clients' own backoff
is real but short. The outage lasts until the test has seen the send fail more than once."""

from __future__ import annotations

import asyncio
import gc
import logging
from collections import Counter
from datetime import UTC, datetime

from channels.discord.channel import DiscordChannel
from channels.telegram.channel import TelegramChannel
from gateway.app import build_app
from gateway.channel_setup import build_channels
from tests.conftest import OWNER, exceptions_alive, make_config, outbox_rows
from tests.fakes.anthropic_api import Reply
from tests.fakes.clock import FakeClock

START = datetime(2026, 11, 23, 10, 0, tzinfo=UTC)


async def _started(home, fake_api, section: str, values: dict, **attrs):
    config = make_config(home, fake_api.base_url, channels={section: values})
    channels = build_channels(config)  # the clients' own backoff on the real clock
    for channel in channels:
        for name, value in attrs.items():
            setattr(channel, name, value)
    app = build_app(config, channels, clock=FakeClock(START, instant_sleep=True))
    await app.start()
    return app, channels[0]


async def test_telegram_down_mid_reply_the_reply_arrives_once_after_and_polling_resumes(
    home, fake_api, fake_telegram
):
    section = fake_telegram.channel_config(allow_from=[str(OWNER)])
    app, channel = await _started(home, fake_api, "telegram", section, retry_backoff=0.01)
    assert isinstance(channel, TelegramChannel)
    answer = asyncio.Event()
    fake_api.enqueue(Reply("here is your answer", hold=answer))
    try:
        fake_telegram.text("what is on today?")
        await fake_api.wait_for_requests(1)
        fake_telegram.down = True  # Telegram goes away while the answer is being written
        answer.set()
        # The send fails, is held, and is tried again (five requests a try), more than once;
        # the next long poll is cut too.
        dropped = fake_telegram.dropped
        await fake_telegram.wait_for(lambda: dropped["sendMessage"] >= 10 and dropped["getUpdates"])
        assert fake_telegram.sent == []
        assert "cannot send since" in app.gateway.channel_states()[0]["state"]
        fake_telegram.down = False
        [reply] = await fake_telegram.wait_sent(1)
        assert reply["text"] == "here is your answer"
        # Polling came back on its own: the next message is read and answered.
        fake_telegram.text("and tomorrow?")
        sent = await fake_telegram.wait_sent(2)
        await app.idle()
    finally:
        await app.stop()
    assert [s["text"] for s in sent] == ["here is your answer", "echo: and tomorrow?"]
    assert outbox_rows(home) == [("here is your answer", "sent"), ("echo: and tomorrow?", "sent")]


# What a failed request leaves: the client's exceptions and Corvid's own.
FAILURES = {"NetworkError", "TimedOut", "Unreachable", "RemoteProtocolError", "ConnectError"}


async def test_telegram_down_what_each_failed_request_left_is_freed_without_the_collector(
    home, fake_api, fake_telegram, monkeypatch
):
    """Every failed send and poll of an outage raises a chain of exceptions whose tracebacks
    hold the frames and the connection that failed. Nothing keeps one past its handling, and
    no reference cycle does either: with 200 chats' replies failing at once, chains left for
    the cycle collector cost the process some 14 MiB it never gave back."""
    # The test run's log capture keeps every record, and with it the exceptions logged.
    monkeypatch.setattr(logging.getLogger(), "handlers", [])
    section = fake_telegram.channel_config(allow_from=[str(OWNER)])
    app, _ = await _started(home, fake_api, "telegram", section, retry_backoff=0.01)
    answer = asyncio.Event()
    fake_api.enqueue(Reply("here is your answer", hold=answer))
    gc.collect()
    gc.disable()  # whatever is freed below, reference counting freed
    try:
        try:
            fake_telegram.text("what is on today?")
            await fake_api.wait_for_requests(1)
            fake_telegram.down = True
            answer.set()
            dropped = fake_telegram.dropped
            await fake_telegram.wait_for(
                lambda: dropped["sendMessage"] >= 10 and dropped["getUpdates"]
            )
            fake_telegram.down = False
            await fake_telegram.wait_sent(1)
            await app.idle()
        finally:
            await app.stop()  # so that no request is still under way
        assert dropped["sendMessage"] >= 10  # the failures happened
        assert exceptions_alive(FAILURES) == Counter()  # and nothing of them is left
    finally:
        gc.enable()


async def test_discord_down_mid_reply_the_reply_arrives_once_after_and_the_gateway_resumes(
    home, fake_api, fake_discord
):
    from tests.fakes.discord_api import OWNER_ID as DISCORD_OWNER
    from tests.fakes.discord_api import Fault, dm_channel_id

    section = fake_discord.channel_config()
    app, channel = await _started(
        home, fake_api, "discord", section, guild_ready_timeout=0.1, ready_timeout=10
    )
    assert isinstance(channel, DiscordChannel)
    path = f"/channels/{dm_channel_id(DISCORD_OWNER)}/messages"
    answer = asyncio.Event()
    fake_api.enqueue(Reply("here is your answer", hold=answer))
    try:
        fake_discord.message("what is on today?", guild=False)
        await fake_api.wait_for_requests(1)
        # Discord goes away: its REST API answers 503 and the gateway connection drops.
        fake_discord.fail("POST", path, *[Fault(503, {"message": "Service Unavailable"})] * 4)
        assert await fake_discord.disconnect(1001)
        answer.set()
        [reply] = await fake_discord.wait_sent(1)
        assert reply["content"] == "here is your answer"
        assert len(fake_discord.calls_to("POST", path)) == 5  # four refused, one taken
        fake_discord.message("and tomorrow?", guild=False)  # read after the gateway resumed
        sent = await fake_discord.wait_sent(2)
        await app.idle()
    finally:
        await app.stop()
    assert [m["content"] for m in sent] == ["here is your answer", "echo: and tomorrow?"]
    assert outbox_rows(home) == [("here is your answer", "sent"), ("echo: and tomorrow?", "sent")]
