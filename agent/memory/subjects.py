"""Whether a newer note is about the same subject as an older one, which it then replaces."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence

from agent.memory.ranking import Ranked
from agent.memory.text import idf, query_terms, strip_accents

# Two signals free of any embedder's scale: among each other's nearest notes (an order, not a
# cosine), and the rare words shared; bars measured with bench/memory_year_bench.py.
NEIGHBOURS = 10
NEAR_WORDS = 0.2
SAME_WORDS = 0.5


def note_words(*texts: str) -> set[str]:
    """The words of notes as the keyword index folds them; their headings (a log's date and
    an entry's time) left out."""
    body = " ".join(
        line for text in texts for line in text.splitlines() if not line.startswith("#")
    )
    return set(query_terms(strip_accents(body).casefold()))


class Subjects:
    """Same-subject judgements among some notes: their texts by id, those that hold the
    query's words exactly, and how many chunks of the memory hold each of their words. The
    nearest notes in meaning of those that ``pairs`` names are given to ``neighbours`` (ids;
    left None without vectors)."""

    def __init__(
        self, texts: Mapping[int, str], exact: set[int], doc_freqs: Mapping[str, int], chunks: int
    ) -> None:
        self._words = {i: note_words(t) for i, t in texts.items()}
        everything = set().union(*self._words.values()) if self._words else set()
        self._weight = {w: idf(doc_freqs.get(w, 1), chunks) for w in everything}
        self._mass = {i: sum(self._weight[w] for w in ws) for i, ws in self._words.items()}
        self._exact = exact
        self.neighbours: Mapping[int, Sequence[int]] | None = None

    def shared(self, a: int, b: int) -> float:
        """The weight of the words both notes hold, over the lighter note's weight."""
        lighter = min(self._mass.get(a, 0.0), self._mass.get(b, 0.0))
        if lighter <= 0:
            return 0.0
        both = self._words[a] & self._words[b]
        return sum(self._weight[w] for w in both) / lighter

    def _worded(self, old: int, new: int, bar: float) -> bool:
        if old in self._exact and new not in self._exact:
            return False
        return self.shared(old, new) >= bar

    def pairs(self, ranked: Sequence[Ranked], allowed: Callable[[Ranked], bool]) -> set[int]:
        """The notes of ``ranked`` in a pair (an older and a newer) whose shared words could
        make them one subject: only theirs need neighbours."""
        out: set[int] = set()
        for old, new in _older_newer(ranked, allowed):
            a, b = old.candidate.id, new.candidate.id
            if self._worded(a, b, NEAR_WORDS):
                out |= {a, b}
        return out

    def same(self, old: int, new: int) -> bool:
        if self.neighbours is None:
            return self._worded(old, new, SAME_WORDS)
        near = new in self.neighbours.get(old, ()) and old in self.neighbours.get(new, ())
        return near and self._worded(old, new, NEAR_WORDS)


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
