"""Memory search as the assistant runs it: keyword and vector hits fused, ranked and dated."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import date
from typing import TYPE_CHECKING

from agent.memory.hits import Hit, StoredChunk
from agent.memory.index import MemoryIndex
from agent.memory.ranking import Candidate, Ranked, diversify, score, supersede
from agent.memory.superseded import marked_newer, replacements
from agent.memory.text import idf, query_terms, rare_tokens, snippet, strip_accents
from agent.memory.when import DaySpan, dates_in
from agent.settings import SearchSettings
from gateway.contract.events import Audience

if TYPE_CHECKING:  # with embeddings off (no vectors), NumPy is never imported
    from agent.memory.semantic import SemanticIndex
    from agent.memory.vectors import Vector

log = logging.getLogger(__name__)

POOL = 40  # candidates from each side, at least


class HybridSearch:
    def __init__(
        self,
        index: MemoryIndex,
        vectors: SemanticIndex | None,
        settings: SearchSettings,
        today: Callable[[], date],
    ) -> None:
        self.index = index
        self.vectors = vectors
        self.settings = settings
        self.today = today
        self._failing = ""

    def search(
        self,
        query: str,
        max_results: int = 8,
        *,
        audience: Audience,
        span: DaySpan | None = None,
        meaning: bool = True,
    ) -> list[Hit]:
        found = self._search(query, max_results, audience, span, meaning, at_once=False)
        assert found is not None  # only a search at once gives up
        return found

    def search_at_once(
        self, query: str, max_results: int = 8, *, audience: Audience, meaning: bool = True
    ) -> list[Hit] | None:
        """``search``, if it can be answered at once on the calling thread (an event loop's):
        by the words alone (no query to embed), from an index that needs no catch-up and no
        waiting for its lock (``MemoryIndex.search_at_once``). None when it cannot."""
        if meaning and self.vectors is not None and self.vectors.ready:
            return None
        return self._search(query, max_results, audience, None, False, at_once=True)

    # long: the steps of one search in order, each a few lines; apart they would hide the order
    def _search(
        self,
        query: str,
        max_results: int,
        audience: Audience,
        span: DaySpan | None,
        meaning: bool,
        at_once: bool,
    ) -> list[Hit] | None:
        asked, words = dates_in(query, self.today())
        if asked is not None and span is not None:
            asked = asked.overlap(span)
        terms = query_terms(words)
        if not terms:
            if at_once and (asked or span):
                return None
            return self._written_within(asked or span, max_results, audience)
        pool = max(POOL, 4 * max_results)
        matches = self.index.text_matches_at_once if at_once else self.index.text_matches
        text = matches(terms, pool, audience=audience, span=span)
        within = matches(terms, pool, audience=audience, span=asked) if asked else text
        if text is None or within is None:
            return None
        rows = {r.id: r for r in (*text.rows, *within.rows)}
        wanted = self._embedded(words) if meaning else None
        stored: dict[int, Vector] = {}
        chat = None if audience.private else audience.chat
        if wanted is not None and self.vectors is not None:
            near = self._near(wanted, pool, chat, span, audience)
            if asked is not None:
                near += self._near(wanted, pool, chat, asked, audience)
            for r in self.index.chunks([i for i, _ in near if i not in rows], audience=audience):
                rows[r.id] = r
            stored = self.vectors.vectors(rows)
        cosine = {i: float(v @ wanted) for i, v in stored.items()} if wanted is not None else {}
        candidates = [
            Candidate(r.id, r.text, r.day, r.bm25, cosine.get(r.id)) for r in rows.values()
        ]
        weights = {t: idf(df, text.chunks) for t, df in text.doc_freq.items()}
        rare = rare_tokens(words, text.doc_freq, text.chunks)
        tokens = {t: w for t, w in weights.items() if t in rare}
        ranked = score(candidates, weights, self.settings, self.today(), asked, tokens)
        held = {_folded(t): w for t, w in weights.items() if text.doc_freq.get(t)}
        replaced = replacements(
            self.index, self.vectors, ranked, stored, chat, asked, held, at_once
        )
        marked = marked_newer(self.index, ranked, rows, audience, asked or span, at_once)
        if replaced is None or marked is None:
            return None
        newer = dict(replaced.newer)
        for old, by in marked.items():  # what the notes say of themselves comes first
            newer[old] = by + [
                n for n in newer.get(old, ()) if n.candidate.id != by[0].candidate.id
            ]
        ordered = supersede(ranked, newer, replaced.again)
        picked = diversify(ordered, stored, max_results, self.settings.mmr_lambda)
        return [self._hit(r, rows, terms) for r in picked]

    def _embedded(self, words: str) -> Vector | None:
        """The query's vector; None when there are no vectors yet or the embedder fails (the
        search is by words then, and the log says why once)."""
        if self.vectors is None or not self.vectors.ready:
            return None
        from agent.memory.embedding.base import EmbeddingError  # loaded with the vectors

        try:
            wanted = self.vectors.embed_query(words)
        except EmbeddingError as exc:
            if str(exc) != self._failing:
                log.warning("memory search by keywords only: the query was not embedded: %s", exc)
            self._failing = str(exc)
            return None
        self._failing = ""
        return wanted

    def _near(
        self, wanted: Vector, k: int, chat: str | None, span: DaySpan | None, audience: Audience
    ) -> list[tuple[int, float]]:
        assert self.vectors is not None
        among = None if span is None else self.index.written_within(span, audience=audience)
        return self.vectors.nearest(wanted, k, chat, among)

    def _written_within(self, span: DaySpan | None, most: int, audience: Audience) -> list[Hit]:
        """A query of nothing but a time ("last week"): the notes written then, newest first.
        Nothing for no time at all."""
        if span is None:
            return []
        ids = self.index.written_within(span, audience=audience)
        rows = self.index.chunks(ids, audience=audience)
        rows.sort(key=lambda r: (r.day, r.path, -r.start_line), reverse=True)
        return [r.hit(0.0, [], 0.0) for r in rows[:most]]

    def _hit(self, r: Ranked, rows: dict[int, StoredChunk], terms: list[str]) -> Hit:
        row = rows[r.candidate.id]
        newer = rows.get(r.newer) if r.newer is not None else None
        return Hit(
            row.path,
            row.start_line,
            row.end_line,
            round(r.score, 3),
            snippet(row.text, terms),
            row.chat,
            text_score=round(r.text, 3),
            vector_score=None if r.vector is None else round(r.vector, 3),
            recency=round(r.recency, 3),
            words=round(r.share, 3),
            written=row.day[:10],
            newer="" if newer is None else f"{newer.path}:{newer.start_line}",
        )


def _folded(term: str) -> str:
    """A query's term as ``note_words`` folds a note's words."""
    return strip_accents(term).casefold()
