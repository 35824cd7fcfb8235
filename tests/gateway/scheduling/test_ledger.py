"""The scheduler's ledger (state/scheduler.sqlite): what it records, how it is read by commands
that only look, and what happens to a damaged file."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta

import pytest

from gateway.scheduling.jobs import Job, JobKind, RunStatus
from gateway.scheduling.ledger import Ledger

NOW = datetime(2026, 11, 21, 20, 0, tzinfo=UTC)


def _job(created: datetime = NOW) -> Job:
    return Job("daily-summary", JobKind.CRON, "0 21 * * *", "UTC", "telegram:private:42", created)


def test_a_slot_is_claimed_once_it_is_sent_and_again_while_it_is_not(tmp_path):
    ledger = Ledger(tmp_path / "state" / "scheduler.sqlite")  # the folder is made
    job, fire = _job(), NOW + timedelta(hours=1)
    assert ledger.claim(job, "s1", fire, NOW)
    assert ledger.claim(job, "s1", fire, NOW)  # claimed, never confirmed: still owed
    ledger.settle(job, "s1", fire, RunStatus.FAILED, NOW, "down")
    assert ledger.claim(job, "s1", fire, NOW)  # failed: retried
    ledger.settle(job, "s1", fire, RunStatus.SENT, NOW)
    assert not ledger.claim(job, "s1", fire, NOW)
    [row] = ledger.history("daily-summary")
    assert (row["status"], row["attempts"], row["error"]) == ("sent", 3, None)
    assert ledger.status("daily-summary", "s1") is RunStatus.SENT
    assert ledger.status("daily-summary", "nope") is None


def test_history_is_newest_first_one_row_unless_asked_and_can_leave_out_runs_by_hand(tmp_path):
    ledger = Ledger(tmp_path / "scheduler.sqlite")
    job = _job()
    for i, slot in enumerate(["s1", "s2", "manual 2026-11-21T22:00:00"]):
        fire = NOW + timedelta(hours=i)
        ledger.settle(job, slot, fire, RunStatus.SENT, fire)
    assert [r["slot"] for r in ledger.history("daily-summary")] == ["manual 2026-11-21T22:00:00"]
    every = ledger.history("daily-summary", limit=5)
    assert [r["slot"] for r in every] == ["manual 2026-11-21T22:00:00", "s2", "s1"]
    scheduled = ledger.history("daily-summary", limit=5, scheduled_only=True)
    assert [r["slot"] for r in scheduled] == ["s2", "s1"]
    assert ledger.last_fire("daily-summary") == NOW + timedelta(hours=1)  # not the manual run


def test_a_job_is_owed_from_when_it_was_first_planned(tmp_path):
    path = tmp_path / "scheduler.sqlite"
    ledger = Ledger(path)
    assert ledger.first_planned(_job(NOW)) == NOW
    assert ledger.first_planned(_job(NOW + timedelta(hours=2))) == NOW  # the first sight stays
    assert ledger.first_planned(_job(NOW - timedelta(hours=1))) == NOW - timedelta(hours=1)
    ledger.close()
    looking = Ledger(path, read_only=True)
    assert looking.first_planned(_job(NOW + timedelta(hours=5))) == NOW  # as first recorded
    assert looking.read_only


def test_looking_never_writes_or_creates_anything(tmp_path):
    path = tmp_path / "scheduler.sqlite"
    looking = Ledger(path, read_only=True)
    assert looking.history("daily-summary") == []
    looking.first_planned(_job())
    assert not path.exists() and list(tmp_path.iterdir()) == []
    Ledger(path).settle(_job(), "s1", NOW, RunStatus.SENT, NOW)
    looking = Ledger(path, read_only=True)
    with pytest.raises(sqlite3.OperationalError):
        looking.settle(_job(), "s2", NOW, RunStatus.SENT, NOW)
    assert [r["slot"] for r in looking.history("daily-summary", limit=5)] == ["s1"]


def test_a_ledger_in_wal_mode_and_a_damaged_one_set_aside(tmp_path):
    path = tmp_path / "scheduler.sqlite"
    ledger = Ledger(path)
    assert ledger.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    ledger.check()  # a sound file passes
    ledger.close()
    path.write_bytes(b"SQLite format 3\x00" + b"\xff" * 4096)
    for end in ("-wal", "-shm"):
        (tmp_path / f"scheduler.sqlite{end}").unlink(missing_ok=True)
    again = Ledger(path)
    assert again.history("daily-summary") == []
    aside = [p.name for p in tmp_path.iterdir() if ".unreadable-" in p.name]
    assert len(aside) == 1 and aside[0].startswith("scheduler.sqlite.unreadable-")


def test_the_ledger_makes_the_folders_it_needs(tmp_path):
    ledger = Ledger(tmp_path / "a" / "b" / "scheduler.sqlite")
    ledger.settle(_job(), "s1", NOW, RunStatus.SENT, NOW)
    assert ledger.history("daily-summary")[0]["status"] == "sent"
    ledger.close()
