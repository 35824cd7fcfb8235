"""Loops as people and the model read them: a line each, and the daily summary's part."""

from __future__ import annotations

from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

from agent.loops.book import Book, Loop, State
from agent.workspace.audience import enclosed


def lateness(loop: Loop, now: datetime) -> str:
    """ " (overdue)", " (today)" or "" for an open loop's due date, as of ``now``."""
    if loop.state != State.OPEN:
        return ""
    tz = now.tzinfo if isinstance(now.tzinfo, ZoneInfo) else None
    at = loop.due_at(tz) if tz is not None else None
    day = loop.due_day()
    if (at is not None and at <= now) or (day is not None and day < now.date()):
        return " (overdue)"
    return " (today)" if day == now.date() else ""


def describe(loop: Loop, now: datetime) -> str:
    """``#3 Send Anna the report · due 2026-05-08 17:00 (overdue) · who: owner``."""
    parts = [f"#{loop.id} {loop.what}"]
    if loop.due:
        parts.append(f"due {loop.due}{lateness(loop, now)}")
    if loop.who:
        parts.append(f"who: {loop.who}")
    if loop.state != State.OPEN:
        parts.append(f"{loop.state} {loop.closed}".rstrip())
    return " · ".join(parts)


def quoted(loop: Loop, line: str) -> str:
    """``line`` about ``loop`` as a prompt takes it: quoted when the loop is."""
    if loop.quote is None:
        return line
    return enclosed("untrusted", "source", loop.quote.source, line, loop.quote.note)


def listing(loops: list[Loop], now: datetime, *, for_prompt: bool) -> str:
    lines = [f"- {describe(lp, now)}" for lp in loops]
    if for_prompt:
        lines = [quoted(lp, line) for lp, line in zip(loops, lines, strict=True)]
    return "\n".join(lines)


def summary_section(book: Book, day: date, now: datetime) -> str:
    """What the daily summary of ``day`` says of the loops: those due or overdue, those due
    tomorrow, the new ones and the ones closed that day; "" when there is none of these."""
    opened = [lp for lp in book.loops() if lp.state == State.OPEN]
    due = [lp for lp in opened if (d := lp.due_day()) is not None and d <= day]
    tomorrow = [lp for lp in opened if lp.due_day() == day + timedelta(days=1)]
    new = [lp for lp in book.loops() if lp.opened == day.isoformat()]
    closed = [
        lp for lp in book.loops() if lp.closed == day.isoformat() and lp.opened != day.isoformat()
    ]
    parts = []
    for title, loops in (
        ("Due or overdue", due),
        ("Due tomorrow", tomorrow),
        ("New today", new),
        ("Closed today", closed),
    ):
        if loops:
            parts.append(f"### {title}\n\n{listing(loops, now, for_prompt=True)}")
    return "\n\n".join(parts)
