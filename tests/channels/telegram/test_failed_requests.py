"""A Telegram request that failed is let go before its retry is waited for: the exception, its
traceback's frames and the connection it failed on are freed at once, by reference counting.
During an outage every chat's send and the long poll wait between tries; what each wait held
would otherwise add up, chat by chat."""

from __future__ import annotations

import asyncio
import gc
import logging
from collections import Counter

from channels.telegram.api import call
from channels.telegram.polling import Poller
from channels.telegram.transport import Transport
from tests.conftest import exceptions_alive
from tests.fakes.clock import FakeClock

FAILURES = {"NetworkError", "RemoteProtocolError"}  # PTB's, httpx2's and httpcore2's


async def _bot(fake_telegram):
    from telegram import Bot

    bot = Bot(
        fake_telegram.token,
        base_url=f"{fake_telegram.base_url}/bot",
        request=Transport(),
        get_updates_request=Transport(),
    )
    await bot.initialize()
    return bot


async def _held_while_waiting(fake_telegram, monkeypatch, run):
    """What failures are alive while ``run(bot, clock)`` waits its first backoff, with the
    cycle collector off (and no log capture keeping records); then Telegram is back and the
    wait ends. Returns that, the task running ``run``, and the bot to shut down."""
    monkeypatch.setattr(logging.getLogger(), "handlers", [])
    bot = await _bot(fake_telegram)
    clock = FakeClock()
    fake_telegram.down = True
    gc.collect()
    gc.disable()
    try:
        task = asyncio.ensure_future(run(bot, clock))
        await clock.next_wake()  # the request failed; the retry's wait has begun
        held = exceptions_alive(FAILURES)
        fake_telegram.down = False
        clock.tick(3600)
        await clock.set(clock.now())  # wake the sleeper: the retry goes through
        return held, task, bot
    finally:
        gc.enable()


async def test_a_send_waiting_to_be_tried_again_holds_no_failed_request(fake_telegram, monkeypatch):
    async def send(bot, clock):
        return await call(lambda: bot.send_message(42, "hello"), clock, repeatable=False)

    held, task, bot = await _held_while_waiting(fake_telegram, monkeypatch, send)
    try:
        sent = await asyncio.wait_for(task, 10)
    finally:
        await bot.shutdown()
    assert sent.text == "hello"  # tried again once Telegram was back, and delivered
    assert held == Counter()


async def test_the_long_poll_waiting_to_poll_again_holds_no_failed_request(
    fake_telegram, monkeypatch
):
    got = asyncio.Event()

    def dispatch(update):
        got.set()

    async def poll(bot, clock):
        poller = Poller(dispatch, lambda reason: None, asyncio.Event(), clock)
        await poller.run(bot, poll_timeout=0.1, retry_backoff=1.0)

    held, task, bot = await _held_while_waiting(fake_telegram, monkeypatch, poll)
    try:
        fake_telegram.text("are you back?")
        await asyncio.wait_for(got.wait(), 10)  # polled again once Telegram was back
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await bot.shutdown()
    assert held == Counter()
