"""Replies that survive an outage (gateway/runtime/delivery.py, retries.py): a reply the platform
cannot take for now waits and is sent again, in order per chat, once, marked late when it is;
given up at the end of the window; kept across a restart. A send is never cut off midway."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from gateway.app import build_app
from gateway.contract.errors import DeliveryError
from gateway.contract.events import OutboundMessage
from gateway.runtime.journal import SendStatus
from tests.conftest import GROUP, PRIVATE, RecordingChannel, make_config, outbox_rows
from tests.fakes.clock import FakeClock

START = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)


async def _started(home, fake_api, clock, **gateway):
    channel = RecordingChannel()
    config = make_config(home, fake_api.base_url, gateway={"shutdown_grace": 5, **gateway})
    app = build_app(config, [channel], clock=clock)
    await app.start()
    return app, channel


async def test_a_reply_the_platform_cannot_take_waits_and_goes_out_once_in_order(
    home, fake_api, caplog
):
    caplog.set_level(logging.INFO, logger="gateway.runtime.turns")
    clock = FakeClock(START)  # each retry waits until the test moves the clock
    app, channel = await _started(home, fake_api, clock)
    try:
        channel.unreachable = 1
        await asyncio.wait_for(channel.push("first"), 10)
        assert await clock.next_wake() == START + timedelta(seconds=2)
        assert channel.sent == []  # not now: it waits to be sent again
        # Another chat is not held up; a later reply to the same chat waits its turn.
        await asyncio.wait_for(channel.push("elsewhere", key=GROUP), 10)
        assert channel.texts(GROUP) == ["echo: elsewhere"]
        await asyncio.wait_for(channel.push("second"), 10)
        assert channel.texts(PRIVATE) == []
        channel.unreachable = 2  # the next two tries fail as well
        await clock.advance()
        await clock.advance()
        await clock.set(await clock.next_wake())
        await asyncio.wait_for(app.gateway.delivery.retries.idle(), 10)
    finally:
        await app.stop()
    assert channel.texts(PRIVATE) == ["echo: first", "echo: second"]
    assert [s for _, s in outbox_rows(home)] == ["sent"] * 3
    assert clock.slept == [2.0, 4.0, 8.0]  # backoff between tries
    # Each turn's line says whether its reply went out then: not the two that waited (the
    # first for the platform, the second behind it).
    turns = [(str(r.args[0]), r.args[1]) for r in caplog.records if " turn " in r.msg]
    assert [status.endswith(":undelivered") for key, status in turns if key == str(PRIVATE)] == [
        True,
        True,
    ]
    assert [status for key, status in turns if key == str(GROUP)] == ["ok"]


async def test_a_reply_sent_minutes_late_says_so(home, fake_api):
    clock = FakeClock(START, instant_sleep=True)
    app, channel = await _started(home, fake_api, clock)
    try:
        channel.unreachable = 8  # 2 + 4 + 8 + 16 + 30 + 30 + 30 + 30 s of waiting
        await asyncio.wait_for(channel.push("are you there?"), 10)
        await channel.wait_sent(1)
    finally:
        await app.stop()
    [late] = channel.texts()
    assert late == (
        "_(Written at 13:00, sent late: the chat could not be reached.)_\n\necho: are you there?"
    )  # 13:00 in Berlin, the configured time zone


async def test_a_reply_still_unsendable_after_the_window_is_given_up_and_shown(home, fake_api):
    clock = FakeClock(START, instant_sleep=True)
    app, channel = await _started(home, fake_api, clock, retry_window_hours=0.05)  # 3 minutes
    try:
        channel.unreachable = 1000
        await asyncio.wait_for(channel.push("hello"), 10)
        await asyncio.wait_for(app.gateway.delivery.retries.idle(), 10)
        assert outbox_rows(home) == [("echo: hello", "failed")]
        [row] = app.undelivered()
        assert row.error.startswith("given up after 0.05 h of retries; the last error: ")
        assert "ConnectionError: platform unreachable (injected)" in row.error
        # The platform is back: the next reply goes out as usual.
        channel.unreachable = 0
        await asyncio.wait_for(channel.push("again"), 10)
        assert channel.texts() == ["echo: again"]
    finally:
        await app.stop()


async def test_a_waiting_reply_is_sent_after_a_restart(home, fake_api):
    clock = FakeClock(START)  # the retry's wait never passes in the first run
    app, channel = await _started(home, fake_api, clock)
    try:
        channel.unreachable = 1
        await asyncio.wait_for(channel.push("hello"), 10)
        await clock.next_wake()  # the retry waits
        assert app.undelivered()[0].status == SendStatus.WAITING
        assert "cannot send since" in app.gateway.channel_states()[0]["state"]
    finally:
        await app.stop()
    assert outbox_rows(home) == [("echo: hello", "waiting")]
    app, channel = await _started(home, fake_api, FakeClock(START))
    try:
        await channel.wait_sent(1)
    finally:
        await app.stop()
    assert channel.texts() == ["echo: hello"]
    assert outbox_rows(home) == [("echo: hello", "sent")]


async def test_a_send_under_way_finishes_when_its_turn_is_stopped(home, fake_api):
    """/stop while the answer is being sent: the send is not cut off midway (a request
    cancelled while it waits for a connection can break the client's pool), and its row says
    it went out."""
    clock = FakeClock(START)
    app, channel = await _started(home, fake_api, clock)
    release = asyncio.Event()
    sending = asyncio.Event()
    plain_send = channel.send

    async def slow_send(msg: OutboundMessage) -> None:
        if msg.text == "echo: hello":  # the answer to be stopped; /stop's own goes through
            sending.set()
            await release.wait()
        await plain_send(msg)

    channel.send = slow_send  # type: ignore[method-assign]
    try:
        turn = channel.push("hello")
        await asyncio.wait_for(sending.wait(), 10)
        await asyncio.wait_for(channel.push("/stop"), 10)
        release.set()
        await asyncio.wait_for(asyncio.gather(turn, return_exceptions=True), 10)
        await channel.wait_sent(2)
    finally:
        await app.stop()
    assert sorted(channel.texts()) == ["Stopped.", "echo: hello"]
    assert ("echo: hello", "sent") in outbox_rows(home)


async def test_a_reply_waits_behind_one_already_waiting_even_once_the_platform_is_back(
    home, fake_api
):
    """The first reply waits out its backoff; the platform comes back meanwhile. The next reply
    to that chat is not sent ahead of it, and corvid status counts both as waiting."""
    clock = FakeClock(START)  # the retry's wait lasts until the test moves the clock
    app, channel = await _started(home, fake_api, clock)
    try:
        channel.unreachable = 1
        await asyncio.wait_for(channel.push("first"), 10)
        await clock.next_wake()  # the first reply waits to be tried again
        channel.unreachable = 0  # the platform is back
        await asyncio.wait_for(channel.push("second"), 10)
        assert channel.sent == []  # behind the first, not ahead of it
        trouble = app.gateway.delivery.trouble("test")
        assert trouble is not None and trouble.endswith("; 2 message(s) waiting to be sent again")
        await clock.set(await clock.next_wake())
        await asyncio.wait_for(app.gateway.delivery.retries.idle(), 10)
    finally:
        await app.stop()
    assert channel.texts(PRIVATE) == ["echo: first", "echo: second"]


async def test_a_reply_kept_waiting_across_a_restart_says_when_it_was_written(home, fake_api):
    """The outbox keeps when a reply was written: sent half an hour later by the next start,
    it says it is late and gives the time it was written, not the time of the restart."""
    app, channel = await _started(home, fake_api, FakeClock(START))
    try:
        channel.unreachable = 1
        await asyncio.wait_for(channel.push("hello"), 10)
    finally:
        await app.stop()
    assert outbox_rows(home) == [("echo: hello", "waiting")]
    app, channel = await _started(home, fake_api, FakeClock(START + timedelta(minutes=30)))
    try:
        await channel.wait_sent(1)
    finally:
        await app.stop()
    assert channel.texts() == [
        "_(Written at 13:00, sent late: the chat could not be reached.)_\n\necho: hello"
    ]


async def test_a_send_under_way_is_marked_as_such_until_the_platform_answers(home, fake_api):
    """While the platform has the message but has not answered, its row says "sending": a
    crash then must not send it blindly again (see recover), so the mark comes before the
    send, and "sent" only after it."""
    app, channel = await _started(home, fake_api, FakeClock(START))
    release = asyncio.Event()
    sending = asyncio.Event()
    plain_send = channel.send

    async def slow_send(msg: OutboundMessage) -> None:
        sending.set()
        await release.wait()
        await plain_send(msg)

    channel.send = slow_send  # type: ignore[method-assign]
    try:
        turn = channel.push("hello")
        await asyncio.wait_for(sending.wait(), 10)
        assert outbox_rows(home) == [("echo: hello", "sending")]
        release.set()
        await asyncio.wait_for(turn, 10)
        assert outbox_rows(home) == [("echo: hello", "sent")]
    finally:
        release.set()
        await app.stop()


async def test_the_channel_trouble_clears_once_a_message_goes_out_again(home, fake_api):
    clock = FakeClock(START)
    app, channel = await _started(home, fake_api, clock)
    delivery = app.gateway.delivery
    try:
        assert delivery.trouble("test") is None
        channel.unreachable = 1
        await asyncio.wait_for(channel.push("hello"), 10)
        trouble = delivery.trouble("test")
        assert trouble is not None and trouble.startswith("cannot send since 2026-11-22 13:00")
        assert "(1 failed in a row; ConnectionError: platform unreachable (injected))" in trouble
        await clock.set(await clock.next_wake())
        await asyncio.wait_for(delivery.retries.idle(), 10)
        assert channel.texts() == ["echo: hello"]
        assert delivery.trouble("test") is None
    finally:
        await app.stop()


async def test_send_says_whether_the_message_went_out(home, fake_api):
    clock = FakeClock(START)
    app, channel = await _started(home, fake_api, clock)
    delivery = app.gateway.delivery
    try:
        assert await delivery.send(OutboundMessage(PRIVATE, "now")) is True
        channel.unreachable = 1
        assert await delivery.send(OutboundMessage(GROUP, "later")) is False
        channel.fail_sends = 1
        assert await delivery.send(OutboundMessage(PRIVATE, "never")) is False
    finally:
        await app.stop()
    assert channel.texts(PRIVATE) == ["now"] and channel.texts(GROUP) == []


async def test_after_a_stop_nothing_is_tried_again_and_the_reply_still_waits(home, fake_api):
    """Shutting down stops the retries: none is left running, a wait that ends after the stop
    sends nothing, and the reply stays waiting for the next start."""
    clock = FakeClock(START)
    app, channel = await _started(home, fake_api, clock)
    channel.unreachable = 1
    await asyncio.wait_for(channel.push("hello"), 10)
    retry_at = await clock.next_wake()
    await app.stop()
    # No retry is left running to outlive the journal and the channels it writes through.
    assert [t.get_name() for t in asyncio.all_tasks() if t.get_name().startswith("retry ")] == []
    await clock.set(retry_at + timedelta(minutes=5))
    await asyncio.wait_for(app.gateway.delivery.retries.idle(), 10)
    assert channel.sent == []
    assert outbox_rows(home) == [("echo: hello", "waiting")]


async def test_a_message_for_a_channel_not_running_fails_at_once_and_is_not_held(home, fake_api):
    """A message queued for a platform that is not running (switched off since a job was
    made) fails with the reason and is not kept to be tried again for hours."""
    from gateway.contract.events import SessionKey

    clock = FakeClock(START)
    app, _channel = await _started(home, fake_api, clock)
    try:
        delivery = app.gateway.delivery
        out = OutboundMessage(SessionKey("discord", "dm", "7"), "for a platform that is off")
        oid = delivery.journal.queue(out)
        assert await delivery.send(out, oid) is False
        assert delivery.retries.count() == 0
        [failed] = delivery.undelivered()
        # A scheduled message for it is refused before it is queued, naming the chat.
        with pytest.raises(DeliveryError, match="no channel 'discord' is running for discord:dm:7"):
            await delivery.deliver(replace(out, text="a job's message"))
    finally:
        await app.stop()
    assert failed.status == SendStatus.FAILED and "no channel 'discord' is running" in failed.error
    assert outbox_rows(home) == [("for a platform that is off", "failed")]


async def test_a_refused_reply_is_kept_with_the_platforms_reason_cut_to_500_characters(
    home, fake_api
):
    clock = FakeClock(START)
    app, channel = await _started(home, fake_api, clock)

    async def refuse(msg: OutboundMessage) -> None:
        raise RuntimeError("Bad Request: " + "x" * 2000)

    channel.send = refuse  # type: ignore[method-assign]
    try:
        await asyncio.wait_for(channel.push("hello"), 10)
        [failed] = app.gateway.delivery.undelivered()
    finally:
        await app.stop()
    assert failed.status == SendStatus.FAILED
    assert failed.error.startswith("RuntimeError: Bad Request: xxx") and len(failed.error) == 500


async def test_stopping_the_retries_also_stops_a_message_held_while_it_waited():
    """A reply that fails while the retries stop (its send cancelled, another message held
    meanwhile) leaves no worker trying after the stop."""
    from gateway.runtime.retries import Held, Retries

    blocked = asyncio.Event()
    retries: Retries

    async def attempt(held: Held) -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            if held.oid == 1:
                retries.hold(Held(2, OutboundMessage(GROUP, "later"), START), tried=False)
            raise
        finally:
            blocked.set()

    retries = Retries(attempt, lambda held: None, FakeClock(START), timedelta(hours=1))
    retries.hold(Held(1, OutboundMessage(PRIVATE, "first"), START), tried=False)
    await asyncio.sleep(0)  # the worker starts its first try
    await asyncio.wait_for(retries.stop(), 10)
    assert blocked.is_set()
    await asyncio.wait_for(retries.idle(), 1)  # nothing is left trying
    assert retries.count() == 0


class Scripted(RecordingChannel):
    """A platform whose sends fail as the test says, in turn (None: it takes the message),
    counting every try. A timeout may have posted the message; ``drops_repeats`` says whether
    a send repeated with the same ident shows once (Discord's nonce) or twice (Telegram)."""

    def __init__(self, *outcomes: BaseException | None, drops_repeats: bool = False) -> None:
        super().__init__()
        self.outcomes = list(outcomes)
        self.tries: list[str] = []
        self.drops_repeats = drops_repeats

    @property
    def idempotent_sends(self) -> bool:  # type: ignore[override]
        return self.drops_repeats

    def maybe_sent(self, exc: BaseException) -> bool:
        return isinstance(exc, TimeoutError)

    async def send(self, msg: OutboundMessage) -> None:
        self.tries.append(msg.text)
        outcome = self.outcomes.pop(0) if self.outcomes else None
        if outcome is not None:
            raise outcome
        await super().send(msg)


async def _held_then(home, fake_api, channel: Scripted) -> list[tuple[str, str]]:
    """A reply the platform cannot take at first (so it waits), then tried again once the
    clock moves; the outbox's rows once nothing waits any more."""
    clock = FakeClock(START)
    config = make_config(home, fake_api.base_url)
    app = build_app(config, [channel], clock=clock)
    await app.start()
    try:
        await asyncio.wait_for(channel.push("hello"), 10)
        assert app.gateway.delivery.retries.count() == 1
        await clock.set(await clock.next_wake())
        await asyncio.wait_for(app.gateway.delivery.retries.idle(), 10)
        # The chat goes on: its next reply is not held behind the first.
        await asyncio.wait_for(channel.push("again"), 10)
    finally:
        await app.stop()
    return outbox_rows(home)


@pytest.mark.parametrize(
    "second", [RuntimeError("Bad Request: chat not found"), TimeoutError("answered late")]
)
async def test_a_waiting_reply_refused_or_perhaps_posted_when_tried_again_is_not_tried_more(
    home, fake_api, second
):
    channel = Scripted(ConnectionError("unreachable"), second)
    rows = await _held_then(home, fake_api, channel)
    assert channel.tries == ["echo: hello", "echo: hello", "echo: again"]
    kept = "failed" if isinstance(second, RuntimeError) else "uncertain"
    assert rows == [("echo: hello", kept), ("echo: again", "sent")]


async def test_a_reply_perhaps_posted_is_tried_again_only_where_repeats_are_dropped(home, fake_api):
    """Where the platform drops a repeat (a nonce), a timeout is tried again like any
    outage, and the message shows once; elsewhere (test above) it is never tried again."""
    channel = Scripted(ConnectionError("unreachable"), drops_repeats=True)
    channel.outcomes.insert(1, TimeoutError("answered late"))
    clock = FakeClock(START)
    app = build_app(make_config(home, fake_api.base_url), [channel], clock=clock)
    await app.start()
    try:
        await asyncio.wait_for(channel.push("hello"), 10)
        await clock.advance()  # tried again after the outage: it times out, and waits
        await clock.set(await clock.next_wake())  # tried once more: it goes out
        await asyncio.wait_for(app.gateway.delivery.retries.idle(), 10)
    finally:
        await app.stop()
    assert channel.tries == ["echo: hello"] * 3
    assert channel.texts() == ["echo: hello"]
    assert outbox_rows(home) == [("echo: hello", "sent")]
