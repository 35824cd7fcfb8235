"""The scheduled backup (``backup.schedule``), keeping the newest ``backup.keep``."""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime
from pathlib import Path

from gateway.backups.names import backup_folder, default_name
from gateway.config.layout import Layout
from gateway.config.ops_sections import BackupConfig
from gateway.scheduling.jobs import Job

log = logging.getLogger(__name__)

# Scheduled backups are named apart, so that pruning never deletes one made by hand.
SCHEDULED = "corvid-scheduled"


class ScheduledBackup:
    """A job handler: one backup per slot, in a thread (a large workspace takes a while)."""

    def __init__(self, layout: Layout, settings: BackupConfig) -> None:
        self.layout = layout
        self.settings = settings
        self.folder = backup_folder(layout, settings.dir)

    async def __call__(self, job: Job, slot: str) -> None:
        await asyncio.to_thread(self.run_once, datetime.now(UTC))

    def run_once(self, now: datetime) -> Path:
        from gateway.backups.archive import make_backup  # tarfile and all: only when run

        dest = self.folder / default_name(now, SCHEDULED)
        manifest = make_backup(self.layout, dest, backup_dir=self.folder)
        log.info("backup: %d files written to %s", len(manifest.files), dest)
        for old in prune(self.folder, self.settings.keep):
            log.info("backup: deleted %s (backup.keep is %d)", old.name, self.settings.keep)
        return dest


def prune(folder: Path, keep: int) -> list[Path]:
    """Delete the scheduled backups in ``folder`` but the newest ``keep``; returns those
    deleted. Their names sort by time."""
    made = sorted(folder.glob(f"{SCHEDULED}-*.tar.gz"))
    old = made[: max(0, len(made) - keep)]
    for path in old:
        path.unlink(missing_ok=True)
    return old
