"""Load and validate ``config.yaml``. Every error names its dotted key; nothing falls back silently.

The gateway's own settings (channels, schedule, logging) are defined here; the agent's (``llm``,
``agent``, ``memory``, ``compaction``) come from ``agent/settings.py``, and ``config_build``
turns the YAML into both. Secrets are written as ``${ENV_VAR}`` and resolved from the
``environ`` mapping passed in (not read from ``os.environ`` behind the caller's back). A
reference to an unset variable is not an error by itself: the key is left empty and remembered,
so that a disabled channel's token may be unset while ``corvid run`` can still say exactly which
variable is missing for an enabled one.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import yaml

from agent.settings import (
    DEFAULT_MODEL,
    AgentSettings,
    CompactionSettings,
    LLMSettings,
    MemorySettings,
    ToolSettings,
    setting,
)
from gateway.config_build import (
    build_fields,
    kind,
    secrets_in,
    substitute,
    with_env_defaults,
)
from gateway.config_yaml import strict_load, yaml_problem
from gateway.errors import ConfigError
from gateway.events import SessionKey
from gateway.ports import Secret

__all__ = ["DEFAULT_MODEL", "Config", "ConfigError", "load_config", "parse_config"]


@dataclass(frozen=True)
class ChannelConfig:
    """What every chat platform shares: the token, who may talk to the bot, and where."""

    enabled: bool = False
    token: Secret | None = None
    # Platform user ids allowed to talk to the bot (the owner first). Others can ask to be
    # paired; see ``corvid pairing``.
    allow_from: list[str] = field(default_factory=list)
    # Group chats (Telegram chat ids, Discord guild or channel ids) the bot answers in.
    groups: list[str] = field(default_factory=list)
    # Messages in a group that were not addressed to the bot, kept as context for the next one
    # that is.
    group_context_messages: int = setting(20, minimum=0)
    # Images larger than this are not passed to the model; other files larger than this are
    # not saved to the inbox.
    max_image_bytes: int = setting(5_000_000, minimum=1)
    max_file_bytes: int = setting(20_000_000, minimum=1)
    # Replies show while they are written (``on``/``off``), and so does which tool is running.
    streaming: bool = True
    show_tool_progress: bool = True


@dataclass(frozen=True)
class WebhookConfig:
    # Public HTTPS URL Telegram should post updates to; empty means long polling.
    url: str | None = None
    listen: str = "127.0.0.1"
    port: int = setting(8443, minimum=1)
    path: str = "telegram"
    secret_token: Secret | None = None


@dataclass(frozen=True)
class TelegramConfig(ChannelConfig):
    base_url: str = "https://api.telegram.org/bot"
    base_file_url: str = "https://api.telegram.org/file/bot"
    poll_timeout: int = setting(30, minimum=0)
    webhook: WebhookConfig = field(default_factory=WebhookConfig)


@dataclass(frozen=True)
class DiscordConfig(ChannelConfig):
    api_base_url: str = "https://discord.com/api/v10"
    gateway_url: str = "wss://gateway.discord.gg/"


@dataclass(frozen=True)
class ChannelsConfig:
    telegram: TelegramConfig = field(default_factory=TelegramConfig)
    discord: DiscordConfig = field(default_factory=DiscordConfig)


@dataclass(frozen=True)
class DailySummaryConfig:
    enabled: bool = False
    # Local time, HH:MM, in ``timezone`` (default: the top-level timezone).
    time: str = "21:00"
    timezone: str | None = None
    # Session key of the chat it goes to, e.g. telegram:private:123456789.
    target: str | None = None
    # No message on days without any log entry or conversation.
    skip_inactive: bool = True
    # A summary missed while Corvid was down is sent on start if this recent.
    grace_hours: float = setting(12.0, minimum=0)


@dataclass(frozen=True)
class HeartbeatConfig:
    enabled: bool = False
    every_minutes: int = setting(30, minimum=1)
    # Local hours it may run in, HH:MM-HH:MM (in the top-level timezone).
    active_hours: str = "08:00-22:00"
    # The owner's chat it reports to, e.g. telegram:private:123456789.
    target: str | None = None


@dataclass(frozen=True)
class ScheduleConfig:
    daily_summary: DailySummaryConfig = field(default_factory=DailySummaryConfig)
    heartbeat: HeartbeatConfig = field(default_factory=HeartbeatConfig)
    # Reminders and recurring jobs made in chat: only from the owner's private chats unless
    # this is on (then also from the groups, channels and guests Corvid serves).
    allow_shared: bool = False
    max_jobs: int = setting(100, minimum=1)  # made in chat, all chats together
    max_jobs_per_chat: int = setting(20, minimum=1)
    min_interval_minutes: float = setting(5.0, minimum=1)  # how often a job may fire at most


@dataclass(frozen=True)
class GatewayConfig:
    shutdown_grace: float = setting(20.0, minimum=0)


@dataclass(frozen=True)
class TranscriptionConfig:
    """Voice notes and audio files turned into words, by any OpenAI-compatible
    ``/audio/transcriptions`` endpoint (OpenAI, Groq, a self-hosted Whisper server)."""

    enabled: bool = False
    base_url: str = "https://api.openai.com/v1"
    api_key: Secret | None = None
    model: str = "whisper-1"
    max_bytes: int = setting(20_000_000, minimum=1)  # larger recordings are kept, not heard
    max_seconds: int = setting(900, minimum=1)
    timeout: float = setting(120.0, minimum=1)


@dataclass(frozen=True)
class WebConfig:
    """The control page ``corvid run`` serves; ``corvid web`` prints its address."""

    enabled: bool = True
    host: str = "127.0.0.1"
    port: int = setting(8787, minimum=0)  # 0: any free port
    # Other names the page is reached by (a reverse proxy's), checked against the Host header.
    hostnames: list[str] = field(default_factory=list)
    # Listening on anything but loopback must be asked for: the page can read everything.
    allow_remote: bool = False
    # A reverse proxy in front serves the page over HTTPS (the cookie is then marked Secure).
    behind_tls_proxy: bool = False


@dataclass(frozen=True)
class LoggingConfig:
    level: str = setting("INFO", choices=("DEBUG", "INFO", "WARNING", "ERROR"))
    format: str = setting("text", choices=("text", "json"))  # json: one object per line
    # At DEBUG, also the libraries' own lines with whole request bodies: private chats and
    # MEMORY.md included. Off, DEBUG shows sizes and ids only.
    log_bodies: bool = False


@dataclass(frozen=True)
class Config:
    home: Path
    timezone: str = "UTC"
    llm: LLMSettings = field(default_factory=LLMSettings)
    agent: AgentSettings = field(default_factory=AgentSettings)
    memory: MemorySettings = field(default_factory=MemorySettings)
    compaction: CompactionSettings = field(default_factory=CompactionSettings)
    tools: ToolSettings = field(default_factory=ToolSettings)
    gateway: GatewayConfig = field(default_factory=GatewayConfig)
    schedule: ScheduleConfig = field(default_factory=ScheduleConfig)
    channels: ChannelsConfig = field(default_factory=ChannelsConfig)
    logging: LoggingConfig = field(default_factory=LoggingConfig)
    web: WebConfig = field(default_factory=WebConfig)
    transcription: TranscriptionConfig = field(default_factory=TranscriptionConfig)
    # dotted key -> environment variable it referenced that was not set
    missing_env: Mapping[str, str] = field(default_factory=dict)

    @property
    def workspace(self) -> Path:
        return self.home / "workspace"

    @property
    def state(self) -> Path:
        return self.home / "state"

    @property
    def tz(self) -> ZoneInfo:
        return ZoneInfo(self.timezone)

    def missing(self, key: str, what: str) -> str:
        """A sentence saying how to fill in an empty required key."""
        var = self.missing_env.get(key)
        if var:
            return f"{key} is empty: set the environment variable {var} ({what})"
        return f"{key} is not set in {self.home / 'config.yaml'} ({what})"

    def secrets(self) -> list[str]:
        """Every configured secret value, for masking in logs and stored errors."""
        return [s.value for s in secrets_in(self)]


def load_config(home: Path, environ: Mapping[str, str]) -> Config:
    """Read ``home/config.yaml``; a missing file means all defaults."""
    path = home / "config.yaml"
    raw: Any = {}
    if path.exists():
        try:
            raw = strict_load(path.read_text(encoding="utf-8")) or {}
        except yaml.MarkedYAMLError as exc:
            raise ConfigError("", yaml_problem(exc)) from None
        except yaml.YAMLError:
            raise ConfigError("", "not valid YAML") from None
        except UnicodeDecodeError:
            raise ConfigError("", "the file is not UTF-8 text") from None
        except RecursionError:
            raise ConfigError("", "nested too deeply (or an alias refers to itself)") from None
        except OSError as exc:
            raise ConfigError("", f"cannot be read: {exc.strerror}") from None
    try:
        return parse_config(raw, home=home, environ=environ)
    except RecursionError:
        raise ConfigError("", "nested too deeply (or an alias refers to itself)") from None


def parse_config(raw: Any, *, home: Path, environ: Mapping[str, str]) -> Config:
    if not isinstance(raw, dict):
        raise ConfigError("", f"expected a mapping at the top level, got {kind(raw)}")
    missing: dict[str, str] = {}
    resolved = substitute(with_env_defaults(raw), "", environ, missing)
    values = build_fields(Config, resolved, "", skip=frozenset({"home", "missing_env"}))
    timezone = values.get("timezone", "UTC")
    try:
        ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError):
        raise ConfigError(
            "timezone", f"unknown time zone {timezone!r} (expected an IANA name like Europe/Berlin)"
        ) from None
    config = Config(home=home, missing_env=missing, **values)
    _check_channels(config)
    _check_schedule(config)
    _check_web(config.web)
    return _fit_compaction(config, resolved.get("compaction"))


_COMPACTION_KEYS = ("reserve_tokens", "soft_threshold_tokens", "keep_recent_tokens")


def _fit_compaction(config: Config, given: Any) -> Config:
    """Compaction must be able to free something: what it reserves, its flush margin and what
    it keeps must fit in the window together. Left at their defaults they are sized to a
    small window (a local model behind base_url); set by hand, a misfit is an error."""
    window, c = config.llm.context_window, config.compaction
    needed = c.reserve_tokens + c.soft_threshold_tokens + c.keep_recent_tokens
    if needed < window:
        return config
    if isinstance(given, dict) and any(k in given for k in _COMPACTION_KEYS):
        raise ConfigError(
            "compaction",
            f"reserve_tokens + soft_threshold_tokens + keep_recent_tokens ({needed:,}) must be "
            f"less than llm.context_window ({window:,}), or compaction can never free anything",
        )
    fitted = CompactionSettings(
        reserve_tokens=window // 10,
        soft_threshold_tokens=window // 50,
        keep_recent_tokens=max(500, window // 10),
    )
    return dataclasses.replace(config, compaction=fitted)


_HHMM = re.compile(r"^([01]?[0-9]|2[0-3]):([0-5][0-9])$")


def _check_schedule(config: Config) -> None:
    ds = config.schedule.daily_summary
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
    hb = config.schedule.heartbeat
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


_TELEGRAM_USER = re.compile(r"^[0-9]{1,20}$")
_TELEGRAM_CHAT = re.compile(r"^-?[0-9]{1,20}$")
_WEBHOOK_SECRET = re.compile(r"^[A-Za-z0-9_-]{1,256}$")


def _check_channels(config: Config) -> None:
    tg = config.channels.telegram
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
    dc = config.channels.discord
    for name, ids in (("allow_from", dc.allow_from), ("groups", dc.groups)):
        for i, value in enumerate(ids):
            if not value.isdigit():
                raise ConfigError(
                    f"channels.discord.{name}[{i}]",
                    f"expected a numeric Discord id (a snowflake such as 80351110224678912), "
                    f"got {value!r}",
                )


LOOPBACK = frozenset({"127.0.0.1", "::1", "localhost"})


def loopback(host: str) -> bool:
    """``localhost`` or a loopback address (a name that merely starts with 127. is not)."""
    try:
        return host in LOOPBACK or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


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
