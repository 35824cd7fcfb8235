"""Which of a search's first candidates a newer note on the same subject replaces or says again."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from agent.memory.hits import StoredChunk
from agent.memory.index import MemoryIndex
from agent.memory.ranking import Candidate, Ranked
from agent.memory.subjects import NEIGHBOURS, Subjects, newer_notes, note_words, reach_places
from agent.memory.when import DaySpan
from gateway.contract.events import Audience

if TYPE_CHECKING:  # with embeddings off (no vectors), NumPy is never imported
    from agent.memory.semantic import SemanticIndex
    from agent.memory.vectors import Vector

REPLACED_DEPTH = 15  # first candidates looked over for newer notes on the same subject
NEAR_DEPTH = 1  # first candidates whose nearest newer notes are brought in


@dataclass(frozen=True)
class Found:
    """What one search has found: its chunks by id and their vectors, the query's vector,
    who searches, and the days it keeps to: ``span`` given by the caller, ``asked`` named by
    the query (only a note of that time replaces another)."""

    rows: Mapping[int, StoredChunk]
    stored: Mapping[int, Vector]
    wanted: Vector | None
    audience: Audience
    span: DaySpan | None
    asked: DaySpan | None
    at_once: bool

    @property
    def chat(self) -> str | None:
        return None if self.audience.private else self.audience.chat

    def allowed(self, new: Ranked) -> bool:
        return self.asked is None or self.asked.holds(new.candidate.day)


@dataclass(frozen=True)
class Replaced:
    """For each replaced note (by id), the notes that replace it, likeliest first; those
    replaced notes that the first of them says again (they give it their place); and the
    notes brought in from outside the candidates, with their vectors."""

    newer: dict[int, list[Ranked]]
    again: frozenset[int]
    rows: dict[int, StoredChunk] = field(default_factory=dict)
    stored: dict[int, Vector] = field(default_factory=dict)


def replacements(
    index: MemoryIndex,
    vectors: SemanticIndex | None,
    ranked: list[Ranked],
    found: Found,
    query: Mapping[str, float],
) -> Replaced | None:
    """The newer notes that replace the first of ``ranked``: candidates, or notes near the
    first of them in meaning; ``query``: the query's words (folded) that the memory holds,
    with their weights. None when a search at once would have to wait for the index."""
    head = ranked[:REPLACED_DEPTH]
    rows: dict[int, StoredChunk] = {}
    stored: dict[int, Vector] = {}
    later: list[tuple[Ranked, Ranked]] = []
    if vectors is not None and found.stored:
        later = _brought_in(index, vectors, head, found, rows, stored)
    texts = {r.candidate.id: r.candidate.text for r in (*head, *(new for _, new in later))}
    counts = index.doc_freqs(note_words(*texts.values()), wait=not found.at_once)
    if counts is None:
        return None
    exact = {r.candidate.id for r in head if r.exact}
    subjects = Subjects(texts, exact, counts, index.chunk_count, query)
    # A note brought in is judged against the candidate it is near only, and only when it
    # says something new of it: a later copy of the candidate would only take its place.
    also = [
        (old, new)
        for old, new in later
        if subjects.worded(old.candidate.id, new.candidate.id)
        and not subjects.told_again(old.candidate.id, new.candidate.id)
    ]
    if vectors is not None and found.stored:
        paired = sorted(subjects.pairs(head, found.allowed, also))
        reach = vectors.reach(paired, reach_places(index.chunk_count), found.chat)
        subjects.near({**found.stored, **stored}, reach)
    newer = newer_notes(head, subjects, found.allowed, also)
    again = frozenset(a for a, by in newer.items() if subjects.told_again(a, by[0].candidate.id))
    return Replaced(newer, again, rows, stored)


def _brought_in(
    index: MemoryIndex,
    vectors: SemanticIndex,
    head: list[Ranked],
    found: Found,
    rows: dict[int, StoredChunk],
    stored: dict[int, Vector],
) -> list[tuple[Ranked, Ranked]]:
    """(candidate, note) for each note among the nearest in meaning of the first of
    ``head``, written after it and not among the candidates yet (``rows`` and ``stored``
    are given their chunks and vectors): a newer version that the query missed."""
    first = [r for r in head[:NEAR_DEPTH] if r.candidate.day]
    places = reach_places(index.chunk_count)  # their reach from the same product
    near = vectors.neighbours([r.candidate.id for r in first], NEIGHBOURS, found.chat, places)
    ids = {i for r in first for i, _ in near.get(r.candidate.id, ()) if i not in found.rows}
    if not ids:
        return []
    shown = {r.id: r for r in index.chunks(sorted(ids), audience=found.audience)}
    out = []
    for old in first:
        for i, _ in near.get(old.candidate.id, ()):
            row = shown.get(i)
            if row is None or row.day[:10] <= old.candidate.day[:10]:
                continue
            if found.span is None or found.span.holds(row.day):
                rows[i] = row
                out.append((old, Candidate(i, row.text, row.day)))
    stored.update(vectors.vectors(rows))
    later = []
    for old, new in out:
        vector, wanted = stored.get(new.id), found.wanted
        cosine = None if vector is None or wanted is None else float(vector @ wanted)
        ranked = Ranked(replace(new, cosine=cosine), 0.0, 0.0, cosine, 1.0)
        if found.allowed(ranked):
            later.append((old, ranked))
    return later
