"""How hybrid memory search ranks: keyword and vector scores merged, daily logs decayed with
age, exact matches kept on top, and MMR for variety. Pure functions over candidates.

- Text score: BM25 divided by the best BM25 among the candidates, times the share of the
  query's words the chunk holds (weighted by their IDF). The best keyword hit of a query
  with many words does not get full marks for holding one of them ("where does my sister
  live" against "where did the week go").
- Vector score: the cosine, below zero taken as zero. It is not rescaled to the best vector
  hit: when nothing is near in meaning (an order number, a flight code), the nearest
  neighbours stay weak instead of being blown up to 1. A chunk not embedded yet has its text
  score in its place, so it is found as plain keyword search finds it.
- Blend: ``vector_weight * vector + text_weight * text`` (weights scaled to sum to 1), times
  the recency factor ``0.5 ** (age_days / half_life_days)`` of a daily log (1 for MEMORY.md
  and other undated files), so a newer note of the same weight wins over a stale one.
- Exact matches: a chunk holding (nearly) every word of the query, counted by each word's
  IDF (``EXACT_SHARE``), scores at least its text score, undecayed. A name, an order number
  or a code that BM25 puts first therefore stays first, however weak its vector or old its
  day; a question whose words are scattered over many notes is ranked by the blend.
- MMR (when ``mmr_lambda`` < 1; off by default): picks the next hit by ``lambda * score -
  (1 - lambda) * likeness`` to those already picked (cosine of their vectors, or word overlap
  when one has none), so overlapping windows of one passage do not fill the list.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date

import numpy as np

from agent.memory.text import query_terms, share_of_query
from agent.memory.vectors import Vector
from agent.settings import SearchSettings

EXACT_SHARE = 0.8


@dataclass(frozen=True)
class Candidate:
    id: int
    text: str
    day: str  # YYYY-MM-DD of a daily log, "" otherwise
    bm25: float = 0.0  # 0: not a keyword match
    cosine: float | None = None  # None: not embedded yet


@dataclass(frozen=True)
class Ranked:
    candidate: Candidate
    score: float
    text: float  # normalised text score, 0..1
    vector: float | None  # the cosine used, None when the chunk had no vector
    recency: float  # the decay factor applied, 0..1
    share: float = 0.0  # of the query's weight (IDF) the chunk's words hold, 0..1


def recency(day: str, today: date, half_life_days: float) -> float:
    if not day or half_life_days <= 0:
        return 1.0
    try:
        age = (today - date.fromisoformat(day)).days
    except ValueError:
        return 1.0
    return float(0.5 ** (max(0, age) / half_life_days))


def score(
    candidates: Sequence[Candidate],
    weights: Mapping[str, float],
    settings: SearchSettings,
    today: date,
) -> list[Ranked]:
    """Every candidate with its merged score, best first (ties: newer day, then lower id)."""
    best = max((c.bm25 for c in candidates), default=0.0)
    total = settings.vector_weight + settings.text_weight
    w_vec, w_text = settings.vector_weight / total, settings.text_weight / total
    out = []
    for c in candidates:
        share = share_of_query(c.text, weights) if c.bm25 > 0 and best > 0 else 0.0
        text = c.bm25 / best * share if share else 0.0
        vector = max(0.0, c.cosine) if c.cosine is not None else text
        decay = recency(c.day, today, settings.half_life_days)
        merged = decay * (w_vec * vector + w_text * text)
        if share >= EXACT_SHARE:
            merged = max(merged, text)
        out.append(Ranked(c, merged, text, c.cosine, decay, share))
    out.sort(key=lambda r: (-r.score, _newest_first(r.candidate.day), r.candidate.id))
    return out


def _newest_first(day: str) -> int:
    try:
        return -date.fromisoformat(day).toordinal()
    except ValueError:
        return 0


def diversify(
    ranked: Sequence[Ranked], vectors: Mapping[int, Vector], k: int, mmr_lambda: float
) -> list[Ranked]:
    """MMR: ``k`` of ``ranked`` (best first), each next one the best trade of its score for
    its likeness to those already picked. ``mmr_lambda`` 1 keeps the order as it is."""
    if mmr_lambda >= 1 or len(ranked) <= 1:
        return list(ranked[:k])
    left = list(ranked)
    picked: list[Ranked] = []
    words: dict[int, set[str]] = {}
    while left and len(picked) < k:
        best_i, best_value = 0, -math.inf
        for i, r in enumerate(left):
            like = max((_likeness(r, p, vectors, words) for p in picked), default=0.0)
            value = mmr_lambda * r.score - (1 - mmr_lambda) * like
            if value > best_value:
                best_i, best_value = i, value
        picked.append(left.pop(best_i))
    return picked


def _likeness(
    a: Ranked, b: Ranked, vectors: Mapping[int, Vector], words: dict[int, set[str]]
) -> float:
    va, vb = vectors.get(a.candidate.id), vectors.get(b.candidate.id)
    if va is not None and vb is not None:
        return max(0.0, float(np.dot(va, vb)))
    wa, wb = _words(a.candidate, words), _words(b.candidate, words)
    return len(wa & wb) / len(wa | wb) if wa and wb else 0.0


def _words(c: Candidate, cache: dict[int, set[str]]) -> set[str]:
    if c.id not in cache:
        cache[c.id] = set(query_terms(c.text.casefold()))
    return cache[c.id]
