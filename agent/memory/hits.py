"""What memory search hands around: a hit, a chunk as indexed, and the listener of chunks."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Protocol

from agent.memory.text import snippet
from agent.memory.when import DaySpan, age
from gateway.contract.events import Audience

ChunkRow = tuple[int, str, str]  # chunk id, its chat ("" for the owner's), text_sha of its text


def text_sha(text: str) -> str:
    """How a chunk's text is known across rebuilds, renames and restarts (the vector cache's
    key): the sha256 of its UTF-8, in hex."""
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class Hit:
    path: str
    start_line: int
    end_line: int
    score: float
    snippet: str
    chat: str = ""  # the shared chat whose log this is; "" for the owner's memory
    # Why it ranked, when vectors are on: the text score (BM25 over the best), the cosine
    # (None: not embedded yet), and the recency factor of a daily log (1: no decay).
    text_score: float | None = None
    vector_score: float | None = None
    recency: float | None = None
    # How much of the query's weight (each word's IDF) the chunk holds, 0..1: unlike the
    # scores above it does not depend on the other hits, so recall can hold it to a bar.
    words: float = 0.0
    written: str = ""  # YYYY-MM-DD the note was written; "" when not known
    newer: str = ""  # "path:line" of a newer note on the same subject; "" when none was found


def dated(hit: Hit, today: date | None) -> str:
    """When a hit's note was written, as the model is told it: "written 2026-03-14, 8 months
    ago" ("written on a day not known" when the history never saw it), and the newer note on
    its subject when one was found."""
    if not hit.written:
        when = "written on a day not known"
    elif today is None:
        when = f"written {hit.written}"
    else:
        when = f"written {hit.written}, {age(hit.written, today)}"
    return when + (f"; a newer note on this: {hit.newer}" if hit.newer else "")


TextsOf = Callable[[Sequence[int]], dict[int, str]]


@dataclass(frozen=True, slots=True)
class StoredChunk:
    id: int
    path: str
    start_line: int
    end_line: int
    day: str
    text: str
    chat: str
    bm25: float = 0.0  # 0: not found by keywords

    def hit(self, score: float, terms: list[str], words: float) -> Hit:
        """This chunk as a keyword search's hit."""
        return Hit(
            self.path,
            self.start_line,
            self.end_line,
            score,
            snippet(self.text, terms),
            self.chat,
            words=words,
            written=self.day[:10],
        )


@dataclass(frozen=True, slots=True)
class TextMatches:
    rows: list[StoredChunk]
    doc_freq: dict[str, int]  # chunks holding each query term (-1: not counted)
    chunks: int  # chunks in the index


class ChunkListener(Protocol):
    """Told every chunk on ``MemoryIndex.listen`` and after a rebuild (with how to read their
    texts), then what each catch-up with the files removed and added."""

    def chunks_reset(self, rows: Sequence[ChunkRow], texts_of: TextsOf) -> None: ...

    def chunks_changed(self, removed: Sequence[int], added: Sequence[ChunkRow]) -> None: ...


class Searcher(Protocol):
    """Memory search as the tools, the control page and ``corvid memory search`` use it: the
    keyword index alone, or hybrid search over it."""

    def search(
        self,
        query: str,
        max_results: int = 8,
        *,
        audience: Audience,
        span: DaySpan | None = None,
        meaning: bool = True,
    ) -> list[Hit]:
        """The hits for ``query`` (written within ``span`` only, when given); ``meaning``
        False searches by the words alone, with no embedding."""
        ...

    def search_at_once(
        self, query: str, max_results: int = 8, *, audience: Audience, meaning: bool = True
    ) -> list[Hit] | None:
        """``search``, if it can be answered on the calling thread without waiting for the
        index or a model; None when it cannot."""
        ...
