"""How hybrid search merges and re-ranks: normalised scores, exact matches kept on top, the
decay of daily logs, chunks without vectors, and MMR's variety."""

from __future__ import annotations

from datetime import date

import numpy as np
import pytest

from agent.memory.ranking import Candidate, diversify, recency, score
from agent.memory.text import idf, share_of_query
from agent.settings import SearchSettings

TODAY = date(2026, 3, 12)
DEFAULTS = SearchSettings()


def test_the_share_of_the_query_counts_words_as_the_keyword_index_matches_them():
    weights = {"flight": 2.0, "LH": 1.0, "lisbon": 1.0}
    assert share_of_query("Flights to Lisbon, LH 1234", weights) == 1.0
    assert share_of_query("flight to lisbon, LHR", weights) == 0.75  # "LH" is a whole word
    assert share_of_query("Lisboa", weights) == 0.0
    assert share_of_query("下周一和王经理开会", {"王经理": 1.0, "预算": 1.0}) == 0.5
    assert share_of_query("Café Zoë", {"cafe": 1.0, "zoe": 1.0}) == 1.0
    assert share_of_query("anything", {}) == 0.0


def test_rare_words_weigh_more_and_none_weighs_less_than_nothing():
    assert idf(1, 1000) > idf(100, 1000) > idf(900, 1000) > 0
    assert idf(-1, 1000) == idf(1, 1000)  # a CJK phrase's count is not known
    assert idf(5, 3) >= 0


def test_recency_halves_every_half_life_and_spares_undated_files():
    assert recency("2026-03-12", TODAY, 30) == 1.0
    assert recency("2026-02-10", TODAY, 30) == pytest.approx(0.5)
    assert recency("2026-03-20", TODAY, 30) == 1.0  # a log dated ahead: no bonus
    assert recency("", TODAY, 30) == 1.0  # MEMORY.md
    assert recency("2020-01-01", TODAY, 0) == 1.0  # decay off


def test_an_exact_token_stays_first_against_near_neighbours_however_old():
    weights = {"LH1234": idf(1, 500)}
    exact = Candidate(1, "Flight LH1234 to Lisbon, seat 12A", "2025-06-01", bm25=9.0, cosine=0.05)
    neighbours = [
        Candidate(10 + i, f"travel plans {i}", "2026-03-11", cosine=0.6 - i / 100)
        for i in range(10)
    ]
    steep = SearchSettings(half_life_days=30)  # the old note is worth almost nothing by age
    ranked = score([*neighbours, exact], weights, steep, TODAY)
    assert ranked[0].candidate is exact
    assert ranked[0].score == pytest.approx(1.0) and ranked[0].recency < 0.01
    assert ranked[0].text == 1.0 and ranked[0].vector == pytest.approx(0.05)


def test_weak_vector_neighbours_are_not_blown_up_to_the_top():
    """Without the exact-match floor (a longer question), a clear keyword hit still beats
    neighbours whose cosine is weak: the vector score is not rescaled to the best one."""
    weights = {"what": 1.0, "was": 1.0, "the": 0.1, "order": 3.0, "number": 2.0, "A77": 6.0}
    hit = Candidate(1, "Order A77 placed", "2026-03-10", bm25=8.0, cosine=0.2)
    weak = [Candidate(2 + i, f"nothing alike {i}", "2026-03-12", cosine=0.3) for i in range(5)]
    ranked = score([*weak, hit], weights, DEFAULTS, TODAY)
    assert share_of_query(hit.text, weights) < 0.8
    assert ranked[0].candidate is hit


def test_a_newer_fact_ranks_above_the_one_it_replaced():
    # In notes, question words are about as rare as names: each weighs like one.
    counts = {"where": 8, "does": 10, "anna": 15, "live": 12, "now": 20}
    weights = {term: idf(df, 500) for term, df in counts.items()}
    old = Candidate(1, "Anna lives in Porto", "2025-11-02", bm25=6.0, cosine=0.62)
    new = Candidate(2, "Anna moved to Lisbon last week", "2026-03-05", bm25=4.0, cosine=0.58)
    ranked = score([old, new], weights, DEFAULTS, TODAY)
    assert [r.candidate.id for r in ranked] == [2, 1]
    assert ranked[0].recency > ranked[1].recency
    off = SearchSettings(half_life_days=0)
    assert [r.candidate.id for r in score([old, new], weights, off, TODAY)] == [1, 2]


def test_a_chunk_without_a_vector_yet_is_ranked_by_its_words():
    weights = {"budget": 2.0, "review": 2.0, "when": 1.0}
    pending = Candidate(1, "budget review on Monday", "", bm25=5.0, cosine=None)
    embedded = Candidate(2, "budget talk", "", bm25=2.5, cosine=0.4)
    ranked = score([embedded, pending], weights, DEFAULTS, TODAY)
    assert ranked[0].candidate is pending and ranked[0].vector is None
    assert ranked[0].score == pytest.approx(0.8)  # its text score stands in for the vector
    assert ranked[0].text == pytest.approx(0.8)  # the best BM25, with 4/5 of the query


def test_the_weights_are_taken_as_shares():
    weights = {"x": 1.0, "y": 1.0, "z": 1.0}
    a = Candidate(1, "x", "", bm25=4.0, cosine=0.1)
    b = Candidate(2, "nothing", "", bm25=0.0, cosine=0.9)
    text_only = SearchSettings(vector_weight=0, text_weight=5)
    assert [r.candidate.id for r in score([a, b], weights, text_only, TODAY)] == [1, 2]
    vector_only = SearchSettings(vector_weight=2, text_weight=0)
    assert [r.candidate.id for r in score([a, b], weights, vector_only, TODAY)] == [2, 1]
    [r] = score([b], weights, DEFAULTS, TODAY)
    assert r.score == pytest.approx(0.63)


def test_mmr_trades_a_near_copy_for_something_else():
    weights = {"plan": 1.0}
    cands = [
        Candidate(1, "the trip plan a", "", cosine=0.9),
        Candidate(2, "the trip plan a again", "", cosine=0.88),
        Candidate(3, "dinner with Ben", "", cosine=0.7),
    ]
    vectors = {1: np.array([1.0, 0.0]), 2: np.array([0.999, 0.045]), 3: np.array([0.0, 1.0])}
    ranked = score(cands, weights, DEFAULTS, TODAY)
    assert [r.candidate.id for r in diversify(ranked, vectors, 3, 1.0)] == [1, 2, 3]
    assert [r.candidate.id for r in diversify(ranked, vectors, 3, 0.7)] == [1, 3, 2]
    assert [r.candidate.id for r in diversify(ranked, {}, 2, 0.5)] == [1, 3]  # by words
