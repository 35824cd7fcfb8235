"""A home carried forward when Corvid starts: ``config.yaml`` and the state files' versions."""

from __future__ import annotations

import yaml

from gateway.config.layout import Layout
from gateway.config.strict_yaml import safe_load
from gateway.infra.atomic import write_atomic
from gateway.upgrades.config_steps import CONFIG_VERSION, rewrite, upgrade, version_of
from gateway.upgrades.state import upgrade_state


def upgrade_home(layout: Layout) -> list[str]:
    """Carry ``layout``'s home forward; returns a sentence per change, for the log. Raises
    ``NewerState`` (state) or ``ConfigError`` (config.yaml) for files from a newer Corvid,
    having changed nothing."""
    pending = _config_changes(layout)  # refuses a newer config.yaml before the state is touched
    changes = upgrade_state(layout)
    return _rewrite_config(layout, *pending) + changes if pending else changes


def _config_changes(layout: Layout) -> tuple[str, int, list[str]] | None:
    try:
        text = layout.config_file.read_text(encoding="utf-8")
        raw = safe_load(text)
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None  # loading the configuration has said what is wrong with it
    old = version_of(raw)
    _, changes = upgrade(raw)
    return (text, old, changes) if old < CONFIG_VERSION else None


def _rewrite_config(layout: Layout, text: str, old: int, changes: list[str]) -> list[str]:
    path = layout.config_file
    kept = path.with_name(f"{path.name}.v{old}")
    try:
        if not kept.exists():  # the file as the owner last wrote it: never replaced
            write_atomic(kept, text)
        write_atomic(path, rewrite(text))
    except OSError as exc:
        return [
            f"config.yaml is version {old} and could not be rewritten ({exc.strerror}); it is "
            f"read as version {CONFIG_VERSION} each time, change it by hand to stop this line",
            *changes,
        ]
    return [
        f"config.yaml carried from version {old} to {CONFIG_VERSION}; the old file is "
        f"kept as {kept.name}",
        *changes,
    ]
