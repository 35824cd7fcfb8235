"""Which of a search's first candidates a newer one on the same subject replaces or says again."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agent.memory.hits import StoredChunk
from agent.memory.index import MemoryIndex
from agent.memory.links import headed, replaced_by
from agent.memory.ranking import CHAIN, Candidate, Ranked
from agent.memory.subjects import Subjects, newer_notes, note_words, reach_places
from agent.memory.when import DaySpan
from gateway.contract.events import Audience

if TYPE_CHECKING:  # with embeddings off (no vectors), NumPy is never imported
    from agent.memory.semantic import SemanticIndex
    from agent.memory.vectors import Vector

REPLACED_DEPTH = 15  # first candidates looked over for newer notes on the same subject


@dataclass(frozen=True)
class Replaced:
    """For each replaced note (by id), the notes that replace it, likeliest first; and those
    replaced notes that the first of them says again (they give it their place)."""

    newer: dict[int, list[Ranked]]
    again: frozenset[int]


def replacements(
    index: MemoryIndex,
    vectors: SemanticIndex | None,
    ranked: list[Ranked],
    stored: Mapping[int, Vector],
    chat: str | None,
    asked: DaySpan | None,
    query: Mapping[str, float],
    at_once: bool,
) -> Replaced | None:
    """The newer candidates that replace the first of ``ranked`` (with ``stored``, their
    vectors, searched as ``chat``); ``query``: the query's words (folded) that the memory
    holds, with their weights. Asked about a time, only a note of that time replaces
    another. None when a search at once would have to wait for the index."""
    head = ranked[:REPLACED_DEPTH]

    def allowed(new: Ranked) -> bool:
        return asked is None or asked.holds(new.candidate.day)

    texts = {r.candidate.id: r.candidate.text for r in head}
    counts = index.doc_freqs(note_words(*texts.values()), wait=not at_once)
    if counts is None:
        return None
    exact = {r.candidate.id for r in head if r.exact}
    subjects = Subjects(texts, exact, counts, index.chunk_count, query)
    if vectors is not None and stored:
        paired = sorted(subjects.pairs(head, allowed))
        subjects.near(stored, vectors.reach(paired, reach_places(index.chunk_count), chat))
    newer = newer_notes(head, subjects, allowed)
    again = frozenset(a for a, by in newer.items() if subjects.told_again(a, by[0].candidate.id))
    return Replaced(newer, again)


def marked_newer(
    index: MemoryIndex,
    ranked: list[Ranked],
    rows: dict[int, StoredChunk],
    audience: Audience,
    asked: DaySpan | None,
    at_once: bool,
) -> dict[int, list[Ranked]] | None:
    """The newer notes that the first of ``ranked`` are marked as replaced by (``memory_append``
    with ``replaces``), and theirs in turn: by the replaced note's id. Each is added to
    ``rows``, brought in when it was not a candidate. Asked about a time, only a note of that
    time replaces another. None when a search at once would have to wait for the index."""
    known = {r.candidate.id: r for r in ranked}
    found: dict[int, list[Ranked]] = {}
    for first in ranked[:REPLACED_DEPTH]:
        old = first
        for _ in range(CHAIN):
            pointer = replaced_by(old.candidate.text)
            if pointer is None or old.candidate.id in found:
                break
            day, time = pointer
            where = rows[old.candidate.id].path.rsplit("/", 1)[0]
            try:
                chunks = index.chunks_of(f"{where}/{day}.md", audience=audience, wait=not at_once)
            except TimeoutError:
                return None
            chunks.sort(key=lambda c: c.start_line, reverse=True)  # the same minute: the last
            chunk = next((c for c in chunks if headed(c.text, time)), None)
            if chunk is None:
                break
            if chunk.day[:10] < old.candidate.day[:10] or chunk.id == old.candidate.id:
                break  # a mark pointing back in time is not followed
            if asked is not None and not asked.holds(chunk.day):
                break
            new = known.get(chunk.id) or Ranked(
                Candidate(chunk.id, chunk.text, chunk.day), 0.0, 0.0, None, 1.0
            )
            rows.setdefault(chunk.id, chunk)
            found[old.candidate.id] = [new]
            old = new
    return found
