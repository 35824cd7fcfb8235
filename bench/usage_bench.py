"""Usage ledger benchmarks, run on demand: ``python bench/usage_bench.py``. Prints a table.

What metering costs a model call (CPU time of counting one call: the price, the ledger's
committed row, the budget's sums), and how long ``/usage``, ``corvid usage`` and the Usage
page's queries take over a ledger of 100,000 calls spread over a year.
"""

from __future__ import annotations

import random
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agent.model.charge import Charge, Purpose
from agent.settings import BudgetSettings
from agent.usage.budget import Budget
from agent.usage.ledger import Call, Period, UsageLedger
from agent.usage.meter import Meter
from agent.usage.prices import PriceTable
from gateway.contract.events import SessionKey, job_key
from gateway.usage.report import chat_report

TZ = ZoneInfo("Europe/Berlin")
NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
KEYS = [
    SessionKey("telegram", "private", "42"),
    *(SessionKey("telegram", "group", f"-10{i}") for i in range(20)),
    *(job_key(f"job{i}", SessionKey("telegram", "private", "42")) for i in range(10)),
]


class Clock:
    def __init__(self, now: datetime) -> None:
        self.now_at = now

    def now(self) -> datetime:
        return self.now_at

    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        raise NotImplementedError


def fill(ledger: UsageLedger, rows: int) -> None:
    rnd = random.Random(7)
    purposes = list(Purpose)
    ledger._db.execute("BEGIN")
    for i in range(rows):
        when = NOW - timedelta(seconds=rnd.uniform(0, 365 * 86400))
        charge = Charge(rnd.choice(purposes), rnd.choice(KEYS))
        tokens = (rnd.randint(0, 3000), rnd.randint(0, 2000), rnd.randint(0, 50_000), 400)
        ledger.record(Call(charge, "claude-sonnet-5-5", *tokens, cost=0.01, id=f"m{i}"), when)
    ledger._db.execute("COMMIT")


def per_call(folder: Path, calls: int = 2000) -> tuple[float, float]:
    """CPU ms per counted call, without caps and with daily, chat and job caps."""
    out = []
    for caps in (BudgetSettings(), BudgetSettings(daily=1e9, chat_daily=1e9, job_daily=1e9)):
        ledger = UsageLedger(folder / f"calls-{len(out)}.sqlite", TZ)
        clock = Clock(NOW)
        meter = Meter(ledger, PriceTable(), clock, Budget(caps, ledger, clock))
        began = time.process_time()
        for i in range(calls):
            charge = Charge(Purpose.CHAT, KEYS[i % len(KEYS)])
            if meter.budget is not None:
                meter.budget.caps(charge)  # what admitting the call reads
            meter.count(charge, "claude-sonnet-5-5", (100, 50, 20_000, 300), 0, f"id{i}")
        out.append((time.process_time() - began) / calls * 1000)
        ledger.close()
    return out[0], out[1]


def timed(fn, repeat: int = 5) -> float:
    best = float("inf")
    for _ in range(repeat):
        began = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - began)
    return best * 1000


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        plain, capped = per_call(folder)
        ledger = UsageLedger(folder / "usage.sqlite", TZ)
        fill(ledger, 100_000)
        since = Period.of(NOW - timedelta(days=30), TZ).day
        rows = [
            ("count one call (CPU, no caps)", plain, "ms", 0.5),
            ("count one call (CPU, 3 caps)", capped, "ms", 0.5),
            ("/usage for the owner, 100k rows", timed(lambda: chat_report(ledger, NOW)), "ms", 100),
            (
                "/usage in a group, 100k rows",
                timed(lambda: chat_report(ledger, NOW, "telegram-group--101")),
                "ms",
                100,
            ),
            (
                "corvid usage --by chat, 100k rows",
                timed(lambda: ledger.totals("chat")),
                "ms",
                100,
            ),
            (
                "Usage page queries (30 days), 100k rows",
                timed(
                    lambda: (
                        list(ledger.daily_by_purpose(since)),
                        ledger.totals("day", since),
                        ledger.totals("model", since),
                        ledger.top("chat", Period.of(NOW, TZ).month),
                    )
                ),
                "ms",
                100,
            ),
        ]
        ledger.close()
    print(f"{'measure':45} {'value':>10}  limit")
    for name, value, unit, limit in rows:
        flag = "ok" if value <= limit else "OVER"
        print(f"{name:45} {value:8.3f} {unit}  ≤ {limit} {flag}")


if __name__ == "__main__":
    main()
