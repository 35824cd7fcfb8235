"""A message the API refuses (HTTP 400: an attachment it cannot read, say) is set aside with a
word to the person, and the next message is answered without it."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from tests.conftest import PRIVATE
from tests.fakes.anthropic_api import FakeAnthropic, Fault, Reply


def refuses_the_bad_one(body: dict[str, Any]) -> Reply | Fault:
    if "BROKEN-ATTACHMENT" in json.dumps(body["messages"]):
        return Fault(400, "invalid_request_error", "messages.0.content.1.image: invalid image")
    return Reply(text="Hello again.")


async def test_a_refused_message_is_set_aside_and_the_next_one_is_answered(
    start_gateway, fake_api: FakeAnthropic, home: Path
):
    fake_api.brain = refuses_the_bad_one
    _app, channel = await start_gateway()
    await asyncio.wait_for(channel.push("look at this BROKEN-ATTACHMENT", key=PRIVATE), 30)
    [refused] = channel.texts()
    assert refused.startswith("The AI service refused to read that, so I have set it aside")
    await asyncio.wait_for(channel.push("hello?", key=PRIVATE), 30)
    assert channel.texts()[1] == "Hello again."
    last = json.dumps(fake_api.message_requests[-1].body["messages"])
    assert "hello?" in last and "BROKEN-ATTACHMENT" not in last
    # The transcript keeps it, marked as set aside.
    transcript = (home / "state" / "sessions" / f"{PRIVATE}.jsonl").read_text()
    assert "BROKEN-ATTACHMENT" in transcript
