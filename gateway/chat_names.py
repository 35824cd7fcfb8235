"""Who a chat is with, as the owner knows them: "You", a guest's name, a group's platform name."""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gateway.contract.events import Scope, SessionKey, audience_of, shown
from gateway.infra.atomic import write_atomic

log = logging.getLogger(__name__)

Guests = Mapping[str, Mapping[str, Any]]  # platform → user id → what pairing knows of them
Titles = Mapping[str, str]  # session key → what its platform calls the chat

LEDGER_OWNER = "owner"  # the usage ledger's audience of the owner's own chats
NAME_CHARS = 80  # a title is cut to this (a page's row, a line of a command's output)
_OWN = {"web": "You (this page's chat)", "terminal": "You (terminal)"}
_SHARED = {
    Scope.GROUP: "group",
    Scope.CHANNEL: "channel",
    Scope.THREAD: "thread",
}


def who_is(key: SessionKey, known: Guests, titles: Titles | None = None) -> str:
    """Who the chat ``key`` is with, in a few words."""
    platform = key.channel.capitalize()
    if key.job:
        return f"Scheduled job {key.id}"
    if key.scope.private:
        return _OWN.get(key.channel, "You")
    if key.scope is Scope.GUEST:
        name = str((known.get(key.channel) or {}).get(key.id, {}).get("name") or "")
        return f"{shown(name)} (guest)" if name else f"A {platform} guest (id {key.id})"
    where = f"{platform} {_SHARED.get(key.scope, str(key.scope))}"
    title = _title(key, titles or {})
    if title:
        where = f"“{title}”, {where}"
    return where + (f", topic {key.topic}" if key.topic else "")


def audience_name(chat: str, known: Guests, titles: Titles | None = None) -> str:
    """``who_is`` for an audience as the usage ledger keeps it ("owner", "telegram-group--5")."""
    if chat == LEDGER_OWNER:
        return "You (your private chats)"
    channel, _, rest = chat.partition("-")
    scope, _, ident = rest.partition("-")
    try:
        key = SessionKey(channel, Scope(scope), ident)
    except ValueError:
        return chat  # a job's own audience, or one from an older Corvid
    return who_is(key, known, titles)


def _title(key: SessionKey, titles: Titles) -> str:
    found = titles.get(str(key))
    if not found and key.topic:  # a forum topic is its group's
        found = titles.get(str(SessionKey(key.channel, key.scope, key.id)))
    if not found:  # a chat known by another of its sessions (an audience's)
        chat = audience_of(key).chat
        found = next((t for k, t in titles.items() if _audience(k) == chat), "")
    return shown(found)[:NAME_CHARS]


def _audience(key: str) -> str:
    with contextlib.suppress(ValueError):
        return audience_of(SessionKey.parse(key)).chat or ""
    return ""


def read_titles(path: Path) -> dict[str, str]:
    """The titles kept so far ({} when there are none, or the file cannot be read)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(k): str(v) for k, v in data.items() if isinstance(v, str)}


class ChatNames:
    """The titles of the shared chats messages came from, kept as they come (a renamed group
    is named anew)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.titles = read_titles(path)

    def heard(self, key: SessionKey, title: str) -> None:
        title = " ".join(title.split())[:NAME_CHARS]
        if key.private or not title or self.titles.get(str(key)) == title:
            return
        self.titles[str(key)] = title
        try:
            write_atomic(self.path, json.dumps(self.titles, ensure_ascii=False, indent=1) + "\n")
        except OSError as exc:  # a name is a nicety: the message goes on
            log.warning("could not keep the name of %s: %s", key, exc)
