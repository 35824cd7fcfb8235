"""The sessions page: every conversation with its scope, activity, context and cache use; a
transcript viewer that pages through long transcripts; and a fresh start for a session.

The list comes from ``SessionFigures`` (read once per change of a transcript). The viewer reads the
transcript's lines but decodes only the page it shows. Summaries, tool calls, tool results and
the system prompt are folded (``<details>``).
"""

from __future__ import annotations

import contextlib
import json
import math
import re
from datetime import UTC, datetime, tzinfo
from typing import Any
from urllib.parse import quote

from aiohttp import web

from gateway.contract.events import InboundMessage, SessionKey, parse_command
from gateway.web.html import esc, form, markdown, page, table
from gateway.web.people import Guests, all_earlier, earlier, ended, guests, key_html, who_is
from gateway.web.respond import BACKEND, GUARD, flash, html_response, see_other

PAGE_LINES = 100  # transcript lines per page


def routes(app: web.Application) -> None:
    app.router.add_get("/sessions", sessions_page)
    app.router.add_get("/sessions/view", transcript_page)
    app.router.add_get("/sessions/new", confirm_fresh)
    app.router.add_post("/sessions/new", fresh_session)


def scope_of(key: SessionKey) -> str:
    if key.job:
        return "job"
    if key.topic is not None:
        return "topic"
    return str(key.scope)


async def sessions_page(request: web.Request) -> web.StreamResponse:
    backend, csrf = request.app[BACKEND], request.app[GUARD].csrf
    window = backend.config.llm.context_window
    rows = []
    known = guests(backend.pairing)
    for s in backend.sessions():
        link = f'<a href="/sessions/view?key={quote(str(s.key))}">{key_html(s.key, known)}</a>'
        now = "answering" if backend.busy(s.key) else ""
        if queued := backend.queued(s.key):
            now += f", {queued} queued"
        cache = "—" if s.cache_share is None else f"{100 * s.cache_share:.0f}%"
        when = datetime.fromtimestamp(s.last_active, UTC).strftime("%Y-%m-%d %H:%M UTC")
        rows.append(
            (
                link,
                esc(scope_of(s.key)),
                esc(when),
                f"{s.context_tokens:,} ({100 * s.context_tokens / window:.0f}%)",
                str(s.turns),
                cache,
                esc(now),
            )
        )
    body = flash(request) + table(
        ("Session", "Scope", "Last active", "Context (of window)", "Turns", "From cache", "Now"),
        rows,
        "No conversations yet.",
    )
    tz = backend.config.tz
    past = table(
        ("Chat", "Ended"),
        (
            (_past_link(key, stamp, known, when_shown(when, tz)), esc(key))
            for key, stamp, when in all_earlier(backend.transcripts())
        ),
        "None yet: Start a fresh session (or /new in a chat) keeps the old one here.",
    )
    body += f"<h2>Earlier sessions</h2>{past}"
    return html_response(page("Sessions", body, active="/sessions", csrf=csrf))


def _past_link(key: SessionKey, stamp: str, known: Guests, when: str) -> str:
    where = f"/sessions/view?key={quote(str(key))}&amp;until={stamp}"
    return f'<a href="{where}">{esc(who_is(key, known))}, until {esc(when)}</a>'


def _key(raw: str) -> SessionKey:
    try:
        return SessionKey.parse(raw)
    except ValueError:
        raise web.HTTPNotFound(text="No such session.\n") from None


async def transcript_page(request: web.Request) -> web.StreamResponse:
    backend, csrf = request.app[BACKEND], request.app[GUARD].csrf
    key = _key(request.query.get("key", ""))
    tz, known = backend.config.tz, guests(backend.pairing)
    folder = backend.transcripts()
    until = request.query.get("until")  # an earlier session of the chat, by when it ended
    if until is not None and ended(until) is None:
        raise web.HTTPNotFound(text="No such session.\n")
    path = backend.transcript(key) if until is None else folder / f"{key}.{until}.jsonl"
    past = earlier(folder, key)
    try:
        lines = path.read_bytes().splitlines()
    except FileNotFoundError:
        if until is not None or not past:
            raise web.HTTPNotFound(text="No such session.\n") from None
        lines = []  # started afresh, and nothing said since
    pages = max(1, math.ceil(len(lines) / PAGE_LINES))
    try:
        number = min(max(1, int(request.query.get("page", pages))), pages)
    except ValueError:
        number = pages
    shown = lines[(number - 1) * PAGE_LINES : number * PAGE_LINES]
    who = "Scheduled job" if key.channel == "cron" else None
    entries = "".join(entry_html(raw, tz, who) for raw in shown)
    nav = _pager(key, number, pages, until)
    if until is not None:
        what = f"An earlier session of this chat, ended {when_shown(ended(until), tz)}."
    elif lines:
        what = (
            f'<form method="get" action="/sessions/new" class="inline">'
            f'<input type="hidden" name="key" value="{esc(key)}">'
            "<button>Start a fresh session</button></form>"
        )
    else:
        what = "Nothing said since the last fresh start."
    listed = "".join(
        f"<li>{_past_link(key, stamp, known, when_shown(when, tz))}</li>"
        for stamp, when in past
        if stamp != until
    )
    if until is not None:
        current = f'<li><a href="/sessions/view?key={quote(str(key))}">The current one</a></li>'
        listed = current + listed
    others = f"<h2>Other sessions of this chat</h2><ul>{listed}</ul>" if listed else ""
    body = (
        f"<p><code>{esc(key)}</code> · {len(lines):,} lines, page {number} of {pages} (newest "
        f'last). {what}</p>{nav}<div class="transcript">{entries}</div>{nav}{others}'
    )
    return html_response(page(who_is(key, known), body, active="/sessions", csrf=csrf))


async def confirm_fresh(request: web.Request) -> web.StreamResponse:
    """Ask before a fresh start: the conversation so far leaves the model's context."""
    backend, csrf = request.app[BACKEND], request.app[GUARD].csrf
    key = _key(request.query.get("key", ""))
    who = who_is(key, guests(backend.pairing))
    back = f"/sessions/view?key={quote(str(key))}"
    body = (
        f"<p>{esc(who)} (<code>{esc(key)}</code>): the conversation so far is summarised into "
        "the log, the chat is told, and the next message starts a new session. The old one "
        "stays readable under Earlier sessions.</p><p>"
        + form("/sessions/new", csrf, "Yes, start afresh", {"key": str(key), "confirm": "1"})
        + f' <a class="button" href="{esc(back)}">Keep the session</a></p>'
    )
    return html_response(page("Start a fresh session?", body, active="/sessions", csrf=csrf))


def _pager(key: SessionKey, number: int, pages: int, until: str | None = None) -> str:
    also = f"&amp;until={until}" if until else ""

    def link(n: int, label: str) -> str:
        return f'<a href="/sessions/view?key={quote(str(key))}{also}&amp;page={n}">{label}</a>'

    parts = []
    if number > 1:
        parts += [link(1, "« oldest"), link(number - 1, "‹ older")]
    if number < pages:
        parts += [link(number + 1, "newer ›"), link(pages, "newest »")]
    return f'<p class="pager">{" · ".join(parts)}</p>' if parts else ""


def when_shown(ts: object, tz: tzinfo | None = None) -> str:
    """A stored time (ISO 8601) as the owner reads it: local date and time to the minute."""
    try:
        when = ts if isinstance(ts, datetime) else datetime.fromisoformat(str(ts))
    except ValueError:
        return ""
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return f"{when.astimezone(tz or UTC):%Y-%m-%d %H:%M}"


def entry_html(raw: bytes, tz: tzinfo | None = None, who: str | None = None) -> str:
    """One transcript line as HTML; an unreadable line is shown as such, not skipped."""
    try:
        entry = json.loads(raw)
        kind = entry["t"]
    except (ValueError, KeyError, TypeError):
        return '<p class="entry empty">(an unreadable line)</p>'
    ts = esc(when_shown(entry.get("ts", entry.get("created", "")), tz))
    if kind == "session":
        prompt = _fold("System prompt", f"<pre>{esc(entry.get('system', ''))}</pre>")
        return f'<div class="entry meta">Session started {ts}. {prompt}</div>'
    if kind == "msg":
        return message_html(entry.get("msg", {}), ts, who)
    if kind == "compaction":
        summary = _fold("Summary", markdown(str(entry.get("summary", ""))))
        note = f"Compacted at {ts}: older messages replaced by a summary."
        return f'<div class="entry meta">{note} {summary}</div>'
    labels = {
        "prompt": "Prompt snapshot renewed after a hand edit",
        "flush": "Memory flush ran",
        "withdrawn": f"{entry.get('count', 0)} message(s) withdrawn by /stop",
    }
    if kind in labels:
        return f'<div class="entry meta">{esc(labels[kind])} ({ts})</div>'
    if kind == "turn" and entry.get("status") != "ok":
        return f'<div class="entry meta">Turn ended: {esc(entry.get("status"))} ({ts})</div>'
    return ""  # usage lines and ordinary turn ends


# What the model reads around a message and the owner need not: the bracketed line before each
# one ("[Sun 2026-11-22 10:00 CET]", with the sender in shared chats), shown as the entry's
# label and time instead; the notes about files saved, shown as the files' names; and the
# chat's earlier lines a group message came with, folded.
HEADER = re.compile(
    r"^\[(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) \d{4}-\d\d-\d\d \d\d:\d\d[^\]\n·]*"
    r"(?: · (?P<who>[^\n]*?) \(id [^\n)]*\))?\]\n?"
)
FILE_NOTE = re.compile(r'\n?\[file received: (?P<name>"(?:[^"\\\n]|\\.)*"), saved at [^\n]*\]')
EARLIER = re.compile(
    r"^\[Earlier in this chat, not addressed to you\]\n(?P<lines>.*?)\n\n(?=\[)", re.S
)
IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
BASE64 = re.compile(r"^[A-Za-z0-9+/]*={0,2}$")


def message_html(msg: dict[str, Any], ts: str = "", who: str | None = None) -> str:
    """A message as the owner sees it: who wrote it and when, then what they wrote. ``who``
    names the sender of user messages; by default the sender a shared chat's header names,
    else the owner ("You")."""
    role = msg.get("role", "")
    content = msg.get("content", "")
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    parts = []
    for block in blocks if isinstance(blocks, list) else []:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text" and role == "assistant":
            parts.append(markdown(str(block.get("text", ""))))
        elif kind == "text":
            text, sender = _as_written(str(block.get("text", "")))
            who = who or sender
            parts.append(text)
        elif kind == "image":
            parts.append(_image(block))
        elif kind in ("tool_use", "server_tool_use"):
            args = json.dumps(block.get("input", {}), ensure_ascii=False, indent=1)
            parts.append(_fold(f"Tool: {block.get('name', '?')}", f"<pre>{esc(args)}</pre>"))
        elif kind == "web_search_tool_result":
            parts.append(_fold("Web search results", f"<pre>{esc(_found(block))}</pre>"))
        elif kind == "tool_result":
            parts.append(_fold("Tool result", f"<pre>{esc(_result_text(block))}</pre>"))
    label = (who or "You") if role == "user" else "Assistant"
    stamp = f" <time>{ts}</time>" if ts else ""
    return f'<div class="entry {esc(role)}"><b>{esc(label)}</b>{stamp}{"".join(parts)}</div>'


def _as_written(text: str) -> tuple[str, str | None]:
    """A user message's text as HTML without what only the model reads, and the sender its
    header names (shared chats)."""
    earlier = ""
    if found := EARLIER.match(text):
        earlier = _fold("Earlier in the chat", f"<pre>{esc(found['lines'])}</pre>")
        text = text[found.end() :]
    sender = None
    if found := HEADER.match(text):
        sender = found["who"]
        text = text[found.end() :]
    names = []
    for note in FILE_NOTE.finditer(text):
        with contextlib.suppress(ValueError):
            names.append(str(json.loads(note["name"])))
    return earlier + said_html(FILE_NOTE.sub("", text), names), sender


def said_html(text: str, files: list[str]) -> str:
    """What someone wrote and the names of the files they sent with it."""
    shown = f"<p class=pre>{esc(text.strip())}</p>" if text.strip() else ""
    return shown + "".join(f'<p class="file">📎 {esc(name)}</p>' for name in files)


def _image(block: dict[str, Any]) -> str:
    source = block.get("source")
    source = source if isinstance(source, dict) else {}
    kind, data = source.get("media_type"), source.get("data")
    if source.get("type") != "base64" or kind not in IMAGE_TYPES or not isinstance(data, str):
        return '<p class="empty">[an image]</p>'
    if not BASE64.match(data):
        return '<p class="empty">[an image]</p>'
    return f'<img class="attached" alt="an image" src="data:{kind};base64,{data}">'


def _result_text(block: dict[str, Any]) -> str:
    content = block.get("content", "")
    if isinstance(content, list):
        return "\n".join(str(c.get("text", "[image]")) for c in content if isinstance(c, dict))
    return str(content)


def _found(block: dict[str, Any]) -> str:
    """The pages a web search found (the API's own search), one per line."""
    content = block.get("content")
    if not isinstance(content, list):
        return "(the search failed)"
    return "\n".join(
        f"{c.get('title', '')} <{c.get('url', '')}>" for c in content if isinstance(c, dict)
    )


def _fold(summary: str, inner: str) -> str:
    return f"<details><summary>{esc(summary)}</summary>{inner}</details>"


async def fresh_session(request: web.Request) -> web.StreamResponse:
    backend, form_data = request.app[BACKEND], await request.post()
    key = _key(str(form_data.get("key", "")))
    if form_data.get("confirm") != "1":
        return see_other(f"/sessions/new?key={quote(str(key))}")
    if not backend.serves(key.channel):
        problem = f"{key.channel} is not running here, so this session cannot be restarted now."
        return see_other("/sessions", problem=problem)
    # The same /new the chat has: it waits for its turn behind the session's messages, saves
    # a summary of the old session to the log, and tells the chat it started afresh.
    new = InboundMessage(
        key, "/new", sender_id="owner", sender_name="control page", command=parse_command("/new")
    )
    await backend.handle(new)
    return see_other("/sessions", ok=f"{key}: started a fresh session.")
