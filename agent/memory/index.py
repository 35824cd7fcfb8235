"""Keyword search over the memory files: SQLite FTS5 with BM25, in ``state/index.sqlite``.

The Markdown files are the truth; this index is derived and can be deleted at any time. Files
are cut at their notes (``chunk_entries``: a log's entries, MEMORY.md's sections and list
items; a long note into overlapping windows of lines). Before each search the index catches up
with the files cheaply (size and mtime first, then a content hash), so hand edits are found.

Whoever keeps vectors of the chunks (``SemanticIndex``) listens: it is told which chunks
each catch-up added and removed, with the sha256 of their text.

CJK scripts have no spaces between words, and FTS5's unicode61 tokenizer would take a whole
sentence as one token; so each CJK character is indexed as its own token and a CJK query
becomes a phrase of adjacent characters. Cyrillic, Greek and other spaced scripts need nothing
special (unicode61 folds their case).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import sqlite3
import stat
import threading
import time
from collections.abc import Sequence
from functools import partial
from pathlib import Path, PurePosixPath

from agent.memory.hits import ChunkListener, ChunkRow, Hit, StoredChunk, TextMatches
from agent.memory.text import chunk_entries, fold, is_cjk, query_terms, strip_accents, words_held
from agent.workspace.audience import chat_of
from gateway.contract.atomic import private_file
from gateway.contract.events import Audience

log = logging.getLogger(__name__)

LONG_TERM = "MEMORY.md"
FULL_SCAN_SECONDS = 30.0
_DAY = re.compile(r"(\d{4}-\d{2}-\d{2})")
_SCHEMA = """
CREATE TABLE IF NOT EXISTS files (
    path TEXT PRIMARY KEY, mtime_ns INTEGER, size INTEGER, sha256 TEXT, day TEXT);
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY, path TEXT NOT NULL, start_line INTEGER, end_line INTEGER,
    day TEXT, text TEXT, chat TEXT NOT NULL DEFAULT '', sha TEXT NOT NULL DEFAULT '');
CREATE INDEX IF NOT EXISTS chunks_by_path ON chunks(path);
CREATE INDEX IF NOT EXISTS chunks_by_chat ON chunks(chat);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
    body, kind, tokenize = 'unicode61 remove_diacritics 2');
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_vocab USING fts5vocab(chunks_fts, 'row');
"""
SCHEMA_VERSION = 5  # 5: chunks follow the notes (chunk_entries)


class MemoryIndex:
    def __init__(self, db_path: Path, workspace: Path, chunk_size: int = 30, overlap: int = 6):
        self.db_path = db_path
        self.workspace = workspace
        self.chunk_size = chunk_size
        self.overlap = overlap
        # Searches run in worker threads; one connection, one lock.
        self._lock = threading.Lock()
        try:
            self._db = self._connect()
        except sqlite3.DatabaseError as exc:
            self._db = self._start_over(exc)
        self._folder_mtime = -2
        self._last_full_scan = 0.0
        self._chunk_count = int(self._db.execute("SELECT count(*) FROM chunks").fetchone()[0])
        self._listener: ChunkListener | None = None
        self._removed: list[int] = []
        self._added: list[ChunkRow] = []

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(
            private_file(self.db_path), check_same_thread=False, isolation_level=None
        )
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            if db.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
                # Derived data: an index from another version is simply rebuilt.
                db.executescript(
                    "DROP TABLE IF EXISTS chunks_vocab; DROP TABLE IF EXISTS chunks_fts; "
                    "DROP TABLE IF EXISTS chunks; DROP TABLE IF EXISTS files;"
                )
                db.executescript(_SCHEMA)
                db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            db.execute("SELECT count(*) FROM chunks").fetchone()
        except sqlite3.DatabaseError:
            db.close()
            raise
        return db

    def _start_over(self, exc: sqlite3.DatabaseError) -> sqlite3.Connection:
        """The index is derived from the Markdown files: a damaged one is deleted and made
        anew (the next search fills it), and that is logged."""
        log.warning("the search index could not be read (%s); rebuilding it from the files", exc)
        for end in ("", "-wal", "-shm"):
            Path(f"{self.db_path}{end}").unlink(missing_ok=True)
        return self._connect()

    def _repaired(self, exc: sqlite3.DatabaseError) -> None:
        """After an error in use: reconnect to a new, empty index (held lock)."""
        with contextlib.suppress(sqlite3.Error):
            self._db.close()
        self._db = self._start_over(exc)
        self._folder_mtime = -2
        self._chunk_count = 0
        self._reset_listener()

    def listen(self, listener: ChunkListener) -> None:
        """Tell ``listener`` every chunk now, and what changes from here on."""
        with self._lock:
            self._listener = listener
            self._reset_listener()

    def _reset_listener(self) -> None:
        if self._listener is not None:
            rows = self._db.execute("SELECT id, chat, sha FROM chunks").fetchall()
            self._listener.chunks_reset(rows, self.chunk_texts)

    def chunk_texts(self, ids: Sequence[int]) -> dict[int, str]:
        """The text of each of these chunks still in the index (for the embedder's thread)."""
        with self._lock:
            return {c.id: c.text for c in self._rows(ids)}

    @property
    def chunk_count(self) -> int:
        return self._chunk_count

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # -- keeping up with the files ------------------------------------------------------------

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
        stack = [self.workspace / "memory"]
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

    def sync(self) -> int:
        """Bring the index fully up to date with the files; returns how many were reindexed."""
        with self._lock:
            return self._sync(full=True)

    def rebuild(self) -> int:
        with self._lock:
            try:
                self._db.executescript(
                    "DELETE FROM files; DELETE FROM chunks; DELETE FROM chunks_fts;"
                )
            except sqlite3.DatabaseError as exc:
                self._repaired(exc)
            changed = self._sync(full=True)
            self._reset_listener()
            return changed

    def _due_for_full_scan(self) -> bool:
        """A full scan stats every file; it runs when the memory folder changed (a file was
        added, removed or replaced by rename) or every FULL_SCAN_SECONDS. In between, only the
        files most likely to change are checked: MEMORY.md and the two newest logs."""
        try:
            folder_mtime = (self.workspace / "memory").stat().st_mtime_ns
        except OSError:
            folder_mtime = -1
        if folder_mtime != self._folder_mtime:
            self._folder_mtime = folder_mtime
            return True
        return time.monotonic() - self._last_full_scan > FULL_SCAN_SECONDS

    def _hot_files(self) -> dict[str, os.stat_result]:
        rows = self._db.execute(
            "SELECT path FROM files WHERE path = ? OR path IN "
            "(SELECT path FROM files WHERE day != '' ORDER BY day DESC LIMIT 2)",
            (LONG_TERM,),
        ).fetchall()
        found: dict[str, os.stat_result] = {}
        for (rel,) in rows:
            with contextlib.suppress(OSError):
                found[rel] = (self.workspace / rel).stat(follow_symlinks=False)
        return found

    def _sync(self, full: bool) -> int:
        if full or self._due_for_full_scan():
            current = self.memory_files()
            self._last_full_scan = time.monotonic()
            complete = True
        else:
            current = self._hot_files()
            complete = False
        if complete:
            rows = self._db.execute("SELECT path, mtime_ns, size, sha256 FROM files")
        else:
            marks = ",".join("?" * len(current))
            rows = self._db.execute(
                f"SELECT path, mtime_ns, size, sha256 FROM files WHERE path IN ({marks})",
                tuple(current),
            )
        known = {row[0]: (row[1], row[2], row[3]) for row in rows}
        changed = 0
        self._removed, self._added = [], []
        self._db.execute("BEGIN")
        try:
            for rel, st in current.items():
                old = known.get(rel)
                if old and old[0] == st.st_mtime_ns and old[1] == st.st_size:
                    continue
                try:
                    data = (self.workspace / rel).read_bytes()
                except OSError:
                    continue
                digest = hashlib.sha256(data).hexdigest()
                if old and old[2] == digest:
                    self._db.execute(
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
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        if changed:
            self._chunk_count = self._db.execute("SELECT count(*) FROM chunks").fetchone()[0]
        if self._listener is not None and (self._removed or self._added):
            self._listener.chunks_changed(self._removed, self._added)
        self._removed, self._added = [], []
        return changed

    def _drop(self, rel: str) -> None:
        if self._listener is not None:
            ids = self._db.execute("SELECT id FROM chunks WHERE path=?", (rel,)).fetchall()
            self._removed += [i for (i,) in ids]
        self._db.execute(
            "DELETE FROM chunks_fts WHERE rowid IN (SELECT id FROM chunks WHERE path=?)", (rel,)
        )
        self._db.execute("DELETE FROM chunks WHERE path=?", (rel,))
        self._db.execute("DELETE FROM files WHERE path=?", (rel,))

    def _index_file(self, rel: str, text: str, st: os.stat_result, digest: str) -> None:
        self._drop(rel)
        m = _DAY.search(rel)
        day = m.group(1) if m and rel.startswith("memory/") else ""
        self._db.execute(
            "INSERT INTO files(path, mtime_ns, size, sha256, day) VALUES (?,?,?,?,?)",
            (rel, st.st_mtime_ns, st.st_size, digest, day),
        )
        chat = _chat_of(rel)
        for start, end, chunk in chunk_entries(text, self.chunk_size, self.overlap):
            sha = hashlib.sha256(chunk.encode()).hexdigest()
            cur = self._db.execute(
                "INSERT INTO chunks(path, start_line, end_line, day, text, chat, sha) "
                "VALUES (?,?,?,?,?,?,?)",
                (rel, start, end, day, chunk, chat, sha),
            )
            if self._listener is not None and cur.lastrowid is not None:
                self._added.append((cur.lastrowid, chat, sha))
            self._db.execute(
                "INSERT INTO chunks_fts(rowid, body, kind) VALUES (?, ?, ?)",
                (cur.lastrowid, fold(chunk), "longterm" if rel == LONG_TERM else "log"),
            )

    # -- searching ----------------------------------------------------------------------------

    def search(self, query: str, max_results: int = 8, *, audience: Audience) -> list[Hit]:
        """BM25-ranked hits, newest daily logs first on ties. The owner searches everything;
        a shared chat only its own log."""
        terms = query_terms(query)
        if not terms:
            return []
        found = self.text_matches(terms, max_results * 3, audience=audience)
        rows, words = found.rows, partial(words_held, doc_freq=found.doc_freq, chunks=found.chunks)
        # Stable sorts, last key first: score, then newest day (undated MEMORY.md after logs).
        rows.sort(key=lambda r: (r.path, r.start_line))
        rows.sort(key=lambda r: r.day, reverse=True)
        rows.sort(key=lambda r: round(r.bm25, 6), reverse=True)
        return [r.hit(round(r.bm25, 3), terms, words(r.text)) for r in rows[:max_results]]

    def text_matches(self, terms: list[str], limit: int, *, audience: Audience) -> TextMatches:
        """The ``limit`` best keyword matches this audience may see, after catching up with
        the files, and how many chunks hold each term."""
        with self._lock:
            try:
                self._sync(full=False)
            except sqlite3.DatabaseError as exc:
                self._repaired(exc)
                self._sync(full=True)
            plan, doc_freq = self._weighted_plan(terms)
            only = "" if audience.private else "AND rowid IN (SELECT id FROM chunks WHERE chat = ?)"
            chat = () if audience.chat is None else (audience.chat,)
            found = self._db.execute(
                f"""
                SELECT c.id, c.path, c.start_line, c.end_line, c.day, c.text, c.chat, -f.rank
                FROM (SELECT rowid, rank FROM chunks_fts WHERE chunks_fts MATCH ? {only}
                      ORDER BY rank LIMIT ?) AS f
                JOIN chunks c ON c.id = f.rowid
                """,
                (f"body : ({plan})", *chat, limit),
            ).fetchall()
        rows = [StoredChunk(*r) for r in found]
        if audience.chat is not None:  # the query already keeps to the chat; this says so twice
            rows = [r for r in rows if r.chat == audience.chat]
        return TextMatches(rows, doc_freq, self._chunk_count)

    def chunks(self, ids: Sequence[int], *, audience: Audience) -> list[StoredChunk]:
        """These chunks, those of them this audience may see."""
        with self._lock:
            rows = self._rows(ids)
        return [r for r in rows if audience.private or r.chat == audience.chat]

    def _rows(self, ids: Sequence[int]) -> list[StoredChunk]:
        out: list[StoredChunk] = []
        for i in range(0, len(ids), 500):
            part = list(ids[i : i + 500])
            out += [
                StoredChunk(*r)
                for r in self._db.execute(
                    "SELECT id, path, start_line, end_line, day, text, chat FROM chunks "
                    f"WHERE id IN ({','.join('?' * len(part))})",
                    part,
                )
            ]
        return out

    def _plan(self, terms: list[str]) -> str:
        return self._weighted_plan(terms)[0]

    def _weighted_plan(self, terms: list[str]) -> tuple[str, dict[str, int]]:
        """Quote every term (no FTS syntax from the query survives) and leave out terms found in
        more than half of all chunks when rarer ones remain: BM25 gives those about zero
        weight, yet matching them means scoring nearly every chunk."""
        parts: list[tuple[str, int]] = []
        for term in terms:
            if is_cjk(term):
                parts.append(('"' + " ".join(term) + '"', -1))  # phrase: frequency unknown
                continue
            low = strip_accents(term.lower())
            if len(term) >= 3:
                df = self._db.execute(
                    "SELECT coalesce(sum(doc), 0) FROM chunks_vocab WHERE term >= ? AND term < ?",
                    (low, low + "\U0010ffff"),
                ).fetchone()[0]
                parts.append((f'"{term}"*', df))
            else:
                row = self._db.execute("SELECT doc FROM chunks_vocab WHERE term = ?", (low,))
                parts.append((f'"{term}"', (row.fetchone() or (0,))[0]))
        doc_freq = {t: df for t, (_, df) in zip(terms, parts, strict=True)}
        informative = [(p, df) for p, df in parts if df <= self._chunk_count / 2]
        if any(df != 0 for _, df in informative):
            return " OR ".join(p for p, _ in informative), doc_freq
        return " OR ".join(p for p, _ in parts), doc_freq


def _chat_of(rel: str) -> str:
    """The shared chat a memory file belongs to, or "" for the owner's."""
    return chat_of(PurePosixPath(rel)) or ""
