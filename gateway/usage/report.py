"""What the ledger says, as text for a chat and ``corvid status``, and as rows for the CLI."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from agent.usage.ledger import Period, UsageLedger
from agent.usage.prices import usd


def money(amount: float) -> str:
    return usd(amount)


FIGURES = ("Calls", "Input", "Cache write", "Cache read", "Output", "Searches", "Cost")


def figures(row: dict[str, Any]) -> tuple[str, ...]:
    """A totals row's figures, in the order of ``FIGURES`` (the CLI's and the page's tables)."""
    counts = ("calls", "input", "cache_write", "cache_read", "output", "web_searches")
    return (*(f"{row[c]:,}" for c in counts), money(row["cost"]))


def tokens(row: dict[str, Any]) -> str:
    total_in = row["input"] + row["cache_write"] + row["cache_read"]
    return f"{total_in:,} in ({row['cache_read']:,} from cache), {row['output']:,} out"


def chat_report(
    ledger: UsageLedger,
    now: datetime,
    audience: str | None = None,
    name: Callable[[str], str] = str,
) -> str:
    """``/usage``: today and this month; for the owner (``audience`` None) the month's top
    shared chats (by ``name``) and jobs, for a shared chat its own figures alone."""
    period = Period.of(now, ledger.tz)
    today = ledger.summary(period.day, audience)
    month = ledger.summary(period.month, audience)
    lines = [
        "Usage" + ("" if audience is None else " of this chat") + ":",
        f"today: {money(today['cost'])} in {today['calls']} call(s), {tokens(today)}",
        f"this month: {money(month['cost'])} in {month['calls']} call(s), {tokens(month)}",
    ]
    if audience is None:
        for by, title in (("chat", "top shared chats"), ("job", "top jobs")):
            top = ledger.top(by, period.month)
            label = name if by == "chat" else str
            if top:
                lines.append(f"{title} this month:")
                lines += [
                    f"  {label(str(r['key']))}: {money(r['cost'])} ({r['calls']} calls)"
                    for r in top
                ]
    return "\n".join(lines)


def status_figures(ledger: UsageLedger, now: datetime) -> dict[str, Any]:
    """Today's and the month's cost and calls, for ``corvid status``."""
    period = Period.of(now, ledger.tz)
    today = ledger.summary(period.day)
    month = ledger.summary(period.month)
    return {
        "today": {"cost": today["cost"], "calls": today["calls"]},
        "month": {"cost": month["cost"], "calls": month["calls"]},
    }


def file_figures(path: Path, tz: ZoneInfo) -> dict[str, Any]:
    """``status_figures`` from the ledger's file, for ``corvid status`` (zero without one)."""
    if not path.exists():
        zero = {"cost": 0.0, "calls": 0}
        return {"today": zero, "month": zero}
    ledger = UsageLedger(path, tz)
    try:
        return status_figures(ledger, datetime.now(UTC))
    finally:
        ledger.close()


def figures_line(figures: dict[str, Any]) -> str:
    today, month = figures["today"], figures["month"]
    return (
        f"Usage: today {money(today['cost'])} ({today['calls']} model calls), "
        f"this month {money(month['cost'])} ({month['calls']} calls); corvid usage for more"
    )
