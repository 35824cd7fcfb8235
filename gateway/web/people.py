"""Who a session is with, as the owner knows them, and the earlier sessions of each chat."""

from __future__ import annotations

import contextlib
import re
from datetime import UTC, datetime
from pathlib import Path

from channels.pairing import PairingError, PairingStore
from gateway.chat_names import Guests, Titles, who_is
from gateway.contract.events import SessionKey
from gateway.web.html import esc

# The part of an archived transcript's name that says when it ended.
ENDED = re.compile(r"^\d{8}T\d{12}Z$")
EARLIER_LISTED = 50  # earlier sessions on the sessions page, newest first


def guests(store: PairingStore) -> Guests:
    """Everyone let in by pairing; nobody when the file cannot be read (the Pairing page
    says why)."""
    try:
        return store.approved()
    except PairingError:
        return {}


def key_html(key: SessionKey, known: Guests, titles: Titles | None = None) -> str:
    """A session as lists show it: who it is with, then its key."""
    who = who_is(key, known, titles)
    return f"<b>{esc(who)}</b> <small><code>{esc(key)}</code></small>"


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
