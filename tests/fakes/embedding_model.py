"""A small, deterministic embedding model for tests: each word (through an optional table of
meanings, so that chosen paraphrases meet) is hashed into one of ``dim`` buckets, and the
counts are scaled to length 1. Texts that share words or meanings have a high cosine; others
about zero. It keeps count of what it embedded, can be told to fail, and can be held back
until a test lets it go."""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

_WORD = re.compile(r"\w+")


class WordHashEmbedder:
    def __init__(
        self,
        meanings: Mapping[str, str] | None = None,
        dim: int = 256,
        name: str = "test:word-hash",
    ) -> None:
        self.meanings = {k.casefold(): v.casefold() for k, v in (meanings or {}).items()}
        self.dim = dim
        self.name = name
        self.embedded: list[str] = []  # every text, in order
        self.calls = 0
        self.fail: Exception | None = None  # raised by every call while set
        self.gate = threading.Event()  # cleared: each call waits until a test sets it
        self.gate.set()
        self.gated_thread = ""  # when set, only calls from the thread of this name wait
        self.closed = False

    @property
    def model_id(self) -> str:
        return self.name

    def vector(self, text: str) -> npt.NDArray[np.float32]:
        row = np.zeros(self.dim, dtype=np.float32)
        for word in _WORD.findall(text.casefold()):
            meaning = self.meanings.get(word, word)
            digest = hashlib.blake2b(meaning.encode(), digest_size=4).digest()
            row[int.from_bytes(digest, "big") % self.dim] += 1.0
        norm = float(np.linalg.norm(row))
        return row / norm if norm else row

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        held = not self.gated_thread or threading.current_thread().name == self.gated_thread
        if held and not self.gate.wait(timeout=30):
            raise TimeoutError("the test never let the embedder go on")
        self.calls += 1
        if self.fail is not None:
            raise self.fail
        self.embedded.extend(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self.vector(t) for t in texts])

    def close(self) -> None:
        self.closed = True
