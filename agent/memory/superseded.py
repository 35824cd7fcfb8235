"""Which of a search's first candidates a newer one on the same subject replaces or says again."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agent.memory.hits import StoredChunk
from agent.memory.index import MemoryIndex
from agent.memory.links import Newer, headed, heading_time, replaced_by
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
    within: DaySpan | None,
    at_once: bool,
) -> dict[int, list[Ranked]] | None:
    """The newer notes that the first of ``ranked`` are marked as replaced by (``memory_append``
    with ``replaces``), and theirs in turn: by the replaced note's id. Each is added to
    ``rows``, brought in when it was not a candidate. Asked about a time (``within``: the
    query's, else the search's days), only a note of that time replaces another. None when a
    search at once would have to wait for the index."""
    known = {r.candidate.id: r for r in ranked}
    found: dict[int, list[Ranked]] = {}
    for first in ranked[:REPLACED_DEPTH]:
        old = first
        for _ in range(CHAIN):
            newer = replaced_by(old.candidate.text)
            if newer is None or old.candidate.id in found:
                break
            where = rows[old.candidate.id].path.rsplit("/", 1)[0]
            try:
                chunks = index.chunks_of(
                    f"{where}/{newer.day}.md", audience=audience, wait=not at_once
                )
            except TimeoutError:
                return None
            chunk = _entry(chunks, newer)
            if chunk is None or not _later(chunk, old.candidate):
                break  # a mark pointing nowhere, or back in time, is not followed
            if within is not None and not within.holds(chunk.day):
                break
            new = known.get(chunk.id) or Ranked(
                Candidate(chunk.id, chunk.text, chunk.day), 0.0, 0.0, None, 1.0
            )
            rows.setdefault(chunk.id, chunk)
            found[old.candidate.id] = [new]
            old = new
    return found


def _entry(chunks: list[StoredChunk], newer: Newer) -> StoredChunk | None:
    """The chunk of a log that holds the heading of the entry ``newer`` names."""
    headings: dict[int, StoredChunk] = {}
    for c in chunks:
        for n, line in enumerate(c.text.splitlines()):
            if headed(line, newer.time):
                headings.setdefault(c.start_line + n, c)
    ordered = [headings[line] for line in sorted(headings)]
    return ordered[newer.nth - 1] if newer.nth <= len(ordered) else None


def _later(chunk: StoredChunk, old: Candidate) -> bool:
    """Whether ``chunk``'s entry was written after ``old``'s (in the same minute counts), and
    is another entry."""
    if chunk.id == old.id:
        return False
    if chunk.day[:10] != old.day[:10]:
        return chunk.day[:10] > old.day[:10]
    return (heading_time(chunk.text) or "") >= (heading_time(old.text) or "")
