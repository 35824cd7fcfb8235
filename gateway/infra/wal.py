"""Checkpoints of a WAL database in a thread of their own, not in the commit that fills the log.

In WAL mode SQLite copies its log back into the database file (a checkpoint) in whichever
commit takes the log past 1,000 pages, and with ``synchronous=NORMAL`` that commit then waits
for the log and the file to be synced. For a database written from the event loop that stalls
every chat at once: 15-25 ms every 65 or so messages for the journal on the machine of the
manual's benchmarks (its gateway p99), far longer on an SD card.

``Checkpoints`` turns that automatic checkpoint off for the writer's connection and, once
enough rows have changed, runs a passive checkpoint on a connection of its own in a thread. A
passive checkpoint never takes the write lock, so the writer goes on meanwhile. The log starts
over from its beginning at the first commit after a checkpoint has copied all of it; a writer
busy enough to add pages during every checkpoint would keep it growing, so once a checkpoint
finds the log past ``catch_up`` pages the writer's next due checkpoint is its own, as SQLite
would have done it. A checkpoint that cannot run in its thread is said once in the log and
left to the writer too. SQLite still checkpoints when the last connection closes.

A leaf: it imports nothing from Corvid.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from pathlib import Path

log = logging.getLogger(__name__)

# Rows changed between checkpoints: about 35 messages of the journal, 500 pages of its log.
EVERY = 200
# Pages in the log at which the writer checkpoints itself: four times SQLite's own point.
CATCH_UP = 4000


class Checkpoints:
    """The checkpoints of the database at ``path``, whose writer is ``db``."""

    def __init__(
        self, db: sqlite3.Connection, path: Path, *, every: int = EVERY, catch_up: int = CATCH_UP
    ) -> None:
        db.execute("PRAGMA wal_autocheckpoint=0")
        self._db = db
        self._path = path
        self._every = every
        self._catch_up = catch_up
        self._counted = db.total_changes
        self._thread: threading.Thread | None = None
        self.log_pages = 0  # in the log when the last checkpoint ran
        self.by_writer = 0  # checkpoints the writer ran itself
        self._failing = False

    def wrote(self) -> None:
        """Said by the writer after a commit (cheap: it reads a counter). Once ``every`` rows
        have changed since the last checkpoint, and none is running, one starts."""
        if self._db.total_changes - self._counted < self._every:
            return
        if self._thread is not None and self._thread.is_alive():
            return
        self._counted = self._db.total_changes
        if self.log_pages >= self._catch_up:
            self.by_writer += 1
            pages, copied = self._checkpoint(self._db)
            # Nothing was added meanwhile: all copied, the next commit starts the log over.
            self.log_pages = 0 if copied >= pages else pages
            return
        self._thread = threading.Thread(
            target=self._in_thread, name=f"checkpoint {self._path.name}", daemon=True
        )
        self._thread.start()

    def close(self) -> None:
        """Wait for a checkpoint still running; the writer is closed after it."""
        if self._thread is not None:
            self._thread.join()

    def _in_thread(self) -> None:
        try:
            db = sqlite3.connect(self._path, timeout=10)
        except sqlite3.Error as exc:
            self.log_pages = self._failed(exc)
            return
        try:
            # The writer may have added to the log meanwhile, so it may not start over.
            self.log_pages, _ = self._checkpoint(db)
        finally:
            db.close()

    def _checkpoint(self, db: sqlite3.Connection) -> tuple[int, int]:
        """The pages in the log and those copied (the log as it was when it began)."""
        try:
            _busy, pages, copied = db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        except sqlite3.Error as exc:
            return self._failed(exc), 0
        if self._failing:
            self._failing = False
            log.info("checkpoints of %s run again", self._path.name)
        return max(pages, 0), max(copied, 0)  # -1 each when the database is not in WAL mode

    def _failed(self, exc: sqlite3.Error) -> int:
        """Said once until one runs again; the log is taken as due for the writer's own."""
        if not self._failing:
            self._failing = True
            log.warning("could not checkpoint %s (%s)", self._path.name, exc)
        return self._catch_up
