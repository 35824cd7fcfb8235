"""Which of a search's first candidates a newer note on the same subject replaces: a newer
candidate, or a newer note the query's words did not find ("which school does Tom teach at"
finds "Tom teaches at the Humboldt-Gymnasium"; "Tom started at the Lessing-Gymnasium" holds
neither "school" nor "teach"), brought in from all the memory by the rare words of the first
candidates (``subjects.py`` judges each pair)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, timedelta
from typing import TYPE_CHECKING

from agent.memory.hits import StoredChunk
from agent.memory.index import MemoryIndex
from agent.memory.ranking import Candidate, Ranked
from agent.memory.subjects import Subjects, newer_notes, note_words, reach_places
from agent.memory.text import RARE_TOKEN_CHUNKS
from agent.memory.when import DaySpan
from gateway.contract.events import Audience

if TYPE_CHECKING:  # with embeddings off (no vectors), NumPy is never imported
    from agent.memory.semantic import SemanticIndex
    from agent.memory.vectors import Vector

REPLACED_DEPTH = 15  # first candidates looked over for newer notes on the same subject
BROUGHT_IN = 20  # newer notes brought in from the memory at most
RARE_SHARE = 100  # a word held by at most a hundredth of the chunks brings notes in


@dataclass(frozen=True)
class Found:
    """What one search has found so far: its chunks by id (the notes brought in are added),
    their vectors (likewise), the query's vector, who searches, and the days it keeps to:
    ``span`` given by the caller, ``asked`` named by the query (only a note of that time
    replaces another)."""

    rows: dict[int, StoredChunk]
    stored: dict[int, Vector]
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
    """For each replaced note (by id), the notes that replace it, likeliest first; and those
    replaced notes that the first of them says again (they give it their place)."""

    newer: dict[int, list[Ranked]]
    again: frozenset[int]


def replacements(
    index: MemoryIndex,
    vectors: SemanticIndex | None,
    ranked: list[Ranked],
    found: Found,
    query: Mapping[str, float],
) -> Replaced | None:
    """The newer notes that replace the first of ``ranked``; ``query``: the query's words
    (folded) that the memory holds, with their weights. None when a search at once would
    have to wait for the index."""
    head = ranked[:REPLACED_DEPTH]
    texts = {r.candidate.id: r.candidate.text for r in head}
    counts = index.doc_freqs(note_words(*texts.values()), wait=not found.at_once)
    if counts is None:
        return None
    later = _brought_in(index, vectors, head, counts, found)
    if later is None:
        return None
    if later:
        texts |= {r.candidate.id: r.candidate.text for r in later}
        more = index.doc_freqs(note_words(*(r.candidate.text for r in later)))
        counts = counts | (more or {})
    exact = {r.candidate.id for r in head if r.exact}
    subjects = Subjects(texts, exact, counts, index.chunk_count, query)
    notes = [*head, *later]
    if vectors is not None and found.stored:
        paired = sorted(subjects.pairs(notes, found.allowed))
        reach = vectors.reach(paired, reach_places(index.chunk_count), found.chat)
        subjects.near(found.stored, reach)
    newer = newer_notes(notes, subjects, found.allowed)
    again = frozenset(a for a, by in newer.items() if subjects.told_again(a, by[0].candidate.id))
    return Replaced(newer, again)


def _brought_in(
    index: MemoryIndex,
    vectors: SemanticIndex | None,
    head: list[Ranked],
    counts: Mapping[str, int],
    found: Found,
) -> list[Ranked] | None:
    """Notes written after the oldest of ``head`` that hold its rare words and are not among
    the candidates yet, added to ``found``; None when a search at once would have to wait."""
    days = sorted(r.candidate.day[:10] for r in head if r.candidate.day)
    most = max(RARE_TOKEN_CHUNKS, index.chunk_count // RARE_SHARE)
    rare = sorted({w for w, n in counts.items() if 0 < n <= most})
    if not days or not rare:
        return []
    try:
        after = DaySpan(date.fromisoformat(days[0]) + timedelta(days=1), date.max)
    except ValueError:  # an index's day is always ISO; a damaged one brings nothing in
        return []
    span = after.overlap(found.span)
    span = span.overlap(found.asked) if span is not None else None
    if span is None:
        return []
    matches = index.text_matches_at_once if found.at_once else index.text_matches
    text = matches(rare, BROUGHT_IN, audience=found.audience, span=span)
    if text is None:
        return None
    rows = [r for r in text.rows if r.id not in found.rows]
    found.rows.update((r.id, r) for r in rows)
    if vectors is not None and found.stored:
        found.stored.update(vectors.vectors(r.id for r in rows))
    out = []
    for r in rows:
        vector = found.stored.get(r.id)
        cosine = None if vector is None or found.wanted is None else float(vector @ found.wanted)
        out.append(Ranked(Candidate(r.id, r.text, r.day, 0.0, cosine), 0.0, 0.0, cosine, 1.0))
    return out
