"""The sections of ``config.yaml`` for looking after a home: scheduled backups."""

from __future__ import annotations

import re
from dataclasses import dataclass

from agent.settings import setting
from gateway.contract.errors import ConfigError

_DAILY = re.compile(r"([01]?\d|2[0-3]):([0-5]\d)")


@dataclass(frozen=True)
class BackupConfig:
    # When the scheduled backup runs: "HH:MM" every day, or a five-field cron expression, in
    # the configured time zone. Empty: no scheduled backups (``corvid backup`` still works).
    schedule: str = ""
    # Scheduled backups kept; older ones are deleted (those made by hand never are).
    keep: int = setting(7, minimum=1)
    # Where backups go; empty: state/backups in the home.
    dir: str = ""

    def __post_init__(self) -> None:
        if self.schedule:
            try:
                self._check_cron()
            except ValueError as exc:
                raise ConfigError(
                    "backup.schedule",
                    f"{self.schedule!r} is neither HH:MM nor a cron expression ({exc})",
                ) from None

    def cron(self) -> str:
        """The schedule as a cron expression."""
        daily = _DAILY.fullmatch(self.schedule.strip())
        if daily:
            return f"{int(daily.group(2))} {int(daily.group(1))} * * *"
        return self.schedule.strip()

    def _check_cron(self) -> None:
        from apscheduler.triggers.cron import CronTrigger

        CronTrigger.from_crontab(self.cron())
