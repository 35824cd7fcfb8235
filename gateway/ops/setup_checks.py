"""What ``corvid setup`` asks the services, each a free call: the API key, the bots, owners."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import httpx

ANTHROPIC_API = "https://api.anthropic.com"
ANTHROPIC_VERSION = "2023-06-01"

# What Corvid does in a server, and nothing more: View Channels, Send Messages, Send Messages in
# Threads, Read Message History, Attach Files (Discord's permission bits).
DISCORD_PERMISSIONS = (1 << 10) | (1 << 11) | (1 << 38) | (1 << 16) | (1 << 15)
DISCORD_SCOPES = "bot applications.commands"
# The application flags that say the Message Content intent is on (verified bots, and not).
_MESSAGE_CONTENT = (1 << 18) | (1 << 19)


class Refused(Exception):
    """The service said no (a wrong key or token) or could not be reached; the message says
    which, for the person at the terminal."""


def _get(url: str, headers: dict[str, str], timeout: float, what: str) -> Any:
    try:
        response = httpx.get(url, headers=headers, timeout=timeout)
    except httpx.HTTPError as exc:
        raise Refused(f"{what} could not be reached ({type(exc).__name__})") from None
    if response.status_code in (401, 403, 404):
        raise Refused(f"{what} refused it (HTTP {response.status_code}): check that it is whole")
    if response.status_code >= 400:
        raise Refused(f"{what} answered HTTP {response.status_code}; try again in a moment")
    try:
        return response.json()
    except ValueError:
        raise Refused(f"{what} did not answer with JSON") from None


def check_api_key(key: str, base_url: str | None, timeout: float = 15) -> str:
    """The models the key may use (the list costs nothing); raises ``Refused``."""
    base = (base_url or ANTHROPIC_API).rstrip("/")
    headers = {"x-api-key": key, "anthropic-version": ANTHROPIC_VERSION}
    found = _get(f"{base}/v1/models", headers, timeout, "the Anthropic API")
    models = [m.get("id", "?") for m in found.get("data", []) if isinstance(m, dict)]
    return ", ".join(models[:3]) or "no models listed"


@dataclass(frozen=True)
class TelegramBot:
    username: str
    name: str


def telegram_bot(base_url: str, token: str, timeout: float = 15) -> TelegramBot:
    """Who the token's bot is (``getMe``); raises ``Refused``."""
    found = _get(f"{base_url}{token}/getMe", {}, timeout, "Telegram")
    me = found.get("result") if isinstance(found, dict) and found.get("ok") else None
    if not isinstance(me, dict):
        raise Refused("Telegram did not say who the bot is")
    return TelegramBot(str(me.get("username", "")), str(me.get("first_name", "")))


@dataclass(frozen=True)
class TelegramUser:
    id: int
    name: str
    username: str


@dataclass(frozen=True)
class TelegramGroup:
    id: int
    title: str


def first_private_message(base_url: str, token: str, wait: float) -> TelegramUser | None:
    """The sender of the first private message to the bot within ``wait`` seconds (None if
    none came), taken off the bot's queue so that Corvid does not answer it later."""
    found = _first_update(base_url, token, wait, _private_sender)
    return found if isinstance(found, TelegramUser) else None


def first_group(base_url: str, token: str, wait: float) -> TelegramGroup | None:
    """The first group or supergroup the bot is added to, or sees a message in (a command
    addressed to it: every bot sees those), within ``wait`` seconds; None if none came."""
    found = _first_update(base_url, token, wait, _group_of)
    return found if isinstance(found, TelegramGroup) else None


def _private_sender(update: dict[str, Any]) -> TelegramUser | None:
    message = update.get("message") or {}
    sender, chat = message.get("from") or {}, message.get("chat") or {}
    if chat.get("type") != "private" or not sender or sender.get("is_bot"):
        return None
    return TelegramUser(
        int(sender["id"]), str(sender.get("first_name", "")), sender.get("username", "")
    )


def _group_of(update: dict[str, Any]) -> TelegramGroup | None:
    event = update.get("message") or update.get("my_chat_member") or {}
    chat = event.get("chat") or {}
    if chat.get("type") not in ("group", "supergroup"):
        return None
    return TelegramGroup(int(chat["id"]), str(chat.get("title", "")))


def _first_update(
    base_url: str, token: str, wait: float, wanted: Callable[[dict[str, Any]], Any]
) -> Any:
    """What ``wanted`` finds in the first update it finds something in, within ``wait``
    seconds, with every update up to it taken off the bot's queue; None when none came."""
    deadline = time.monotonic() + wait
    offset = 0
    kinds = '["message", "my_chat_member"]'
    while (left := deadline - time.monotonic()) > 0:
        poll = max(1, min(20, int(left)))
        query = urlencode({"offset": offset, "timeout": poll, "allowed_updates": kinds})
        found = _get(f"{base_url}{token}/getUpdates?{query}", {}, poll + 15, "Telegram")
        for update in found.get("result", []):
            offset = max(offset, int(update["update_id"]) + 1)
            got = wanted(update)
            if got is not None:
                _get(f"{base_url}{token}/getUpdates?offset={offset}&timeout=0", {}, 15, "Telegram")
                return got
    return None


def telegram_say(base_url: str, token: str, chat_id: int, text: str, timeout: float = 15) -> None:
    """Send ``text`` to a chat (the owner's first message is answered); raises ``Refused``."""
    try:
        response = httpx.post(
            f"{base_url}{token}/sendMessage",
            data={"chat_id": str(chat_id), "text": text},
            timeout=timeout,
        )
    except httpx.HTTPError as exc:
        raise Refused(f"Telegram could not be reached ({type(exc).__name__})") from None
    if response.status_code >= 400:
        raise Refused(f"Telegram answered HTTP {response.status_code}")


@dataclass(frozen=True)
class DiscordApp:
    id: str
    name: str
    owner_id: str
    owner_name: str
    message_content: bool

    def invite_url(self) -> str:
        query = urlencode(
            {"client_id": self.id, "scope": DISCORD_SCOPES, "permissions": DISCORD_PERMISSIONS}
        )
        return f"https://discord.com/oauth2/authorize?{query}"


def discord_app(api_base_url: str, token: str, timeout: float = 15) -> DiscordApp:
    """The application behind a bot token, its owner and whether the Message Content intent is
    on; raises ``Refused``."""
    found = _get(
        f"{api_base_url.rstrip('/')}/oauth2/applications/@me",
        {"Authorization": f"Bot {token}"},
        timeout,
        "Discord",
    )
    owner = found.get("owner") or {}
    team = found.get("team") or {}
    if team:  # an application of a team: its owner is the team's
        owner = {"id": team.get("owner_user_id", ""), "username": team.get("name", "")}
    return DiscordApp(
        str(found.get("id", "")),
        str(found.get("name", "")),
        str(owner.get("id", "")),
        str(owner.get("global_name") or owner.get("username", "")),
        bool(int(found.get("flags") or 0) & _MESSAGE_CONTENT),
    )


@dataclass(frozen=True)
class DiscordServer:
    id: str
    name: str


def discord_servers(api_base_url: str, token: str, timeout: float = 15) -> list[DiscordServer]:
    """The servers the bot is in now; raises ``Refused``."""
    found = _get(
        f"{api_base_url.rstrip('/')}/users/@me/guilds",
        {"Authorization": f"Bot {token}"},
        timeout,
        "Discord",
    )
    servers = found if isinstance(found, list) else []
    return [
        DiscordServer(str(g.get("id", "")), str(g.get("name", "")))
        for g in servers
        if isinstance(g, dict) and g.get("id")
    ]
