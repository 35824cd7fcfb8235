"""Shutdown with a turn in flight: the turn is recorded, nothing is half-written, and the
message is answered after the restart."""

from __future__ import annotations

import asyncio
import json

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
