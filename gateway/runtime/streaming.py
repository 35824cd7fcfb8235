"""A turn's events shown in the chat while the turn runs."""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

from agent.stream import TextDelta, TextDone, TextVoid, ToolStarted, TurnEvent
from channels.base import Channel
from channels.live import LiveReply
from gateway.contract.events import OutboundMessage, SessionKey, could_be_silent
from gateway.contract.ports import Clock

log = logging.getLogger(__name__)

STOPPED = "_(stopped)_"
STOP_TIMEOUT = 10.0  # seconds to mark a stopped reply before giving up on it

Finisher = Callable[[LiveReply[Any], OutboundMessage], Awaitable[bool]]


class ReplyStream:
    def __init__(
        self,
        channel: Channel,
        key: SessionKey,
        reply_to: str | None,
        clock: Clock,
        finish: Finisher,
        placed: Callable[[str], None],
    ) -> None:
        self.key = key
        self.clock = clock
        self._channel = channel
        self._reply_to = reply_to
        self._finish = finish
        self._placed = placed
        self.live = channel.live(key, reply_to, placed)
        self._progress = channel.show_tool_progress
        self._text = ""  # the current piece, as written so far
        self._tool: str | None = None  # the progress note to show until text comes
        self._done: deque[str] = deque()  # finished pieces waiting to be delivered
        self._shown: str | None = None  # the last frame's Markdown
        self._shown_text = ""  # the answer's text in the last frame (not a progress note)
        self._began = clock.monotonic()
        self._last = 0.0
        self._wake = asyncio.Event()
        self._quiet = asyncio.Event()  # the pump waits for news: everything so far is shown
        self._closed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    @property
    def streaming(self) -> bool:
        return self.live is not None

    def start(self) -> None:
        if self.live is not None:
            self._task = asyncio.create_task(self._pump())

    def listen(self, event: TurnEvent) -> None:
        """The turn's listener: takes note and wakes the pump, never blocks."""
        if isinstance(event, TextDelta):
            self._text += event.text
        elif isinstance(event, TextVoid):
            self._text = ""
        elif isinstance(event, TextDone):
            self._done.append(event.text)
            self._text = ""
            self._tool = None
        elif isinstance(event, ToolStarted) and self._progress:
            self._tool = event.summary
        self._quiet.clear()
        self._wake.set()

    async def quiet(self) -> None:
        """Return once every event so far is shown."""
        await self._quiet.wait()

    async def close(self) -> LiveReply[Any] | None:
        """No more frames; pieces finished so far are delivered. Returns the live reply the
        final text finishes (None when this chat gets whole replies)."""
        await self._end()
        await self._deliver_done()
        return self.live

    async def stop(self) -> None:
        """The turn was stopped: what was shown stays, marked as stopped; a progress note alone
        is taken back."""
        await self._end()
        live = self.live
        if live is None or not live.started:
            return
        try:
            async with asyncio.timeout(STOP_TIMEOUT):
                if self._shown_text:
                    text = f"{self._shown_text}\n\n{STOPPED}"
                    await self._finish(live, OutboundMessage(self.key, text))
                else:
                    await live.take_back()
        except Exception as exc:
            log.warning("%s: could not mark the stopped reply: %s", self.key, exc)

    def abandon(self) -> None:
        """Shutting down: frames stop where they are; the journal knows what to take back."""
        if self._task is not None:
            self._task.cancel()

    # -- the pump ------------------------------------------------------------------------------

    async def _end(self) -> None:
        self._closed.set()
        self._wake.set()
        if self._task is not None:
            await asyncio.wait([self._task])
            if not self._task.cancelled() and (exc := self._task.exception()) is not None:
                log.warning("%s: showing the reply as it was written failed: %r", self.key, exc)

    # One task, at the platform's pace: a fast model never floods a chat, and a slow platform
    # never holds up the model.
    async def _pump(self) -> None:
        while not self._closed.is_set():
            if not self._wake.is_set():
                self._quiet.set()
            await self._wake.wait()
            self._quiet.clear()
            self._wake.clear()
            await self._deliver_done()
            if self._closed.is_set():
                return
            frame = self._frame()
            if frame is None or frame == self._shown:
                continue
            wait = self._due(frame)
            if wait > 0:
                await self._pause(wait)
                self._wake.set()  # look again: more may have come meanwhile
                continue
            await self._show(frame)

    def _frame(self) -> str | None:
        """What the live reply should show now (the text, or else a progress note), or None
        for nothing yet."""
        if self._text.strip():
            # Never shown while it could still turn out silent (NO_REPLY), not even a prefix.
            return None if could_be_silent(self._text) else self._text
        return self._tool

    def _due(self, frame: str) -> float:
        """Seconds until ``frame`` may be shown: the first waits for enough text (or a while),
        the others for the platform's pace."""
        assert self.live is not None
        now = self.clock.monotonic()
        if not self.live.started:
            if len(frame) >= self.live.first_chars or not self._text.strip():
                return 0.0
            return self._began + self.live.first_after - now
        return self._last + self.live.every - now

    async def _pause(self, seconds: float) -> None:
        """Wait ``seconds`` on the clock, or less if the stream is closed meanwhile."""
        sleep = asyncio.ensure_future(self.clock.sleep(seconds))
        closed = asyncio.ensure_future(self._closed.wait())
        try:
            await asyncio.wait([sleep, closed], return_when=asyncio.FIRST_COMPLETED)
        finally:
            sleep.cancel()
            closed.cancel()

    async def _show(self, frame: str) -> None:
        assert self.live is not None
        # Decided before the frame goes out: more text may come while it is on its way.
        is_text = frame == self._text
        try:
            if is_text:
                await self.live.show(frame)
            else:
                await self.live.progress(frame)
        except Exception as exc:  # a frame is a preview: the final text is sent all the same
            log.warning("%s: a frame of the reply could not be shown: %s", self.key, exc)
        self._shown = frame
        self._shown_text = frame if is_text else ""
        self._last = self.clock.monotonic()

    async def _deliver_done(self) -> None:
        """Each finished piece becomes its own message; what follows starts a new one."""
        while self._done and self.live is not None:
            piece = self._done.popleft()
            await self._finish(self.live, OutboundMessage(self.key, piece, reply_to=self._reply_to))
            self._reply_to = None  # only the first message answers the request
            self.live = self._channel.live(self.key, None, self._placed)
            self._shown, self._shown_text = None, ""
            self._began = self.clock.monotonic()
