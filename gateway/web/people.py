"""Who a session is with, as the owner knows them, and the earlier sessions of each chat.

A guest is named as the pairing store approved them; the owner's own chats are "You"; groups
and channels by their platform (their titles are not kept). ``/new`` moves a transcript aside
as ``<key>.<time it ended>.jsonl``: those files are a chat's earlier sessions.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from channels.pairing import PairingError, PairingStore
from gateway.contract.events import Scope, SessionKey, shown
from gateway.web.html import esc

Guests = Mapping[str, Mapping[str, Any]]  # platform → user id → what pairing knows of them

# The part of an archived transcript's name that says when it ended.
ENDED = re.compile(r"^\d{8}T\d{12}Z$")
EARLIER_LISTED = 50  # earlier sessions on the sessions page, newest first

_OWN = {"web": "You (this page's chat)", "terminal": "You (terminal)"}
_SHARED = {
    Scope.GROUP: "group",
    Scope.CHANNEL: "channel",
    Scope.THREAD: "thread",
}


def guests(store: PairingStore) -> Guests:
    """Everyone let in by pairing; nobody when the file cannot be read (the Pairing page
    says why)."""
    try:
        return store.approved()
    except PairingError:
        return {}


def who_is(key: SessionKey, known: Guests) -> str:
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
    return where + (f", topic {key.topic}" if key.topic else "")


def key_html(key: SessionKey, known: Guests) -> str:
    """A session as lists show it: who it is with, then its key."""
    return f"<b>{esc(who_is(key, known))}</b> <small><code>{esc(key)}</code></small>"


def ended(stamp: str) -> datetime | None:
    if not ENDED.match(stamp):
        return None
    return datetime.strptime(stamp, "%Y%m%dT%H%M%S%fZ").replace(tzinfo=UTC)


def earlier(folder: Path, key: SessionKey) -> list[tuple[str, datetime]]:
    """The earlier sessions of ``key``'s chat: (the stamp that names each, when it ended),
    newest first."""
    found = []
    prefix = f"{key}."
    for path in folder.glob(f"{key}.*.jsonl"):
        stamp = path.name[len(prefix) : -len(".jsonl")]
        when = ended(stamp)
        if when is not None:
            found.append((stamp, when))
    return sorted(found, key=lambda pair: pair[1], reverse=True)


def all_earlier(folder: Path) -> list[tuple[SessionKey, str, datetime]]:
    """The newest earlier sessions of every chat (not the runs of scheduled jobs)."""
    found = []
    for path in folder.glob("*.jsonl"):
        name, _, stamp = path.name[: -len(".jsonl")].rpartition(".")
        when = ended(stamp)
        if when is None:
            continue
        with contextlib.suppress(ValueError):
            key = SessionKey.parse(name)
            if not key.job:
                found.append((key, stamp, when))
    found.sort(key=lambda item: item[2], reverse=True)
    return found[:EARLIER_LISTED]
