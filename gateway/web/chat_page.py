"""The chat page: the web chat's history, the form that sends to it, and its event stream."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from aiohttp import web

from gateway.web.chat import WEB_CHAT, WebChannel
from gateway.web.guard import CSRF_HEADER
from gateway.web.html import esc, page
from gateway.web.overview import sse
from gateway.web.respond import BACKEND, GUARD, STOPPING, html_response, see_other
from gateway.web.transcript_html import message_html, when_shown

log = logging.getLogger(__name__)

HISTORY = 60  # messages shown when the page opens (the sessions page has the whole transcript)


def routes(app: web.Application) -> None:
    app.router.add_get("/chat", chat_page)
    app.router.add_post("/chat", chat_post)
    app.router.add_get("/events/chat", chat_events)


def _channel(request: web.Request) -> WebChannel:
    channel = request.app[BACKEND].web_chat()
    if not isinstance(channel, WebChannel):
        raise web.HTTPNotFound(text="The web chat is not running in this process.\n")
    return channel


async def chat_page(request: web.Request) -> web.StreamResponse:
    backend, csrf = request.app[BACKEND], request.app[GUARD].csrf
    channel = _channel(request)
    transcript = backend.transcript(WEB_CHAT)
    tz = backend.config.tz
    shown = "".join(
        message_html(m, when_shown(m["ts"], tz))
        for m in history(transcript, channel.outbox, HISTORY)
    )
    if not shown:
        shown = '<p class="empty">Write below to talk to the assistant, as in a private chat.</p>'
    body = (
        f'<div id="chat" class="transcript" data-chat="/events/chat">{shown}'
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


def history(transcript: Path, outbox: Path | None, limit: int) -> list[dict[str, Any]]:
    """The chat as the owner saw it, oldest first: what they wrote and the replies (from the
    transcript), and messages sent to the chat outside a conversation, such as reminders
    (from the outbox), in order of time."""
    said: set[str] = set()
    timed: list[tuple[datetime, dict[str, Any]]] = []
    for entry in _lines(transcript):
        if entry.get("t") != "msg" or not isinstance(entry.get("msg"), dict):
            continue
        msg, text, ts = entry["msg"], _text(entry["msg"]), entry.get("ts")
        if msg.get("role") == "assistant":
            if text:
                said.add(text.strip())
                timed.append((_when(ts), {"role": "assistant", "content": text, "ts": ts}))
        elif shown := _written(msg):  # what the owner wrote and sent, not tool results
            timed.append((_when(ts), {"role": "user", "content": shown, "ts": ts}))
    for entry in _lines(outbox) if outbox is not None else []:
        text, ts = str(entry.get("text", "")), entry.get("ts")
        if text.strip() not in said:
            timed.append((_when(ts), {"role": "assistant", "content": text, "ts": ts}))
    timed.sort(key=lambda pair: pair[0])
    return [msg for _, msg in timed[-limit:]]


def _lines(path: Path) -> list[dict[str, Any]]:
    try:
        raw = path.read_bytes().splitlines()
    except FileNotFoundError:
        return []
    out = []
    for line in raw:
        with contextlib.suppress(ValueError):
            entry = json.loads(line)
            if isinstance(entry, dict):
                out.append(entry)
    return out


def _text(msg: dict[str, Any]) -> str:
    content = msg.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    texts = [
        str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text"
    ]
    return "\n\n".join(t for t in texts if t.strip())


def _written(msg: dict[str, Any]) -> list[dict[str, Any]]:
    """The text and images of a user message (its tool results are the model's business)."""
    content = msg.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    if not isinstance(content, list):
        return []
    kept = [b for b in content if isinstance(b, dict) and b.get("type") in ("text", "image")]
    filled = [b for b in kept if b["type"] == "image" or str(b.get("text", "")).strip()]
    return kept if filled else []


def _when(ts: object) -> datetime:
    try:
        when = datetime.fromisoformat(str(ts))
    except ValueError:
        return datetime.min.replace(tzinfo=UTC)
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


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
            log.debug("live page closed")  # a closed tab: the normal end of a stream
        finally:
            stop.cancel()
    return response
