"""The times a memory query names, read with a given today: months and seasons (the latest
begun, or ended for "last"), days and weeks ago, dates in several spellings, and words that
only look like dates."""

from __future__ import annotations

from datetime import date

import pytest

from agent.memory.when import DaySpan, age, dates_in

TODAY = date(2026, 11, 30)  # a Monday


def span(first: str, last: str) -> DaySpan:
    return DaySpan(date.fromisoformat(first), date.fromisoformat(last))


@pytest.mark.parametrize(
    ("query", "named", "rest"),
    [
        ("what did Anna say in March", span("2026-03-01", "2026-03-31"), "what did Anna say"),
        ("dinner plans in December", span("2025-12-01", "2025-12-31"), "dinner plans"),
        ("what did I plant in the spring", span("2026-03-01", "2026-05-31"), "what did I plant"),
        ("the garden last summer", span("2026-06-01", "2026-08-31"), "the garden"),
        ("seeds ordered last winter", span("2025-12-01", "2026-02-28"), "seeds ordered"),
        ("what came up three months ago", span("2026-08-01", "2026-08-31"), "what came up"),
        ("the shed two weeks ago", span("2026-11-11", "2026-11-21"), "the shed"),
        ("calls a couple of days ago", span("2026-11-27", "2026-11-29"), "calls"),
        ("what happened last week", span("2026-11-23", "2026-11-29"), "what happened"),
        ("budget last month", span("2026-10-01", "2026-10-31"), "budget"),
        ("taxes last year", span("2025-01-01", "2025-12-31"), "taxes"),
        ("dentist on 14 March", span("2026-03-14", "2026-03-14"), "dentist"),
        ("dentist March 14th, 2025", span("2025-03-14", "2025-03-14"), "dentist"),
        ("notes of 2026-03-14", span("2026-03-14", "2026-03-14"), "notes of"),
        ("the party on the 2nd of December", span("2025-12-02", "2025-12-02"), "the party"),
        ("runs since January", span("2026-01-01", "2026-11-30"), "runs"),
        ("who called last Monday", span("2026-11-23", "2026-11-23"), "who called"),
        ("the day before yesterday", span("2026-11-28", "2026-11-28"), ""),
        ("trips in 2025", span("2025-01-01", "2025-12-31"), "trips"),
        ("walks in May", span("2026-05-01", "2026-05-31"), "walks"),
    ],
)
def test_a_time_in_the_query_is_read_and_taken_out_of_its_words(query, named, rest):
    assert dates_in(query, TODAY) == (named, rest)


@pytest.mark.parametrize(
    "query",
    ["may I ask about the garden", "spring onions for the salad", "did I fall off the bike", "x"],
)
def test_words_that_only_look_like_a_time_are_left_alone(query):
    assert dates_in(query, TODAY) == (None, query)


def test_the_latest_month_that_has_begun_and_last_one_that_has_ended():
    in_march = date(2026, 3, 10)
    assert dates_in("in March", in_march)[0] == span("2026-03-01", "2026-03-31")
    assert dates_in("last March", in_march)[0] == span("2025-03-01", "2025-03-31")
    assert dates_in("this summer", in_march)[0] == span("2025-06-01", "2025-08-31")
    assert dates_in("on 31 February", in_march) == (None, "on 31 February")  # no such day


def test_a_span_holds_days_and_says_itself():
    march = span("2026-03-01", "2026-03-31")
    assert march.holds("2026-03-31") and not march.holds("2026-04-01") and not march.holds("")
    assert str(march) == "from 2026-03-01 to 2026-03-31"
    assert str(span("2026-03-14", "2026-03-14")) == "on 2026-03-14"
    assert str(DaySpan(date.min, date(2026, 5, 31))) == "up to 2026-05-31"


def test_age_in_words():
    assert [age(d, TODAY) for d in ("2026-11-30", "2026-11-29", "2026-11-20")] == [
        "today",
        "yesterday",
        "10 days ago",
    ]
    assert age("2026-10-10", TODAY) == "7 weeks ago"
    assert age("2026-10-01", TODAY) == "2 months ago"
    assert age("2026-03-14", TODAY) == "8 months ago"
    assert age("2023-01-01", TODAY) == "3 years ago"
    assert age("not a day", TODAY) == ""
