"""Hybrid memory search: the keyword index's hits and the vector table's nearest chunks, over
the same chunks and under the same audience rules, merged and re-ranked (``ranking.py``).

A shared chat's vector search scores only that chat's own chunks (the table is cut to them
before anything is compared), and every candidate is read back through the keyword index's
audience check as well. Until the first chunks have vectors, or when the query cannot be
embedded, the search is the keyword search, hit for hit.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import date

from agent.memory.embedding.base import EmbeddingError
from agent.memory.hits import Hit, StoredChunk
from agent.memory.index import MemoryIndex
from agent.memory.ranking import Candidate, Ranked, diversify, score
from agent.memory.semantic import SemanticIndex
from agent.memory.text import idf, query_terms, snippet
from agent.settings import SearchSettings
from gateway.contract.events import Audience

log = logging.getLogger(__name__)

POOL = 40  # candidates from each side, at least


class HybridSearch:
    def __init__(
        self,
        index: MemoryIndex,
        vectors: SemanticIndex,
        settings: SearchSettings,
        today: Callable[[], date],
    ) -> None:
        self.index = index
        self.vectors = vectors
        self.settings = settings
        self.today = today
        self._failing = ""

    def search(self, query: str, max_results: int = 8, *, audience: Audience) -> list[Hit]:
        terms = query_terms(query)
        if not terms:
            return []
        if not self.vectors.ready:
            return self.index.search(query, max_results, audience=audience)
        pool = max(POOL, 4 * max_results)
        text = self.index.text_matches(terms, pool, audience=audience)
        try:
            wanted = self.vectors.embed_query(query)
        except EmbeddingError as exc:
            if str(exc) != self._failing:
                log.warning("memory search by keywords only: the query was not embedded: %s", exc)
            self._failing = str(exc)
            return self.index.search(query, max_results, audience=audience)
        self._failing = ""
        near = dict(self.vectors.nearest(wanted, pool, None if audience.private else audience.chat))
        rows = {r.id: r for r in text.rows}
        for r in self.index.chunks([i for i in near if i not in rows], audience=audience):
            rows[r.id] = r
        stored = self.vectors.vectors(rows)
        cosine = {i: float(v @ wanted) for i, v in stored.items()}
        candidates = [
            Candidate(r.id, r.text, r.day, r.bm25, cosine.get(r.id)) for r in rows.values()
        ]
        weights = {t: idf(df, text.chunks) for t, df in text.doc_freq.items()}
        ranked = score(candidates, weights, self.settings, self.today())
        picked = diversify(ranked, stored, max_results, self.settings.mmr_lambda)
        return [self._hit(r, rows, terms) for r in picked]

    def _hit(self, r: Ranked, rows: dict[int, StoredChunk], terms: list[str]) -> Hit:
        row = rows[r.candidate.id]
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
        )
