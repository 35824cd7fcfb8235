"""The web chat: the owner's private session in the browser, ``web:private:owner``."""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from base64 import b64encode
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from datetime import UTC, tzinfo
from pathlib import Path
from typing import Any

from channels.access import Arrival, Fetched
from channels.base import Channel
from channels.inbox import Intake
from channels.live import LiveReply, WholeText
from gateway.contract.events import (
    MODEL_IMAGE_TYPES,
    WEB_OWNER,
    Attachment,
    OutboundMessage,
    SessionKey,
    sniff_image,
)
from gateway.contract.ports import Clock
from gateway.infra.atomic import private_file, write_atomic
from gateway.web.html import esc, markdown
from gateway.web.transcript_html import message_html, when_shown

WEB_CHAT = WEB_OWNER

Event = tuple[str, str]  # (event name, HTML or text)
# Events queued for one open page; one that falls further behind is told to reload.
LISTENER_BACKLOG = 200


# The outbox keeps the newest messages sent to the web chat, no more than this many.
OUTBOX_KEEP = 500


def keep(path: Path, entry: dict[str, str]) -> None:
    """Append ``entry`` to the outbox; past twice ``OUTBOX_KEEP`` lines, the older half goes."""
    with open(private_file(path), "a", encoding="utf-8") as f:
        f.write(json.dumps(entry, ensure_ascii=False) + "\n")
    if path.stat().st_size > 4096 * OUTBOX_KEEP:  # cheap test first: long files only
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        if len(lines) > 2 * OUTBOX_KEEP:
            write_atomic(path, "".join(lines[-OUTBOX_KEEP:]))


class WebChannel(Channel):
    """Chat from the control page, a channel like Telegram's: the form becomes an ``Arrival``
    (no access policy: only the signed-in owner reaches the page); replies go out as events to
    every open chat page, and are kept in ``state/web_chat.jsonl`` for a page opened later."""

    name = "web"

    def __init__(
        self,
        intake: Intake | None = None,
        clock: Clock | None = None,
        outbox: Path | None = None,
        tz: tzinfo = UTC,
    ) -> None:
        super().__init__(None, clock)
        self.intake = intake
        self.outbox = outbox
        self.tz = tz  # the owner's: times on the page are theirs
        self._listeners: set[asyncio.Queue[Event]] = set()

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        self.publish("closed", "")

    @property
    def listening(self) -> bool:
        """A chat page is open (drafts are rendered only for someone to see them)."""
        return bool(self._listeners)

    def publish(self, event: str, data: str) -> None:
        for queue in self._listeners:
            try:
                queue.put_nowait((event, data))
            except asyncio.QueueFull:
                # A page that does not keep up is told to reload (and so to read the chat
                # from the transcript) instead of having everything queued for it.
                while not queue.empty():
                    queue.get_nowait()
                queue.put_nowait(("reload", ""))

    @contextlib.contextmanager
    def listen(self) -> Iterator[asyncio.Queue[Event]]:
        queue: asyncio.Queue[Event] = asyncio.Queue(LISTENER_BACKLOG)
        self._listeners.add(queue)
        try:
            yield queue
        finally:
            self._listeners.discard(queue)

    async def send(self, msg: OutboundMessage) -> None:
        """Shown on the open pages, and kept: a reminder that fires while no page is open is
        on the page the next time it opens (replies are in the transcript as well)."""
        if self.outbox is not None:
            keep(self.outbox, {"ts": self.clock.now().isoformat(), "text": msg.text})
        reply = {"role": "assistant", "content": msg.text}
        self.publish("message", message_html(reply, self._now()))

    def _now(self) -> str:
        return when_shown(self.clock.now().isoformat(), self.tz)

    @contextlib.asynccontextmanager
    async def typing(self, key: SessionKey) -> AsyncIterator[None]:
        self.publish("typing", "on")
        try:
            yield
        finally:
            self.publish("typing", "off")

    def live(
        self, key: SessionKey, reply_to: str | None, placed: Callable[[str], None]
    ) -> LiveReply[str] | None:
        return WebLive(self, key) if self.streaming else None

    async def say(self, text: str, files: list[tuple[str, str, bytes]]) -> None:
        """The owner wrote ``text`` (with ``files``: name, type, bytes) on the page."""
        message_id = f"web-{uuid.uuid4().hex[:12]}"
        self.publish(
            "message",
            message_html({"role": "user", "content": self._as_kept(text, files)}, self._now()),
        )
        fetch = None
        if files and self.intake is not None:
            fetch = self._fetcher(files)
        arrival = Arrival(WEB_CHAT, "owner", "Owner", text, message_id=message_id, fetch=fetch)
        await self.admit(arrival)

    def _as_kept(self, text: str, files: list[tuple[str, str, bytes]]) -> list[dict[str, Any]]:
        """The message as the transcript will keep it, so that it looks the same once the
        page is reloaded: the images the model will see, then the text and the files saved."""
        blocks: list[dict[str, Any]] = []
        limit = self.intake.max_image_bytes if self.intake is not None else 0
        for name, mime, data in files:
            kind = sniff_image(data) if mime in MODEL_IMAGE_TYPES and len(data) <= limit else None
            if kind is not None:
                source = {"type": "base64", "media_type": kind, "data": b64encode(data).decode()}
                blocks.append({"type": "image", "source": source})
            else:
                text += f"\n[file received: {json.dumps(name, ensure_ascii=False)}, saved at …]"
        return [*blocks, {"type": "text", "text": text}]

    def _fetcher(
        self, files: list[tuple[str, str, bytes]]
    ) -> Callable[[SessionKey], Awaitable[Fetched]]:
        """Files from the page go through the same intake as a chat platform's: images to
        the model, other files to the private inbox, each within the size limits."""
        intake = self.intake
        assert intake is not None

        async def fetch(key: SessionKey) -> Fetched:
            got: list[Attachment] = []
            notes: list[str] = []
            for name, mime, data in files:

                async def read(data: bytes = data) -> bytes:
                    return data

                taken = await intake.take(key, name, mime, len(data), read)
                if isinstance(taken, Attachment):
                    got.append(taken)
                else:
                    notes.append(taken)
            return tuple(got), tuple(notes)

        return fetch


class WebLive(WholeText):
    """A reply streamed to the open chat pages: each frame replaces the draft bubble."""

    every = 0.2
    first_chars = 1
    first_after = 0.2

    def __init__(self, channel: WebChannel, key: SessionKey) -> None:
        super().__init__(key, None, lambda ref: None)
        self.channel = channel
        self._showing = False

    @property
    def started(self) -> bool:
        return self._showing

    async def show(self, text: str) -> None:
        if self.channel.listening:
            self.channel.publish("draft", markdown(text))
        self._showing = True

    async def progress(self, note: str) -> None:
        self.channel.publish("draft", f"<p><em>{esc(note)}</em></p>")
        self._showing = True

    async def finish(self, msg: OutboundMessage) -> None:
        self.channel.publish("draft", "")
        await self.channel.send(msg)
        self._showing = False

    async def take_back(self) -> None:
        self.channel.publish("draft", "")
        self._showing = False
