"""The Telegram client's connection pool under load and cancellation (channels/telegram/
transport.py): through the real python-telegram-bot client against the fake Bot API, turns that
end while their typing request waits for a connection, and requests cancelled outright, never
leave the pool short; a pool that stops giving out connections while Telegram answers is
replaced."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest

from channels.telegram.channel import TelegramChannel
from channels.telegram.transport import Transport
from gateway.app import build_app
from gateway.channel_setup import build_channels
from gateway.contract.events import OutboundMessage, telegram_private
from gateway.running import App
from tests.conftest import make_config

CHATS = [telegram_private(100 + i) for i in range(20)]


@pytest.fixture
async def small_pool(home, fake_api, fake_telegram) -> AsyncIterator[tuple[App, TelegramChannel]]:
    """A gateway whose Telegram client has two connections for everything but the long poll,
    against a Telegram that takes a few milliseconds to show "typing…"."""
    fake_telegram.latency["sendChatAction"] = 0.004
    config = make_config(
        home, fake_api.base_url, channels={"telegram": fake_telegram.channel_config()}
    )
    channels = build_channels(config)
    [channel] = channels
    assert isinstance(channel, TelegramChannel)
    channel.pool_size = 2
    channel.typing_after = 0  # "typing…" from a turn's start, however short it is
    app = build_app(config, channels)
    await app.start()
    yield app, channel
    await app.stop()


async def _everyone_hears(channel: TelegramChannel, fake_telegram, text: str) -> None:
    sends = (channel.send(OutboundMessage(key, text)) for key in CHATS)
    await asyncio.wait_for(asyncio.gather(*sends), 30)
    await channel.requests_done(30)
    got = [s for s in fake_telegram.sent if s["shown"] == text]
    assert sorted(int(s["chat_id"]) for s in got) == [int(k.id) for k in CHATS]
    assert channel.transport is not None
    assert channel.transport.pool() == {"requests": 0, "replaced": 0}  # none under way or stuck
    # Both connections are there for the next requests: with one held by an answer that
    # does not come, the other still carries a message at once.
    release = fake_telegram.hold("sendChatAction")
    typing = len(fake_telegram.calls_to("sendChatAction"))
    held = asyncio.ensure_future(channel.show_typing(CHATS[0]))
    await fake_telegram.wait_for(lambda: len(fake_telegram.calls_to("sendChatAction")) > typing)
    await asyncio.wait_for(channel.send(OutboundMessage(CHATS[1], "and one more")), 10)
    release.set()
    await asyncio.wait_for(held, 10)


async def test_turns_ending_while_typing_waits_for_a_connection_leave_no_slot_taken(
    small_pool, fake_telegram
):
    _app, channel = small_pool

    async def turn(key, steps: int) -> None:
        async with channel.typing(key):
            for _ in range(steps):  # the turn ends after a few turns of the loop: its typing
                await asyncio.sleep(0)  # request is still waiting for one of the 2 connections

    for wave in range(30):
        await asyncio.gather(*(turn(key, (wave + i) % 5) for i, key in enumerate(CHATS)))
    await _everyone_hears(channel, fake_telegram, "still here")
    assert len(fake_telegram.calls_to("sendChatAction")) >= len(CHATS)


async def test_requests_cancelled_while_they_wait_for_a_connection_leave_no_slot_taken(
    small_pool, fake_telegram
):
    """Whoever cancels a request (a stopped turn, shutdown, a timeout): it is carried out all
    the same, and the pool keeps all its connections."""
    _app, channel = small_pool
    for wave in range(30):
        tasks = [asyncio.ensure_future(channel.show_typing(key)) for key in CHATS]
        for _ in range(wave % 4):
            await asyncio.sleep(0)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    await _everyone_hears(channel, fake_telegram, "still here")


async def _bot(fake_telegram, transport: Transport):
    from telegram import Bot

    bot = Bot(fake_telegram.token, base_url=f"{fake_telegram.base_url}/bot", request=transport)
    await bot.initialize()
    return bot


@pytest.mark.parametrize(
    ("orphaned", "telegram_answers", "replaced"),
    [(True, True, True), (True, False, False), (False, True, False)],
    ids=["stuck", "telegram-down", "only-busy"],
)
async def test_a_pool_held_by_no_request_while_telegram_answers_is_replaced(
    fake_telegram, caplog, orphaned, telegram_answers, replaced
):
    """The one connection is taken and three requests in a row find none free. The client is
    replaced (once, with a warning) only if the connection is held by no request of the
    transport's and Telegram answers our long poll meanwhile; if Telegram is down, or the
    connection is simply busy with a request Telegram is slow to answer, the client is kept."""
    from telegram.error import TimedOut

    answered = time.monotonic() if telegram_answers else time.monotonic() - 3600
    transport = Transport(pool_size=1, pool_timeout=0.05, others_answered=lambda: answered)
    bot = await _bot(fake_telegram, transport)
    release = asyncio.Event()
    held = orphan = None
    if orphaned:
        # The slot taken by something that is no request of the transport's (as a request
        # cancelled midway once left it): a response opened on its client and never read.
        url = f"{fake_telegram.base_url}/bot{fake_telegram.token}/getMe"
        orphan = transport._client.stream("POST", url)
        await orphan.__aenter__()
    else:
        release = fake_telegram.hold("sendChatAction")
        held = asyncio.ensure_future(bot.send_chat_action(1, "typing"))
        await fake_telegram.wait_for(lambda: bool(fake_telegram.calls_to("sendChatAction")))
    for _ in range(3):
        with pytest.raises(TimedOut, match="Pool timeout"):
            await bot.send_message(1, "lost")
    warnings = [r.getMessage() for r in caplog.records if "client was replaced" in r.getMessage()]
    if replaced:
        await asyncio.wait_for(bot.send_message(1, "through the new client"), 10)
        assert transport.pool()["replaced"] == 1
        assert warnings == [
            "telegram: no connection to Telegram came free for 3 requests in a row while "
            "Telegram answered our long poll, and some were held by no request; the HTTP "
            "client was replaced (1 time(s) since the start)"
        ]
    else:
        with pytest.raises(TimedOut, match="Pool timeout"):
            await bot.send_message(1, "still waiting")
        assert transport.pool()["replaced"] == 0 and warnings == []
    release.set()
    if held is not None:
        await asyncio.wait_for(held, 10)  # the slow request was carried out all the same
    if orphan is not None:
        await orphan.__aexit__(None, None, None)
    await bot.shutdown()


async def test_requests_name_the_client_and_reuse_the_addresses_parsed(fake_telegram):
    """Each request says it comes from python-telegram-bot, as PTB's own client does; an
    address is parsed once and reused, and another method's address is its own."""
    transport = Transport()
    bot = await _bot(fake_telegram, transport)
    try:
        for text in ("one", "two"):
            await bot.send_message(42, text)
        await bot.get_me()
    finally:
        await bot.shutdown()
    calls = [c for c in fake_telegram.calls if c.method in ("sendMessage", "getMe")]
    assert [c.method for c in calls][-3:] == ["sendMessage", "sendMessage", "getMe"]
    assert all(c.user_agent == Transport.USER_AGENT for c in calls), calls
    assert Transport.USER_AGENT.startswith("python-telegram-bot")
    urls = transport._urls
    assert {str(u).rsplit("/", 1)[-1] for u in urls.values()} >= {"sendMessage", "getMe"}
    assert all(str(u) == url for url, u in urls.items())  # each the address it was made from


def test_the_addresses_kept_are_bounded():
    """File downloads have an address each: the parsed ones kept stay few."""
    from channels.telegram.transport import URLS_KEPT

    transport = Transport()
    for i in range(URLS_KEPT * 2 + 5):
        assert str(transport._url(f"http://127.0.0.1:1/file/bot1:a/photos/{i}.jpg")).endswith(
            f"/{i}.jpg"
        )
    assert 0 < len(transport._urls) <= URLS_KEPT
