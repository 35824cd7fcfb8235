"""How a transcript reads on the control page, with no web server in it."""

from __future__ import annotations

import contextlib
import json
import re
from datetime import UTC, datetime, tzinfo
from typing import Any

from gateway.infra.times import local_time
from gateway.web.html import esc, markdown


def when_shown(ts: object, tz: tzinfo | None = None) -> str:
    """A stored time (ISO 8601) as the owner reads it: date and time to the minute in the
    configured zone, named."""
    try:
        when = ts if isinstance(ts, datetime) else datetime.fromisoformat(str(ts))
    except ValueError:
        return ""
    return local_time(when, tz or UTC)


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
