"""Load and validate ``config.yaml``. Every error names its dotted key; nothing falls back silently.

Secrets are written as ``${ENV_VAR}`` and resolved from the ``environ`` mapping passed in (not
read from ``os.environ`` behind the caller's back). A reference to an unset variable is not an
error by itself: the key is left empty and remembered, so that a disabled channel's token may be
unset while ``corvid run`` can still say exactly which variable is missing for an enabled one.
"""

from __future__ import annotations

import dataclasses
import math
import re
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import yaml

from gateway.errors import ConfigError

DEFAULT_MODEL = "claude-sonnet-5-5"
# ``${VAR}`` in a config value: replaced by the environment variable.
ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


class Secret:
    """A string that never shows itself in logs, reprs or tracebacks."""

    __slots__ = ("value",)

    def __init__(self, value: str) -> None:
        self.value = value

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other.value == self.value

    def __hash__(self) -> int:
        return hash(self.value)


def _opt(default: Any, minimum: float | None = None, choices: tuple[str, ...] = ()) -> Any:
    return field(default=default, metadata={"min": minimum, "choices": choices})


@dataclass(frozen=True)
class LLMConfig:
    api_key: Secret | None = None
    base_url: str | None = None
    model: str = DEFAULT_MODEL
    max_tokens: int = _opt(8192, minimum=1)
    context_window: int = _opt(200_000, minimum=1000)
    timeout: float = _opt(120.0, minimum=1)
    retries: int = _opt(2, minimum=0)


@dataclass(frozen=True)
class AgentConfig:
    max_iterations: int = _opt(25, minimum=1)
    bootstrap_max_chars: int = _opt(20_000, minimum=100)
    bootstrap_total_max_chars: int = _opt(60_000, minimum=100)
    max_input_chars: int = _opt(32_000, minimum=100)
    tool_output_max_chars: int = _opt(50_000, minimum=1000)


@dataclass(frozen=True)
class MemoryConfig:
    daily_log_max_chars: int = _opt(12_000, minimum=500)
    long_term_max_chars: int = _opt(20_000, minimum=500)
    search_max_results: int = _opt(8, minimum=1)
    chunk_lines: int = _opt(30, minimum=4)
    chunk_overlap_lines: int = _opt(6, minimum=0)


@dataclass(frozen=True)
class CompactionConfig:
    reserve_tokens: int = _opt(20_000, minimum=0)
    soft_threshold_tokens: int = _opt(4_000, minimum=0)
    keep_recent_tokens: int = _opt(20_000, minimum=500)


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
    group_context_messages: int = _opt(20, minimum=0)
    # Images larger than this are not passed to the model; other files larger than this are
    # not saved to the inbox.
    max_image_bytes: int = _opt(5_000_000, minimum=1)
    max_file_bytes: int = _opt(20_000_000, minimum=1)


@dataclass(frozen=True)
class WebhookConfig:
    # Public HTTPS URL Telegram should post updates to; empty means long polling.
    url: str | None = None
    listen: str = "127.0.0.1"
    port: int = _opt(8443, minimum=1)
    path: str = "telegram"
    secret_token: Secret | None = None


@dataclass(frozen=True)
class TelegramConfig(ChannelConfig):
    base_url: str = "https://api.telegram.org/bot"
    base_file_url: str = "https://api.telegram.org/file/bot"
    poll_timeout: int = _opt(30, minimum=0)
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
    grace_hours: float = _opt(12.0, minimum=0)


@dataclass(frozen=True)
class HeartbeatConfig:
    enabled: bool = False
    every_minutes: int = _opt(30, minimum=1)
    # Local hours it may run in, HH:MM-HH:MM (in the top-level timezone).
    active_hours: str = "08:00-22:00"
    # The owner's chat it reports to, e.g. telegram:private:123456789.
    target: str | None = None


@dataclass(frozen=True)
class ScheduleConfig:
    daily_summary: DailySummaryConfig = field(default_factory=DailySummaryConfig)
    heartbeat: HeartbeatConfig = field(default_factory=HeartbeatConfig)


@dataclass(frozen=True)
class GatewayConfig:
    shutdown_grace: float = _opt(20.0, minimum=0)


@dataclass(frozen=True)
class LoggingConfig:
    level: str = _opt("INFO", choices=("DEBUG", "INFO", "WARNING", "ERROR"))
    format: str = _opt("text", choices=("text", "json"))  # json: one object per line


@dataclass(frozen=True)
class Config:
    home: Path
    timezone: str = "UTC"
    llm: LLMConfig = field(default_factory=LLMConfig)
    agent: AgentConfig = field(default_factory=AgentConfig)
    memory: MemoryConfig = field(default_factory=MemoryConfig)
    compaction: CompactionConfig = field(default_factory=CompactionConfig)
    gateway: GatewayConfig = field(default_factory=GatewayConfig)
    schedule: ScheduleConfig = field(default_factory=ScheduleConfig)
    channels: ChannelsConfig = field(default_factory=ChannelsConfig)
    logging: LoggingConfig = field(default_factory=LoggingConfig)
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
        values = [
            self.llm.api_key,
            self.channels.telegram.token,
            self.channels.telegram.webhook.secret_token,
            self.channels.discord.token,
        ]
        return [v.value for v in values if v is not None]


@dataclass
class _Missing:
    var: str


def load_config(home: Path, environ: Mapping[str, str]) -> Config:
    """Read ``home/config.yaml``; a missing file means all defaults."""
    path = home / "config.yaml"
    raw: Any = {}
    if path.exists():
        try:
            raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
            raise ConfigError("", f"not valid YAML{where}") from None
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
        raise ConfigError("", f"expected a mapping at the top level, got {_kind(raw)}")
    missing: dict[str, str] = {}
    resolved = _substitute(raw, "", environ, missing)
    values = _build(Config, resolved, "", skip={"home", "missing_env"})
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
    return config


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
        from gateway.events import SessionKey

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
        from gateway.events import SessionKey

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


def _substitute(node: Any, key: str, environ: Mapping[str, str], missing: dict[str, str]) -> Any:
    if isinstance(node, dict):
        return {k: _substitute(v, _join(key, str(k)), environ, missing) for k, v in node.items()}
    if isinstance(node, list):
        return [_substitute(v, f"{key}[{i}]", environ, missing) for i, v in enumerate(node)]
    if isinstance(node, str) and "${" in node:
        unset = [m.group(1) for m in ENV_REF.finditer(node) if not environ.get(m.group(1))]
        if unset:
            missing[key] = unset[0]
            return _Missing(unset[0])
        return ENV_REF.sub(lambda m: environ[m.group(1)], node)
    return node


def _build(cls: type, data: Any, prefix: str, skip: frozenset[str] | set[str] = frozenset()):
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(prefix, f"expected a mapping, got {_kind(data)}")
    hints = typing.get_type_hints(cls)
    known = {f.name: f for f in dataclasses.fields(cls) if f.name not in skip}
    for k in data:
        if k not in known:
            options = ", ".join(sorted(known))
            raise ConfigError(_join(prefix, str(k)), f"unknown option (known here: {options})")
    values: dict[str, Any] = {}
    for name, f in known.items():
        if name in data:
            values[name] = _convert(hints[name], data[name], _join(prefix, name), f.metadata)
    if cls is Config:
        return values
    return cls(**values)


def _convert(tp: Any, value: Any, key: str, meta: Mapping[str, Any]) -> Any:
    optional = False
    if isinstance(tp, types.UnionType) or typing.get_origin(tp) is typing.Union:
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        optional = len(args) < len(typing.get_args(tp))
        tp = args[0]
    if isinstance(value, _Missing):
        if tp is Secret or optional:
            return None
        raise ConfigError(key, f"environment variable {value.var} is not set")
    if value is None:
        if optional:
            return None
        raise ConfigError(key, f"must not be empty (expected {_expect(tp)})")
    if dataclasses.is_dataclass(tp):
        return _build(tp, value, key)
    if tp is Secret:
        if not isinstance(value, str | int):
            raise ConfigError(key, f"expected a string, got {_kind(value)}")
        return Secret(str(value))
    if typing.get_origin(tp) is list:
        if not isinstance(value, list):
            raise ConfigError(key, f"expected a list, got {_kind(value)}")
        return [_convert(typing.get_args(tp)[0], v, f"{key}[{i}]", {}) for i, v in enumerate(value)]
    if tp is bool:
        if not isinstance(value, bool):
            raise ConfigError(key, f"expected true or false, got {_kind(value)}")
        return value
    if tp is int or tp is float:
        ok = isinstance(value, int) if tp is int else isinstance(value, int | float)
        if not ok or isinstance(value, bool):
            raise ConfigError(key, f"expected {_expect(tp)}, got {_kind(value)}")
        if not math.isfinite(value):
            raise ConfigError(key, f"expected a finite number, got {value}")
        if meta.get("min") is not None and value < meta["min"]:
            raise ConfigError(key, f"must be at least {meta['min']}, got {value}")
        return tp(value)
    if tp is str:
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise ConfigError(key, f"expected a string, got {_kind(value)}")
        value = str(value)
        choices = meta.get("choices")
        if choices:
            # Matched without regard to case, and given back as the choice is spelled.
            spelled = {c.casefold(): c for c in choices}.get(value.casefold())
            if spelled is None:
                raise ConfigError(key, f"expected one of {', '.join(choices)}, got {value!r}")
            return spelled
        return value
    raise TypeError(f"unsupported config type {tp!r} at {key}")  # a bug in this module


def _expect(tp: Any) -> str:
    return {int: "a whole number", float: "a number", bool: "true or false"}.get(tp, "a value")


def _kind(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return f"{type(value).__name__} {value!r}"


def _join(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name
