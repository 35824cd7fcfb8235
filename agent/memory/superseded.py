"""Which of a search's first candidates a newer one on the same subject replaces or says again."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agent.memory.index import MemoryIndex
from agent.memory.ranking import Ranked
from agent.memory.subjects import Subjects, newer_notes, note_words, reach_places
from agent.memory.when import DaySpan

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
