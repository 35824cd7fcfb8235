"""Whether a newer note is about the same subject as an older one, which it then replaces."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

from agent.memory.ranking import Ranked
from agent.memory.text import idf, query_terms, strip_accents

if TYPE_CHECKING:  # with embeddings off, NumPy is never imported
    from agent.memory.vectors import Vector

# Three signals free of any embedder's scale: nearness counted in places among the memory (not
# a cosine), the rare words shared, and the query's words both hold; the bars are measured
# with bench/memory_year_bench.py (``--subjects`` counts the pairs they join).
NEIGHBOURS = 10
SPREAD = 20
NEAR_WORDS = 0.2
TOLD_AGAIN = 0.5
QUERY_WORDS = 0.3
SAME_WORDS = 0.5
TIE = 1e-6  # a cosine computed apart from the table's product may differ in its last bits


def note_words(*texts: str) -> set[str]:
    """The words of notes as the keyword index folds them; their headings (a log's date and
    an entry's time) left out."""
    body = " ".join(
        line for text in texts for line in text.splitlines() if not line.startswith("#")
    )
    return set(query_terms(strip_accents(body).casefold()))


def reach_places(chunks: int) -> tuple[int, int]:
    """The places asked of ``SemanticIndex.reach``: a note itself is its first nearest."""
    return NEIGHBOURS + 1, max(NEIGHBOURS, chunks // SPREAD) + 1


class Subjects:
    """Same-subject judgements among some notes: their texts by id, those that hold the
    query's words exactly, how many chunks of the memory hold each of their words, and the
    query's words (folded, each with its weight; those no chunk holds left out). With
    vectors, ``near`` is given the notes' vectors and how far their nearest reach (the
    cosines of ``reach_places``) for the notes that ``pairs`` names; left None without."""

    def __init__(
        self,
        texts: Mapping[int, str],
        exact: set[int],
        doc_freqs: Mapping[str, int],
        chunks: int,
        query: Mapping[str, float] | None = None,
    ) -> None:
        self._words = {i: note_words(t) for i, t in texts.items()}
        everything = set().union(*self._words.values()) if self._words else set()
        self._weight = {w: idf(doc_freqs.get(w, 1), chunks) for w in everything}
        self._mass = {i: sum(self._weight[w] for w in ws) for i, ws in self._words.items()}
        self._exact = exact
        self._query = dict(query or {})
        self._vectors: Mapping[int, Vector] = {}
        self._reach: Mapping[int, tuple[float, ...]] | None = None
        self._shared: dict[tuple[int, int], float] = {}

    def near(self, vectors: Mapping[int, Vector], reach: Mapping[int, tuple[float, ...]]) -> None:
        """Judge by meaning too: the notes' vectors, and how far their nearest reach in all
        the memory (the cosines of ``reach_places``) for those that ``pairs`` named."""
        self._vectors, self._reach = vectors, reach

    def shared(self, a: int, b: int) -> float:
        """The weight of the words both notes hold, over the lighter note's weight."""
        known = self._shared.get((a, b))
        if known is None:
            lighter = min(self._mass.get(a, 0.0), self._mass.get(b, 0.0))
            both = self._words[a] & self._words[b] if lighter > 0 else set()
            known = sum(self._weight[w] for w in both) / lighter if both else 0.0
            self._shared[(a, b)] = self._shared[(b, a)] = known
        return known

    def told_again(self, old: int, new: int) -> bool:
        """Whether the newer note says the older again (a copy, a restatement): it holds
        ``TOLD_AGAIN`` of the older's words' weight, so the older adds little beside it and
        gives up its place to it. A short note that a longer one's words cover (a refund after
        the cancelled flight that promised it) is not the longer told again."""
        mass = self._mass.get(old, 0.0)
        return mass > 0 and self.shared(old, new) * min(mass, self._mass[new]) >= TOLD_AGAIN * mass

    def pairs(self, ranked: Sequence[Ranked], allowed: Callable[[Ranked], bool]) -> set[int]:
        """The notes of ``ranked`` in a pair (an older and a newer) whose shared words could
        make them one subject: only theirs need their reach."""
        out: set[int] = set()
        for old, new in _older_newer(ranked, allowed):
            a, b = old.candidate.id, new.candidate.id
            if self._worded(a, b):
                out |= {a, b}
        return out

    def same(self, old: int, new: int) -> bool:
        if self._reach is None:
            return not self._guarded(old, new) and self.shared(old, new) >= SAME_WORDS
        if not self._worded(old, new):
            return False
        if self._within(old, new, 0):
            return True
        return self._widely(old, new) and self._within(old, new, 1)

    def _worded(self, old: int, new: int) -> bool:
        return not self._guarded(old, new) and self.shared(old, new) >= NEAR_WORDS

    def _widely(self, old: int, new: int) -> bool:
        """Whether the words say enough for the wider reach: told again, or the query's."""
        return self.told_again(old, new) or self._asked_alike(old, new)

    def _guarded(self, old: int, new: int) -> bool:
        return old in self._exact and new not in self._exact

    def _within(self, a: int, b: int, place: int) -> bool:
        """Whether each note is among the other's nearest (the ``place``-th reach)."""
        reach = self._reach or {}
        va, vb, ra, rb = self._vectors.get(a), self._vectors.get(b), reach.get(a), reach.get(b)
        if va is None or vb is None or ra is None or rb is None:
            return False
        cosine = float(va @ vb) + TIE
        return cosine >= ra[place] and cosine >= rb[place]

    def _asked_alike(self, a: int, b: int) -> bool:
        """Whether both notes hold the same words of the query, ``QUERY_WORDS`` of its
        weight."""
        total = sum(self._query.values())
        both = self._words[a] & self._words[b]
        held = sum(w for t, w in self._query.items() if t in both)
        return total > 0 and held >= QUERY_WORDS * total


def _older_newer(
    ranked: Sequence[Ranked], allowed: Callable[[Ranked], bool]
) -> Iterator[tuple[Ranked, Ranked]]:
    """Every (older, newer) pair of dated notes of ``ranked`` that ``allowed`` lets the newer
    be part of."""
    for old in ranked:
        day = old.candidate.day[:10]
        if day:
            for new in ranked:
                if new.candidate.day[:10] > day and allowed(new):
                    yield old, new


def newer_notes(
    ranked: Sequence[Ranked], subjects: Subjects, allowed: Callable[[Ranked], bool]
) -> dict[int, list[Ranked]]:
    """For each dated note of ``ranked``, the notes of ``ranked`` written later about the same
    subject that ``allowed`` lets replace it, the likeliest first (most shared words, then
    the newest)."""
    found: dict[int, list[Ranked]] = {}
    for old, new in _older_newer(ranked, allowed):
        if subjects.same(old.candidate.id, new.candidate.id):
            found.setdefault(old.candidate.id, []).append(new)
    for a, later in found.items():
        later.sort(key=lambda n: n.candidate.day, reverse=True)
        later.sort(key=lambda n: subjects.shared(a, n.candidate.id), reverse=True)
    return found
