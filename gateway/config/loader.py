"""Load and validate ``config.yaml``: every error names its dotted key, nothing falls back."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import yaml

from agent.approvals.policy import ApprovalSettings
from agent.settings import (
    DEFAULT_MODEL,
    AgentSettings,
    BudgetSettings,
    CompactionSettings,
    LLMSettings,
    McpSettings,
    MemorySettings,
    ToolSettings,
)
from gateway.config.build import (
    build_fields,
    kind,
    secrets_in,
    substitute,
    with_env_defaults,
)
from gateway.config.checks import check_config
from gateway.config.layout import Layout
from gateway.config.ops_sections import BackupConfig
from gateway.config.sections import (
    ChannelConfig,
    ChannelsConfig,
    DailySummaryConfig,
    DiscordConfig,
    GatewayConfig,
    HeartbeatConfig,
    LoggingConfig,
    ScheduleConfig,
    TelegramConfig,
    TranscriptionConfig,
    WebConfig,
    WebhookConfig,
)
from gateway.config.strict_yaml import strict_load, yaml_problem
from gateway.contract.errors import ConfigError
from gateway.upgrades.config_steps import upgrade

__all__ = [
    "DEFAULT_MODEL",
    "ChannelConfig",
    "ChannelsConfig",
    "Config",
    "ConfigError",
    "DailySummaryConfig",
    "DiscordConfig",
    "GatewayConfig",
    "HeartbeatConfig",
    "LoggingConfig",
    "ScheduleConfig",
    "TelegramConfig",
    "TranscriptionConfig",
    "WebConfig",
    "WebhookConfig",
    "load_config",
    "parse_config",
]


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
    mcp: McpSettings = field(default_factory=McpSettings)
    backup: BackupConfig = field(default_factory=BackupConfig)
    budget: BudgetSettings = field(default_factory=BudgetSettings)
    approvals: ApprovalSettings = field(default_factory=ApprovalSettings)
    # dotted key -> environment variable it referenced that was not set
    missing_env: Mapping[str, str] = field(default_factory=dict)

    @property
    def layout(self) -> Layout:
        return Layout(self.home)

    @property
    def workspace(self) -> Path:
        return self.layout.workspace

    @property
    def state(self) -> Path:
        return self.layout.state

    @property
    def tz(self) -> ZoneInfo:
        return ZoneInfo(self.timezone)

    def chat_channels(self) -> list[str]:
        """The chat channels ``corvid run`` starts: the enabled platforms, and the control
        page's own chat when the page is on."""
        return [*self.channels.enabled(), *(["web"] if self.web.enabled else [])]

    # An unset ${VAR} leaves its key empty, not an error: a disabled channel's token may be
    # unset, and an enabled one's names the variable here.
    def missing(self, key: str, what: str) -> str:
        """A sentence saying how to fill in an empty required key."""
        var = self.missing_env.get(key)
        if var:
            return f"{key} is empty: set the environment variable {var} ({what})"
        return f"{key} is not set in {self.layout.config_file} ({what})"

    def secrets(self) -> list[str]:
        """Every configured secret value, for masking in logs and stored errors."""
        return [s.value for s in secrets_in(self)]


def load_config(home: Path, environ: Mapping[str, str]) -> Config:
    """Read ``home/config.yaml``; a missing file means all defaults."""
    raw = read_config_file(Layout(home).config_file)
    try:
        return parse_config(raw, home=home, environ=environ)
    except RecursionError:
        raise ConfigError("", "nested too deeply (or an alias refers to itself)") from None


def read_config_file(path: Path) -> Any:
    """The YAML document of a config file as written (``{}`` if there is none); every way it
    can be unreadable is a ConfigError that says which."""
    if not path.exists():
        return {}
    try:
        return read_config_text(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise ConfigError("", "the file is not UTF-8 text") from None
    except OSError as exc:
        raise ConfigError("", f"cannot be read: {exc.strerror}") from None


def read_config_text(text: str) -> Any:
    """``read_config_file`` for text already read."""
    try:
        return strict_load(text) or {}
    except yaml.MarkedYAMLError as exc:
        raise ConfigError("", yaml_problem(exc)) from None
    except yaml.YAMLError:
        raise ConfigError("", "not valid YAML") from None
    except RecursionError:
        raise ConfigError("", "nested too deeply (or an alias refers to itself)") from None


def parse_config(raw: Any, *, home: Path, environ: Mapping[str, str]) -> Config:
    raw, _ = upgrade(raw)  # an older file is read as its current version says
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
    check_config(config.channels, config.schedule, config.web, config.mcp, config.memory)
    return _fit_compaction(config, resolved.get("compaction"))


_COMPACTION_KEYS = ("reserve_tokens", "soft_threshold_tokens", "keep_recent_tokens")


def _fit_compaction(config: Config, given: Any) -> Config:
    """Compaction must be able to free something: what it reserves, its flush margin and what
    it keeps must fit in the window together. Left at their defaults (written out or not, as
    the template writes them) they are sized to a small window (a local model behind
    base_url); set by hand to other values, a misfit is an error."""
    window, c = config.llm.context_window, config.compaction
    needed = c.reserve_tokens + c.soft_threshold_tokens + c.keep_recent_tokens
    if needed < window:
        return config
    default = CompactionSettings()
    if isinstance(given, dict) and any(
        k in given and getattr(c, k) != getattr(default, k) for k in _COMPACTION_KEYS
    ):
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
