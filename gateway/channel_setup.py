"""The chat platforms' adapters, built from the configuration with their access policy and inbox."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from pathlib import Path

from agent.workspace.audience import inbox_folder
from agent.workspace.quota import Quota
from channels.access import Access
from channels.base import Channel
from channels.inbox import Intake
from channels.pairing import PairingError, PairingStore
from channels.voice import Hearing, OpenAITranscriber, Transcriber
from gateway.config.loader import ChannelConfig, Config, DiscordConfig, TelegramConfig
from gateway.contract.errors import ConfigError
from gateway.contract.events import SessionKey, audience_of
from gateway.contract.ports import Clock, SystemClock
from gateway.statefiles import set_aside


def build_channels(
    config: Config, clock: Clock | None = None, only: Collection[str] | None = None
) -> list[Channel]:
    """The adapters for every enabled chat platform (of ``only``, if given), sharing one
    pairing store."""
    clock = clock or SystemClock()
    pairing = PairingStore(config.layout.pairing, clock=clock)
    channels: list[Channel] = []
    tg, dc = config.channels.telegram, config.channels.discord
    wanted = [name for name in config.channels.enabled() if only is None or name in only]
    for need in config.channels.unmet():
        if need.key.split(".")[1] in wanted:
            raise ConfigError(need.key, need.why)
    if "telegram" in wanted:
        channels.append(_telegram(config, tg, pairing, clock))
    if "discord" in wanted:
        channels.append(_discord(config, dc, pairing, clock))
    for channel in channels:
        apply_channel(channel, tg if channel.name == "telegram" else dc)
    return channels


def apply_channels(channels: Mapping[str, Channel], config: Config) -> None:
    """Hand each running chat adapter its platform's options that change live."""
    for name, cfg in config.channels.platforms().items():
        channel = channels.get(name)
        if channel is not None:
            apply_channel(channel, cfg)


def apply_channel(channel: Channel, cfg: ChannelConfig) -> None:
    """The options of a channel that change while it runs: who may talk to the bot and where,
    the group context it keeps, and what shows while a reply is written."""
    channel.apply(streaming=cfg.streaming, show_tool_progress=cfg.show_tool_progress)
    if channel.access is not None:
        channel.access.apply(cfg.allow_from, cfg.groups, cfg.group_context_messages)


def web_chat(config: Config, clock: Clock) -> Channel:
    """The control page's chat channel; files sent on the page go to the private inbox, within
    the default size limits of a chat platform."""
    from gateway.web.chat import WebChannel

    files = intake(config, ChannelConfig(), clock)
    return WebChannel(files, clock, config.layout.web_chat, config.tz)


def repair_pairing(path: Path) -> None:
    """Pairing approvals that cannot be read let nobody in and take no new requests: the file
    is moved aside (and logged) so pairing works again; approvals must be given anew."""
    try:
        PairingStore(path).approved()
    except PairingError as exc:
        if path.exists():
            set_aside(path, str(exc), "guests approved before must be approved again")


def quota(config: Config) -> Quota:
    """What shared chats may store, as configured."""
    a = config.agent
    return Quota(
        config.workspace.resolve(),
        chat_bytes=int(a.chat_quota_mb * 1_000_000),
        all_chats_bytes=int(a.all_chats_quota_mb * 1_000_000),
        chat_files=a.chat_max_files,
    )


def _policy(
    config: Config, name: str, cfg: ChannelConfig, pairing: PairingStore, clock: Clock
) -> tuple[Access, Intake]:
    """A channel's access policy and where its files go."""
    limits = quota(config)
    access = Access(
        name,
        allow_from=cfg.allow_from,
        groups=cfg.groups,
        pairing=pairing,
        context_messages=cfg.group_context_messages,
        clock=clock,
    )
    return access, intake(
        config, cfg, clock, lambda key, size: limits.refusal(audience_of(key), size)
    )


def intake(
    config: Config,
    cfg: ChannelConfig,
    clock: Clock,
    room: Callable[[SessionKey, int], str | None] = lambda key, size: None,
) -> Intake:
    """Where a channel's files go (its audience's inbox folder) and how large they may be."""
    return Intake(
        config.workspace.resolve(),
        cfg.max_image_bytes,
        cfg.max_file_bytes,
        today=lambda: clock.now().astimezone(config.tz).date(),
        folder=lambda key, day: inbox_folder(audience_of(key), day),
        room=room,
    )


def _telegram(config: Config, tg: TelegramConfig, pairing: PairingStore, clock: Clock) -> Channel:
    from channels.telegram.channel import TelegramChannel, Webhook

    assert tg.token is not None  # build_channels said what is missing
    hook = tg.webhook
    webhook = None
    if hook.url:
        assert hook.secret_token is not None
        webhook = Webhook(hook.url, hook.listen, hook.port, hook.path, hook.secret_token.value)
    access, intake = _policy(config, "telegram", tg, pairing, clock)
    return TelegramChannel(
        tg.token.value,
        access,
        intake=intake,
        base_url=tg.base_url,
        base_file_url=tg.base_file_url,
        poll_timeout=tg.poll_timeout,
        webhook=webhook,
        clock=clock,
        hearing=hearing(config),
    )


def _discord(config: Config, dc: DiscordConfig, pairing: PairingStore, clock: Clock) -> Channel:
    from channels.discord.channel import DiscordChannel

    assert dc.token is not None  # build_channels said what is missing
    access, intake = _policy(config, "discord", dc, pairing, clock)
    return DiscordChannel(
        dc.token.value,
        access,
        intake=intake,
        api_base_url=dc.api_base_url,
        gateway_url=dc.gateway_url,
        clock=clock,
        hearing=hearing(config),
    )


def hearing(config: Config) -> Hearing | None:
    """Voice notes and audio transcribed as configured (``transcription``), or None: off."""
    t = config.transcription
    if not t.enabled:
        return None
    if t.model_path:
        return Hearing(_local_transcriber(config), t.max_bytes, t.max_seconds)
    key = t.api_key.value if t.api_key is not None else None
    transcriber = OpenAITranscriber(t.base_url, key, t.model, t.timeout)
    return Hearing(transcriber, t.max_bytes, t.max_seconds)


def _local_transcriber(config: Config) -> Transcriber:
    """The whisper.cpp model at ``transcription.model_path``; a ConfigError when it cannot be
    used (never a download)."""
    from channels.voice_local import WhisperCppTranscriber, missing_parts

    t = config.transcription
    path = Path(t.model_path).expanduser()
    if not path.is_absolute():
        path = config.home / path
    if not path.is_file():
        raise ConfigError("transcription.model_path", f"no model file at {path}")
    problem = missing_parts()
    if problem is not None:
        raise ConfigError("transcription.model_path", problem)
    return WhisperCppTranscriber(path, language=t.language, timeout=t.timeout)
