"""Memory search's vectors: the embedding cache on disk and the table that scores a query."""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from agent.memory.embedding.base import Vectors
from agent.memory.hits import ChunkRow
from gateway.infra.atomic import private_file

log = logging.getLogger(__name__)

Vector = npt.NDArray[np.float32]
_BATCH = 500  # values per IN (...) list, well under SQLite's limit
_SCHEMA = """
CREATE TABLE IF NOT EXISTS vectors (
    model TEXT NOT NULL, sha TEXT NOT NULL, vec BLOB NOT NULL, PRIMARY KEY (model, sha)
) WITHOUT ROWID;
"""


# Apart from index.sqlite, which is thrown away at will: vectors are costly to make, and a
# rebuilt index or a renamed file finds its chunks' vectors here by their text's sha256.
class EmbeddingCache:
    """Vectors by (model, text hash), safe to use from several threads."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        try:
            self._db = self._connect()
        except sqlite3.DatabaseError as exc:
            log.warning("the embedding cache could not be read (%s); starting a new one", exc)
            for end in ("", "-wal", "-shm"):
                Path(f"{path}{end}").unlink(missing_ok=True)
            self._db = self._connect()

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(private_file(self.path), check_same_thread=False, isolation_level=None)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.executescript(_SCHEMA)
        except sqlite3.DatabaseError:
            db.close()
            raise
        return db

    def get(self, model: str, shas: Sequence[str]) -> dict[str, Vector]:
        found: dict[str, Vector] = {}
        with self._lock:
            for i in range(0, len(shas), _BATCH):
                part = shas[i : i + _BATCH]
                rows = self._db.execute(
                    f"SELECT sha, vec FROM vectors WHERE model = ? AND sha IN "
                    f"({','.join('?' * len(part))})",
                    (model, *part),
                )
                for sha, blob in rows:
                    found[sha] = np.frombuffer(blob, dtype=np.float32)
        return found

    def put(self, model: str, items: Iterable[tuple[str, Vector]]) -> None:
        rows = [
            (model, sha, np.ascontiguousarray(v, dtype=np.float32).tobytes()) for sha, v in items
        ]
        with self._lock:
            self._db.execute("BEGIN")
            try:
                self._db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)", rows)
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    def count(self, model: str) -> int:
        with self._lock:
            row = self._db.execute("SELECT count(*) FROM vectors WHERE model = ?", (model,))
            return int(row.fetchone()[0])

    def forget_other_models(self, model: str) -> int:
        """Drop the vectors of every model but ``model`` (after a change of model, once the
        new one has embedded everything); returns how many went."""
        with self._lock:
            gone = self._db.execute("DELETE FROM vectors WHERE model != ?", (model,)).rowcount
        return int(gone)

    def close(self) -> None:
        with self._lock, contextlib.suppress(sqlite3.Error):
            self._db.close()


# float32: NumPy has no fast product for float16 or int8 rows and widens them first, which
# costs more than it saves (bench/vector_bench.py).
class VectorTable:
    """A row per chunk: its id, its chat, and its vector once embedded. Rows of removed chunks
    are marked dead and squeezed out when they pile up; every method takes the one lock."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.dim = 0
        self._n = 0  # rows in use, dead ones included
        self._dead = 0
        self._ids = np.zeros(0, dtype=np.int64)
        self._chat = np.zeros(0, dtype=np.int32)
        self._alive = np.zeros(0, dtype=bool)
        self._filled = np.zeros(0, dtype=bool)
        self._matrix: Vectors = np.zeros((0, 0), dtype=np.float32)
        self._sha: list[str] = []
        self._row_of: dict[int, int] = {}
        self._rows_of_sha: dict[str, list[int]] = {}
        self._codes: dict[str, int] = {"": 0}
        # How near each chunk's nearest chunks are, as ``reach`` found them: (chat, chunk,
        # places) -> cosines; forgotten at any change of the table.
        self._reach: dict[tuple[str | None, int, tuple[int, ...]], tuple[float, ...]] = {}

    # -- keeping up with the index ----------------------------------------------------------

    def reset(self, rows: Sequence[ChunkRow]) -> None:
        """Forget every chunk (vectors too) and take these."""
        with self._lock:
            self._reach.clear()
            self._n = self._dead = 0
            self._sha, self._row_of, self._rows_of_sha = [], {}, {}
            self._add(rows)  # rows past _n are never read before _add sets them

    def change(self, removed: Iterable[int], added: Sequence[ChunkRow]) -> None:
        with self._lock:
            self._reach.clear()
            for chunk in removed:
                row = self._row_of.pop(chunk, None)
                if row is not None:
                    self._alive[row] = False
                    self._rows_of_sha[self._sha[row]].remove(row)
                    self._dead += 1
            self._add(added)
            if self._dead > 1024 and self._dead * 4 > self._n:
                self._squeeze()

    def forget_vectors(self) -> None:
        """Keep the chunks, drop their vectors (another model's vectors mean nothing now)."""
        with self._lock:
            self._reach.clear()
            self._filled[:] = False
            self.dim = 0
            self._matrix = np.zeros((len(self._ids), 0), dtype=np.float32)

    def _add(self, rows: Sequence[ChunkRow]) -> None:
        self._grow(self._n + len(rows))
        for chunk, chat, sha in rows:
            row = self._n
            self._n += 1
            old = self._row_of.get(chunk)
            if old is not None:  # a chunk id used again without its removal being seen
                self._alive[old] = False
                self._rows_of_sha[self._sha[old]].remove(old)
                self._dead += 1
            self._ids[row] = chunk
            self._chat[row] = self._codes.setdefault(chat, len(self._codes))
            self._alive[row] = True
            self._filled[row] = False
            self._sha.append(sha)
            self._row_of[chunk] = row
            rows_of = self._rows_of_sha.setdefault(sha, [])
            if rows_of and self._filled[rows_of[0]]:  # the same text: the same vector
                self._matrix[row] = self._matrix[rows_of[0]]
                self._filled[row] = True
            rows_of.append(row)

    def _grow(self, need: int) -> None:
        size = len(self._ids)
        if need <= size:
            return
        size = max(need, 2 * size, 1024)
        for name in ("_ids", "_chat", "_alive", "_filled"):
            old = getattr(self, name)
            new = np.zeros(size, dtype=old.dtype)
            new[: len(old)] = old
            setattr(self, name, new)
        matrix = np.zeros((size, self.dim), dtype=np.float32)
        matrix[: len(self._matrix)] = self._matrix
        self._matrix = matrix

    def _squeeze(self) -> None:
        keep = np.flatnonzero(self._alive[: self._n])
        n = len(keep)
        for name in ("_ids", "_chat", "_alive", "_filled"):
            array = getattr(self, name)
            array[:n] = array[keep]
        self._matrix[:n] = self._matrix[keep]
        self._sha = [self._sha[i] for i in keep]
        self._n, self._dead = n, 0
        self._row_of = {int(chunk): row for row, chunk in enumerate(self._ids[:n])}
        self._rows_of_sha = {}
        for row, sha in enumerate(self._sha):
            self._rows_of_sha.setdefault(sha, []).append(row)

    # -- vectors ---------------------------------------------------------------------------------

    def missing(self, limit: int) -> list[tuple[str, int]]:
        """Up to ``limit`` texts still without a vector: (sha256, a chunk id that has it)."""
        with self._lock:
            rows = np.flatnonzero(self._alive[: self._n] & ~self._filled[: self._n])
            found: dict[str, int] = {}
            for row in rows:
                found.setdefault(self._sha[row], int(self._ids[row]))
                if len(found) >= limit:
                    break
            return list(found.items())

    def fill(self, vectors: Mapping[str, Vector]) -> None:
        """Give the chunks with these texts their vectors. A vector of another length than
        the ones before is refused (it is another model's)."""
        with self._lock:
            self._reach.clear()
            for sha, vector in vectors.items():
                if not self.dim:
                    self.dim = len(vector)
                    self._matrix = np.zeros((len(self._ids), self.dim), dtype=np.float32)
                if len(vector) != self.dim:
                    raise ValueError(f"a vector of {len(vector)} numbers among ones of {self.dim}")
                for row in self._rows_of_sha.get(sha, ()):
                    self._matrix[row] = vector
                    self._filled[row] = True

    def counts(self) -> tuple[int, int]:
        """(chunks with a vector, chunks)."""
        with self._lock:
            alive = self._alive[: self._n]
            return int(np.count_nonzero(alive & self._filled[: self._n])), int(alive.sum())

    def nearest(
        self, query: Vector, k: int, chat: str | None, among: Sequence[int] | None = None
    ) -> list[tuple[int, float]]:
        """The ``k`` chunks most similar to ``query`` (chunk id, cosine), best first, among the
        chunks of ``chat`` only when one is given (the others are never scored), and of
        ``among`` only when that is given."""
        with self._lock:
            n = self._n
            usable = self._alive[:n] & self._filled[:n]
            if among is not None:
                wanted = np.zeros(n, dtype=bool)
                rows_of = [self._row_of.get(i) for i in among]
                wanted[[r for r in rows_of if r is not None]] = True
                usable &= wanted
            if chat is not None:
                code = self._codes.get(chat)
                if code is None:
                    return []
                usable &= self._chat[:n] == code
            rows = np.flatnonzero(usable)
            if not rows.size or len(query) != self.dim:
                return []
            # The owner may see every chunk: one product over the whole matrix, no copy. A
            # shared chat's rows are taken out first; no other chunk is ever scored.
            whole = chat is None and among is None
            sims = (self._matrix[:n] @ query)[rows] if whole else self._matrix[rows] @ query
            top = np.argpartition(-sims, k - 1)[:k] if k < len(rows) else np.arange(len(rows))
            top = top[np.argsort(-sims[top], kind="stable")]
            return [(int(self._ids[rows[i]]), float(sims[i])) for i in top]

    def reach(
        self, chunks: Sequence[int], places: Sequence[int], chat: str | None
    ) -> dict[int, tuple[float, ...]]:
        """For each of these chunks that has a vector, the cosine of its ``places``-th nearest
        chunks (itself the first), among the chunks of ``chat`` only when one is given: a
        chunk whose cosine with it reaches the n-th is among its n nearest, copies and ties
        included. One product for those not known yet; known until the table changes."""
        key = tuple(places)
        with self._lock:
            out = {c: self._reach[(chat, c, key)] for c in chunks if (chat, c, key) in self._reach}
            wanted = [c for c in chunks if c not in out and c in self._row_of]
            wanted = [c for c in wanted if self._filled[self._row_of[c]]]
            n = self._n
            usable = self._alive[:n] & self._filled[:n]
            if chat is not None:
                usable &= self._chat[:n] == self._codes.get(chat, -1)
            rows = np.flatnonzero(usable)
            if not wanted or not rows.size:
                return out
            queries = self._matrix[[self._row_of[c] for c in wanted]]
            if chat is None:
                # The owner's: the whole matrix at once, dead rows set aside after (taking
                # the live ones out first would copy it).
                sims = self._matrix[:n] @ queries.T
                sims[~usable] = -np.inf
            else:  # a shared chat's rows are taken out first: no other chunk is scored
                sims = self._matrix[rows] @ queries.T
            size = len(sims)
            # The n-th largest of a column is its (size - n)-th smallest; past the chunks
            # there are, the last of them.
            at = [size - min(p, rows.size) for p in places]
            for chunk, column in zip(wanted, sims.T, strict=True):
                found = np.partition(column, sorted(set(at)))
                value = tuple(float(found[i]) for i in at)
                out[chunk] = self._reach[(chat, chunk, key)] = value
            return out

    def vectors(self, chunks: Iterable[int]) -> dict[int, Vector]:
        """The vectors of these chunks that have one (copies)."""
        with self._lock:
            out: dict[int, Vector] = {}
            for chunk in chunks:
                row = self._row_of.get(chunk)
                if row is not None and self._filled[row]:
                    out[chunk] = self._matrix[row].copy()
            return out
