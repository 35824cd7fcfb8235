"""The checks across options that one option's type cannot say, each naming the key at fault."""

from __future__ import annotations

import ipaddress
import re
from typing import TYPE_CHECKING
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from gateway.contract.errors import ConfigError
from gateway.contract.events import SessionKey

if TYPE_CHECKING:
    from agent.settings import McpSettings, MemorySettings
    from gateway.config.sections import ChannelsConfig, ScheduleConfig, WebConfig


def check_config(
    channels: ChannelsConfig,
    schedule: ScheduleConfig,
    web: WebConfig,
    mcp: McpSettings,
    memory: MemorySettings,
) -> None:
    _check_channels(channels)
    _check_schedule(schedule)
    _check_heartbeat_target(schedule, channels)
    _check_web(web)
    _check_mcp(mcp)
    _check_memory(memory)


def _check_memory(memory: MemorySettings) -> None:
    emb, search = memory.embeddings, memory.search
    _check_consolidation(memory)
    if emb.provider == "openai" and urlsplit(emb.base_url).scheme not in ("http", "https"):
        raise ConfigError(
            "memory.embeddings.base_url",
            f"expected an http:// or https:// URL such as https://api.openai.com/v1, got "
            f"{emb.base_url!r}",
        )
    if search.vector_weight + search.text_weight <= 0:
        raise ConfigError(
            "memory.search",
            "vector_weight and text_weight cannot both be 0 (the defaults are 0.7 and 0.3)",
        )
    if search.mmr_lambda > 1:
        raise ConfigError(
            "memory.search.mmr_lambda",
            f"must be between 0 and 1 (1: no re-ranking for variety), got {search.mmr_lambda}",
        )


_HHMM = re.compile(r"^([01]?[0-9]|2[0-3]):([0-5][0-9])$")


def _check_consolidation(memory: MemorySettings) -> None:
    cs = memory.consolidation
    if cs.time and not _HHMM.match(cs.time):
        raise ConfigError("memory.consolidation.time", f"expected HH:MM (24 h), got {cs.time!r}")
    if cs.target is not None:
        try:
            private = SessionKey.parse(cs.target).private
        except ValueError:
            private = False
        if not private:
            # A proposal quotes MEMORY.md: it may only go where the owner alone reads it.
            raise ConfigError(
                "memory.consolidation.target",
                f"expected the session key of your private chat (e.g. telegram:private:<your "
                f"id>), got {cs.target!r}",
            )


def _check_schedule(schedule: ScheduleConfig) -> None:
    ds = schedule.daily_summary
    if not _HHMM.match(ds.time):
        raise ConfigError("schedule.daily_summary.time", f"expected HH:MM (24 h), got {ds.time!r}")
    if ds.timezone is not None:
        try:
            ZoneInfo(ds.timezone)
        except (ZoneInfoNotFoundError, ValueError):
            raise ConfigError(
                "schedule.daily_summary.timezone", f"unknown time zone {ds.timezone!r}"
            ) from None
    if ds.target is not None:
        try:
            SessionKey.parse(ds.target)
        except ValueError:
            raise ConfigError(
                "schedule.daily_summary.target",
                f"expected a chat's session key such as telegram:private:123456789, got "
                f"{ds.target!r}",
            ) from None
    elif ds.enabled:
        raise ConfigError(
            "schedule.daily_summary.target",
            "required when the daily summary is enabled (e.g. telegram:private:<your id>)",
        )
    hb = schedule.heartbeat
    hours = hb.active_hours.split("-")
    if len(hours) != 2 or not all(_HHMM.match(h.strip()) for h in hours):
        raise ConfigError(
            "schedule.heartbeat.active_hours", f"expected HH:MM-HH:MM, got {hb.active_hours!r}"
        )
    if hb.target is not None:
        try:
            SessionKey.parse(hb.target)
        except ValueError:
            raise ConfigError(
                "schedule.heartbeat.target", f"expected a chat's session key, got {hb.target!r}"
            ) from None
    elif hb.enabled:
        raise ConfigError("schedule.heartbeat.target", "required when the heartbeat is enabled")


def _check_heartbeat_target(schedule: ScheduleConfig, channels: ChannelsConfig) -> None:
    """The heartbeat goes through the owner's HEARTBEAT.md and may say what is in their memory:
    it only ever talks to the owner, in a private chat."""
    target = schedule.heartbeat.target
    if target is None:
        return
    key = SessionKey.parse(target)
    owners = {"telegram": channels.telegram.allow_from, "discord": channels.discord.allow_from}
    if not key.private or (key.channel in owners and key.id not in owners[key.channel]):
        raise ConfigError(
            "schedule.heartbeat.target",
            f"must be your own private chat (such as telegram:private:<an id in "
            f"channels.telegram.allow_from>), got {target!r}: the heartbeat reads your "
            "HEARTBEAT.md and memory, which no one else may see",
        )


_TELEGRAM_USER = re.compile(r"^[0-9]{1,20}$")
_TELEGRAM_CHAT = re.compile(r"^-?[0-9]{1,20}$")
_WEBHOOK_SECRET = re.compile(r"^[A-Za-z0-9_-]{1,256}$")


def _check_channels(channels: ChannelsConfig) -> None:
    tg = channels.telegram
    for i, uid in enumerate(tg.allow_from):
        if not _TELEGRAM_USER.match(uid):
            raise ConfigError(
                f"channels.telegram.allow_from[{i}]",
                f"expected a numeric Telegram user id such as 123456789, got {uid!r} "
                "(usernames can change hands; ids cannot)",
            )
    for i, chat in enumerate(tg.groups):
        if not _TELEGRAM_CHAT.match(chat):
            raise ConfigError(
                f"channels.telegram.groups[{i}]",
                f"expected a numeric Telegram chat id such as -1001234567890, got {chat!r}",
            )
    hook = tg.webhook
    if hook.url is not None and not hook.url.startswith("https://"):
        raise ConfigError("channels.telegram.webhook.url", "Telegram only posts to https:// URLs")
    if hook.secret_token is not None and not _WEBHOOK_SECRET.match(hook.secret_token.value):
        raise ConfigError(
            "channels.telegram.webhook.secret_token",
            "must be 1-256 characters of A-Z, a-z, 0-9, _ and -",
        )
    if not 1 <= hook.port <= 65535:
        raise ConfigError("channels.telegram.webhook.port", f"not a port number: {hook.port}")
    dc = channels.discord
    for name, ids in (("allow_from", dc.allow_from), ("groups", dc.groups)):
        for i, value in enumerate(ids):
            if not value.isdigit():
                raise ConfigError(
                    f"channels.discord.{name}[{i}]",
                    f"expected a numeric Discord id (a snowflake such as 80351110224678912), "
                    f"got {value!r}",
                )
    _check_discord_urls(dc.api_base_url, dc.gateway_url)


def _check_discord_urls(api: str, gateway: str) -> None:
    """discord.py asks for https://discord.com/api/v10 and wss://gateway.discord.gg/ whatever
    is configured: Corvid can lead those names to another host and port, nothing more."""
    for key, url, scheme, path in (
        ("api_base_url", api, "https", "/api/v10"),
        ("gateway_url", gateway, "wss", ""),
    ):
        parts = urlsplit(url)
        try:
            host_port = parts.netloc.rpartition("@")[2].rpartition("]")[2]
            numbered = parts.port is not None or ":" not in host_port
        except ValueError:
            numbered = False
        if not numbered:
            why = "not a port number"
        elif parts.scheme != scheme:
            why = "discord.py speaks only TLS, to a certificate for Discord's host names"
        elif not parts.hostname or parts.query or parts.fragment or parts.path.rstrip("/") != path:
            why = "discord.py asks for its own paths: only the host and port can be changed"
        else:
            continue
        raise ConfigError(
            f"channels.discord.{key}",
            f"expected {scheme}://<host>[:<port>]{path or '/'}, got {url!r} ({why})",
        )


LOOPBACK = frozenset({"127.0.0.1", "::1", "localhost"})


def loopback(host: str) -> bool:
    """``localhost`` or a loopback address (a name that merely starts with 127. is not)."""
    try:
        return host in LOOPBACK or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


# A server's name starts its tools' names (``<server>__<tool>``), which the API allows only
# letters, digits, ``_`` and ``-`` (64 at most); a double underscore would make them ambiguous.
_MCP_NAME = re.compile(r"[A-Za-z0-9-]+(?:_[A-Za-z0-9-]+)*")


def _check_mcp(mcp: McpSettings) -> None:
    for name, server in mcp.servers.items():
        key = f"mcp.servers.{name}"
        if not _MCP_NAME.fullmatch(name) or len(name) > 24:
            raise ConfigError(
                key,
                "a server's name is up to 24 letters, digits, '-' and single '_' "
                "(it starts its tools' names)",
            )
        if bool(server.command) == bool(server.url):
            raise ConfigError(key, "give either command (a local server) or url (a remote one)")
        if server.url and urlsplit(server.url).scheme not in ("http", "https"):
            raise ConfigError(
                f"{key}.url", f"expected an http:// or https:// URL, got {server.url!r}"
            )
        if server.command and server.headers:
            raise ConfigError(
                f"{key}.headers", "headers are sent to a url; this server is a command"
            )
        if server.url and (server.args or server.env):
            which = "args" if server.args else "env"
            raise ConfigError(
                f"{key}.{which}", "args and env are for a command; this server is a url"
            )


def _check_web(web: WebConfig) -> None:
    if web.port > 65535:
        raise ConfigError("web.port", f"not a port number: {web.port}")
    if not loopback(web.host) and not web.allow_remote:
        raise ConfigError(
            "web.host",
            f"{web.host!r} is not a loopback address; the control page can read all memory, "
            "so set web.allow_remote: true to listen there (behind a reverse proxy with TLS)",
        )
    for i, name in enumerate(web.hostnames):
        if not name or any(c in name for c in "/: @"):
            raise ConfigError(f"web.hostnames[{i}]", f"expected a host name, got {name!r}")
