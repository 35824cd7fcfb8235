"""Keyword search over the memory files: SQLite FTS5 with BM25, in ``state/index.sqlite``.

The Markdown files are the truth; this index is derived and can be deleted at any time. Files
are cut into overlapping windows of lines. Before each search the index catches up with the
files cheaply (size and mtime first, then a content hash), so edits made by hand are found too.

CJK scripts have no spaces between words, and FTS5's unicode61 tokenizer would take a whole
sentence as one token; so each CJK character is indexed as its own token and a CJK query
becomes a phrase of adjacent characters. Cyrillic, Greek and other spaced scripts need nothing
special (unicode61 folds their case).
"""

from __future__ import annotations

import hashlib
import logging
import re
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

LONG_TERM = "MEMORY.md"
_DAY = re.compile(r"(\d{4}-\d{2}-\d{2})")
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_CJK_CHAR = re.compile(f"([{_CJK}])")
_QUERY_PART = re.compile(f"[{_CJK}]+|[^\\W_{_CJK}]+")
_IS_CJK = re.compile(f"[{_CJK}]")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS files (
    path TEXT PRIMARY KEY, mtime_ns INTEGER, size INTEGER, sha256 TEXT, day TEXT);
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY, path TEXT NOT NULL, start_line INTEGER, end_line INTEGER,
    day TEXT, text TEXT);
CREATE INDEX IF NOT EXISTS chunks_by_path ON chunks(path);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
    body, tokenize = 'unicode61 remove_diacritics 2');
"""


@dataclass(frozen=True, slots=True)
class Hit:
    path: str
    start_line: int
    end_line: int
    score: float
    snippet: str


def _fold(text: str) -> str:
    return _CJK_CHAR.sub(r" \1 ", text)


def build_query(query: str) -> tuple[str, list[str]]:
    """A safe FTS5 expression (every term quoted, OR-ed) and the plain terms for snippets."""
    terms = _QUERY_PART.findall(query)
    parts = []
    for term in terms:
        if _IS_CJK.match(term):
            parts.append('"' + " ".join(term) + '"')
        elif len(term) >= 3:
            parts.append(f'"{term}"*')
        else:
            parts.append(f'"{term}"')
    return " OR ".join(parts), terms


def chunk_lines(text: str, size: int, overlap: int) -> list[tuple[int, int, str]]:
    """Windows of ``size`` lines, each starting ``size - overlap`` after the last (1-based)."""
    lines = text.splitlines()
    if not lines:
        return []
    step = max(1, size - overlap)
    out = []
    start = 0
    while start < len(lines):
        window = lines[start : start + size]
        if any(line.strip() for line in window):
            out.append((start + 1, start + len(window), "\n".join(window)))
        if start + size >= len(lines):
            break
        start += step
    return out


class MemoryIndex:
    def __init__(self, db_path: Path, workspace: Path, chunk_size: int = 30, overlap: int = 6):
        self.db_path = db_path
        self.workspace = workspace
        self.chunk_size = chunk_size
        self.overlap = overlap
        # Searches run in worker threads; one connection, one lock.
        self._lock = threading.Lock()
        self._db = sqlite3.connect(db_path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # -- keeping up with the files ------------------------------------------------------------

    def memory_files(self) -> list[Path]:
        files = []
        long_term = self.workspace / LONG_TERM
        if long_term.is_file():
            files.append(long_term)
        mem_dir = self.workspace / "memory"
        if mem_dir.is_dir():
            files.extend(p for p in mem_dir.rglob("*.md") if p.is_file() and not p.is_symlink())
        return files

    def sync(self) -> int:
        """Bring the index up to date with the files; returns how many files were (re)indexed."""
        with self._lock:
            return self._sync()

    def rebuild(self) -> int:
        with self._lock:
            self._db.executescript("DELETE FROM files; DELETE FROM chunks; DELETE FROM chunks_fts;")
            return self._sync()

    def _sync(self) -> int:
        known = {
            row[0]: (row[1], row[2], row[3])
            for row in self._db.execute("SELECT path, mtime_ns, size, sha256 FROM files")
        }
        changed = 0
        seen: set[str] = set()
        self._db.execute("BEGIN")
        try:
            for path in self.memory_files():
                rel = path.relative_to(self.workspace).as_posix()
                seen.add(rel)
                try:
                    st = path.stat()
                except FileNotFoundError:
                    continue
                old = known.get(rel)
                if old and old[0] == st.st_mtime_ns and old[1] == st.st_size:
                    continue
                data = path.read_bytes()
                digest = hashlib.sha256(data).hexdigest()
                if old and old[2] == digest:
                    self._db.execute(
                        "UPDATE files SET mtime_ns=?, size=? WHERE path=?",
                        (st.st_mtime_ns, st.st_size, rel),
                    )
                    continue
                self._index_file(rel, data.decode("utf-8", errors="replace"), st, digest)
                changed += 1
            for rel in set(known) - seen:
                self._drop(rel)
                changed += 1
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        return changed

    def _drop(self, rel: str) -> None:
        self._db.execute(
            "DELETE FROM chunks_fts WHERE rowid IN (SELECT id FROM chunks WHERE path=?)", (rel,)
        )
        self._db.execute("DELETE FROM chunks WHERE path=?", (rel,))
        self._db.execute("DELETE FROM files WHERE path=?", (rel,))

    def _index_file(self, rel: str, text: str, st, digest: str) -> None:  # type: ignore[no-untyped-def]
        self._drop(rel)
        m = _DAY.search(rel)
        day = m.group(1) if m and rel.startswith("memory/") else ""
        self._db.execute(
            "INSERT INTO files(path, mtime_ns, size, sha256, day) VALUES (?,?,?,?,?)",
            (rel, st.st_mtime_ns, st.st_size, digest, day),
        )
        for start, end, chunk in chunk_lines(text, self.chunk_size, self.overlap):
            cur = self._db.execute(
                "INSERT INTO chunks(path, start_line, end_line, day, text) VALUES (?,?,?,?,?)",
                (rel, start, end, day, chunk),
            )
            self._db.execute(
                "INSERT INTO chunks_fts(rowid, body) VALUES (?, ?)", (cur.lastrowid, _fold(chunk))
            )

    # -- searching ----------------------------------------------------------------------------

    def search(self, query: str, max_results: int = 8, *, include_long_term: bool) -> list[Hit]:
        """BM25-ranked hits, newest daily logs first on ties. MEMORY.md only when allowed."""
        expr, terms = build_query(query)
        if not expr:
            return []
        with self._lock:
            self._sync()
            rows = self._db.execute(
                """
                SELECT c.path, c.start_line, c.end_line, -bm25(chunks_fts) AS score, c.text
                FROM chunks_fts JOIN chunks c ON c.id = chunks_fts.rowid
                WHERE chunks_fts MATCH ? AND (? OR c.path != ?)
                ORDER BY round(bm25(chunks_fts), 6), c.day DESC, c.path, c.start_line
                LIMIT ?
                """,
                (expr, include_long_term, LONG_TERM, max_results),
            ).fetchall()
        return [
            Hit(p, s, e, round(score, 3), _snippet(text, terms)) for p, s, e, score, text in rows
        ]


def _snippet(text: str, terms: list[str], width: int = 280) -> str:
    lines = text.splitlines()
    folded = [t.casefold() for t in terms]
    for i, line in enumerate(lines):
        low = line.casefold()
        if any(t in low for t in folded):
            piece = "\n".join(lines[max(0, i - 1) : i + 3]).strip()
            return piece if len(piece) <= width else piece[:width] + "…"
    head = text.strip()
    return head if len(head) <= width else head[:width] + "…"
