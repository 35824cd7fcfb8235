"""Messages between the transcript and the Messages API: histories made valid, blocks, batches."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Sequence
from typing import Any
from urllib.parse import quote
from zoneinfo import ZoneInfo

from agent.sessions.history import History
from gateway.contract.events import InboundMessage, SessionKey, scrub


def normalize_messages(messages: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Make a stored history valid for the API, whatever a crash or cancellation left behind.

    Blank text blocks are dropped (the API refuses them, and models do emit them); consecutive
    messages of one role are merged (a turn that failed leaves a user message with no answer);
    a tool_use without a result gets an error result; an orphaned tool_result is dropped. The
    stored transcript itself is never changed.
    """
    out: list[dict[str, Any]] = []
    for msg in messages:
        content = [b for b in _blocks(msg["content"]) if not _blank(b)]
        if not content and msg["role"] == "assistant":
            continue
        if out and out[-1]["role"] == msg["role"]:
            out[-1] = {"role": msg["role"], "content": out[-1]["content"] + content}
        else:
            out.append({"role": msg["role"], "content": content})
    fixed: list[dict[str, Any]] = []
    for i, msg in enumerate(out):
        if msg["role"] == "user":
            prev = fixed[-1] if fixed else None
            wanted = _tool_use_ids(prev) if prev and prev["role"] == "assistant" else []
            results = [b for b in msg["content"] if b.get("type") == "tool_result"]
            others = [b for b in msg["content"] if b.get("type") != "tool_result"]
            have = {b["tool_use_id"] for b in results}
            results = [b for b in results if b["tool_use_id"] in wanted]
            results += [_interrupted(tid) for tid in wanted if tid not in have]
            content = results + others
            if not content:
                content = [{"type": "text", "text": "(no content)"}]
            fixed.append({"role": "user", "content": content})
        else:
            if not fixed:
                fixed.append({"role": "user", "content": [{"type": "text", "text": "(start)"}]})
            fixed.append(msg)
            nxt = out[i + 1] if i + 1 < len(out) else None
            if nxt is None and _tool_use_ids(msg):
                fixed.append(
                    {"role": "user", "content": [_interrupted(t) for t in _tool_use_ids(msg)]}
                )
    return fixed


def sent_as_stored(history: History) -> list[bytes] | None:
    """The history's messages as stored (each one's JSON) when ``normalize_messages`` would
    send them unchanged, which is the usual case; None when it would change something.

    A model call then sends the stored bytes instead of reading every message back and
    writing it out again. The check is remembered on the history (``History.checked``), so a
    call looks only at the messages added since the one before.
    """
    items = history.stored()
    start = min(history.checked, len(items))
    prev: dict[str, Any] | None = json.loads(items[start - 1]) if start else None
    for raw in items[start:]:
        msg = json.loads(raw)
        if not _sent_unchanged(prev, msg):
            return None
        prev = msg
    history.checked = len(items)
    if prev is not None and prev["role"] == "assistant" and _tool_use_ids(prev):
        return None  # the last message's tool calls would get "interrupted" results
    return items


def _sent_unchanged(prev: dict[str, Any] | None, msg: dict[str, Any]) -> bool:
    """Whether ``normalize_messages`` leaves ``msg`` as it is, following ``prev`` (itself left
    as it is): the same rules, read as conditions."""
    content = msg.get("content")
    if msg.keys() != {"role", "content"} or not isinstance(content, list) or not content:
        return False  # other keys are dropped; text becomes a block; nothing is dropped or filled
    if any(_blank(b) for b in content):
        return False
    role = msg["role"]
    if prev is not None and prev["role"] == role:
        return False  # merged into the one before
    if role == "assistant":
        return prev is not None  # a leading assistant message gets a user turn before it
    if role != "user":
        return False
    wanted = _tool_use_ids(prev) if prev is not None and prev["role"] == "assistant" else []
    leading = 0
    while leading < len(content) and content[leading].get("type") == "tool_result":
        leading += 1
    if any(b.get("type") == "tool_result" for b in content[leading:]):
        return False  # results are moved before other blocks
    answered = [b["tool_use_id"] for b in content[:leading]]
    return all(i in wanted for i in answered) and all(t in answered for t in wanted)


def _blank(block: dict[str, Any]) -> bool:
    return block.get("type") == "text" and not str(block.get("text", "")).strip()


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content)


def _tool_use_ids(msg: dict[str, Any]) -> list[str]:
    return [b["id"] for b in msg["content"] if b.get("type") == "tool_use"]


def _interrupted(tool_use_id: str) -> dict[str, Any]:
    return {
        "type": "tool_result",
        "tool_use_id": tool_use_id,
        "is_error": True,
        "content": "Interrupted before this tool finished; no result.",
    }


def content_to_dicts(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """An answer's content blocks, as the API sent them, reduced to what it accepts back as
    input."""
    out: list[dict[str, Any]] = []
    for b in blocks:
        kind = b.get("type")
        if kind == "text":
            text = b.get("text") or ""
            if text.strip():  # the API refuses blank text blocks when they are sent back
                block: dict[str, Any] = {"type": "text", "text": text}
                if b.get("citations"):  # what the text cites from a web search
                    block["citations"] = [_without_none(c) for c in b["citations"]]
                out.append(block)
        elif kind == "tool_use":
            out.append({"type": "tool_use", "id": b["id"], "name": b["name"], "input": b["input"]})
        elif kind == "thinking":
            out.append({"type": "thinking", "thinking": b["thinking"], "signature": b["signature"]})
        elif kind == "redacted_thinking":
            out.append({"type": "redacted_thinking", "data": b["data"]})
        else:
            out.append(_without_none(b))
    return [_scrubbed(block) for block in out]


def _without_none(value: Any) -> Any:
    """``value`` without the fields that are null, at any depth (the API leaves out a field
    that does not apply, or sends it as null)."""
    if isinstance(value, dict):
        return {k: _without_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_none(v) for v in value]
    return value


def _scrubbed(value: Any) -> Any:
    """``value`` with lone surrogates replaced in every string: the model can send one as a
    JSON escape, and neither the transcript's UTF-8 nor any platform takes it."""
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, dict):
        return {k: _scrubbed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrubbed(v) for v in value]
    return value


# The fields each kind of content block must have, and their types.
_BLOCK_FIELDS: dict[str, dict[str, type | tuple[type, ...]]] = {
    "text": {"text": str},
    "image": {"source": dict},
    "tool_use": {"id": str, "name": str, "input": dict},
    "tool_result": {"tool_use_id": str, "content": (str, list)},
    "thinking": {"thinking": str, "signature": str},
    "redacted_thinking": {"data": str},
    # The API's own tools (its web search): the call and its result, both in the answer.
    "server_tool_use": {"id": str, "name": str, "input": dict},
    "web_search_tool_result": {"tool_use_id": str, "content": (list, dict)},
}


def check_message(msg: Any) -> None:
    """A line that is JSON but not a message the API takes (a hand edit, a bug) is refused
    here, so the load skips it and says so, instead of every later turn failing on it."""
    if not isinstance(msg, dict) or msg.get("role") not in ("user", "assistant"):
        raise ValueError("not a message")
    content = msg.get("content")
    if isinstance(content, str):
        return
    if not isinstance(content, list):
        raise ValueError("a message's content is text or a list of blocks")
    for block in content:
        fields = _BLOCK_FIELDS.get(str(block.get("type"))) if isinstance(block, dict) else None
        if fields is None:
            raise ValueError(f"not a content block: {str(block)[:80]}")
        for name, kind in fields.items():
            if not isinstance(block.get(name), kind):
                raise ValueError(f"a {block['type']} block without a valid {name}")


def reply_text(content: list[dict[str, Any]]) -> str:
    """The text blocks of an answer: blocks that follow each other are one text (the API
    splits text where it cites a source), others are paragraphs; blank ones left out. Sources
    the text cites (the API's web search) are listed after it as links."""
    runs: list[str] = []
    joined = False
    for b in content:
        if b.get("type") != "text":
            joined = False
            continue
        if joined:
            runs[-1] += b["text"]
        else:
            runs.append(b["text"])
        joined = True
    text = "\n\n".join(r.strip() for r in runs if r.strip())
    sources = cited_sources(content)
    if text and sources:
        text += "\n\nSources: " + " · ".join(sources)
    return text


# At most this many cited sources are listed under an answer.
MAX_SOURCES = 5
# What stays as it is in a source's address: all but what could end a Markdown link (parentheses,
# spaces, angle brackets); "%" too, so what is already escaped stays so.
_URL_SAFE = ":/?#[]@!$&'*+,;=%~"


def cited_sources(content: list[dict[str, Any]]) -> list[str]:
    """Markdown links to the web pages an answer's text cites, each once, in order."""
    seen: dict[str, str] = {}
    for b in content:
        for cite in b.get("citations") or () if b.get("type") == "text" else ():
            url = str(cite.get("url") or "") if isinstance(cite, dict) else ""
            if url.startswith(("https://", "http://")) and url not in seen:
                title = " ".join(str(cite.get("title") or "").split()) or url
                seen[url] = title
    links = []
    for url, title in list(seen.items())[:MAX_SOURCES]:
        label = title.replace("[", "(").replace("]", ")")
        links.append(f"[{label}]({quote(url, safe=_URL_SAFE)})")
    return links


def user_content(
    key: SessionKey, inbound: Sequence[InboundMessage], tz: ZoneInfo
) -> list[dict[str, Any]]:
    """The user message a batch of inbound messages becomes: each with a bracketed header
    (local time; in shared chats the sender), its images and notes about saved files."""
    blocks: list[dict[str, Any]] = []
    for msg in inbound:
        when = msg.received_at.astimezone(tz).strftime("%a %Y-%m-%d %H:%M %Z")
        header = f"[{when}"
        if not key.private:
            header += f" · {msg.sender_name or 'someone'} (id {msg.sender_id})"
        header += "]"
        text = msg.text
        for att in msg.attachments:
            if att.kind == "image" and att.data is not None:
                blocks.append(
                    {
                        "type": "image",
                        "source": {
                            "type": "base64",
                            "media_type": att.mime_type,
                            "data": base64.b64encode(att.data).decode(),
                        },
                    }
                )
            elif att.path:
                text += f"\n[file received: {_quoted(att.name or att.path)}, saved at {att.path}]"
        if msg.context:
            header = (
                "[Earlier in this chat, not addressed to you]\n"
                + "\n".join(msg.context)
                + "\n\n"
                + header
            )
        blocks.append({"type": "text", "text": f"{header}\n{text}" if text else header})
    return blocks


def _quoted(name: str, limit: int = 120) -> str:
    """A file name a sender chose, as one quoted line: no line breaks or control characters
    that could pass for text of ours (a forged "saved at")."""
    clean = "".join(c if c.isprintable() else " " for c in name).strip()
    if len(clean) > limit:
        clean = clean[: limit - 1] + "…"
    return json.dumps(clean, ensure_ascii=False)
