"""Embedding the memory in the background, while searches go on by words."""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from agent.memory.embedding.base import Embedder, EmbeddingError
from agent.memory.hits import ChunkRow, TextsOf, text_sha
from agent.memory.vectors import EmbeddingCache, Vector, VectorTable

log = logging.getLogger(__name__)

CACHE_LOOKUP = 2000  # texts looked up in the cache at a time
QUERY_CACHE = 128  # recent queries' vectors kept
FIRST_PAUSE, LONGEST_PAUSE = 30.0, 900.0  # after a failure, seconds before trying again


@dataclass(frozen=True)
class Progress:
    """How far the vectors are: for ``corvid status``, the control page and the reindex bar."""

    model: str
    embedded: int  # chunks with a vector
    total: int  # chunks in the index
    error: str = ""  # the last failure, until a batch succeeds again

    @property
    def done(self) -> bool:
        return self.embedded >= self.total


class SemanticIndex:
    """The vectors of the memory's chunks, kept up to date by a worker thread (``start``)."""

    def __init__(self, embedder: Embedder, cache_path: Path, batch_size: int = 32) -> None:
        self.embedder = embedder
        self.model = embedder.model_id
        self.batch_size = max(1, batch_size)
        self.table = VectorTable()
        self.cache = EmbeddingCache(cache_path)
        self._texts_of: TextsOf | None = None
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._idle = threading.Condition()
        self._busy = False
        self._pruned = False
        self._thread: threading.Thread | None = None
        self._error = ""
        self._queries: OrderedDict[str, Vector] = OrderedDict()
        self._queries_lock = threading.Lock()

    # -- what the keyword index says (ChunkListener) ------------------------------------------

    def chunks_reset(self, rows: Sequence[ChunkRow], texts_of: TextsOf) -> None:
        self._texts_of = texts_of
        self.table.reset(rows)
        self._changed()

    def chunks_changed(self, removed: Sequence[int], added: Sequence[ChunkRow]) -> None:
        self.table.change(removed, added)
        self._changed()

    def _changed(self) -> None:
        with self._idle:
            self._busy = True
        self._wake.set()

    # -- the worker ---------------------------------------------------------------------------

    def start(self, prepare: Callable[[], object] | None = None) -> None:
        """Embed in a worker thread from now on; it first runs ``prepare`` (the keyword
        index's catch-up with the files, so that the first turn finds it done)."""
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, args=(prepare,), name="memory-embedder", daemon=True
            )
            self._thread.start()

    def close(self, timeout: float = 10.0) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():  # in the middle of a long batch: it stops after it
                log.warning("the memory embedder is still busy; not waiting for it")
                return
        self.cache.close()
        self.embedder.close()

    def _run(self, prepare: Callable[[], object] | None) -> None:
        if prepare is not None:
            try:
                prepare()
            except Exception:  # the first search tries again
                log.exception("the memory index could not catch up with the files")
        pause = FIRST_PAUSE
        while not self._stop.is_set():
            self._wake.clear()
            try:
                more = self.step()
                pause = FIRST_PAUSE
            except EmbeddingError as exc:
                self._failed(str(exc), pause)
                self._stop.wait(pause)
                pause = min(LONGEST_PAUSE, pause * 2)
                continue
            except Exception as exc:  # a bug must not end the thread quietly
                log.exception("embedding the memory failed")
                self._failed(f"{type(exc).__name__}: {exc}", pause)
                self._stop.wait(pause)
                continue
            if not more:
                self._settled()
                self._wake.wait()

    def _settled(self) -> None:
        """Every chunk has its vector: drop an earlier model's, then wake whoever waits (so
        that what they find once woken is the settled cache)."""
        if not self._pruned and not self._wake.is_set():
            self._pruned = True
            gone = self.cache.forget_other_models(self.model)
            if gone:
                log.info("dropped %d cached vectors of an earlier embedding model", gone)
        with self._idle:
            # A change that came in since the last look set _wake: not idle yet.
            self._busy = self._wake.is_set()
            if not self._busy:
                self._idle.notify_all()

    def _failed(self, error: str, pause: float) -> None:
        if error != self._error:
            log.warning("memory search embeddings: %s; keyword search until it works", error)
        self._error = error
        log.debug("embedding again in %.0f s", pause)

    def step(self) -> bool:
        """One round: cached vectors for what lacks one, then one batch for the embedder.
        Returns False when every chunk has its vector."""
        missing = self.table.missing(CACHE_LOOKUP)
        if not missing:
            return False
        cached = self.cache.get(self.model, [sha for sha, _ in missing])
        if cached:
            self.table.fill(cached)
        todo = [(sha, chunk) for sha, chunk in missing if sha not in cached][: self.batch_size]
        if todo:
            self._embed(todo)
        return True

    def _embed(self, todo: list[tuple[str, int]]) -> None:
        if self._texts_of is None:
            return
        texts = self._texts_of([chunk for _, chunk in todo])
        # A chunk gone meanwhile, or its id taken by another text (ids start again after a
        # rebuild): its vector would be cached under the wrong text.
        todo = [(sha, c) for sha, c in todo if c in texts and text_sha(texts[c]) == sha]
        if not todo:
            return
        vectors = self.embedder.embed([texts[chunk] for _, chunk in todo])
        if vectors.shape[0] != len(todo):
            raise EmbeddingError(f"{vectors.shape[0]} vectors came back for {len(todo)} texts")
        made = {sha: vectors[i] for i, (sha, _) in enumerate(todo)}
        if self._stop.is_set():
            return
        self.cache.put(self.model, made.items())
        try:
            self.table.fill(made)
        except ValueError as exc:
            raise EmbeddingError(f"the model's vectors changed size: {exc}") from None
        if self._error:
            log.info("memory search embeddings work again")
            self._error = ""

    def wait_idle(self, timeout: float) -> bool:
        """Wait until every chunk has its vector (or ``timeout`` seconds); True if so."""
        with self._idle:
            return self._idle.wait_for(lambda: not self._busy, timeout)

    def catch_up(self, report: Callable[[Progress], None] | None = None) -> Progress:
        """Embed everything missing in this thread (``corvid memory reindex``), reporting
        after each batch; the worker must not be running."""
        assert self._thread is None, "catch_up runs without the worker"
        while self.step():
            if report is not None:
                report(self.progress())
        return self.progress()

    def from_cache(self) -> None:
        """Take the vectors the cache already has (a search from the command line)."""
        missing = self.table.missing(1 << 30)
        cached = self.cache.get(self.model, [sha for sha, _ in missing])
        if cached:
            self.table.fill(cached)

    def progress(self) -> Progress:
        embedded, total = self.table.counts()
        return Progress(self.model, embedded, total, self._error)

    # -- searching ----------------------------------------------------------------------------

    @property
    def ready(self) -> bool:
        """Whether any chunk has a vector (before that, search is keywords only)."""
        return self.table.counts()[0] > 0

    def embed_query(self, query: str) -> Vector:
        """The query's vector; raises EmbeddingError when the embedder fails."""
        with self._queries_lock:
            if query in self._queries:
                self._queries.move_to_end(query)
                return self._queries[query]
        vector = np.asarray(self.embedder.embed([query])[0], dtype=np.float32)
        with self._queries_lock:
            self._queries[query] = vector
            while len(self._queries) > QUERY_CACHE:
                self._queries.popitem(last=False)
        return vector

    def nearest(
        self, query: Vector, k: int, chat: str | None, among: Sequence[int] | None = None
    ) -> list[tuple[int, float]]:
        return self.table.nearest(query, max(1, k), chat, among)

    def reach(
        self, chunks: Sequence[int], places: Sequence[int], chat: str | None
    ) -> dict[int, tuple[float, ...]]:
        """The cosines of each of these chunks' ``places``-th nearest (of ``chat`` only, when
        given)."""
        return self.table.reach(chunks, places, chat)

    def vectors(self, chunks: Iterable[int]) -> dict[int, Vector]:
        return self.table.vectors(chunks)
