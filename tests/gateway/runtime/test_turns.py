"""A turn's answer (gateway/runtime/turns.py): NO_REPLY is silence, a blank answer is never."""

from __future__ import annotations

import asyncio
import logging

from gateway.runtime.turns import BLANK_ANSWER
from tests.conftest import GROUP, PRIVATE
from tests.fakes.anthropic_api import Reply


async def test_a_blank_answer_is_said_and_logged_not_swallowed(start_gateway, fake_api, caplog):
    _app, chan = await start_gateway()
    fake_api.enqueue(Reply("   \n "), Reply(""))
    with caplog.at_level(logging.WARNING):
        await asyncio.wait_for(chan.push("hello"), 10)
        await asyncio.wait_for(chan.push("hi", key=GROUP), 10)
    assert chan.texts(PRIVATE) == [BLANK_ANSWER] and chan.texts(GROUP) == [BLANK_ANSWER]
    assert sum("answered with nothing" in r.getMessage() for r in caplog.records) == 2


async def test_no_reply_means_nothing_is_sent(start_gateway, fake_api, home):
    import sqlite3

    _app, chan = await start_gateway()
    fake_api.enqueue(Reply("NO_REPLY"), Reply("And now an answer."))
    await asyncio.wait_for(chan.push("just so you know"), 10)
    await asyncio.wait_for(chan.push("a question"), 10)
    assert chan.texts() == ["And now an answer."]
    # Both messages count as answered: a restart does not ask the model about them again.
    with sqlite3.connect(home / "state" / "gateway.sqlite") as db:
        assert db.execute("SELECT COUNT(*) FROM inbound").fetchone()[0] == 0
