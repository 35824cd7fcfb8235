"""Where backups go and what they are called, without loading the archive code at every start."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from gateway.config.layout import Layout


def backup_folder(layout: Layout, configured: str) -> Path:
    """Where backups go: ``backup.dir`` (relative to the home), else ``state/backups``."""
    if not configured:
        return layout.backups
    folder = Path(configured).expanduser()
    return folder if folder.is_absolute() else layout.home / folder


def default_name(now: datetime, prefix: str = "corvid-backup") -> str:
    return f"{prefix}-{now.astimezone(UTC):%Y%m%d-%H%M%S}.tar.gz"
