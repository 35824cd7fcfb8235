"""The terminal chat (``corvid chat``): the real TerminalChannel over a pipe, the gateway and
agent behind it, the real anthropic client against the fake Messages API."""

from __future__ import annotations

import asyncio
import io
import os
from collections.abc import AsyncIterator, Callable

import pytest

from channels.terminal import TerminalChannel
from gateway.app import build_app
from tests.conftest import make_config
from tests.fakes.anthropic_api import FakeAnthropic, Reply


class _Pipe:
    """A pipe standing in for the keyboard: lines written by the test are read by the channel."""

    def __init__(self) -> None:
        rfd, wfd = os.pipe()
        self.reader = os.fdopen(rfd, "r")
        self._writer = os.fdopen(wfd, "w")

    def type(self, line: str) -> None:
        self._writer.write(line + "\n")
        self._writer.flush()

    def close(self) -> None:
        self._writer.close()


class _Screen(io.StringIO):
    def __init__(self) -> None:
        super().__init__()
        self.changed = asyncio.Event()

    def flush(self) -> None:
        self.changed.set()

    async def wait_for(self, seen: Callable[[str], bool]) -> str:
        async with asyncio.timeout(10):
            while not seen(self.getvalue()):
                self.changed.clear()
                await self.changed.wait()
        return self.getvalue()


Chat = tuple[_Pipe, _Screen, "asyncio.Task[None]"]


@pytest.fixture
async def chat(home, fake_api: FakeAnthropic) -> AsyncIterator[Chat]:
    keyboard, screen = _Pipe(), _Screen()
    terminal = TerminalChannel(stdin=keyboard.reader, stdout=screen, interactive=True)
    app = build_app(make_config(home, fake_api.base_url), [terminal], with_scheduler=False)
    await app.start()
    reading = asyncio.create_task(terminal.run())
    yield keyboard, screen, reading
    keyboard.close()
    await asyncio.wait_for(reading, 10)
    await app.stop(grace=0)
    keyboard.reader.close()


async def test_stop_typed_during_a_reply_stops_it_at_once(chat, fake_api: FakeAnthropic):
    keyboard, screen, _reading = chat
    never = asyncio.Event()

    async def hang(body):
        await never.wait()

    fake_api.brain = hang
    keyboard.type("write me a long essay")
    await fake_api.wait_for_requests(1)
    # The reply is still being written; /stop is read and acted on now, not after it.
    keyboard.type("/stop")
    await screen.wait_for(lambda out: "Stopped." in out)
    fake_api.brain = lambda body: Reply("short answer")
    keyboard.type("something short")
    out = await screen.wait_for(lambda out: "short answer" in out)
    assert "write me a long essay" not in str(fake_api.message_requests[-1].body["messages"])
    assert out.index("Stopped.") < out.index("short answer")


async def test_end_of_input_ends_the_chat(chat):
    keyboard, screen, reading = chat
    keyboard.close()
    await asyncio.wait_for(reading, 10)
    assert "type a message" in screen.getvalue()


async def test_a_reply_is_printed_as_it_is_written(chat, fake_api: FakeAnthropic):
    keyboard, screen, _reading = chat
    release = asyncio.Event()
    fake_api.enqueue(
        Reply("The first half, then the second half.", hold=release, hold_after=15, chunk=15)
    )
    keyboard.type("tell me")
    # The start of the reply is on the screen while the model is still writing the rest.
    await screen.wait_for(lambda s: "The first half," in s)
    assert "second half" not in screen.getvalue()
    release.set()
    out = await screen.wait_for(lambda s: "the second half.\n" in s)
    assert out.count("The first half") == 1  # printed once, continued in place
