"""The sessions page: every conversation with its scope, activity, context and cache use; a
transcript viewer that pages through long transcripts; and a fresh start for a session.

The list comes from ``SessionFigures`` (read once per change of a transcript). The viewer reads the
transcript's lines but decodes only the page it shows. Summaries, tool calls, tool results and
the system prompt are folded (``<details>``).
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from aiohttp import web

from gateway.contract.events import InboundMessage, SessionKey, parse_command
from gateway.web.html import esc, form, markdown, outcome, page, table
from gateway.web.respond import BACKEND, GUARD, html_response, see_other

PAGE_LINES = 100  # transcript lines per page


def routes(app: web.Application) -> None:
    app.router.add_get("/sessions", sessions_page)
    app.router.add_get("/sessions/view", transcript_page)
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
    for s in backend.sessions():
        link = f'<a href="/sessions/view?key={quote(str(s.key))}"><code>{esc(s.key)}</code></a>'
        now = "answering" if backend.busy(s.key) else ""
        if queued := backend.queued(s.key):
            now += f", {queued} queued"
        cache = "—" if s.cache_share is None else f"{100 * s.cache_share:.0f}%"
        when = datetime.fromtimestamp(s.last_active, UTC).strftime("%Y-%m-%d %H:%M UTC")
        rows.append(
            (link, esc(scope_of(s.key)), esc(when),
             f"{s.context_tokens:,} ({100 * s.context_tokens / window:.0f}%)", str(s.turns),
             cache, esc(now))
        )  # fmt: skip
    body = outcome(request.query) + table(
        ("Session", "Scope", "Last active", "Context (of window)", "Turns", "From cache", "Now"),
        rows,
        "No conversations yet.",
    )
    return html_response(page("Sessions", body, active="/sessions", csrf=csrf))


def _key(raw: str) -> SessionKey:
    try:
        return SessionKey.parse(raw)
    except ValueError:
        raise web.HTTPNotFound(text="No such session.\n") from None


async def transcript_page(request: web.Request) -> web.StreamResponse:
    backend, csrf = request.app[BACKEND], request.app[GUARD].csrf
    key = _key(request.query.get("key", ""))
    path = backend.transcript(key)
    try:
        lines = path.read_bytes().splitlines()
    except FileNotFoundError:
        raise web.HTTPNotFound(text="No such session.\n") from None
    pages = max(1, math.ceil(len(lines) / PAGE_LINES))
    try:
        number = min(max(1, int(request.query.get("page", pages))), pages)
    except ValueError:
        number = pages
    shown = lines[(number - 1) * PAGE_LINES : number * PAGE_LINES]
    entries = "".join(entry_html(raw) for raw in shown)
    nav = _pager(key, number, pages)
    fresh = form("/sessions/new", csrf, "Start a fresh session", {"key": str(key)})
    body = (
        f"<p>{len(lines):,} lines, page {number} of {pages} (newest last). {fresh}</p>"
        f'{nav}<div class="transcript">{entries}</div>{nav}'
    )
    return html_response(page(str(key), body, active="/sessions", csrf=csrf))


def _pager(key: SessionKey, number: int, pages: int) -> str:
    def link(n: int, label: str) -> str:
        return f'<a href="/sessions/view?key={quote(str(key))}&page={n}">{label}</a>'

    parts = []
    if number > 1:
        parts += [link(1, "« oldest"), link(number - 1, "‹ older")]
    if number < pages:
        parts += [link(number + 1, "newer ›"), link(pages, "newest »")]
    return f'<p class="pager">{" · ".join(parts)}</p>' if parts else ""


def entry_html(raw: bytes) -> str:
    """One transcript line as HTML; an unreadable line is shown as such, not skipped."""
    try:
        entry = json.loads(raw)
        kind = entry["t"]
    except (ValueError, KeyError, TypeError):
        return '<p class="entry empty">(an unreadable line)</p>'
    ts = esc(str(entry.get("ts", entry.get("created", "")))[:19].replace("T", " "))
    if kind == "session":
        prompt = _fold("System prompt", f"<pre>{esc(entry.get('system', ''))}</pre>")
        return f'<div class="entry meta">Session started {ts}. {prompt}</div>'
    if kind == "msg":
        return message_html(entry.get("msg", {}), ts)
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


def message_html(msg: dict[str, Any], ts: str = "") -> str:
    role = msg.get("role", "")
    content = msg.get("content", "")
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    parts = []
    for block in blocks if isinstance(blocks, list) else []:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text":
            text = str(block.get("text", ""))
            parts.append(markdown(text) if role == "assistant" else f"<p class=pre>{esc(text)}</p>")
        elif kind == "image":
            parts.append('<p class="empty">[an image]</p>')
        elif kind in ("tool_use", "server_tool_use"):
            args = json.dumps(block.get("input", {}), ensure_ascii=False, indent=1)
            parts.append(_fold(f"Tool: {block.get('name', '?')}", f"<pre>{esc(args)}</pre>"))
        elif kind == "web_search_tool_result":
            parts.append(_fold("Web search results", f"<pre>{esc(_found(block))}</pre>"))
        elif kind == "tool_result":
            parts.append(_fold("Tool result", f"<pre>{esc(_result_text(block))}</pre>"))
    who = "Message" if role == "user" else "Assistant"
    stamp = f" <small>{ts}</small>" if ts else ""
    return f'<div class="entry {esc(role)}"><b>{who}</b>{stamp}{"".join(parts)}</div>'


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
    backend = request.app[BACKEND]
    key = _key(str((await request.post()).get("key", "")))
    if not backend.serves(key.channel):
        problem = f"{key.channel} is not running here, so this session cannot be restarted now."
        return see_other(f"/sessions?problem={quote(problem)}")
    # The same /new the chat has: it waits for its turn behind the session's messages, saves
    # a summary of the old session to the log, and tells the chat it started afresh.
    new = InboundMessage(key, "/new", sender_id="owner", sender_name="control page",
                         command=parse_command("/new"))  # fmt: skip
    await backend.handle(new)
    return see_other("/sessions?ok=" + quote(f"{key}: started a fresh session."))
