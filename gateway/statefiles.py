"""What to do with a state file that cannot be read: set aside, never overwritten or deleted."""

from __future__ import annotations

import logging
import os
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

log = logging.getLogger(__name__)


def set_aside(path: Path, problem: str, lost: str) -> Path:
    """Move ``path`` (and SQLite's -wal and -shm beside it) to ``<name>.unreadable-<time>``;
    log what happened. Returns where the old copy is."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    aside = path.with_name(f"{path.name}.unreadable-{stamp}")
    os.replace(path, aside)
    for end in ("-wal", "-shm"):
        extra = Path(f"{path}{end}")
        if extra.exists():
            os.replace(extra, Path(f"{aside}{end}"))
    log.error(
        "%s could not be read (%s) and was moved aside to %s; %s. Corvid goes on with a new one.",
        path.name,
        problem,
        aside.name,
        lost,
    )
    return aside


def stamp_schema(db: sqlite3.Connection, version: int) -> None:
    """Give a database made just now, or before schema versions were kept (both 0), the
    schema ``version`` its module writes. ``corvid run`` has compared the number first
    (``gateway/upgrades/state.py``): an older one carried forward, a newer one refused."""
    if db.execute("PRAGMA user_version").fetchone()[0] == 0:
        db.execute(f"PRAGMA user_version = {int(version)}")
