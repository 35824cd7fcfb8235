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
from typing import Any
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
                "corvid usage --by chat (30 days), 100k rows",
                timed(lambda: ledger.totals("chat", since)),
                "ms",
                100,
            ),
            (
                "corvid usage --by chat, a year, 100k rows",
                timed(lambda: ledger.totals("chat", "2025-01-01")),
                "ms",
                1000,
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
    import asyncio

    cache = asyncio.run(bench_cache_with_background())
    flag = "ok" if cache["prefix_kept"] >= 0.99 else "UNDER"
    print(
        f"{'prefix read from cache, turns 2-12':45} {cache['prefix_kept']:8.2%}     ≥ 99% {flag}"
        f"  ({cache['flushes']:.0f} flush calls on the background model, "
        f"{cache['summaries']:.0f} summaries)"
    )


async def bench_cache_with_background(turns: int = 12, window: int = 7000) -> dict[str, float]:
    """A private chat through the gateway and the real SDK, with the background model on and a
    window small enough that the silent flush runs (on that model) midway: how much of each
    chat request's prompt, turns 2 to ``turns``, was read from the cache the turn before left.
    """
    import asyncio

    from bench.gateway_bench import CHAT, CacheUsage
    from gateway.app import build_app
    from gateway.config.home import init_home
    from gateway.config.loader import parse_config
    from tests.conftest import RecordingChannel
    from tests.fakes.anthropic_api import request_kind

    api = CacheUsage()
    models: list[str] = []
    answer = api.answer

    def brain(body: dict[str, Any]) -> Any:
        models.append(f"{request_kind(body)} {body['model']}")
        return answer(body)

    api.brain = brain
    await api.start()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        init_home(home, {})
        raw = {
            "timezone": "UTC",
            "llm": {
                "api_key": "bench-key",
                "base_url": api.base_url,
                "retries": 0,
                "context_window": window,
                "models": {"chat": "claude-sonnet-5-5", "background": "claude-haiku-5-5"},
            },
            "memory": {"embeddings": {"provider": "none"}},
            "compaction": {
                "reserve_tokens": 1000,
                "soft_threshold_tokens": 1500,
                "keep_recent_tokens": 1000,
            },
            "web": {"enabled": False},
        }
        chan = RecordingChannel()
        gw = build_app(parse_config(raw, home=home, environ={}), [chan])
        await gw.start()
        try:
            for i in range(turns):
                await asyncio.wait_for(chan.push(CHAT[i % len(CHAT)] + f" ({i + 1})"), 30)
        finally:
            await gw.stop()
            await api.close()
    usages = api.usages[:turns]

    def total(u: dict[str, int]) -> int:
        return u["input_tokens"] + u["cache_read_input_tokens"] + u["cache_creation_input_tokens"]

    kept = sum(u["cache_read_input_tokens"] for u in usages[1:]) / sum(map(total, usages[:-1]))
    return {
        "prefix_kept": kept,
        "flushes": sum(1 for m in models if m == "flush claude-haiku-5-5"),
        "summaries": sum(1 for m in models if m.startswith("summary")),
    }


if __name__ == "__main__":
    main()
