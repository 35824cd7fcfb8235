"""How memory search ranks: fusion by rank, exact matches kept on top, no decay unless asked,
a time the query names, newer notes above the ones they replace, chunks without vectors, and
MMR's variety."""

from __future__ import annotations

from dataclasses import replace
from datetime import date

import numpy as np
import pytest

from agent.memory.ranking import Candidate, Ranked, diversify, recency, score, supersede
from agent.memory.text import idf, rare_tokens, share_of_query
from agent.memory.when import DaySpan
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


def test_an_old_note_keeps_its_full_score_unless_decay_is_asked_for():
    counts = {"where": 8, "does": 10, "anna": 15, "live": 12, "now": 20}
    weights = {term: idf(df, 500) for term, df in counts.items()}
    old = Candidate(1, "Anna lives in Porto", "2025-03-02", bm25=6.0, cosine=0.62)
    new = Candidate(2, "Anna has a new bike", "2026-03-05", bm25=4.0, cosine=0.58)
    ranked = score([old, new], weights, DEFAULTS, TODAY)
    assert [r.candidate.id for r in ranked] == [1, 2]  # a year older, and first in both
    assert ranked[0].score == pytest.approx(1.0) and ranked[0].recency == 1.0
    steep = SearchSettings(half_life_days=30)
    assert [r.candidate.id for r in score([old, new], weights, steep, TODAY)] == [2, 1]


def test_fusion_uses_the_order_of_each_side_never_its_scale():
    weights = {"garden": 2.0, "plan": 1.0}
    spread = [
        Candidate(1, "garden plan", "", bm25=9.0, cosine=0.30),
        Candidate(2, "the garden", "", bm25=5.0, cosine=0.90),
        Candidate(3, "vegetable beds", "", cosine=0.60),
    ]
    # Another embedder: the same order of cosines, squeezed into a narrow band near 1.
    narrow = [replace(c, cosine=0.95 + (c.cosine or 0) / 20) for c in spread]
    for settings in (DEFAULTS, SearchSettings(vector_weight=0.3, text_weight=0.7)):
        ranks = [
            [r.candidate.id for r in score(cs, weights, settings, TODAY)] for cs in (spread, narrow)
        ]
        assert ranks[0] == ranks[1]
    scores = [
        [round(r.score, 9) for r in score(cs, weights, DEFAULTS, TODAY)] for cs in (spread, narrow)
    ]
    assert scores[0] == scores[1]


def test_a_time_the_query_names_lifts_the_notes_written_then():
    weights = {"anna": 2.0, "called": 1.0}
    march = Candidate(1, "Anna called: chickenpox", "2026-03-11", bm25=3.0, cosine=0.50)
    june = Candidate(2, "Anna called: a broken arm", "2025-06-09", bm25=4.0, cosine=0.55)
    assert [r.candidate.id for r in score([march, june], weights, DEFAULTS, TODAY)] == [2, 1]
    asked = DaySpan(date(2026, 3, 1), date(2026, 3, 31))
    ranked = score([march, june], weights, DEFAULTS, TODAY, asked)
    assert [r.candidate.id for r in ranked] == [1, 2]
    # Second on both sides, twice its fused score; the other first on both sides.
    assert (ranked[0].score, ranked[1].score) == pytest.approx((2 * 21 / 22, 1.0))


def _ranked(*days: str) -> list[Ranked]:
    return [
        Ranked(Candidate(i, f"note {i}", day), 1.0 - i / 10, 0.0, None, 1.0)
        for i, day in enumerate(days)
    ]


def test_a_newer_note_on_the_same_subject_moves_just_above_the_one_it_replaces():
    ranked = _ranked("2026-01-10", "2026-02-01", "2026-03-01", "2026-03-05")
    out = supersede(ranked, {0: [ranked[3]]})
    assert [r.candidate.id for r in out] == [3, 0, 1, 2]
    assert out[1].newer == 3 and out[0].newer is None
    assert out[0].score == ranked[0].score  # it takes the place, and the score, of the old
    # A replacement already above: only the mark.
    out = supersede(ranked, {2: [ranked[0]]})
    assert [r.candidate.id for r in out] == [0, 1, 2, 3] and out[2].newer == 0
    # A fact changed twice: the newest first, each older one below what replaced it.
    out = supersede(ranked, {0: [ranked[2]], 2: [ranked[3]]})
    assert [r.candidate.id for r in out] == [3, 2, 0, 1]
    assert (out[1].newer, out[2].newer) == (3, 2)
    # Said again by what replaced it (a copy, a restatement): below all the others.
    out = supersede(ranked, {0: [ranked[2]], 2: [ranked[3]]}, again={0, 1})
    assert [r.candidate.id for r in out] == [3, 2, 1, 0]  # 1 was not replaced: it stays
    assert out[3].newer == 2


def test_a_chunk_without_a_vector_yet_is_ranked_by_its_words():
    weights = {"budget": 2.0, "review": 2.0, "when": 1.0}
    pending = Candidate(1, "budget review on Monday", "", bm25=5.0, cosine=None)
    embedded = Candidate(2, "budget talk", "", bm25=2.5, cosine=0.4)
    ranked = score([embedded, pending], weights, DEFAULTS, TODAY)
    assert ranked[0].candidate is pending and ranked[0].vector is None
    assert ranked[0].score == pytest.approx(1.0)  # its keyword rank stands in for the vector's
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
    assert r.score == pytest.approx(0.7)  # first by meaning, not found by words


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


def test_a_code_number_or_name_few_notes_hold_counts_as_asked_for_by_name():
    counts = {"what": 90, "was": 95, "the": 400, "booking": 7, "QXT7RZ": 1, "Lena": 2, "Tom": 40}
    assert rare_tokens("what was the booking QXT7RZ for", counts, 500) == {"QXT7RZ"}
    assert rare_tokens("Booking for Lena and Tom", {**counts, "Booking": 1}, 500) == {"Lena"}
    assert rare_tokens("the XY99 code", {"XY99": 0}, 500) == set()  # held by nothing
    assert rare_tokens("Booking for Lena", counts, 15) == set()  # 2 of 15: not rare there
    weights = {"booking": 1.6, "reference": 1.0, "what": 1.6, "QXT7RZ": 3.3}
    answer = Candidate(1, "Booked the flight, reference QXT7RZ.", "", bm25=5.0, cosine=0.1)
    near = [Candidate(2 + i, "what booking reference?", "", bm25=4.0, cosine=0.9) for i in range(5)]
    assert share_of_query(answer.text, weights) < 0.8  # no exact match by the words' share
    plain = score([*near, answer], weights, DEFAULTS, TODAY)
    assert plain[0].candidate is not answer
    tokens = {"QXT7RZ": 3.3}
    first, *rest = score([*near, answer], weights, DEFAULTS, TODAY, tokens=tokens)
    assert first.candidate is answer and first.exact  # nothing lacking the code replaces it
    assert not any(r.exact for r in rest)
