"""The web chat: the owner's private session in the browser, ``web:private:owner``.

``WebChannel`` is a channel like Telegram's: the page's form becomes an ``Arrival`` (no access
policy: only the signed-in owner reaches the page), and replies, typing and the streamed reply
go out as events to every open chat page (``/events/chat``). The conversation itself is the
session's transcript, so the page shows the same history after a reload or a restart.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import re
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

from aiohttp import web

from agent.audience import inbox_folder
from channels.access import Arrival, Fetched
from channels.base import Channel
from channels.inbox import Intake
from channels.live import LiveReply
from gateway.config import ChannelConfig, Config
from gateway.events import Attachment, OutboundMessage, Scope, SessionKey, audience_of
from gateway.ports import Clock
from gateway.web.guard import CSRF_HEADER
from gateway.web.html import esc, markdown, page
from gateway.web.overview import sse
from gateway.web.server import BACKEND, GUARD, STOPPING, html_response, see_other
from gateway.web.sessions_page import message_html

WEB_CHAT = SessionKey("web", Scope.PRIVATE, "owner")
HISTORY = 60  # messages shown when the page opens (the sessions page has the rest)

# The bracketed line each message starts with in the transcript ("[Sun 2026-11-22 10:00 CET]").
HEADER = re.compile(r"^\[[^\]\n]*\]\n?")

Event = tuple[str, str]  # (event name, HTML or text)


def web_chat(config: Config, clock: Clock) -> WebChannel:
    """The web chat's channel; files sent on the page go to the private inbox, within the
    default size limits of a chat platform."""
    limits = ChannelConfig()
    intake = Intake(
        config.workspace.resolve(),
        limits.max_image_bytes,
        limits.max_file_bytes,
        today=lambda: clock.now().astimezone(config.tz).date(),
        folder=lambda key, day: inbox_folder(audience_of(key), day),
    )
    return WebChannel(intake, clock)


class WebChannel(Channel):
    """Chat from the control page; see the module's docstring."""

    name = "web"

    def __init__(self, intake: Intake | None = None, clock: Clock | None = None) -> None:
        super().__init__(None, clock)
        self.intake = intake
        self._listeners: set[asyncio.Queue[Event]] = set()
        self._ids = itertools.count(1)

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        self.publish("closed", "")

    def publish(self, event: str, data: str) -> None:
        for queue in self._listeners:
            queue.put_nowait((event, data))

    @contextlib.contextmanager
    def listen(self) -> Iterator[asyncio.Queue[Event]]:
        queue: asyncio.Queue[Event] = asyncio.Queue()
        self._listeners.add(queue)
        try:
            yield queue
        finally:
            self._listeners.discard(queue)

    async def send(self, msg: OutboundMessage) -> None:
        self.publish("message", message_html({"role": "assistant", "content": msg.text}))

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
        shown = text + "".join(f"\n[{name}]" for name, _, _ in files)
        self.publish("message", message_html({"role": "user", "content": shown}))
        fetch = None
        if files and self.intake is not None:
            fetch = self._fetcher(files)
        arrival = Arrival(WEB_CHAT, "owner", "Owner", text, message_id=message_id, fetch=fetch)
        await self.admit(arrival)

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


class WebLive(LiveReply[str]):
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

    # The page's draft is one bubble, not a list of platform messages: the methods above
    # replace the cut.
    async def cut(self, text: str) -> list[str]:
        return [text]

    async def post(self, piece: str, first: bool) -> str:
        raise NotImplementedError

    async def edit(self, ref: str, piece: str) -> None:
        raise NotImplementedError

    async def delete(self, ref: str) -> None:
        raise NotImplementedError


# -- the page -----------------------------------------------------------------------------------


def routes(app: web.Application) -> None:
    app.router.add_get("/chat", chat_page)
    app.router.add_post("/chat", chat_post)
    app.router.add_get("/events/chat", chat_events)


def _channel(request: web.Request) -> WebChannel:
    channel = request.app[BACKEND].gateway.channels.get("web")
    if not isinstance(channel, WebChannel):
        raise web.HTTPNotFound(text="The web chat is not running in this process.\n")
    return channel


async def chat_page(request: web.Request) -> web.StreamResponse:
    backend, csrf = request.app[BACKEND], request.app[GUARD].csrf
    _channel(request)
    state = backend.gateway.agent.sessions.loaded(WEB_CHAT) or backend.gateway.agent.store.read(
        WEB_CHAT
    )
    recent = state.messages[-HISTORY:] if state else []
    history = "".join(message_html(_as_written(m)) for m in recent)
    if not history:
        history = '<p class="empty">Write below to talk to the assistant, as in a private chat.</p>'
    body = (
        f'<div id="chat" class="transcript" data-chat="/events/chat">{history}'
        '<div id="draft" class="entry assistant" hidden></div></div>'
        '<p id="typing" class="empty" hidden>The assistant is writing…</p>'
        '<form id="say" method="post" action="/chat" enctype="multipart/form-data">'
        f'<input type="hidden" name="csrf" value="{esc(csrf)}">'
        '<textarea name="text" rows="3" placeholder="Message (Enter sends, Shift+Enter for a new '
        'line; paste or attach images)" aria-label="Message"></textarea>'
        '<p><input type="file" name="file" multiple aria-label="Attach files"> '
        "<button>Send</button></p></form>"
    )
    return html_response(page("Chat", body, active="/chat", csrf=csrf))


def _as_written(msg: dict[str, Any]) -> dict[str, Any]:
    """A message as the owner wrote it: without the time header the model sees."""
    content = msg.get("content")
    if msg.get("role") != "user" or not isinstance(content, list):
        return msg
    blocks = [
        {**b, "text": HEADER.sub("", str(b.get("text", "")), count=1)} if b.get("type") == "text"
        else b
        for b in content
        if isinstance(b, dict)
    ]  # fmt: skip
    return {**msg, "content": blocks}


async def chat_post(request: web.Request) -> web.StreamResponse:
    channel = _channel(request)
    form = await request.post()  # read (and kept) by the guard's CSRF check already
    text = str(form.get("text", "")).replace("\r\n", "\n").strip()
    files = [
        (f.filename, f.content_type, f.file.read())
        for f in form.getall("file", [])
        if isinstance(f, web.FileField) and f.filename
    ]
    if text or files:
        await channel.say(text, files)
    if request.headers.get(CSRF_HEADER):  # sent by the page's script: it shows the reply
        return web.Response(status=204)
    return see_other("/chat")


async def chat_events(request: web.Request) -> web.StreamResponse:
    channel, stopping = _channel(request), request.app[STOPPING]
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await response.prepare(request)
    await response.write(b": open\n\n")
    with channel.listen() as queue:
        stop = asyncio.ensure_future(stopping.wait())
        try:
            while True:
                got = asyncio.ensure_future(queue.get())
                await asyncio.wait((got, stop), return_when=asyncio.FIRST_COMPLETED)
                if not got.done():
                    got.cancel()
                    break
                event, data = got.result()
                if event == "closed":
                    break
                await response.write(sse(event, data))
        except ConnectionResetError:
            pass  # the page was closed
        finally:
            stop.cancel()
    return response
