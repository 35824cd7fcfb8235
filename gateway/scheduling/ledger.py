"""The scheduler's ledger (``state/scheduler.sqlite``): a row per job and slot, claimed first."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gateway.infra.atomic import private_file
from gateway.scheduling.jobs import Job, RunStatus
from gateway.statefiles import set_aside, stamp_schema

# The schema's version (SQLite's user_version), for carrying it forward: gateway/upgrades.
SCHEMA_VERSION = 1
_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (job TEXT, slot TEXT, fire TEXT, target TEXT, status TEXT,
    attempts INTEGER DEFAULT 0, error TEXT, updated TEXT, PRIMARY KEY (job, slot));
CREATE TABLE IF NOT EXISTS planned (job TEXT PRIMARY KEY, first TEXT NOT NULL);
"""


class Ledger:
    """Runs per job and slot: claimed → sent, or failed / missed. SQLite, so a claim survives
    a crash and two claims of one slot cannot both win: a run is exactly-once where
    APScheduler alone is at-most-once."""

    def __init__(self, path: Path, *, read_only: bool = False) -> None:
        if read_only:
            # For looking only (`corvid doctor`): nothing is claimed, and no file is created,
            # since a -wal or -shm made by another user (root) would lock the gateway out. While
            # a gateway has the database open its -shm exists and is shared; without one the
            # WAL has been folded into the file, which can then be read as immutable.
            wal = any(Path(f"{path}{end}").exists() for end in ("-wal", "-shm"))
            uri = f"{path.absolute().as_uri()}?{'mode=ro' if wal else 'immutable=1'}"
            self.db = sqlite3.connect(uri if path.exists() else ":memory:", uri=True)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            try:
                self.db = _open(path)
            except sqlite3.DatabaseError as exc:
                set_aside(
                    path,
                    str(exc),
                    "which runs were already sent is in the old copy: a run missed within its "
                    "grace period may be sent again",
                )
                self.db = _open(path)
        self.read_only = read_only
        try:
            self.db.executescript(_SCHEMA)
            if not read_only:
                stamp_schema(self.db, SCHEMA_VERSION)
        except sqlite3.OperationalError:
            if not read_only:
                raise  # read only: an older ledger without a table is read as far as it goes

    def close(self) -> None:
        self.db.close()

    def check(self) -> None:
        """Raise ``sqlite3.DatabaseError`` if the ledger is damaged (for ``corvid doctor``)."""
        if (found := self.db.execute("PRAGMA quick_check").fetchone()[0]) != "ok":
            raise sqlite3.DatabaseError(f"damaged: {found}")

    def first_planned(self, job: Job) -> datetime:
        """When a job was first planned (the scheduler's first sight of it, or when it says it
        was made, whichever is earlier): a slot after that and within the grace period is owed
        even if no run of the job was ever recorded. Read only, nothing is recorded."""
        if not self.read_only:
            self.db.execute(
                "INSERT OR IGNORE INTO planned (job, first) VALUES (?, ?)",
                (job.id, _utc(job.created)),
            )
        try:
            row = self.db.execute("SELECT first FROM planned WHERE job = ?", (job.id,)).fetchone()
        except sqlite3.OperationalError:  # an older ledger, read only
            row = None
        first = datetime.fromisoformat(str(row[0])) if row else job.created
        return min(first, job.created)

    def status(self, job: str, slot: str) -> RunStatus | None:
        row = self.db.execute(
            "SELECT status FROM runs WHERE job = ? AND slot = ?", (job, slot)
        ).fetchone()
        return RunStatus(row[0]) if row else None

    def claim(self, job: Job, slot: str, fire: datetime, now: datetime) -> bool:
        """True if this slot should run now: new, or claimed/failed earlier and never sent
        (a crash between claim and send must not lose the run)."""
        with self.db:
            row = self.db.execute(
                "SELECT status FROM runs WHERE job = ? AND slot = ?", (job.id, slot)
            ).fetchone()
            if row is not None and RunStatus(row[0]).final:
                return False
            self.db.execute(
                "INSERT INTO runs (job, slot, fire, target, status, attempts, updated)"
                " VALUES (?, ?, ?, ?, ?, 1, ?)"
                " ON CONFLICT (job, slot) DO UPDATE SET status = excluded.status,"
                " attempts = attempts + 1, updated = excluded.updated",
                (job.id, slot, _utc(fire), job.target, RunStatus.CLAIMED, _utc(now)),
            )
        return True

    def settle(
        self,
        job: Job,
        slot: str,
        fire: datetime,
        status: RunStatus,
        now: datetime,
        error: str | None = None,
    ) -> None:
        self.db.execute(
            "INSERT INTO runs (job, slot, fire, target, status, error, updated)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT (job, slot) DO UPDATE SET status = excluded.status,"
            " error = excluded.error, updated = excluded.updated",
            (job.id, slot, _utc(fire), job.target, status, error, _utc(now)),
        )

    def last_fire(self, job: str) -> datetime | None:
        """The newest slot that is settled or in progress: where the job resumes from."""
        row = self.db.execute(
            "SELECT MAX(fire) FROM runs WHERE job = ? AND slot NOT LIKE 'manual %'", (job,)
        ).fetchone()
        return datetime.fromisoformat(str(row[0])) if row and row[0] else None

    def history(
        self, job: str, limit: int = 1, scheduled_only: bool = False
    ) -> list[dict[str, Any]]:
        """Newest first; ``scheduled_only`` leaves out runs started by hand."""
        extra = " AND slot NOT LIKE 'manual %'" if scheduled_only else ""
        cur = self.db.execute(
            "SELECT slot, fire, target, status, attempts, error, updated FROM runs"
            f" WHERE job = ?{extra} ORDER BY fire DESC LIMIT ?",
            (job, limit),
        )
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


def _open(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(private_file(path), isolation_level=None)
    try:
        db.execute("PRAGMA journal_mode=WAL")
        if (found := db.execute("PRAGMA quick_check").fetchone()[0]) != "ok":
            raise sqlite3.DatabaseError(f"damaged: {found}")
    except sqlite3.DatabaseError:
        db.close()
        raise
    return db


def _utc(when: datetime) -> str:
    """Stored as UTC ISO text, so that MAX() over the column is the latest instant."""
    return when.astimezone(UTC).isoformat()
