"""What survives a crash between a message arriving and its answer going out."""

from __future__ import annotations

import contextlib
import json
import logging
import secrets
import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from enum import StrEnum
from pathlib import Path
from typing import Any

from gateway.contract.events import InboundMessage, OutboundMessage, SessionKey
from gateway.contract.ports import Clock, SystemClock
from gateway.infra.atomic import private_file
from gateway.infra.wal import Checkpoints
from gateway.runtime.inbound_json import dump_inbound, load_inbound
from gateway.statefiles import set_aside, stamp_schema

log = logging.getLogger(__name__)


class SendStatus(StrEnum):
    """Where an outbox message is: pending → sending → sent, or failed / uncertain, or
    waiting (to be sent again) in between."""

    PENDING = "pending"
    SENDING = "sending"
    SENT = "sent"
    FAILED = "failed"
    UNCERTAIN = "uncertain"  # interrupted while sending, on a platform that cannot deduplicate
    WAITING = "waiting"  # the platform could not be reached; sent again later


KEEP_SENT = timedelta(days=7)
KEEP_SEEN = timedelta(days=2)
CACHE_KIB = 256  # the connection's page cache

# inbound: accepted, not yet answered; removed in the transaction that puts the answer in the
#   outbox, so after a SIGKILL every row left is a message still owed an answer.
# outbox: every reply and scheduled message; one still sending after a crash is sent again where
#   the platform deduplicates, else noted (uncertain); origin names the scheduled run it is of.
# seen: recent platform ids, so a message delivered again (Telegram repeats) is answered once.
# live: the messages a streamed reply put in a chat, taken back on the start after a crash.
# The schema's version (SQLite's user_version), for carrying it forward: gateway/upgrades.
SCHEMA_VERSION = 1
_SCHEMA = """
CREATE TABLE IF NOT EXISTS inbound (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    key TEXT NOT NULL,
    payload TEXT NOT NULL,
    created TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS outbox (
    id INTEGER PRIMARY KEY,
    key TEXT NOT NULL,
    text TEXT NOT NULL,
    reply_to TEXT,
    origin TEXT UNIQUE,
    status TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    error TEXT NOT NULL DEFAULT '',
    created TEXT NOT NULL,
    updated TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS outbox_status ON outbox(status);
CREATE TABLE IF NOT EXISTS seen (
    key TEXT NOT NULL,
    message_id TEXT NOT NULL,
    at TEXT NOT NULL,
    PRIMARY KEY (key, message_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS live (
    key TEXT NOT NULL,
    ref TEXT NOT NULL,
    created TEXT NOT NULL,
    PRIMARY KEY (key, ref)
) WITHOUT ROWID;
"""


@dataclass(frozen=True, slots=True)
class Outgoing:
    id: int
    out: OutboundMessage
    status: SendStatus
    attempts: int
    error: str
    origin: str | None
    updated: str
    created: str = ""


class Journal:
    def __init__(self, path: Path, clock: Clock | None = None, *, repair: bool = True) -> None:
        """``repair``: a file that cannot be read is moved aside (and logged) and a new one
        started; without, the error is raised (``corvid status`` only looks)."""
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.path = path
        self.clock = clock or SystemClock()
        try:
            self.db = _open(path)
        except sqlite3.DatabaseError as exc:
            if not repair:
                raise
            set_aside(
                path,
                str(exc),
                "messages owed an answer and replies not confirmed as sent are in the old copy",
            )
            self.db = _open(path)
        self.checkpoints = Checkpoints(self.db, path)  # off the event loop (contract/wal.py)
        seeded = "SELECT 1 FROM sqlite_sequence WHERE name = 'inbound'"
        if self.db.execute(seeded).fetchone() is None:
            # Numbers are never reused (AUTOINCREMENT), and a new journal starts at a random
            # point, so a number can't match an old one in a transcript if this file is deleted.
            start = secrets.randbits(40) << 16
            self.db.execute(
                "INSERT INTO sqlite_sequence (name, seq) VALUES ('inbound', ?)", (start,)
            )

    def close(self) -> None:
        self.checkpoints.close()
        self.db.close()

    def _now(self) -> str:
        return self.clock.now().isoformat(timespec="milliseconds")

    # -- inbound ------------------------------------------------------------------------------

    def first_time(self, msg: InboundMessage) -> bool:
        """False if this platform message was seen before (delivered again after a restart)."""
        if msg.message_id is None:
            return True
        cur = self.db.execute(
            "INSERT OR IGNORE INTO seen (key, message_id, at) VALUES (?, ?, ?)",
            (str(msg.key), msg.message_id, self._now()),
        )
        return cur.rowcount == 1

    def take(self, msg: InboundMessage) -> InboundMessage:
        """Record an accepted message; returns it with its journal sequence number set."""
        cur = self.db.execute(
            "INSERT INTO inbound (key, payload, created) VALUES (?, ?, ?)",
            (str(msg.key), json.dumps(dump_inbound(msg), ensure_ascii=False), self._now()),
        )
        return replace(msg, seq=cur.lastrowid)

    def unanswered(self) -> list[InboundMessage]:
        """Messages left without an answer, oldest first. A row that cannot be read (a disk
        error, a hand edit) is reported and dropped: it could never be answered."""
        rows = self.db.execute("SELECT id, payload FROM inbound ORDER BY id").fetchall()
        found = []
        for seq, payload in rows:
            try:
                found.append(replace(load_inbound(json.loads(payload)), seq=seq))
            except (ValueError, KeyError, TypeError) as exc:
                log.error("journal: message %d cannot be read (%s); dropped", seq, exc)
                self.db.execute("DELETE FROM inbound WHERE id = ?", (seq,))
        return found

    def drop(self, msgs: Sequence[InboundMessage]) -> None:
        """Forget messages that need no answer (a stopped turn, NO_REPLY)."""
        seqs = [(m.seq,) for m in msgs if m.seq is not None]
        if seqs:
            self.db.executemany("DELETE FROM inbound WHERE id = ?", seqs)

    def answer(self, msgs: Sequence[InboundMessage], out: OutboundMessage | None) -> int | None:
        """In one transaction: the messages are answered, and the answer (if any) is queued."""
        with self.transaction():
            self.db.executemany(
                "DELETE FROM inbound WHERE id = ?", [(m.seq,) for m in msgs if m.seq is not None]
            )
            oid = None if out is None else self._insert(out, None)
        # Every message's writes end here or in ``settle``: the place to see whether a
        # checkpoint is due (the rows of the other writes are counted too).
        self.checkpoints.wrote()
        return oid

    # -- outbox -------------------------------------------------------------------------------

    def queue(self, out: OutboundMessage, origin: str | None = None) -> int:
        return self._insert(out, origin)

    def by_origin(self, origin: str) -> Outgoing | None:
        row = self.db.execute(f"{_SELECT} WHERE origin = ?", (origin,)).fetchone()
        return None if row is None else _readable(row)

    def unsettled(self) -> list[Outgoing]:
        """Messages a crash or shutdown left ``pending``, ``sending`` or ``waiting``, oldest
        first."""
        rows = self.db.execute(
            f"{_SELECT} WHERE status IN (?, ?, ?) ORDER BY id",
            (SendStatus.PENDING, SendStatus.SENDING, SendStatus.WAITING),
        ).fetchall()
        found = []
        for row in rows:
            out = _readable(row)
            if out is None:
                # Nowhere to send it (a hand edit, a disk error): said once, and set aside as
                # failed, where corvid status shows it, instead of stopping every start.
                log.error("journal: outbox message %s cannot be read; not sent", row[0])
                self.db.execute(
                    "UPDATE outbox SET status = ?, error = ?, updated = ? WHERE id = ?",
                    (SendStatus.FAILED, UNREADABLE, self._now(), row[0]),
                )
            else:
                found.append(out)
        return found

    def undelivered(self, limit: int = 20) -> list[Outgoing]:
        """The most recent messages that failed, may not have arrived, or wait to be sent
        again; newest first."""
        rows = self.db.execute(
            f"{_SELECT} WHERE status IN (?, ?, ?) ORDER BY id DESC LIMIT ?",
            (SendStatus.FAILED, SendStatus.UNCERTAIN, SendStatus.WAITING, limit),
        ).fetchall()
        return [out for out in map(_readable, rows) if out is not None]

    def sending(self, oid: int) -> None:
        self.db.execute(
            "UPDATE outbox SET status = ?, attempts = attempts + 1, updated = ? WHERE id = ?",
            (SendStatus.SENDING, self._now(), oid),
        )

    def settle(
        self, oid: int, status: SendStatus, error: str = "", live: Sequence[str] = ()
    ) -> None:
        """``live``: the streamed messages this one finished, no longer half-written (in the
        same transaction, so a finished reply is never taken back as unfinished)."""
        update = "UPDATE outbox SET status = ?, error = ?, updated = ? WHERE id = ?"
        if not live:  # the common case: one statement, no transaction to open
            self.db.execute(update, (status, error, self._now(), oid))
        else:
            with self.transaction():
                self.db.execute(update, (status, error, self._now(), oid))
                self.db.executemany(
                    "DELETE FROM live WHERE key = (SELECT key FROM outbox WHERE id = ?) "
                    "AND ref = ?",
                    [(oid, r) for r in live],
                )
        self.checkpoints.wrote()

    # -- streamed messages not yet finished ----------------------------------------------------

    def placed(self, key: SessionKey, ref: str) -> None:
        """A streamed reply put a message (``ref``, the platform's id) in the chat."""
        self.db.execute(
            "INSERT OR IGNORE INTO live (key, ref, created) VALUES (?, ?, ?)",
            (str(key), ref, self._now()),
        )

    def finished(self, key: SessionKey, refs: Sequence[str]) -> None:
        """These streamed messages are finished (or taken back): nothing to clean up."""
        self.db.executemany(
            "DELETE FROM live WHERE key = ? AND ref = ?", [(str(key), r) for r in refs]
        )

    def half_written(self) -> list[tuple[SessionKey, str]]:
        """Streamed messages a crash left unfinished, oldest first."""
        rows = self.db.execute("SELECT key, ref FROM live ORDER BY created").fetchall()
        found = []
        for key, ref in rows:
            try:
                found.append((SessionKey.parse(key), ref))
            except ValueError:
                log.error("journal: a half-written message in %r cannot be read; dropped", key)
                self.db.execute("DELETE FROM live WHERE key = ? AND ref = ?", (key, ref))
        return found

    def prune(self, now: datetime | None = None) -> None:
        """Drop delivered messages older than a week (failed ones stay for ``corvid status``)
        and message ids too old to be delivered again."""
        now = now or self.clock.now()
        sent_before = (now - KEEP_SENT).isoformat(timespec="milliseconds")
        self.db.execute(
            "DELETE FROM outbox WHERE status = ? AND updated < ?", (SendStatus.SENT, sent_before)
        )
        seen_before = (now - KEEP_SEEN).isoformat(timespec="milliseconds")
        self.db.execute("DELETE FROM seen WHERE at < ?", (seen_before,))

    def _insert(self, out: OutboundMessage, origin: str | None) -> int:
        now = self._now()
        cur = self.db.execute(
            "INSERT INTO outbox (key, text, reply_to, origin, status, created, updated) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (str(out.key), out.text, out.reply_to, origin, SendStatus.PENDING, now, now),
        )
        assert cur.lastrowid is not None
        return cur.lastrowid

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """What is written inside is kept together, or none of it (an exception, or a COMMIT
        that fails, rolls it back and is raised). Not nested: a method that makes its own
        transaction is not called inside one."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield
            self.db.execute("COMMIT")
        except BaseException:
            if self.db.in_transaction:  # a COMMIT that failed may leave it open
                self.db.execute("ROLLBACK")
            raise


def _open(path: Path) -> sqlite3.Connection:
    # Written from the event loop only; short statements, so blocking is not a concern.
    db = sqlite3.connect(private_file(path), isolation_level=None, timeout=10)
    try:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        # Rows are added at the end and read while recent: its newest pages are what it uses.
        # SQLite's default cache filled with old sent messages as the file grew.
        db.execute(f"PRAGMA cache_size=-{CACHE_KIB}")
        if (check := db.execute("PRAGMA quick_check").fetchone()[0]) != "ok":
            raise sqlite3.DatabaseError(f"damaged: {check}")
        db.executescript(_SCHEMA)
        stamp_schema(db, SCHEMA_VERSION)
    except sqlite3.DatabaseError:
        db.close()
        raise
    return db


_SELECT = (
    "SELECT id, key, text, reply_to, status, attempts, error, origin, updated, created FROM outbox"
)


# The error recorded on an outbox row that cannot be read.
UNREADABLE = "this message cannot be read from the journal (a damaged or edited row)"


def unreadable_rows(db: sqlite3.Connection) -> int:
    """How many rows of the journal cannot be read back (``corvid doctor``, read only)."""
    bad = sum(1 for row in db.execute(_SELECT) if _readable(row) is None)
    for (payload,) in db.execute("SELECT payload FROM inbound"):
        try:
            load_inbound(json.loads(payload))
        except (ValueError, KeyError, TypeError):
            bad += 1
    for (key,) in db.execute("SELECT key FROM live"):
        try:
            SessionKey.parse(key)
        except ValueError:
            bad += 1
    return bad


def _readable(row: tuple[Any, ...]) -> Outgoing | None:
    try:
        return _outgoing(row)
    except (ValueError, TypeError):
        return None


def _outgoing(row: tuple[Any, ...]) -> Outgoing:
    oid, key, text, reply_to, status, attempts, error, origin, updated, created = row
    out = OutboundMessage(SessionKey.parse(key), text, reply_to=reply_to, ident=f"c{oid}")
    return Outgoing(oid, out, SendStatus(status), attempts, error, origin, updated, created)
