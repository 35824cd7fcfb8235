"""How the search index keeps up with the memory files: which changed, and their chunks anew."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import sqlite3
import stat
import time
from collections.abc import Callable
from pathlib import Path, PurePosixPath

from agent.memory.hits import ChunkRow, text_sha
from agent.memory.text import chunk_entries, fold
from agent.workspace.audience import chat_of

LONG_TERM = "MEMORY.md"
# When each line of a file was written, "" when not known: (path, text, mtime_ns) -> dates.
LineDates = Callable[[str, str, int], list[str]]
FULL_SCAN_SECONDS = 30.0
_DAY = re.compile(r"(\d{4}-\d{2}-\d{2})")


class CatchUp:
    """The index's view of the files: what it saw at the last full scan, and the chunks the
    last catch-up added and removed (for whoever keeps vectors of them)."""

    def __init__(
        self, workspace: Path, chunk_size: int, overlap: int, dates: LineDates | None = None
    ) -> None:
        self.workspace = workspace
        self.dates = dates
        self.chunk_size = chunk_size
        self.overlap = overlap
        self._real = os.path.realpath(workspace)
        # As strings: ``fresh`` stats them before every search.
        self._root = os.fspath(workspace)
        self._memory_dir = os.path.join(self._root, "memory")
        self._folder_mtime = -2  # none seen yet (-1 is a missing folder)
        self._last_full_scan = 0.0
        self._db: sqlite3.Connection | None = None
        self._listening = False
        self._removed: list[int] = []
        self._added: list[ChunkRow] = []
        # The hot files as the last catch-up left the index: (mtime, size), None for missing;
        # None when unknown (nothing caught up yet, or a file the catch-up could not settle).
        self._hot_seen: dict[str, tuple[int, int] | None] | None = None

    def run(self, db: sqlite3.Connection, full: bool, listening: bool) -> int:
        """Catch ``db`` up with the files (every one if ``full``); returns how many files were
        reindexed or dropped. ``listening``: keep the chunks added and removed for ``changes``."""
        if not full and self.fresh():
            return 0
        self._db, self._listening = db, listening
        try:
            return self._sync(full)
        finally:
            self._db = None

    def fresh(self) -> bool:
        """Whether a catch-up now would have nothing to do: no full scan due, the memory
        folder as it was, and each hot file's size and mtime as the last catch-up left them.
        Only stats; the database is not read."""
        seen = self._hot_seen
        if seen is None or time.monotonic() - self._last_full_scan > FULL_SCAN_SECONDS:
            return False
        if self._folder_mtime_now() != self._folder_mtime:
            return False
        for rel, was in seen.items():
            try:
                st = os.stat(os.path.join(self._root, rel), follow_symlinks=False)
            except OSError:
                now = None
            else:
                now = (st.st_mtime_ns, st.st_size)
            if now != was:
                return False
        return True

    def forget(self) -> None:
        """The database was replaced: the next catch-up looks at the files again."""
        self._hot_seen = None
        self._folder_mtime = -2

    @property
    def db(self) -> sqlite3.Connection:
        assert self._db is not None, "the database is lent only for a catch-up (run)"
        return self._db

    def changes(self) -> tuple[list[int], list[ChunkRow]]:
        """The chunk ids the last catch-up removed and the chunks it added; then forgotten."""
        changes = (self._removed, self._added)
        self._removed, self._added = [], []
        return changes

    def memory_files(self) -> dict[str, os.stat_result]:
        """Every memory file with its stat: MEMORY.md and memory/**/*.md, links not followed."""
        found: dict[str, os.stat_result] = {}
        long_term: tuple[int, int] | None = None
        with contextlib.suppress(OSError):
            st = (self.workspace / LONG_TERM).stat(follow_symlinks=False)
            if stat.S_ISREG(st.st_mode):
                found[LONG_TERM] = st
            target = (self.workspace / LONG_TERM).stat()
            long_term = (target.st_dev, target.st_ino)
        stack = [self.workspace / "memory"] if self._folder_mtime_now() != -1 else []
        while stack:
            folder = stack.pop()
            with contextlib.suppress(OSError), os.scandir(folder) as entries:
                for entry in entries:
                    if entry.name.startswith("."):
                        continue
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(Path(entry.path))
                    elif entry.name.endswith(".md") and entry.is_file(follow_symlinks=False):
                        with contextlib.suppress(OSError):
                            st = entry.stat(follow_symlinks=False)
                            rel = Path(entry.path).relative_to(self.workspace).as_posix()
                            # A file with another name in a chat's log folder may be one of
                            # the owner's (a hard link to MEMORY.md is MEMORY.md): it is not
                            # that chat's to search.
                            if (st.st_dev, st.st_ino) == long_term or (
                                st.st_nlink > 1 and _chat_of(rel)
                            ):
                                continue
                            found[rel] = st
        return found

    def _folder_mtime_now(self) -> int:
        """The memory folder's mtime; -1 when there is none (a link to a folder counts as
        none: the index never reads through a link)."""
        try:
            st = os.stat(self._memory_dir, follow_symlinks=False)
        except OSError:
            return -1
        return st.st_mtime_ns if stat.S_ISDIR(st.st_mode) else -1

    def _hot_paths(self) -> list[str]:
        """MEMORY.md and the two newest daily logs, as far as the index knows them."""
        rows = self.db.execute(
            "SELECT path FROM files WHERE path = ? OR path IN "
            "(SELECT path FROM files WHERE day != '' ORDER BY day DESC LIMIT 2)",
            (LONG_TERM,),
        ).fetchall()
        return [rel for (rel,) in rows]

    def _hot_files(self) -> dict[str, os.stat_result]:
        found: dict[str, os.stat_result] = {}
        for rel in self._hot_paths():
            with contextlib.suppress(OSError):
                found[rel] = (self.workspace / rel).stat(follow_symlinks=False)
        return found

    def _sync(self, full: bool) -> int:
        """One catch-up in one transaction; the chunks it added and removed wait in
        ``removed`` and ``added``. The scan is full when asked, when the memory folder
        changed (a file was added, removed or replaced by rename) or every FULL_SCAN_SECONDS;
        in between, only MEMORY.md and the two newest logs are checked."""
        folder, started = self._folder_mtime_now(), time.monotonic()
        complete = (
            full
            or folder != self._folder_mtime
            or started - self._last_full_scan > FULL_SCAN_SECONDS
        )
        current = self.memory_files() if complete else self._hot_files()
        self._removed, self._added = [], []
        self._hot_seen = None
        self.db.execute("BEGIN")
        try:
            changed, settled = self._catch_up(current, complete)
            hot = self._hot_paths()
            self.db.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(sqlite3.Error):  # SQLite may have rolled back already
                self.db.execute("ROLLBACK")
            self._folder_mtime = -2  # nothing of it was kept: the next catch-up is full
            raise
        if complete:
            self._folder_mtime, self._last_full_scan = folder, started
        if settled:
            # As the index now has them: the stats this catch-up compared or indexed (a hot
            # file missing from ``current`` could not be stat'ed).
            self._hot_seen = {rel: _mtime_and_size(current.get(rel)) for rel in hot}
        return changed

    def _catch_up(self, current: dict[str, os.stat_result], complete: bool) -> tuple[int, bool]:
        """How many files were reindexed or dropped, and whether every file in ``current`` is
        now as the index has it (False: one could not be read)."""
        if complete:
            rows = self.db.execute("SELECT path, mtime_ns, size, sha256 FROM files")
        else:
            marks = ",".join("?" * len(current))
            rows = self.db.execute(
                f"SELECT path, mtime_ns, size, sha256 FROM files WHERE path IN ({marks})",
                tuple(current),
            )
        known = {row[0]: (row[1], row[2], row[3]) for row in rows}
        changed, settled = 0, True
        for rel, st in current.items():
            old = known.get(rel)
            if old and old[0] == st.st_mtime_ns and old[1] == st.st_size:
                continue
            try:
                data = self._read(rel)
            except _NotInPlace:  # now a link or no plain file: what it said goes too
                settled = False
                if old:
                    self._drop(rel)
                    changed += 1
                continue
            except OSError:  # gone meanwhile: the next full scan drops it
                settled = False
                continue
            digest = hashlib.sha256(data).hexdigest()
            if old and old[2] == digest:
                self.db.execute(
                    "UPDATE files SET mtime_ns=?, size=? WHERE path=?",
                    (st.st_mtime_ns, st.st_size, rel),
                )
                continue
            self._index_file(rel, data.decode("utf-8", errors="replace"), st, digest)
            changed += 1
        if complete:
            for rel in set(known) - set(current):
                self._drop(rel)
                changed += 1
        return changed, settled

    def _read(self, rel: str) -> bytes:
        """The file's bytes, if it is a plain file at exactly this place: not a link, not
        behind a folder that became a link since the scan, not a FIFO or a device (whose
        read could block every search)."""
        path = os.path.join(self._real, rel)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise _NotInPlace(rel) from None
            raise
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(fd).st_mode) or _opened(fd) not in (None, path):
                raise _NotInPlace(rel)
            return f.read()

    def _drop(self, rel: str) -> None:
        if self._listening:
            ids = self.db.execute("SELECT id FROM chunks WHERE path=?", (rel,)).fetchall()
            self._removed += [i for (i,) in ids]
        self.db.execute(
            "DELETE FROM chunks_fts WHERE rowid IN (SELECT id FROM chunks WHERE path=?)", (rel,)
        )
        self.db.execute("DELETE FROM chunks WHERE path=?", (rel,))
        self.db.execute("DELETE FROM files WHERE path=?", (rel,))

    def _index_file(self, rel: str, text: str, st: os.stat_result, digest: str) -> None:
        self._drop(rel)
        m = _DAY.search(rel)
        day = m.group(1) if m and rel.startswith("memory/") else ""
        self.db.execute(
            "INSERT INTO files(path, mtime_ns, size, sha256, day) VALUES (?,?,?,?,?)",
            (rel, st.st_mtime_ns, st.st_size, digest, day),
        )
        chat = _chat_of(rel)
        # A curated file's notes are dated line by line (a log's by its name).
        lines = self.dates(rel, text, st.st_mtime_ns) if not day and self.dates else []
        for start, end, chunk in chunk_entries(text, self.chunk_size, self.overlap):
            sha = text_sha(chunk)
            written = day or max(lines[start - 1 : end], default="")
            cur = self.db.execute(
                "INSERT INTO chunks(path, start_line, end_line, day, text, chat, sha) "
                "VALUES (?,?,?,?,?,?,?)",
                (rel, start, end, written, chunk, chat, sha),
            )
            if self._listening and cur.lastrowid is not None:
                self._added.append((cur.lastrowid, chat, sha))
            self.db.execute(
                "INSERT INTO chunks_fts(rowid, body) VALUES (?, ?)", (cur.lastrowid, fold(chunk))
            )


class _NotInPlace(OSError):
    """A file the scan saw is a link now, or not a plain file, or not where it was."""


def _mtime_and_size(st: os.stat_result | None) -> tuple[int, int] | None:
    return None if st is None else (st.st_mtime_ns, st.st_size)


def _opened(fd: int) -> str | None:
    """Where the open file ``fd`` is, every link resolved (None where /proc cannot say)."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None


def _chat_of(rel: str) -> str:
    """The shared chat a memory file belongs to, or "" for the owner's."""
    return chat_of(PurePosixPath(rel)) or ""
