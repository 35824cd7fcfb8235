"""The time a memory query names ("in March", "two weeks ago"), as a span of days. English only."""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import date, timedelta
from functools import cache

MONTHS = {m.lower(): i for i, m in enumerate(calendar.month_name) if m}
MONTHS |= {m.lower(): i for i, m in enumerate(calendar.month_abbr) if m}
MONTHS["sept"] = 9
SEASONS = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}  # first month
NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
    "a couple of": 2, "couple of": 2, "a few": 3, "few": 3,
}  # fmt: skip
WEEKDAYS = {d.lower(): i for i, d in enumerate(calendar.day_name)}


@dataclass(frozen=True, slots=True)
class DaySpan:
    first: date
    last: date

    def holds(self, day: str) -> bool:
        """Whether an ISO day ("2026-03-14", or a longer stamp that starts with one) is in it."""
        return self.first.isoformat() <= day[:10] <= self.last.isoformat()

    def overlap(self, other: DaySpan | None) -> DaySpan | None:
        """The days both spans hold (this one when ``other`` is None); None when none."""
        if other is None:
            return self
        first, last = max(self.first, other.first), min(self.last, other.last)
        return DaySpan(first, last) if first <= last else None

    def __str__(self) -> str:
        if self.first == self.last:
            return f"on {self.first.isoformat()}"
        if self.first == date.min:
            return f"up to {self.last.isoformat()}"
        if self.last == date.max:
            return f"from {self.first.isoformat()} on"
        return f"from {self.first.isoformat()} to {self.last.isoformat()}"


def _month_span(year: int, month: int) -> DaySpan:
    return DaySpan(date(year, month, 1), date(year, month, calendar.monthrange(year, month)[1]))


def _months(year: int, month: int, count: int) -> DaySpan:
    """``count`` calendar months from ``month`` of ``year``."""
    end_month = month + count - 1
    end_year, end_month = year + (end_month - 1) // 12, (end_month - 1) % 12 + 1
    return DaySpan(date(year, month, 1), _month_span(end_year, end_month).last)


def _latest_month(month: int, today: date, ended: bool) -> DaySpan:
    """The latest ``month`` that has begun by today (or ended, with ``ended``)."""
    year = (
        today.year
        if (month < today.month or (month == today.month and not ended))
        else (today.year - 1)
    )
    return _month_span(year, month)


def _latest_season(first_month: int, today: date, ended: bool) -> DaySpan:
    year = today.year
    while True:
        span = _months(year, first_month, 3)
        if (span.last < today) if ended else (span.first <= today):
            return span
        year -= 1


def _number(word: str) -> int:
    return int(word) if word.isdigit() else NUMBERS[word.lower()]


_NUM = r"(\d{1,3}|a couple of|couple of|a few|few|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"  # noqa: E501
_MONTH = r"(" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_SEASON = r"(spring|summer|autumn|fall|winter)"


@cache
def _patterns() -> list[tuple[str, re.Pattern[str]]]:
    """(what it names, the pattern), longest expressions first. Compiled when first used."""
    p = [
        ("iso", r"(\d{4})-(\d{2})-(\d{2})"),
        ("ago", _NUM + r"\s+(day|week|month|year)s?\s+ago"),
        ("day_month", r"(?:on\s+)?(?:the\s+)?(\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?" + _MONTH
         + r"(?:,?\s+(\d{4}))?"),
        ("month_day", r"(?:on\s+)?" + _MONTH + r"\s+(\d{1,2})(?:st|nd|rd|th)?(?:,?\s+(\d{4}))?"),
        ("rel_unit", r"(last|this|previous|past)\s+(week|month|year)"),
        ("rel_season", r"(?:in\s+)?(last|this|previous|past)\s+" + _SEASON),
        ("rel_month", r"(?:in\s+)?(last|this)\s+" + _MONTH),
        ("since", r"(since|after|from)\s+(?:the\s+)?(?:" + _MONTH + r"|" + _SEASON + r")"),
        ("before", r"(before|until)\s+(?:the\s+)?(?:" + _MONTH + r"|" + _SEASON + r")"),
        ("season", r"(?:(?:in|during)\s+(?:the\s+)?" + _SEASON + r"(?:\s+(?:of\s+)?(\d{4}))?)"),
        ("season_year", _SEASON + r"\s+(?:of\s+)?(\d{4})"),
        ("month", r"(?:(?:in|during|back in|early in|late in)\s+)" + _MONTH
         + r"(?:\s+(\d{4}))?"),
        ("month_year", _MONTH + r"\s+(\d{4})"),
        ("year", r"(?:in|during)\s+(\d{4})"),
        ("weekday", r"(?:last|on)\s+(" + "|".join(WEEKDAYS) + r")"),
        ("day_word", r"(the day before yesterday|yesterday|today)"),
    ]  # fmt: skip
    return [(name, re.compile(r"\b" + rx + r"\b", re.IGNORECASE)) for name, rx in p]


def dates_in(query: str, today: date) -> tuple[DaySpan | None, str]:
    """The span of days ``query`` names (None: none), and the query without its words."""
    for name, pattern in _patterns():
        for m in pattern.finditer(query):
            try:
                span = _span(name, m, today)
            except (ValueError, KeyError):
                continue  # 31 February, an unknown word: not a date after all
            if span is not None:
                rest = (query[: m.start()] + " " + query[m.end() :]).strip()
                return span, re.sub(r"\s+", " ", rest)
    return None, query


# long: one branch per kind of expression, each a line or two; apart they would say less
def _span(name: str, m: re.Match[str], today: date) -> DaySpan | None:
    if re.search(r"\bmay\b", m.group(0)) and name not in ("ago", "iso"):
        return None  # "may" the verb, not May the month (written with its capital)
    g = [x.lower() if x else x for x in m.groups()]
    if name == "iso":
        day = date(int(g[0]), int(g[1]), int(g[2]))
        return DaySpan(day, day)
    if name == "ago":
        n, unit = _number(g[0]), g[1]
        if unit == "day":
            day = today - timedelta(days=n)
            return DaySpan(day - timedelta(days=1), min(today, day + timedelta(days=1)))
        if unit == "week":
            day, wide = today - timedelta(weeks=n), timedelta(days=3 + n)
            return DaySpan(day - wide, min(today, day + wide))
        if unit == "month":
            month = today.month - n
            return _month_span(today.year + (month - 1) // 12, (month - 1) % 12 + 1)
        return _month_span(today.year - n, today.month)
    if name in ("day_month", "month_day"):
        dom, named, year = (g[0], g[1], g[2]) if name == "day_month" else (g[1], g[0], g[2])
        mo, d = MONTHS[named], int(dom)
        if year:
            day = date(int(year), mo, d)
        else:
            day = date(today.year, mo, d)
            day = day if day <= today else date(today.year - 1, mo, d)
        return DaySpan(day, day)
    if name == "rel_unit":
        return _relative(g[0], g[1], today)
    if name == "rel_season":
        return _latest_season(SEASONS[g[1]], today, ended=g[0] != "this")
    if name == "rel_month":
        return _latest_month(MONTHS[g[1]], today, ended=g[0] == "last")
    if name in ("since", "before"):
        start = (
            _latest_month(MONTHS[g[1]], today, ended=False)
            if g[1]
            else _latest_season(SEASONS[g[2]], today, ended=False)
        )
        if name == "since":
            return DaySpan(start.first if g[0] != "after" else start.last, today)
        return DaySpan(date.min, start.first - timedelta(days=1))
    if name in ("season", "season_year"):
        if g[1]:
            return _months(int(g[1]), SEASONS[g[0]], 3)
        return _latest_season(SEASONS[g[0]], today, ended=False)
    if name in ("month", "month_year"):
        if g[1]:
            return _month_span(int(g[1]), MONTHS[g[0]])
        return _latest_month(MONTHS[g[0]], today, ended=False)
    if name == "year":
        return DaySpan(date(int(g[0]), 1, 1), date(int(g[0]), 12, 31))
    if name == "weekday":
        back = (today.weekday() - WEEKDAYS[g[0]] - 1) % 7 + 1
        day = today - timedelta(days=back)
        return DaySpan(day, day)
    back = {"today": 0, "yesterday": 1, "the day before yesterday": 2}[g[0]]
    day = today - timedelta(days=back)
    return DaySpan(day, day)


def _relative(which: str, unit: str, today: date) -> DaySpan:
    """Last, this or the past week, month or year."""
    if unit == "week":
        monday = today - timedelta(days=today.weekday())
        if which == "this":
            return DaySpan(monday, today)
        if which == "past":
            return DaySpan(today - timedelta(days=7), today)
        return DaySpan(monday - timedelta(days=7), monday - timedelta(days=1))
    if unit == "month":
        if which == "this":
            return DaySpan(today.replace(day=1), today)
        if which == "past":
            return DaySpan(today - timedelta(days=30), today)
        first = today.replace(day=1) - timedelta(days=1)
        return _month_span(first.year, first.month)
    if which == "this":
        return DaySpan(date(today.year, 1, 1), today)
    if which == "past":
        return DaySpan(today - timedelta(days=365), today)
    return DaySpan(date(today.year - 1, 1, 1), date(today.year - 1, 12, 31))


def age(day: str, today: date) -> str:
    """How long ago an ISO day was, in words: "today", "3 days ago", "8 months ago"."""
    try:
        then = date.fromisoformat(day[:10])
    except ValueError:
        return ""
    days = (today - then).days
    if days <= 0:
        return "today" if days == 0 else "ahead of today"
    if days == 1:
        return "yesterday"
    if days < 14:
        return f"{days} days ago"
    if days < 60:
        return f"{days // 7} weeks ago"
    months = (today.year - then.year) * 12 + today.month - then.month - (today.day < then.day)
    if months < 24:
        return f"{max(2, months)} months ago"
    return f"{days // 365} years ago"
