"""The usage ledger: one row per paid call in ``state/usage.sqlite``, and the sums read from it."""

from __future__ import annotations

import functools
import logging
import sqlite3
import threading
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from agent.model.charge import OWNER, Charge
from gateway.infra.atomic import private_file
from gateway.infra.wal import Checkpoints

log = logging.getLogger(__name__)

# Carried forward or refused at start by gateway/upgrades/state.py.
SCHEMA_VERSION = 1
SCHEMA = """
CREATE TABLE IF NOT EXISTS calls (
    id TEXT PRIMARY KEY,
    ts REAL NOT NULL,
    day TEXT NOT NULL,
    month TEXT NOT NULL,
    purpose TEXT NOT NULL,
    session TEXT,
    audience TEXT NOT NULL,
    job TEXT,
    model TEXT NOT NULL,
    input INTEGER NOT NULL,
    cache_write INTEGER NOT NULL,
    cache_read INTEGER NOT NULL,
    output INTEGER NOT NULL,
    web_searches INTEGER NOT NULL,
    cost REAL NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS calls_period ON calls (day, audience, job, purpose, cost);
CREATE INDEX IF NOT EXISTS calls_chat ON calls (audience, day, cost) WHERE audience != 'owner';
CREATE INDEX IF NOT EXISTS calls_job ON calls (job, day, cost) WHERE job IS NOT NULL;
DROP INDEX IF EXISTS calls_day;
DROP INDEX IF EXISTS calls_month_audience;
DROP INDEX IF EXISTS calls_month_job;
DROP INDEX IF EXISTS calls_day_audience;
DROP INDEX IF EXISTS calls_day_job;
CREATE TABLE IF NOT EXISTS raised (
    cap TEXT NOT NULL, period TEXT NOT NULL, amount REAL NOT NULL, PRIMARY KEY (cap, period)
);
CREATE TABLE IF NOT EXISTS told (
    cap TEXT NOT NULL, period TEXT NOT NULL, level INTEGER NOT NULL,
    PRIMARY KEY (cap, period, level)
);
"""

CACHE_KIB = 256  # the connection's page cache

# What ``by`` may group on, and the column it reads.
GROUPS = {"day": "day", "chat": "audience", "job": "job", "model": "model", "purpose": "purpose"}


@dataclass(frozen=True, slots=True)
class Call:
    """One paid call, as the ledger keeps it."""

    charge: Charge
    model: str
    input: int = 0
    cache_write: int = 0
    cache_read: int = 0
    output: int = 0
    web_searches: int = 0
    cost: float = 0.0
    id: str = ""  # the API's message id; empty: one is made


@dataclass(frozen=True, slots=True)
class Period:
    """The local day and month a moment falls in."""

    day: str  # YYYY-MM-DD
    month: str  # YYYY-MM

    @classmethod
    def of(cls, when: datetime, tz: ZoneInfo) -> Period:
        # Asked two or three times a call (the caps, the record), always of about now: kept
        # per minute, as no zone's day starts inside a minute.
        return _period(int(when.timestamp() // 60), tz)


@functools.lru_cache(maxsize=8)
def _period(minute: int, tz: ZoneInfo) -> Period:
    local = datetime.fromtimestamp(minute * 60, tz)
    return Period(f"{local:%Y-%m-%d}", f"{local:%Y-%m}")


class UsageLedger:
    def __init__(self, path: Path, tz: ZoneInfo) -> None:
        self.path = path
        self.tz = tz
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(
            private_file(path), isolation_level=None, check_same_thread=False, timeout=10
        )
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        # One row added per call, the sums read through indexes: its newest pages are what it
        # uses. SQLite's default cache filled with old rows as the ledger grew.
        self._db.execute(f"PRAGMA cache_size=-{CACHE_KIB}")
        self._db.executescript(SCHEMA)
        if self._db.execute("PRAGMA user_version").fetchone()[0] == 0:  # made just now
            self._db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        self._checkpoints = Checkpoints(self._db, path)  # not in a call's commit
        # Embeddings are counted from the thread that makes them.
        self._lock = threading.Lock()

    def close(self) -> None:
        self._checkpoints.close()
        self._db.close()

    # Committed as soon as the answer is in: a process killed later has counted it. The id is
    # the API's message id, so one answer is never counted twice.
    def record(self, call: Call, when: datetime) -> bool:
        """Keep ``call``; False when a call with its id is already kept."""
        period = Period.of(when, self.tz)
        with self._lock:
            kept = self._insert(call, when, period)
            self._checkpoints.wrote()
            return kept

    def _insert(self, call: Call, when: datetime, period: Period) -> bool:
        charge = call.charge
        cur = self._db.execute(
            "INSERT OR IGNORE INTO calls VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                call.id or f"local-{uuid.uuid4().hex}",
                when.timestamp(),
                period.day,
                period.month,
                str(charge.purpose),
                None if charge.key is None else str(charge.key),
                charge.audience,
                charge.job,
                call.model,
                call.input,
                call.cache_write,
                call.cache_read,
                call.output,
                call.web_searches,
                call.cost,
            ),
        )
        return cur.rowcount == 1

    # -- sums -------------------------------------------------------------------------------

    def spent(self, period: str, audience: str | None = None, job: str | None = None) -> float:
        """What was spent in a day (YYYY-MM-DD) or month (YYYY-MM), for everything or one
        shared chat's audience or one job."""
        within, args = _within(period)
        sql = f"SELECT coalesce(sum(cost), 0) FROM calls WHERE {within}"
        if audience is not None:
            sql += f" AND {_of(audience)}"
            args.append(audience)
        if job is not None:
            sql += " AND job = ?"
            args.append(job)
        return float(self._db.execute(sql, args).fetchone()[0])

    def totals(
        self,
        by: str,
        since: str | None = None,
        audience: str | None = None,
        limit: int | None = None,
    ) -> list[dict[str, Any]]:
        """Calls, tokens and cost grouped by ``by`` (a key of ``GROUPS``), from the local day
        ``since`` on, most expensive first (by day: oldest first)."""
        column = GROUPS[by]
        where, args = _where(since, audience)
        order = "key" if by == "day" else "cost DESC, key"
        sql = (
            f"SELECT {column} AS key, count(*), sum(input), sum(cache_write), sum(cache_read), "
            f"sum(output), sum(web_searches), sum(cost) FROM calls {where} "
            f"GROUP BY {column} ORDER BY {order}"
        )
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return [_row(r) for r in self._db.execute(sql, args)]

    def daily_by_purpose(
        self, since: str, audience: str | None = None
    ) -> Iterator[tuple[str, str, float]]:
        """(day, purpose, cost) from the local day ``since`` on, for the chart."""
        where, args = _where(since, audience)
        sql = (
            f"SELECT day, purpose, sum(cost) FROM calls {where} GROUP BY day, purpose ORDER BY day"
        )
        for day, purpose, cost in self._db.execute(sql, args):
            yield str(day), str(purpose), float(cost)

    def summary(self, period: str, audience: str | None = None) -> dict[str, Any]:
        """Calls, tokens and cost of one day or month."""
        within, args = _within(period)
        sql = (
            "SELECT 'all', count(*), sum(input), sum(cache_write), sum(cache_read), "
            f"sum(output), sum(web_searches), sum(cost) FROM calls WHERE {within}"
        )
        if audience is not None:
            sql += f" AND {_of(audience)}"
            args.append(audience)
        return _row(self._db.execute(sql, args).fetchone())

    def top(self, by: str, month: str, limit: int = 5) -> list[dict[str, Any]]:
        """The month's most expensive shared chats (``by="chat"``) or jobs."""
        column = GROUPS[by]
        skip = "audience != 'owner'" if by == "chat" else "job IS NOT NULL"
        within, args = _within(month)
        sql = (
            f"SELECT {column}, count(*), sum(input), sum(cache_write), sum(cache_read), "
            f"sum(output), sum(web_searches), sum(cost) FROM calls "
            f"WHERE {within} AND {skip} GROUP BY {column} ORDER BY sum(cost) DESC LIMIT ?"
        )
        return [_row(r) for r in self._db.execute(sql, (*args, limit))]

    # -- caps raised by the owner, and what the owner was told --------------------------------

    def raised(self, cap: str, period: str) -> float | None:
        row = self._db.execute(
            "SELECT amount FROM raised WHERE cap = ? AND period = ?", (cap, period)
        ).fetchone()
        return None if row is None else float(row[0])

    def raised_in(self, periods: Sequence[str]) -> dict[str, float]:
        """Every cap raised for one of ``periods`` (a day, a month), by its name."""
        marks = ",".join("?" * len(periods))
        rows = self._db.execute(
            f"SELECT cap, amount FROM raised WHERE period IN ({marks})", tuple(periods)
        )
        return {cap: float(amount) for cap, amount in rows}

    def raise_cap(self, cap: str, period: str, amount: float) -> None:
        self._db.execute("INSERT OR REPLACE INTO raised VALUES (?, ?, ?)", (cap, period, amount))

    def first_telling(self, cap: str, period: str, level: int) -> bool:
        """Whether the owner is yet to hear that ``cap`` reached ``level`` % in ``period``;
        recorded now, so they hear it once, restarts included."""
        cur = self._db.execute("INSERT OR IGNORE INTO told VALUES (?, ?, ?)", (cap, period, level))
        return cur.rowcount == 1


def _within(period: str) -> tuple[str, list[Any]]:
    """The condition for a local day (YYYY-MM-DD) or month (YYYY-MM), on ``day``: the one
    index a call's row keeps is on its day, and a month is a range of days."""
    if len(period) > 7:
        return "day = ?", [period]
    return "day BETWEEN ? AND ?", [f"{period}-01", f"{period}-31"]


def _of(audience: str) -> str:
    """The condition for one audience's rows. A shared chat's also says it is not the owner's,
    which lets SQLite use the index only shared chats' rows are in."""
    return "audience = ?" if audience == OWNER else f"audience = ? AND audience != '{OWNER}'"


def _where(since: str | None, audience: str | None) -> tuple[str, list[Any]]:
    clauses, args = [], []
    if since is not None:
        clauses.append("day >= ?")
        args.append(since)
    if audience is not None:
        clauses.append(_of(audience))
        args.append(audience)
    return ("WHERE " + " AND ".join(clauses) if clauses else ""), args


def _row(r: tuple[Any, ...]) -> dict[str, Any]:
    key, calls, inp, cw, cr, out, ws, cost = r
    return {
        "key": key,
        "calls": int(calls or 0),
        "input": int(inp or 0),
        "cache_write": int(cw or 0),
        "cache_read": int(cr or 0),
        "output": int(out or 0),
        "web_searches": int(ws or 0),
        "cost": float(cost or 0.0),
    }
