"""The sections of ``config.yaml`` that belong to the gateway: channels, schedule, page, logging."""

from __future__ import annotations

from dataclasses import dataclass, field

from agent.settings import setting
from gateway.contract.events import SessionKey, discord_dm, telegram_private
from gateway.contract.ports import Secret


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
class Need:
    """A value an enabled chat platform cannot start without, left empty."""

    key: str  # its dotted key
    what: str  # what the value is, for ``Config.missing``
    why: str  # when it is required


@dataclass(frozen=True)
class ChannelsConfig:
    telegram: TelegramConfig = field(default_factory=TelegramConfig)
    discord: DiscordConfig = field(default_factory=DiscordConfig)

    def platforms(self) -> dict[str, ChannelConfig]:
        """Every chat platform's settings by name, Telegram first."""
        return {"telegram": self.telegram, "discord": self.discord}

    def enabled(self) -> dict[str, ChannelConfig]:
        """The enabled chat platforms by name, Telegram first."""
        return {name: cfg for name, cfg in self.platforms().items() if cfg.enabled}

    def owner_chats(self) -> dict[str, SessionKey]:
        """The owner's private chat on each enabled platform (the first id in allow_from)."""
        private = {"telegram": telegram_private, "discord": discord_dm}
        return {
            name: private[name](cfg.allow_from[0])
            for name, cfg in self.enabled().items()
            if cfg.allow_from
        }

    def unmet(self) -> list[Need]:
        """What the enabled chat platforms need and are not given, in the order to say it."""
        needs = []
        for name, cfg in self.enabled().items():
            if cfg.token is None:
                why = f"required when {name.capitalize()} is enabled"
                needs.append(Need(f"channels.{name}.token", "the bot token", why))
            hook = cfg.webhook if isinstance(cfg, TelegramConfig) else None
            if hook is not None and hook.url and hook.secret_token is None:
                needs.append(
                    Need(
                        "channels.telegram.webhook.secret_token",
                        "a secret Telegram sends with every update, so forged posts are refused",
                        "required when webhook.url is set",
                    )
                )
        return needs

    def open_to_all(self) -> list[str]:
        """The enabled platforms with nobody in ``allow_from``: everyone who writes gets a
        pairing code, the owner included."""
        return [name for name, cfg in self.enabled().items() if not cfg.allow_from]


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
    # Hours a reply the platform cannot take (unreachable, overloaded) is tried again for.
    retry_window_hours: float = setting(24.0, minimum=0)


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
    # A whisper.cpp model file on this machine (ggml-*.bin): heard here instead, and nothing
    # is sent out. Needs the whisper extra (pip install 'corvid[whisper]').
    model_path: str = ""
    # For the local model: the language spoken ("en", "de", ...); empty: detected.
    language: str = ""
    # What the service charges a minute of audio (OpenAI's whisper-1: 0.006), for the ledger.
    price_per_minute: float = setting(0.0, minimum=0)


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
