"""The stream controller on its own: what it shows when, against a recording live reply and a
clock that moves only when the test says so."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agent.stream import TextDelta, TextDone, TextVoid, ToolFinished, ToolStarted
from channels.live import LiveReply
from gateway.contract.events import OutboundMessage, SessionKey, could_be_silent
from gateway.runtime.streaming import STOPPED, ReplyStream
from tests.fakes.clock import FakeClock

KEY = SessionKey.parse("telegram:group:-1")


class Recorder(LiveReply[str]):
    def __init__(self, log: list[tuple[str, str]], n: int) -> None:
        super().__init__(KEY, None, lambda ref: None)
        self.log = log
        self.n = n

    async def cut(self, text: str) -> list[str]:
        return [text] if text.strip() else []

    async def post(self, piece: str, first: bool) -> str:
        self.log.append((f"post{self.n}", piece))
        return f"{self.n}"

    async def edit(self, ref: str, piece: str) -> None:
        self.log.append((f"edit{ref}", piece))

    async def delete(self, ref: str) -> None:
        self.log.append((f"delete{ref}", ""))


class StubChannel:
    show_tool_progress = True

    def __init__(self) -> None:
        self.log: list[tuple[str, str]] = []
        self.opened = 0

    def live(self, key: Any, reply_to: Any, placed: Any) -> Recorder:
        self.opened += 1
        return Recorder(self.log, self.opened)


async def _advance(clock: FakeClock, stream: ReplyStream) -> None:
    """Move time to the pump's next wake-up and let it show what is due."""
    await clock.set(await clock.next_wake())
    await asyncio.wait_for(stream.quiet(), 5)


@pytest.fixture
async def setup():
    clock = FakeClock()
    channel = StubChannel()
    finished: list[str] = []

    async def finish(live: LiveReply[Any], out: OutboundMessage) -> bool:
        finished.append(out.text)
        await live.finish(out)
        return True

    stream = ReplyStream(channel, KEY, "7", clock, finish, lambda ref: None)  # type: ignore[arg-type]
    stream.start()
    return stream, channel, clock, finished


@pytest.mark.parametrize(
    "text", ["N", "NO_", " NO_REPLY", "HEARTBEAT", "HEARTBEAT_OK", "**NO_RE", "NO_REPLY."]
)
def test_beginnings_of_silent_answers_are_recognised(text):
    assert could_be_silent(text)


@pytest.mark.parametrize("text", ["No problem", "Hi", "NO_REPLY because", "NO_REPLY. But"])
def test_other_text_is_not_held(text):
    assert not could_be_silent(text)


async def test_a_silent_answer_is_never_shown_however_long_it_takes(setup):
    stream, channel, clock, _ = setup
    for part in ("NO", "_RE", "PLY"):
        stream.listen(TextDelta(part))
        await asyncio.wait_for(stream.quiet(), 5)
        clock.tick(10)
        await asyncio.wait_for(stream.quiet(), 5)
    live = await stream.close()
    assert channel.log == [] and live is not None and not live.started


async def test_first_frame_waits_for_enough_text_or_a_while(setup):
    stream, channel, clock, _ = setup
    stream.listen(TextDelta("Hi"))
    await clock.next_wake()  # too short to show yet: it waits
    assert channel.log == []
    await _advance(clock, stream)
    assert channel.log == [("post1", "Hi")]
    await stream.close()


async def test_frames_keep_the_platforms_pace(setup):
    stream, channel, clock, _ = setup
    stream.listen(TextDelta("x" * 50))  # enough for a first frame at once
    await asyncio.wait_for(stream.quiet(), 5)
    assert channel.log == [("post1", "x" * 50)]
    stream.listen(TextDelta("y"))
    await clock.next_wake()  # the next frame waits for the edit interval
    assert len(channel.log) == 1
    await _advance(clock, stream)
    assert channel.log[-1] == ("edit1", "x" * 50 + "y")
    await stream.close()


async def test_pieces_before_tools_are_delivered_and_progress_shows_between(setup):
    stream, channel, clock, finished = setup
    stream.listen(TextDelta("Let me look."))
    stream.listen(TextDone("Let me look."))
    stream.listen(ToolStarted("memory_search", "🔎 searching memory “a*b”…"))
    await asyncio.wait_for(stream.quiet(), 5)
    assert finished == ["Let me look."]
    assert channel.log[-1] == ("post2", "🔎 searching memory “a\\*b”…")  # escaped Markdown
    stream.listen(ToolFinished("memory_search", True))
    stream.listen(TextDelta("Found it, on Friday at ten."))
    await _advance(clock, stream)
    assert channel.log[-1] == ("edit2", "Found it, on Friday at ten.")
    assert channel.opened == 2
    await stream.close()


async def test_a_void_call_clears_its_text(setup):
    stream, channel, clock, _ = setup
    stream.listen(TextDelta("a" * 50))
    await asyncio.wait_for(stream.quiet(), 5)
    stream.listen(TextVoid())
    stream.listen(TextDelta("b" * 50))
    await _advance(clock, stream)
    assert channel.log[-1] == ("edit1", "b" * 50)
    await stream.close()


async def test_stop_marks_what_was_shown(setup):
    stream, _channel, _clock, finished = setup
    stream.listen(TextDelta("z" * 50))
    await asyncio.wait_for(stream.quiet(), 5)
    await stream.stop()
    assert finished == ["z" * 50 + "\n\n" + STOPPED]


async def test_stop_while_a_frame_is_on_its_way_keeps_it_marked_stopped(setup):
    """More text arrives while the first frame is being sent, then /stop: what was shown
    stays, marked stopped (it was once taken for a progress note and deleted)."""
    stream, channel, _clock, finished = setup
    on_its_way, release = asyncio.Event(), asyncio.Event()
    plain_post = Recorder.post

    async def slow_post(self: Recorder, piece: str, first: bool) -> str:
        on_its_way.set()
        await release.wait()
        return await plain_post(self, piece, first)

    stream.live.post = slow_post.__get__(stream.live)
    stream.listen(TextDelta("z" * 50))
    await asyncio.wait_for(on_its_way.wait(), 5)
    stream.listen(TextDelta(" and more"))  # while the frame is on its way
    stopping = asyncio.ensure_future(stream.stop())
    release.set()
    await asyncio.wait_for(stopping, 5)
    assert finished == ["z" * 50 + "\n\n" + STOPPED]
    assert not any(kind.startswith("delete") for kind, _ in channel.log)


async def test_stop_takes_back_a_progress_note_alone(setup):
    stream, channel, _clock, finished = setup
    stream.listen(ToolStarted("read_file", "📄 reading"))
    await asyncio.wait_for(stream.quiet(), 5)
    await stream.stop()
    assert finished == [] and channel.log[-1] == ("delete1", "")
