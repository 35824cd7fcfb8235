"""The embedding port of memory search: an ``Embedder`` turns texts into unit-length float32
rows (a dot product is their cosine), its ``model_id`` naming the vectors it makes (the cache's
key). ``embed`` blocks, so callers run it in a worker thread. ``EmbeddingError`` is a failed
provider (search falls back to keywords); ``ModelMissing`` a local model not on this machine."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

from gateway.contract.errors import CorvidError

Vectors = npt.NDArray[np.float32]


class EmbeddingError(CorvidError):
    """An embedding provider failed; the message says why and never holds a key."""


class ModelMissing(EmbeddingError):
    """The local model is not on this machine and could not be fetched (offline, a firewall):
    search is by words until it is there. Fetching is tried again later, with a growing pause."""


class Embedder(Protocol):
    """Turns texts into vectors. ``embed`` returns shape (len(texts), dim), float32, each row
    L2-normalised. It blocks, and must allow calls from two threads at once: the background
    indexer's batch and a search's query."""

    @property
    def model_id(self) -> str: ...

    def embed(self, texts: Sequence[str]) -> Vectors: ...

    def close(self) -> None: ...


def unit_rows(rows: npt.ArrayLike) -> Vectors:
    """``rows`` as float32 with each row scaled to length 1 (a zero row stays zero)."""
    matrix = np.asarray(rows, dtype=np.float32)
    if matrix.ndim != 2:
        raise EmbeddingError(f"expected a matrix of vectors, got shape {matrix.shape}")
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    out: Vectors = np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)
    return out


class LazyEmbedder:
    """An embedder made on first use: the local model's weights are read (or fetched) only
    when something is embedded, in the thread that embeds, never at start-up. A load that
    failed is not tried again for every batch: the error is kept and raised again."""

    def __init__(self, model_id: str, load: Callable[[], Embedder]) -> None:
        self._model_id = model_id
        self._load = load
        self._inner: Embedder | None = None
        self._failed: EmbeddingError | None = None
        self._lock = threading.Lock()

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def loaded(self) -> bool:
        return self._inner is not None

    def embed(self, texts: Sequence[str]) -> Vectors:
        return self._get().embed(texts)

    def _get(self) -> Embedder:
        with self._lock:
            if self._inner is None:
                if self._failed is not None:
                    raise self._failed
                try:
                    self._inner = self._load()
                except EmbeddingError as exc:
                    self._failed = exc
                    raise
                except (OSError, ValueError, ImportError) as exc:
                    self._failed = EmbeddingError(f"the embedding model could not be loaded: {exc}")
                    raise self._failed from exc
            return self._inner

    def close(self) -> None:
        with self._lock:
            if self._inner is not None:
                self._inner.close()
                self._inner = None
