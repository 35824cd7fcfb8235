"""The channel port's lifecycle: what a failed start got going is stopped again."""

from __future__ import annotations

import asyncio

import pytest

from channels.base import Channel, ChannelStartError
from gateway.contract.events import OutboundMessage


class HalfStarting(Channel):
    """Starts a background task, then fails the way a platform refusing the token does."""

    name = "half"

    def __init__(self, fail_stop: bool = False) -> None:
        super().__init__(access=None)
        self.poller: asyncio.Task[None] | None = None
        self.stopped = 0
        self.fail_stop = fail_stop

    async def start(self) -> None:
        self.poller = asyncio.create_task(asyncio.Event().wait(), name="half-poll")
        raise ChannelStartError("the platform refused the token")

    async def stop(self) -> None:
        self.stopped += 1
        if self.poller is not None:
            self.poller.cancel()
            await asyncio.wait([self.poller])
        if self.fail_stop:
            raise RuntimeError("the client would not close")

    async def send(self, msg: OutboundMessage) -> None:
        raise AssertionError("nothing is sent")


async def test_a_failed_start_stops_what_it_started():
    channel = HalfStarting()
    with pytest.raises(ChannelStartError, match="refused the token"):
        async with channel:
            raise AssertionError("the body does not run")
    assert channel.stopped == 1
    assert channel.poller is not None and channel.poller.cancelled()


async def test_the_start_error_is_kept_when_stopping_fails_too(caplog):
    channel = HalfStarting(fail_stop=True)
    with pytest.raises(ChannelStartError, match="refused the token"):
        async with channel:
            pass
    assert channel.stopped == 1
    assert "did not stop cleanly" in caplog.text
