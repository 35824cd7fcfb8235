"""Checkpoints off the writer's commits: the writer's connection never checkpoints on its own,
one runs in a thread once enough rows have changed, only one at a time, a writer that keeps
the log growing catches up itself, and a checkpoint that fails is said once and left to the
writer. The journal and the usage ledger write through it."""

from __future__ import annotations

import logging
import sqlite3
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from gateway.infra import wal
from gateway.infra.wal import Checkpoints

ROW = "x" * 2000  # about half a page: a row is a page of the log or more


def _writer(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute("CREATE TABLE t (v TEXT)")
    return db


def _write(db: sqlite3.Connection, rows: int) -> None:
    for _ in range(rows):  # each its own commit, as the journal's
        db.execute("INSERT INTO t VALUES (?)", (ROW,))


def _pages_in_file(path: Path) -> int:
    return path.stat().st_size // 4096


@pytest.fixture
def threads(monkeypatch):
    """The threads other than the test's own that opened a database: the checkpoints'."""
    opened: list[str] = []
    real = sqlite3.connect

    def connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        if threading.current_thread() is not threading.main_thread():
            opened.append(threading.current_thread().name)
        return real(*args, **kwargs)

    monkeypatch.setattr(wal.sqlite3, "connect", connect)
    return opened


def test_sqlite_left_alone_checkpoints_in_the_writer_s_commit(tmp_path):
    """What is avoided: past 1,000 pages of log, a commit copies the log into the file."""
    path = tmp_path / "plain.sqlite"
    db = _writer(path)
    _write(db, 1200)
    assert _pages_in_file(path) > 500
    db.close()


def test_the_writer_s_commits_never_checkpoint(tmp_path, threads):
    path = tmp_path / "w.sqlite"
    db = _writer(path)
    checkpoints = Checkpoints(db, path, every=10**9)
    before = _pages_in_file(path)
    _write(db, 1200)
    checkpoints.wrote()
    assert _pages_in_file(path) == before  # all of it still in the log
    assert db.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0
    assert threads == []
    db.close()


def test_a_checkpoint_runs_in_a_thread_once_enough_rows_have_changed(tmp_path, threads):
    path = tmp_path / "w.sqlite"
    db = _writer(path)
    checkpoints = Checkpoints(db, path, every=50)
    before = _pages_in_file(path)
    _write(db, 49)
    checkpoints.wrote()
    assert threads == [] and _pages_in_file(path) == before
    _write(db, 1)
    checkpoints.wrote()
    checkpoints.close()  # waits for it
    assert threads == ["checkpoint w.sqlite"]
    assert _pages_in_file(path) > before + 20  # the rows copied into the file
    assert checkpoints.log_pages >= 50 and checkpoints.by_writer == 0
    db.close()


def test_one_checkpoint_at_a_time_and_the_writer_goes_on_meanwhile(tmp_path, monkeypatch):
    path = tmp_path / "w.sqlite"
    db = _writer(path)
    checkpoints = Checkpoints(db, path, every=10)
    started = threading.Event()
    release = threading.Event()
    real = checkpoints._in_thread
    runs: list[int] = []

    def slow() -> None:
        runs.append(1)
        started.set()
        assert release.wait(10)
        real()

    monkeypatch.setattr(checkpoints, "_in_thread", slow)
    _write(db, 10)
    checkpoints.wrote()
    assert started.wait(10)
    _write(db, 30)  # commits while the checkpoint is under way
    checkpoints.wrote()  # due again, but one is running
    assert len(runs) == 1
    release.set()
    checkpoints.close()
    checkpoints.wrote()  # still due: the next starts now
    checkpoints.close()
    assert len(runs) == 2
    assert db.execute("SELECT count(*) FROM t").fetchone()[0] == 40
    db.close()


def test_a_writer_that_keeps_the_log_growing_checkpoints_itself(tmp_path, threads):
    path = tmp_path / "w.sqlite"
    db = _writer(path)
    checkpoints = Checkpoints(db, path, every=20, catch_up=20)
    _write(db, 20)
    checkpoints.wrote()
    checkpoints.close()
    assert checkpoints.log_pages >= 20 and threads == ["checkpoint w.sqlite"]
    _write(db, 20)
    checkpoints.wrote()  # the log was past catch_up: this one is the writer's
    assert checkpoints.by_writer == 1 and threads == ["checkpoint w.sqlite"]
    _write(db, 20)  # the log started over from its beginning
    checkpoints.wrote()
    checkpoints.close()
    assert checkpoints.by_writer == 1 and len(threads) == 2
    assert checkpoints.log_pages < 45  # this last stretch only, not all three
    db.close()


def test_a_checkpoint_that_cannot_run_is_said_and_the_writer_goes_on(tmp_path, caplog):
    path = tmp_path / "w.sqlite"
    db = _writer(path)
    checkpoints = Checkpoints(db, tmp_path / "gone" / "w.sqlite", every=5)
    _write(db, 5)
    with caplog.at_level(logging.WARNING, logger="gateway.infra.wal"):
        checkpoints.wrote()
        checkpoints.close()
    [said] = [r.getMessage() for r in caplog.records if r.name == "gateway.infra.wal"]
    assert said.startswith("could not checkpoint w.sqlite")
    before = _pages_in_file(path)
    _write(db, 5)
    with caplog.at_level(logging.INFO, logger="gateway.infra.wal"):
        checkpoints.wrote()  # the writer's own, as SQLite would have run it
    assert checkpoints.by_writer == 1 and _pages_in_file(path) > before
    assert db.execute("SELECT count(*) FROM t").fetchone()[0] == 10
    assert [r.getMessage() for r in caplog.records if r.name == "gateway.infra.wal"][1:] == [
        "checkpoints of w.sqlite run again"
    ]
    db.close()


def test_the_journal_checkpoints_in_a_thread(tmp_path, threads):
    from gateway.contract.events import InboundMessage, OutboundMessage, SessionKey
    from gateway.runtime.journal import Journal, SendStatus

    path = tmp_path / "gateway.sqlite"
    journal = Journal(path)
    assert journal.db.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0
    key = SessionKey("telegram", "private", "1")
    for i in range(120):  # each: taken, answered, sent
        msg = journal.take(InboundMessage(key=key, text=f"m{i}", sender_id="1"))
        oid = journal.answer([msg], OutboundMessage(key=key, text=f"r{i}"))
        assert oid is not None
        journal.settle(oid, SendStatus.SENT)
    journal.close()
    assert "checkpoint gateway.sqlite" in threads
    assert journal.checkpoints.log_pages > 0


def test_the_usage_ledger_checkpoints_in_a_thread(tmp_path, threads):
    from agent.model.charge import Charge, Purpose
    from agent.usage.ledger import Call, UsageLedger

    ledger = UsageLedger(tmp_path / "usage.sqlite", ZoneInfo("UTC"))
    assert ledger._db.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0
    for i in range(wal.EVERY):
        call = Call(Charge(Purpose.CHAT), "claude-x", input=10, output=5, id=f"msg_{i}")
        assert ledger.record(call, datetime.now(UTC))
    ledger.close()
    assert threads == ["checkpoint usage.sqlite"]
