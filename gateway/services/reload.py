"""Settings that change without a restart: ``corvid reload``, SIGHUP, or the control page."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from gateway.config.envfile import with_env_file
from gateway.config.loader import Config, load_config

log = logging.getLogger(__name__)

_CHANNEL_OPTIONS = ("groups", "group_context_messages", "streaming", "show_tool_progress")
_OWNERS = tuple(f"channels.{name}.allow_from" for name in ("telegram", "discord"))

# What changes while running: each part that takes new options live, and the options it takes
# (a dotted key, or a section's prefix ending in "."), in the order they are handed over.
# Every option not named here waits for a restart.
LIVE: dict[str, tuple[str, ...]] = {
    "channels": (
        *_OWNERS,
        *(f"channels.{name}.{opt}" for name in ("telegram", "discord") for opt in _CHANNEL_OPTIONS),
    ),
    "owners": _OWNERS,  # who is told about pairing requests
    "model": ("llm.model", "llm.max_tokens", "llm.context_window", "llm.models"),
    "agent": (
        "agent.max_iterations",
        "agent.bootstrap_max_chars",
        "agent.bootstrap_total_max_chars",
        "agent.tool_output_max_chars",
        "memory.daily_log_max_chars",
        "memory.long_term_max_chars",
        "memory.search_max_results",
        "memory.owner_reads_guest_notes",
        "memory.recall.",
        "compaction.",
    ),
    "gateway": ("gateway.shutdown_grace",),
    "schedule": (
        "schedule.daily_summary.",
        "schedule.heartbeat.",
        "backup.",
        "memory.consolidation.",
    ),
    "budget": ("budget.",),  # a cap raised in config.yaml holds at once
}


class Running(Protocol):
    """What reading ``config.yaml`` again needs of the running app."""

    config: Config

    def appliers(self) -> Mapping[str, Callable[[Config], None]]:
        """Each part of ``LIVE`` by name: it takes the new configuration's options it owns."""
        ...

    def adopt(self, new: Config, restart: list[str]) -> None:
        """``new`` is the configuration now; ``restart`` lists options that still wait."""
        ...


@dataclass(frozen=True)
class Reloaded:
    applied: list[str]  # dotted keys now in effect
    restart: list[str]  # dotted keys that take effect at the next start


def reload(app: Running, environ: Mapping[str, str]) -> Reloaded:
    """Read ``config.yaml`` again, hand each part the options it applies live and name the rest
    as waiting for a restart; raises ``ConfigError`` (and changes nothing) when the file is not
    valid. The secrets come from ``environ`` over the home's ``corvid.env``, as at start."""
    new = load_config(app.config.home, with_env_file(app.config.layout.env_file, environ))
    changed = [key for key in options(new) if _value(app.config, key) != _value(new, key)]
    parts = [part for part, keys in LIVE.items() if any(k.startswith(keys) for k in changed)]
    applied = [k for k in changed if live(k)]
    restart = [k for k in changed if not live(k)]
    appliers = app.appliers()
    for part in parts:
        appliers[part](new)
    app.adopt(new, restart)
    log.info(
        "config.yaml reloaded: %d change(s) applied, %d wait for a restart",
        len(applied),
        len(restart),
    )
    return Reloaded(applied, restart)


def live(key: str) -> bool:
    """Does the option ``key`` change while running?"""
    return any(key.startswith(keys) for keys in LIVE.values())


def reloaded_text(applied: list[str], restart: list[str]) -> str:
    """What a reload did, in words for the owner (the command line and the control page)."""
    if not applied and not restart:
        return "config.yaml read again: nothing changed."
    lines = ["config.yaml read again."]
    if applied:
        lines.append("Changed now: " + ", ".join(applied))
    if restart:
        lines.append("Changed at the next restart (`corvid run`): " + ", ".join(restart))
    return "\n".join(lines)


def options(config: Any, prefix: str = "") -> Iterator[str]:
    """Every option's dotted key (a section's options, not the section)."""
    for f in dataclasses.fields(config):
        if f.name in ("home", "missing_env"):
            continue
        value = getattr(config, f.name)
        key = f"{prefix}{f.name}"
        if dataclasses.is_dataclass(value):
            yield from options(value, key + ".")
        else:
            yield key


def _value(config: Any, key: str) -> Any:
    for part in key.split("."):
        config = getattr(config, part)
    return config
