"""The workspace's history: every change to a file kept, with who made it, so any can be undone."""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import logging
import os
import sqlite3
import stat
import threading
import zlib
from collections.abc import Iterator
from datetime import UTC, datetime, tzinfo
from pathlib import Path

from agent.workspace.changes import (
    COLUMNS,
    HAND_EDIT,
    Author,
    Change,
    change_of,
    current_author,
    may_see,
)
from agent.workspace.writers import held
from gateway.contract.errors import ToolError
from gateway.contract.events import Audience
from gateway.infra.atomic import PRIVATE, fsync_folder, private_file, write_atomic

log = logging.getLogger(__name__)

# Larger files are not kept (a file sent in chat, a database someone put there).
MAX_KEPT_BYTES = 4_000_000
# At most this many versions in a row are kept as what they add to the one before.
MAX_DEPTH = 64


# Carried forward or refused at start by gateway/upgrades/state.py.
SCHEMA_VERSION = 1
_SCHEMA = """
CREATE TABLE IF NOT EXISTS blobs (
    digest TEXT PRIMARY KEY,
    size INTEGER NOT NULL,
    base TEXT,  -- a version this one extends: data holds only what was added to it
    depth INTEGER NOT NULL DEFAULT 0,
    data BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS changes (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    at TEXT NOT NULL,
    path TEXT NOT NULL,
    before TEXT,
    after TEXT,
    who TEXT NOT NULL,
    what TEXT NOT NULL,
    undoes INTEGER
);
CREATE INDEX IF NOT EXISTS changes_by_path ON changes (path, id);
"""


def digest(data: bytes | None) -> str | None:
    return None if data is None else hashlib.sha256(data).hexdigest()


def _read(path: Path) -> bytes | None:
    """The file's bytes, or None when there is no regular file there (a folder, a pipe:
    nothing to keep, and a pipe would block; a link: what it leads to is not this file's, and
    may be outside the workspace, such as the secrets)."""
    try:
        # Not through a link, and never waiting on a FIFO put there meanwhile.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_KEPT_BYTES:
        os.close(fd)  # before a file object: Python refuses to make one of a folder
        return None
    with os.fdopen(fd, "rb") as f:
        try:
            return f.read()
        except OSError:
            return None


CACHE_KIB = 256  # the connection's page cache


class History:
    """The journal of one workspace."""

    def __init__(self, workspace: Path, db: Path, tz: tzinfo = UTC) -> None:
        self.workspace = workspace.resolve()
        self.tz = tz  # the owner's: times shown and read without a zone are in it
        db.parent.mkdir(parents=True, exist_ok=True)
        # Two processes (the gateway and ``corvid memory undo``) may write at once.
        self._db = sqlite3.connect(private_file(db), check_same_thread=False, timeout=10)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        # Versions are added at the end and the last of a file is what is read back, while
        # SQLite's default cache fills with old versions as the history grows.
        self._db.execute(f"PRAGMA cache_size=-{CACHE_KIB}")
        self._db.executescript(_SCHEMA)
        if self._db.execute("PRAGMA user_version").fetchone()[0] == 0:  # made just now
            self._db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        # The file tools run in worker threads: one write and its record at a time.
        self._lock = threading.RLock()

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # -- recording ----------------------------------------------------------------------------

    def rel(self, path: Path) -> str | None:
        """``path``'s workspace-relative name, or None when it is not in the workspace."""
        try:
            return path.resolve().relative_to(self.workspace).as_posix()
        except (ValueError, OSError, RuntimeError):
            return None

    @contextlib.contextmanager
    def recording(self, path: Path, author: Author | None = None) -> Iterator[None]:
        """Record the change the block makes to ``path``: what it was before, what it is
        after, and who (``author``, else the one ``authored`` set). A difference between the
        file before and its last recorded version is recorded first, as a hand edit."""
        rel = self.rel(path)
        if rel is None:
            yield
            return
        with self._lock:
            before = _read(path)
            self._catch_up(rel, before)
            yield
            after = _read(path)
            if after != before:
                self._add(rel, before, after, author or current_author())

    def _catch_up(self, rel: str, now: bytes | None) -> None:
        last = self._last(rel)
        if last is not None and last.after != digest(now):
            kept = self._blob(last.after) if last.after else None
            self._add(rel, kept, now, Author(HAND_EDIT, "found on the next look"))

    def _add(
        self,
        rel: str,
        before: bytes | None,
        after: bytes | None,
        author: Author,
        undoes: int | None = None,
    ) -> None:
        try:
            if before is not None:
                self._keep(before, None)
            if after is not None:
                self._keep(after, before)
            self._db.execute(
                "INSERT INTO changes (at, path, before, after, who, what, undoes) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    datetime.now(UTC).isoformat(timespec="microseconds"),
                    rel,
                    digest(before),
                    digest(after),
                    author.who,
                    author.what,
                    undoes,
                ),
            )
            self._db.commit()
        except sqlite3.Error:
            # The write itself happened: losing its record must not fail the turn.
            log.exception("could not record the change to %s", rel)

    def _keep(self, data: bytes, earlier: bytes | None) -> None:
        """Store a version once. One that only adds to the version before it (a log's new
        entry) is kept as what it adds, so a day of appends is not stored fifty times over;
        a chain of those is cut every ``MAX_DEPTH`` versions to keep reading one fast."""
        key = digest(data)
        if self._db.execute("SELECT 1 FROM blobs WHERE digest = ?", (key,)).fetchone():
            return
        base, depth, stored = None, 0, data
        if earlier and data.startswith(earlier):
            row = self._db.execute(
                "SELECT depth FROM blobs WHERE digest = ?", (digest(earlier),)
            ).fetchone()
            if row is not None and int(row[0]) < MAX_DEPTH:
                base, depth, stored = digest(earlier), int(row[0]) + 1, data[len(earlier) :]
        self._db.execute(
            "INSERT INTO blobs (digest, size, base, depth, data) VALUES (?, ?, ?, ?, ?)",
            (key, len(data), base, depth, zlib.compress(stored, 6)),
        )

    def look(self) -> int:
        """Record the hand edits made to files with a history since their last change;
        returns how many were found."""
        with self._lock:
            rows = self._db.execute(
                "SELECT path FROM changes WHERE id IN (SELECT max(id) FROM changes GROUP BY path)"
            ).fetchall()
            found = 0
            for (rel,) in rows:
                last = self._last(rel)
                now = _read(self.workspace / rel)
                if last is not None and last.after != digest(now):
                    self._catch_up(rel, now)
                    found += 1
            return found

    # -- reading ------------------------------------------------------------------------------

    def _blob(self, key: str) -> bytes:
        row = self._db.execute("SELECT base, data FROM blobs WHERE digest = ?", (key,)).fetchone()
        if row is None:
            raise ToolError(f"the version {key[:12]} is missing from the history.")
        added = zlib.decompress(row[1])
        return added if row[0] is None else self._blob(str(row[0])) + added

    def content(self, key: str | None) -> bytes | None:
        with self._lock:
            return None if key is None else self._blob(key)

    def _last(self, rel: str) -> Change | None:
        row = self._db.execute(
            f"SELECT {COLUMNS} FROM changes WHERE path = ? ORDER BY id DESC LIMIT 1", (rel,)
        ).fetchone()
        return None if row is None else change_of(row)

    def changes(self, audience: Audience, path: str | None = None, limit: int = 50) -> list[Change]:
        """The newest changes this audience may see (of ``path`` only, when given)."""
        with self._lock:
            if path is None:
                rows = self._db.execute(
                    f"SELECT {COLUMNS} FROM changes ORDER BY id DESC LIMIT ?", (limit * 4,)
                ).fetchall()
            else:
                rows = self._db.execute(
                    f"SELECT {COLUMNS} FROM changes WHERE path = ? ORDER BY id DESC LIMIT ?",
                    (path, limit),
                ).fetchall()
        return [c for c in map(change_of, rows) if may_see(audience, c.path)][:limit]

    def change(self, audience: Audience, change_id: int) -> Change | None:
        with self._lock:
            row = self._db.execute(
                f"SELECT {COLUMNS} FROM changes WHERE id = ?", (change_id,)
            ).fetchone()
        if row is None or not may_see(audience, row[2]):
            return None
        return change_of(row)

    def diff(self, change: Change) -> str:
        """The change as a unified diff of its two versions."""
        old, new = (_text(self.content(k)) for k in (change.before, change.after))
        lines = difflib.unified_diff(
            old.splitlines(keepends=True),
            new.splitlines(keepends=True),
            fromfile=f"{change.path} before #{change.id}",
            tofile=f"{change.path} after #{change.id}",
        )
        return "".join(line if line.endswith("\n") else line + "\n" for line in lines)

    # -- going back ---------------------------------------------------------------------------

    def undoable(self, audience: Audience) -> Change | None:
        """The change ``undo`` would take back: the newest not taken back yet."""
        with self._lock:
            self.look()
            undone = {
                r[0]
                for r in self._db.execute("SELECT undoes FROM changes WHERE undoes IS NOT NULL")
            }
            for change in self.changes(audience, limit=1_000):
                if change.undoes is None and change.id not in undone:
                    return change
            return None

    def undo(self, audience: Audience, author: Author, expected: int | None = None) -> Change:
        """Take back the newest change not yet taken back (undos are not undone: restore
        is the way forward again); with ``expected``, only if that is still the one. Refused
        when the file changed since."""
        with held(self.workspace), self._lock:  # as every writer: no entry appended between
            change = self.undoable(audience)
            if change is None:
                raise ToolError("There is nothing to undo.")
            if expected is not None and change.id != expected:
                raise ToolError(
                    f"#{expected} is no longer the newest change: {change.describe(self.tz)} is."
                )
            self._put(change, change.before, author, f"undo of #{change.id}", change.id)
            return change

    def restore(self, audience: Audience, rel: str, at: str, author: Author) -> Change:
        """Put ``rel`` back as it was after change ``at`` (its number, ``#12`` or ``12``), or
        at a moment (ISO date and time, in ``tz`` unless it says)."""
        with held(self.workspace), self._lock:
            change = self._at(audience, rel, at)
            self._put(change, change.after, author, f"restore to #{change.id}")
            return change

    def _at(self, audience: Audience, rel: str, at: str) -> Change:
        if at.lstrip("#").isdigit():
            change = self.change(audience, int(at.lstrip("#")))
            if change is None or change.path != rel:
                raise ToolError(f"There is no change #{at.lstrip('#')} of {rel}.")
            return change
        try:
            when = datetime.fromisoformat(at)
        except ValueError:
            raise ToolError(f"{at!r} is neither a change number nor a date and time.") from None
        when = when if when.tzinfo else when.replace(tzinfo=self.tz)
        for change in self.changes(audience, rel, limit=100_000):
            if change.at <= when:
                return change
        raise ToolError(f"{rel} has no recorded version at {at}.")

    def _put(
        self, change: Change, key: str | None, author: Author, what: str, undoes: int | None = None
    ) -> None:
        path = self.workspace / change.path
        before = _read(path)
        self._catch_up(change.path, before)
        if undoes is not None and digest(before) != change.after:
            raise ToolError(
                f"{change.path} changed after #{change.id}; nothing was undone. "
                "Use restore to pick a version."
            )
        data = self.content(key)
        if data is None:
            path.unlink(missing_ok=True)
        else:
            _make_folders(path.parent, self.workspace)
            write_atomic(path, data, mode=PRIVATE)
        self._add(change.path, before, data, Author(author.who, what), undoes)


def _text(data: bytes | None) -> str:
    return "" if data is None else data.decode("utf-8", errors="replace")


def _make_folders(folder: Path, workspace: Path) -> None:
    """A restored file's folders, private like the rest of the workspace."""
    missing = []
    while not folder.exists() and folder != workspace:
        missing.append(folder)
        folder = folder.parent
    for made in reversed(missing):
        made.mkdir(mode=0o700, exist_ok=True)
        os.chmod(made, 0o700)
        fsync_folder(made.parent)


# Every writer of workspace files calls this around its write, so every way in (tools, the
# page's editor, consolidation) is recorded in one place.
@contextlib.contextmanager
def recording(history: History | None, path: Path) -> Iterator[None]:
    """``History.recording`` when there is a history, else nothing."""
    if history is None:
        yield
        return
    with history.recording(path):
        yield
