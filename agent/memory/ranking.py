"""How memory search ranks: keyword and vector rankings fused by rank, then lifted or replaced."""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import date
from typing import TYPE_CHECKING

from agent.memory.text import query_terms, share_of_query
from agent.memory.when import DaySpan
from agent.settings import SearchSettings

if TYPE_CHECKING:  # with embeddings off, NumPy is never imported
    from agent.memory.vectors import Vector

EXACT_SHARE = 0.8
RANK_CONSTANT = 20  # K: how much more the first places weigh than the tenth
SPAN_LIFT = 1.0
CHAIN = 3  # replacements of replacements followed at most this far


@dataclass(frozen=True, slots=True)
class Candidate:
    id: int
    text: str
    day: str  # YYYY-MM-DD the note was written, "" when not known
    bm25: float = 0.0  # 0: not a keyword match
    cosine: float | None = None  # None: not embedded yet


@dataclass(frozen=True, slots=True)
class Ranked:
    candidate: Candidate
    score: float
    text: float  # normalised text score, 0..1
    vector: float | None  # the cosine, None when the chunk had no vector
    recency: float  # the decay factor applied, 0..1 (1: no decay)
    share: float = 0.0  # of the query's weight (IDF) the chunk's words hold, 0..1
    newer: int | None = None  # a newer candidate on the same subject
    exact: bool = False  # holds the query's words, or a code or name of it: asked for by name


def recency(day: str, today: date, half_life_days: float) -> float:
    if not day or half_life_days <= 0:
        return 1.0
    try:
        age = (today - date.fromisoformat(day[:10])).days
    except ValueError:
        return 1.0
    return float(0.5 ** (max(0, age) / half_life_days))


def _ranks(values: Mapping[int, float]) -> dict[int, int]:
    """1-based places by value, best first (ties: the lower id)."""
    order = sorted(values, key=lambda i: (-values[i], i))
    return {i: n for n, i in enumerate(order, 1)}


# Fused by rank, never by score: an embedder whose cosines all sit near 0.8 ranks as well as
# one whose cosines spread, and neither side can drown the other.
def score(
    candidates: Sequence[Candidate],
    weights: Mapping[str, float],
    settings: SearchSettings,
    today: date,
    span: DaySpan | None = None,
    tokens: Mapping[str, float] | None = None,
) -> list[Ranked]:
    """Every candidate with its fused score, best first (ties: newer day, then lower id).
    ``tokens``: the query's rare tokens (a code, a number, a name), weighted as ``weights``:
    a candidate holding one is found as an exact match is."""
    best = max((c.bm25 for c in candidates), default=0.0)
    shares = {
        c.id: share_of_query(c.text, weights) if c.bm25 > 0 and best > 0 else 0.0
        for c in candidates
    }
    text_rank = _ranks({c.id: c.bm25 for c in candidates if c.bm25 > 0})
    vector_rank = _ranks({c.id: c.cosine for c in candidates if c.cosine is not None})
    k = RANK_CONSTANT
    w_text, w_vec = settings.text_weight, settings.vector_weight
    if not vector_rank:
        w_vec = 0.0  # keywords only: their order, undiluted
    top = (w_text + w_vec) / (k + 1) or 1.0
    out = []
    for c in candidates:
        share = shares[c.id]
        text = c.bm25 / best * share if share else 0.0
        rt = text_rank.get(c.id)
        rv = vector_rank.get(c.id, rt) if c.cosine is None else vector_rank[c.id]
        fused = (w_text / (k + rt) if rt else 0.0) + (w_vec / (k + rv) if rv else 0.0)
        decay = recency(c.day, today, settings.half_life_days)
        merged = decay * fused / top
        token = bool(rt and tokens) and share_of_query(c.text, tokens or {}) > 0
        exact = rt is not None and (share >= EXACT_SHARE or token)
        # A name, a number or a code that BM25 puts first stays first, whatever the embedder
        # makes of it.
        if rt is not None and exact:  # undecayed: what was asked for by name
            merged = max(merged, (k + 1) / (k + rt))
        if span is not None and c.day and span.holds(c.day):
            merged *= 1 + SPAN_LIFT
        out.append(Ranked(c, merged, text, c.cosine, decay, share, exact=exact))
    out.sort(key=lambda r: (-r.score, _newest_first(r.candidate.day), r.candidate.id))
    return out


def _newest_first(day: str) -> int:
    try:
        return -date.fromisoformat(day[:10]).toordinal()
    except ValueError:
        return 0


def supersede(
    ranked: Sequence[Ranked],
    newer: Mapping[int, Sequence[Ranked]],
    again: Collection[int] = frozenset(),
) -> list[Ranked]:
    """``ranked`` with the notes that replace a candidate (``newer``: by its id, the newer
    notes on its subject, the likeliest first) put just above it, moved up from below or
    brought in, and the candidate marked with the first. A replacement's own replacements go
    above it in turn. A marked candidate of ``again`` (said again by its first replacement)
    then goes below every unmarked one; nothing else moves."""
    out: list[Ranked] = []
    placed: set[int] = set()

    def place(r: Ranked, depth: int) -> None:
        if r.candidate.id in placed:
            return
        placed.add(r.candidate.id)
        later = [n for n in newer.get(r.candidate.id, ()) if n.candidate.id != r.candidate.id]
        if later and depth < CHAIN:
            place(replace(later[0], score=max(later[0].score, r.score)), depth + 1)
            r = replace(r, newer=later[0].candidate.id)
        out.append(r)

    for r in ranked:
        place(r, 0)
    told = [r for r in out if r.newer is not None and r.candidate.id in again]
    return [r for r in out if r.newer is None or r.candidate.id not in again] + told


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
        return max(0.0, float(va @ vb))
    wa, wb = _words(a.candidate, words), _words(b.candidate, words)
    return len(wa & wb) / len(wa | wb) if wa and wb else 0.0


def _words(c: Candidate, cache: dict[int, set[str]]) -> set[str]:
    if c.id not in cache:
        cache[c.id] = set(query_terms(c.text.casefold()))
    return cache[c.id]
