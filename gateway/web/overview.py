"""The overview: what ``corvid status`` shows, kept up to date in the open page."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import Callable
from datetime import tzinfo
from functools import partial
from typing import Any

from aiohttp import web

from gateway.chat_names import Guests, Titles, read_titles
from gateway.contract.events import SessionKey
from gateway.infra.times import local_iso
from gateway.services.index_status import index_line
from gateway.services.status import duration, zone_of
from gateway.web.backend import Backend
from gateway.web.html import esc, page, table
from gateway.web.people import guests, key_html
from gateway.web.respond import BACKEND, GUARD, STOPPING, html_response

log = logging.getLogger(__name__)

# How often an open overview looks for changes.
REFRESH_SECONDS = 1.0


def routes(app: web.Application) -> None:
    app.router.add_get("/", overview)
    app.router.add_get("/events/overview", overview_events)


def fragment(r: dict[str, Any], known: Guests | None = None, titles: Titles | None = None) -> str:
    """The live part of the overview, from a status report; ``known``: the guests' names,
    ``titles``: the shared chats'."""
    chat = partial(_chat, known=known or {}, titles=titles or {})
    tz = zone_of(r)
    if r["running"]:
        up = duration(r["uptime_seconds"])
        head = (
            f"<p>Running (pid {r['pid']}, up {esc(up)}), model <code>{esc(r['model'])}</code>.</p>"
        )
    else:
        head = "<p>Not running.</p>"
    channels = table(
        ("Channel", "State"),
        ((esc(c["name"]), _state(c["state"])) for c in r.get("channels", [])),
        "No chat channels are enabled.",
    )
    busy = [s for s in r["sessions"] if s["running"]]
    now = table(
        ("Session", "Queued"),
        ((chat(s["key"]), esc(s["queued"])) for s in busy),
        "Nothing is being answered right now.",
    )
    sessions = table(
        ("Session", "Turns", "Context", "Last active"),
        (
            (
                chat(s["key"]),
                esc(s["turns"]),
                f"{s['context_tokens']:,} tokens ({s['context_pct']:.0f}%)",
                esc(local_iso(s["last_active"], tz)),
            )
            for s in r["sessions"]
        ),
        "No conversations yet.",
    )
    undelivered = _undelivered(r["undelivered"], chat, tz)
    problems = table(
        ("When", "Level", "What"),
        (
            (esc(local_iso(p["ts"], tz, seconds=True)), esc(p["level"]), esc(p["msg"]))
            for p in r["problems"][-10:][::-1]
        ),
        "No warnings or errors since the start.",
    )
    waiting = f"<p>Messages waiting for an answer: {r['unanswered']}</p>" if r["unanswered"] else ""
    total = r["sessions_total"]
    return (
        f"{head}<h2>Channels</h2>{channels}{_mcp(r.get('mcp') or [])}{_memory(r)}"
        f"<h2>Answering now</h2>{now}{waiting}"
        f"<h2>Sessions ({total})</h2>{sessions}"
        f"<h2>Undelivered messages</h2>{undelivered}<h2>Recent warnings and errors</h2>{problems}"
    )


def _undelivered(rows: list[dict[str, Any]], chat: Callable[[str], str], tz: tzinfo) -> str:
    """Replies that failed, may not have arrived, or wait to be sent again."""
    return table(
        ("When", "Chat", "Why", "Text"),
        (
            (
                esc(local_iso(u["when"], tz)),
                chat(u["key"]),
                esc(
                    ("waiting to be sent again: " if u["status"] == "waiting" else "")
                    + (u["error"] or u["status"])
                ),
                esc(u["text"]),
            )
            for u in rows
        ),
        "Every reply was delivered.",
    )


def _chat(key: str, known: Guests, titles: Titles) -> str:
    with contextlib.suppress(ValueError):
        return key_html(SessionKey.parse(key), known, titles)
    return f"<code>{esc(key)}</code>"


def _mcp(servers: list[dict[str, Any]]) -> str:
    """The MCP servers, their state and tools; nothing when none is configured."""
    if not servers:
        return ""
    rows = (
        (
            esc(m["name"]),
            _state(m["state"] + (f": {m['error']}" if m["error"] else "")),
            esc(", ".join(t.split("__", 1)[-1] for t in m["tools"]) or "none"),
            "every chat" if m["shared"] else "private chats",
        )
        for m in servers
    )
    return "<h2>Tools</h2>" + table(("MCP server", "State", "Tools", "Offered in"), rows, "")


def _memory(r: dict[str, Any]) -> str:
    """How far memory search's index is (``corvid status`` says the same)."""
    search = r.get("memory_search")
    return f"<h2>Memory search</h2><p>{esc(index_line(search))}</p>" if search else ""


def _state(state: str) -> str:
    ok = state in ("connected", "ready")
    trouble = ("stopped", "waiting", "cannot send")
    kind = "ok" if ok else "error" if state.startswith(trouble) else "idle"
    return f'<span class="state {kind}">{esc(state)}</span>'


def _fragment(backend: Backend) -> str:
    titles = read_titles(backend.config.layout.chat_names)
    return fragment(backend.status(), guests(backend.pairing), titles)


async def overview(request: web.Request) -> web.StreamResponse:
    backend = request.app[BACKEND]
    live = fragment(
        backend.status(), guests(backend.pairing), read_titles(backend.config.layout.chat_names)
    )
    body = f'<section id="live" data-live="/events/overview">{live}</section>'
    return html_response(page("Overview", body, active="/", csrf=request.app[GUARD].csrf))


async def overview_events(request: web.Request) -> web.StreamResponse:
    backend, stopping = request.app[BACKEND], request.app[STOPPING]
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await response.prepare(request)
    last = ""
    try:
        while not stopping.is_set():
            current = fragment(
                backend.status(),
                guests(backend.pairing),
                read_titles(backend.config.layout.chat_names),
            )
            if current != last:
                await response.write(sse("overview", current))
                last = current
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stopping.wait(), REFRESH_SECONDS)
    except ConnectionResetError:
        # Closing a tab is how a live page ends: nothing went wrong, so no warning either.
        log.debug("live page closed")
    return response


def sse(event: str, data: str) -> bytes:
    """One Server-Sent Event. A browser ends a line at CR, LF or CRLF alike, so each of them
    starts a new data line: text in ``data`` cannot start a field of its own."""
    lines = "".join(f"data: {line}\n" for line in re.split(r"\r\n|\r|\n", data))
    return f"event: {event}\n{lines}\n".encode()
