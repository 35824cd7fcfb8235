"""Keyword search over the memory files: SQLite FTS5 with BM25, in ``state/index.sqlite``."""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from functools import partial
from pathlib import Path

from agent.memory.catchup import CatchUp, LineDates
from agent.memory.hits import ChunkListener, Hit, StoredChunk, TextMatches
from agent.memory.text import is_cjk, query_terms, strip_accents, words_held
from agent.memory.when import DaySpan
from gateway.contract.events import Audience
from gateway.infra.atomic import private_file

log = logging.getLogger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS files (
    path TEXT PRIMARY KEY, mtime_ns INTEGER, size INTEGER, sha256 TEXT, day TEXT);
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY, path TEXT NOT NULL, start_line INTEGER, end_line INTEGER,
    day TEXT, text TEXT, chat TEXT NOT NULL DEFAULT '', sha TEXT NOT NULL DEFAULT '');
CREATE INDEX IF NOT EXISTS chunks_by_path ON chunks(path);
CREATE INDEX IF NOT EXISTS chunks_by_chat ON chunks(chat);
CREATE INDEX IF NOT EXISTS chunks_by_day ON chunks(day);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
    body, tokenize = 'unicode61 remove_diacritics 2');
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_vocab USING fts5vocab(chunks_fts, 'row');
"""
_BY_PATH = "SELECT id, path, start_line, end_line, day, text, chat FROM chunks WHERE path = ?"
SCHEMA_VERSION = 7  # 5: chunks follow the notes; 6: no kind column; 7: every chunk dated


# Chunks up to which a search is answered on the event loop when nothing is to be caught up;
# a bigger index is searched from a worker thread, which the loop need not wait for.
AT_ONCE_CHUNKS = 2_000
DOC_FREQS_KEPT = 4_096  # terms whose chunk counts are kept between changes
COMMON_CHUNKS = 1_000  # a term in more chunks than this (and a tenth of them) is common
NOTE_FREQS_KEPT = 50_000  # words of notes whose counts are kept (``doc_freqs``)


class MemoryIndex:
    def __init__(
        self,
        db_path: Path,
        workspace: Path,
        chunk_size: int = 30,
        overlap: int = 6,
        dates: LineDates | None = None,
    ):
        self.db_path = db_path
        self.workspace = workspace
        self.chunk_size = chunk_size
        self.overlap = overlap
        # Searches run in worker threads; one connection, one lock.
        self._lock = threading.Lock()
        try:
            self._db = self._connect()
        except sqlite3.DatabaseError as exc:
            if not _damaged(exc):
                raise
            self._db = self._start_over(exc)
        self._files = CatchUp(workspace, chunk_size, overlap, dates)
        self._chunk_count = int(self._db.execute("SELECT count(*) FROM chunks").fetchone()[0])
        # How many chunks hold a term (or a prefix), as the index now is: asked of the FTS
        # vocabulary for every term of every search, forgotten whenever a catch-up changes
        # the index.
        self._doc_freq: dict[tuple[str, bool], int] = {}
        self._note_freq: dict[str, int] = {}  # ``doc_freqs``'s, and the chunks they were of
        self._note_freq_at = self._chunk_count
        self._listener: ChunkListener | None = None

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
        """After damage found in use: reconnect to a new, empty index (held lock); the caller
        then catches up with every file. Any other error (busy, closed) is raised as is."""
        if not _damaged(exc):
            raise exc
        with contextlib.suppress(sqlite3.Error):
            self._db.close()
        self._db = self._start_over(exc)
        self._files.forget()
        self._chunk_count = 0
        self._doc_freq.clear()
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
            self._doc_freq.clear()
            changed = self._sync(full=True)
            self._reset_listener()
            return changed

    def _sync(self, full: bool) -> int:
        changed = self._files.run(self._db, full, listening=self._listener is not None)
        if changed:
            self._chunk_count = self._db.execute("SELECT count(*) FROM chunks").fetchone()[0]
            self._doc_freq.clear()
        removed, added = self._files.changes()
        if self._listener is not None and (removed or added):
            self._listener.chunks_changed(removed, added)
        return changed

    # -- searching ----------------------------------------------------------------------------

    def search(
        self,
        query: str,
        max_results: int = 8,
        *,
        audience: Audience,
        span: DaySpan | None = None,
        meaning: bool = False,
    ) -> list[Hit]:
        """BM25-ranked hits, newest first on ties (written within ``span`` only, when given);
        the owner searches everything, a shared chat its own log. Words only (``meaning``)."""
        terms = query_terms(query)
        if not terms:
            return []
        found = self.text_matches(terms, max_results * 3, audience=audience, span=span)
        return _ranked(terms, found, max_results)

    def search_at_once(
        self, query: str, max_results: int = 8, *, audience: Audience, meaning: bool = False
    ) -> list[Hit] | None:
        """``search``, if it can be answered at once on the calling thread (an event loop's):
        nobody else holding the index, no file changed since the last catch-up (so no file is
        read), and an index small enough that its query takes well under a millisecond. None
        when it cannot: ``search`` then, from a worker thread."""
        terms = query_terms(query)
        if not terms:
            return []
        found = self.text_matches_at_once(terms, max_results * 3, audience=audience)
        return None if found is None else _ranked(terms, found, max_results)

    def text_matches(
        self, terms: list[str], limit: int, *, audience: Audience, span: DaySpan | None = None
    ) -> TextMatches:
        """The ``limit`` best keyword matches this audience may see (written within ``span``
        only, when given), after catching up with the files, and how many chunks hold each
        term. An index found damaged on the way is made anew from the files and asked again."""
        if not terms:
            return TextMatches([], {}, self._chunk_count)
        with self._lock:
            try:
                self._sync(full=False)
                rows, doc_freq = self._query(terms, limit, audience, span)
            except sqlite3.DatabaseError as exc:
                self._repaired(exc)
                self._sync(full=True)
                rows, doc_freq = self._query(terms, limit, audience, span)
        return self._found(rows, doc_freq, audience)

    def text_matches_at_once(
        self, terms: list[str], limit: int, *, audience: Audience, span: DaySpan | None = None
    ) -> TextMatches | None:
        """``text_matches``, if it can be answered at once on the calling thread (see
        ``search_at_once``); None when it cannot."""
        if self._chunk_count > AT_ONCE_CHUNKS or not self._lock.acquire(blocking=False):
            return None
        try:
            if not self._files.fresh():
                return None
            try:
                rows, doc_freq = self._query(terms, limit, audience, span)
            except sqlite3.DatabaseError:
                return None  # repaired by the search from the worker thread
        finally:
            self._lock.release()
        return self._found(rows, doc_freq, audience)

    def written_within(self, span: DaySpan, *, audience: Audience) -> list[int]:
        """The chunks this audience may see that were written within ``span``."""
        only = "" if audience.private else "AND chat = ?"
        chat = () if audience.chat is None else (audience.chat,)
        with self._lock:
            rows = self._db.execute(
                f"SELECT id FROM chunks WHERE day != '' AND day BETWEEN ? AND ? {only}",
                (span.first.isoformat(), span.last.isoformat(), *chat),
            ).fetchall()
        return [int(r[0]) for r in rows]

    def doc_freqs(self, words: Iterable[str], *, wait: bool = True) -> dict[str, int] | None:
        """About how many chunks hold each word (None: the index is busy and ``wait`` is
        False), kept until the index has grown or shrunk by a tenth: a lookup costs."""
        if not self._lock.acquire(blocking=wait):
            return None
        try:
            if abs(self._chunk_count - self._note_freq_at) * 10 > self._note_freq_at:
                self._note_freq.clear()
                self._note_freq_at = self._chunk_count
            out = {}
            for word in set(words):
                low = strip_accents(word.lower())
                df = self._note_freq.get(low)
                if df is None:
                    if len(self._note_freq) >= NOTE_FREQS_KEPT:
                        self._note_freq.clear()
                    df = self._note_freq[low] = self._term_freq(low, False)
                out[word] = df
            return out
        finally:
            self._lock.release()

    def _found(
        self, rows: list[StoredChunk], doc_freq: dict[str, int], audience: Audience
    ) -> TextMatches:
        if audience.chat is not None:  # the query already keeps to the chat; this says so twice
            rows = [r for r in rows if r.chat == audience.chat]
        return TextMatches(rows, doc_freq, self._chunk_count)

    def _query(
        self, terms: list[str], limit: int, audience: Audience, span: DaySpan | None = None
    ) -> tuple[list[StoredChunk], dict[str, int]]:
        plan, doc_freq = self._weighted_plan(terms)
        if not any(doc_freq.values()) and all(t.isascii() for t in terms):
            # No chunk holds any of the words, so nothing can match: the index is not asked.
            # Only for ASCII words, which the counts above fold exactly as the tokenizer does.
            return [], doc_freq
        only = "" if audience.private else "AND rowid IN (SELECT id FROM chunks WHERE chat = ?)"
        params: tuple[str, ...] = () if audience.chat is None else (audience.chat,)
        if span is not None:
            only += (
                # "+": checked on each match, not a list of rows FTS5 would search one by one
                " AND +rowid IN (SELECT id FROM chunks WHERE day != '' AND day BETWEEN ? AND ?)"
            )
            params += (span.first.isoformat(), span.last.isoformat())
        found = self._db.execute(
            f"""
            SELECT c.id, c.path, c.start_line, c.end_line, c.day, c.text, c.chat, -f.rank
            FROM (SELECT rowid, rank FROM chunks_fts WHERE chunks_fts MATCH ? {only}
                  ORDER BY rank LIMIT ?) AS f
            JOIN chunks c ON c.id = f.rowid
            """,
            (f"body : ({plan})", *params, limit),
        ).fetchall()
        return [StoredChunk(*r) for r in found], doc_freq

    def chunks_of(self, rel: str, *, audience: Audience, wait: bool = True) -> list[StoredChunk]:
        """File ``rel``'s chunks this audience may see; TimeoutError when busy and not to wait."""
        if not self._lock.acquire(blocking=wait):
            raise TimeoutError("the memory index is busy")
        try:
            found = [StoredChunk(*r) for r in self._db.execute(_BY_PATH, (rel,))]
        finally:
            self._lock.release()
        return [r for r in found if audience.private or r.chat == audience.chat]

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

    def _plan(self, terms: list[str]) -> str:  # the plan alone, for tests
        return self._weighted_plan(terms)[0]

    def _weighted_plan(self, terms: list[str]) -> tuple[str, dict[str, int]]:
        """Quote every term (no FTS syntax from the query survives) and leave out terms in over
        half of all chunks, or a tenth and ``COMMON_CHUNKS``, when rarer ones remain: BM25
        weighs them little beside the rarer, yet matching them scores many of the chunks."""
        parts: list[tuple[str, int]] = []
        for term in terms:
            # FTS5's unicode61 takes a run of CJK characters as one token: each is indexed as
            # its own, and a CJK term is a phrase of adjacent characters.
            if is_cjk(term):
                parts.append(('"' + " ".join(term) + '"', -1))  # phrase: frequency unknown
                continue
            prefix = len(term) >= 3
            df = self._term_freq(strip_accents(term.lower()), prefix)
            parts.append((f'"{term}"*' if prefix else f'"{term}"', df))
        doc_freq = {t: df for t, (_, df) in zip(terms, parts, strict=True)}
        common = min(self._chunk_count / 2, max(self._chunk_count / 10, COMMON_CHUNKS))
        informative = [(p, df) for p, df in parts if df <= common]
        if any(df != 0 for _, df in informative):
            return " OR ".join(p for p, _ in informative), doc_freq
        return " OR ".join(p for p, _ in parts), doc_freq

    def _term_freq(self, low: str, prefix: bool) -> int:
        """How many chunks hold ``low`` (every term starting with it, for a ``prefix``)."""
        key = (low, prefix)
        df = self._doc_freq.get(key)
        if df is None:
            if prefix:
                sql = "SELECT coalesce(sum(doc), 0) FROM chunks_vocab WHERE term >= ? AND term < ?"
                row = self._db.execute(sql, (low, low + "\U0010ffff")).fetchone()
            else:
                row = self._db.execute(
                    "SELECT doc FROM chunks_vocab WHERE term = ?", (low,)
                ).fetchone()
            df = int(row[0]) if row else 0
            if len(self._doc_freq) >= DOC_FREQS_KEPT:
                self._doc_freq.clear()
            self._doc_freq[key] = df
        return df


def _ranked(terms: list[str], found: TextMatches, most: int) -> list[Hit]:
    """The ``most`` best matches as hits: by BM25, then the newest day (undated MEMORY.md
    after the logs), then path and line."""
    rows, words = found.rows, partial(words_held, doc_freq=found.doc_freq, chunks=found.chunks)
    # Stable sorts, last key first.
    rows.sort(key=lambda r: (r.path, r.start_line))
    rows.sort(key=lambda r: r.day, reverse=True)
    rows.sort(key=lambda r: round(r.bm25, 6), reverse=True)
    return [r.hit(round(r.bm25, 3), terms, words(r.text)) for r in rows[:most]]


def _damaged(exc: sqlite3.DatabaseError) -> bool:
    """Whether the error says the file is damaged (made anew from the files) rather than busy,
    closed or misused (raised as is: deleting the index would not help)."""
    name = getattr(exc, "sqlite_errorname", None) or ""  # not set on errors of Python's own
    if name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")):
        return True
    return name == "SQLITE_ERROR" and str(exc).startswith(("no such", "vtable constructor"))
