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


def _damaged_inside(path) -> None:
    """A ledger SQLite opens without a word, but whose pages are not sound: one b-tree page
    reports fragments it does not have, which only a check of the pages finds."""
    db = sqlite3.connect(path)
    Ledger(path).close()
    rows = [(f"j{i}", f"s{i}", "f", "t", "sent", 1, None, "u") for i in range(2000)]
    db.executemany("INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
    db.commit()
    db.execute("PRAGMA journal_mode=DELETE")  # folded into the file, no -wal beside it
    db.close()
    data = bytearray(path.read_bytes())
    size = int.from_bytes(data[16:18], "big")
    data[4 * size + 7] += 5  # page 5's count of fragmented bytes
    path.write_bytes(bytes(data))


def test_a_ledger_damaged_inside_is_set_aside_and_found_by_a_check(tmp_path):
    path = tmp_path / "scheduler.sqlite"
    _damaged_inside(path)
    looking = Ledger(path, read_only=True)
    with pytest.raises(sqlite3.DatabaseError, match=r"(?s)^damaged: .*Page 5"):
        looking.check()
    looking.close()
    again = Ledger(path)
    assert again.history("j1") == []  # a fresh ledger; the damaged one is kept aside
    aside = [p for p in tmp_path.iterdir() if ".unreadable-" in p.name]
    assert len(aside) == 1 and aside[0].read_bytes()[:16] == b"SQLite format 3\x00"
    again.close()


def test_a_ledger_from_before_first_sightings_were_kept_is_read_as_it_is(tmp_path):
    """Opened by corvid jobs or doctor, which write nothing: a ledger without the table of
    first sightings still gives its runs, and a job counts from when it says it was made."""
    path = tmp_path / "scheduler.sqlite"
    db = sqlite3.connect(path)
    db.execute(
        "CREATE TABLE runs (job TEXT, slot TEXT, fire TEXT, target TEXT, status TEXT,"
        " attempts INTEGER DEFAULT 0, error TEXT, updated TEXT, PRIMARY KEY (job, slot))"
    )
    db.execute(
        "INSERT INTO runs VALUES ('daily-summary', 's1', ?, 't', 'sent', 1, NULL, ?)",
        (NOW.isoformat(), NOW.isoformat()),
    )
    db.commit()
    db.close()
    looking = Ledger(path, read_only=True)
    assert [r["slot"] for r in looking.history("daily-summary")] == ["s1"]
    made = NOW + timedelta(hours=3)
    assert looking.first_planned(_job(made)) == made
    looking.close()
