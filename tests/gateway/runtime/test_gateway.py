"""Shutdown with a turn in flight: the turn is recorded, nothing is half-written, and the
message is answered after the restart."""

from __future__ import annotations

import asyncio
import dataclasses
import json

import pytest

from tests.conftest import PRIVATE
from tests.fakes.anthropic_api import Reply, last_user_text


async def test_stop_mid_turn_records_the_turn_and_the_session_resumes(
    start_gateway, fake_api, home
):
    hang = asyncio.Event()

    async def brain(body):
        await hang.wait()
        return Reply("never")

    fake_api.brain = brain
    gateway, chan = await start_gateway(gateway={"shutdown_grace": 0.1})
    pending = chan.push("are you there?")
    await fake_api.wait_for_requests(1)
    await asyncio.wait_for(gateway.stop(), 10)
    assert pending.done()
    lines = (home / "state" / "sessions" / f"{PRIVATE}.jsonl").read_text().splitlines()
    entries = [json.loads(line) for line in lines]
    assert entries[1]["t"] == "msg" and "are you there?" in json.dumps(entries[1])
    assert entries[-1]["t"] == "turn" and entries[-1]["status"] == "cancelled"

    # The message the shutdown cut off is owed an answer: the next start gives it, once, and
    # before anything newer; it is not recorded a second time.
    fake_api.brain = lambda body: Reply("re: " + last_user_text(body).splitlines()[-1])
    _gateway2, chan2 = await start_gateway()
    await asyncio.wait_for(chan2.push("hello again"), 10)
    assert chan2.texts() == ["re: are you there?", "re: hello again"]
    flat = json.dumps(fake_api.message_requests[-1].body["messages"])
    assert flat.count("\\nare you there?") == 1 and "hello again" in flat


async def test_a_channel_answers_while_another_is_still_connecting(home, fake_api):
    """Channels start side by side: a message on one is answered while another is still
    connecting (a Discord login can take seconds), and that one answers once it is up."""
    from gateway.app import build_app
    from tests.conftest import RecordingChannel, make_config

    class Connecting(RecordingChannel):
        name = "slow"

        def __init__(self) -> None:
            super().__init__()
            self.release = asyncio.Event()

        async def start(self) -> None:
            await self.release.wait()

    class Quick(RecordingChannel):
        def __init__(self) -> None:
            super().__init__()
            self.up = asyncio.Event()

        async def start(self) -> None:
            self.up.set()

    quick, slow = Quick(), Connecting()
    app = build_app(make_config(home, fake_api.base_url), [quick, slow])
    starting = asyncio.ensure_future(app.start())
    try:
        await asyncio.wait_for(quick.up.wait(), 10)
        await asyncio.wait_for(quick.push("hello"), 10)
        assert quick.texts() == ["echo: hello"]
        assert not starting.done()  # the slow channel is still connecting
        slow.release.set()
        await asyncio.wait_for(starting, 10)
        key = dataclasses.replace(PRIVATE, channel="slow")
        await asyncio.wait_for(slow.push("and you?", key=key), 10)
        assert slow.texts() == ["echo: and you?"]
    finally:
        slow.release.set()
        await asyncio.wait_for(starting, 10)
        await app.stop()


async def test_a_channel_that_cannot_start_stops_the_others_starting(home, fake_api):
    """One channel's start fails while another is still connecting: the start fails at once
    with that reason, and the other is stopped, not left connecting."""
    from channels.base import ChannelStartError
    from gateway.app import build_app
    from tests.conftest import RecordingChannel, make_config

    stopped = asyncio.Event()

    class Connecting(RecordingChannel):
        name = "slow"

        async def start(self) -> None:
            await asyncio.Event().wait()  # connects forever

        async def stop(self) -> None:
            stopped.set()

    class Refused(RecordingChannel):
        async def start(self) -> None:
            raise ChannelStartError("the token was refused")

    app = build_app(make_config(home, fake_api.base_url), [Refused(), Connecting()])
    try:
        with pytest.raises(ChannelStartError, match="the token was refused"):
            await asyncio.wait_for(app.start(), 10)
        assert stopped.is_set()
    finally:
        await app.stop()


async def test_a_message_that_comes_while_shutting_down_is_answered_after_the_restart(
    home, fake_api
):
    from gateway.app import build_app
    from tests.conftest import RecordingChannel, make_config

    config = make_config(home, fake_api.base_url)
    channel = RecordingChannel()
    app = build_app(config, [channel])
    await app.start()
    try:
        await app.gateway.router.drain(0)  # shutting down: no turn starts any more
        await asyncio.wait_for(channel.push("are you there?"), 5)
    finally:
        await app.stop()
    assert channel.texts() == ["I'm restarting right now; I'll answer this as soon as I'm back."]
    assert fake_api.message_requests == []
    channel = RecordingChannel()
    app = build_app(config, [channel])
    await app.start()
    try:
        await channel.wait_sent(1)
    finally:
        await app.stop()
    assert channel.texts() == ["echo: are you there?"]


async def test_a_burst_of_chats_answered_together_leaves_only_the_recent_sessions_loaded(
    start_gateway, fake_api
):
    """More chats than are kept loaded write at once and their answers come back together.
    Once all are answered, only the most recently used sessions stay in memory (the others
    come back from their transcripts): a burst does not leave every session it touched."""
    from agent.sessions.loaded import KEEP_LOADED
    from gateway.contract.events import SessionKey

    release = asyncio.Event()
    fake_api.brain = lambda body: Reply("ok", hold=release)
    app, chan = await start_gateway()
    keys = [SessionKey("test", "private", str(2000 + i)) for i in range(KEEP_LOADED + 8)]
    answered = asyncio.gather(*(chan.push("hello", key=key) for key in keys))
    await fake_api.wait_for_requests(len(keys))
    release.set()
    await asyncio.wait_for(answered, 30)
    assert sorted(str(m.key) for m in chan.sent) == sorted(map(str, keys))
    assert len(app.gateway.agent.sessions._loaded) == KEEP_LOADED


async def test_stopping_also_ends_what_was_started_while_it_waited(start_gateway):
    """A task the gateway started for a message (a reply, a command) that starts another as it
    is cancelled (a message that came in during the stop): the stop ends that one too, not
    only those that ran when it began."""
    app, _chan = await start_gateway()
    gateway = app.gateway
    later_ended = asyncio.Event()

    async def later() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            later_ended.set()
            raise

    async def first() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            gateway._spawn(later())
            raise

    gateway._spawn(first())
    await asyncio.wait_for(app.stop(), 10)
    assert later_ended.is_set()
