"""What to do with a state file that cannot be read: set aside, never overwritten or deleted."""

from __future__ import annotations

import logging
import os
import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")


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


def opened(path: Path, open_db: Callable[[], T], lost: str) -> T:
    """The database at ``path``, opened by ``open_db``; one that is damaged (not one that is
    busy or locked, which moving aside would not help) is moved aside, logged with ``lost``
    (what the old copy holds), and a new one opened in its place."""
    try:
        return open_db()
    except sqlite3.DatabaseError as exc:
        if not damaged(exc):
            raise
        set_aside(path, str(exc), lost)
        return open_db()


def damaged(exc: sqlite3.DatabaseError) -> bool:
    """Does the error say the file is not a database, or a damaged one?"""
    name = getattr(exc, "sqlite_errorname", None) or ""  # not set on errors of Python's own
    return name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB"))
