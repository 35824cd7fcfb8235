"""Approval round trip, run on demand: ``python bench/approval_bench.py``. Prints a table.

``corvid run`` runs as a real process against the fake Bot API and the fake Messages API (both
in this process, answering at once), with ``list_files`` set to ``ask``. One round trip: the
owner's message → the model calls the tool → the request with its buttons reaches the owner →
the owner presses *Approve once* → the tool runs → the reply. Measured over sequential round
trips: the time from the press to the reply (p50/p95), and Corvid's CPU for a whole round trip
beside its CPU for a plain message that needs no tool (the difference is what approving costs).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from telegram_bench import close_telegram, cpu_seconds, pct, spawn, stop

from tests.fakes.anthropic_api import FakeAnthropic, Reply, last_user_text, tool_results
from tests.fakes.telegram_api import FakeTelegram


def brain(body: dict[str, Any]) -> Reply:
    """``files`` asks for the listing (and then answers); anything else is answered at once."""
    if tool_results(body):
        return Reply("Listed.")
    if last_user_text(body).endswith("files"):
        return Reply(tool_calls=[("list_files", {"path": "."})])
    return Reply("ok")


def configure(home: Path, api: FakeAnthropic, tg: FakeTelegram) -> None:
    tg.write_corvid_config(home, api.base_url, poll_timeout=10)
    config = yaml.safe_load((home / "config.yaml").read_text())
    config["logging"]["level"] = "WARNING"
    config["web"]["port"] = 0
    config["approvals"] = {"tools": {"list_files": "ask"}}
    (home / "config.yaml").write_text(yaml.safe_dump(config))


def _buttoned(tg: FakeTelegram) -> list[dict[str, Any]]:
    return [m for m in tg.sent if m.get("reply_markup")]


async def bench(tmp: Path, n: int) -> dict[str, float]:
    api, tg = FakeAnthropic(), FakeTelegram()
    api.brain = brain
    await api.start()
    await tg.start()
    home = tmp / "approvals"
    configure(home, api, tg)
    proc = await spawn(home, tg)
    try:
        await tg.wait_for(lambda: bool(tg.calls_to("getUpdates")), timeout=60)
        tg.text("warm up")
        await tg.wait_sent(1, timeout=60)
        cpu0 = cpu_seconds(proc.pid)
        for i in range(n):
            tg.text(f"plain {i}")
            await tg.wait_sent(len(tg.sent) + 1, timeout=60)
        plain = (cpu_seconds(proc.pid) - cpu0) / n
        answered, cpu0 = [], cpu_seconds(proc.pid)
        for i in range(n):
            asked = len(_buttoned(tg))
            tg.text(f"round {i}: files")
            await tg.wait_for(lambda asked=asked: len(_buttoned(tg)) > asked, timeout=60)
            before = len(tg.sent)
            t0 = time.monotonic()
            tg.press(_buttoned(tg)[-1], "Approve once")
            await tg.wait_for(
                lambda before=before: any(m["shown"] == "Listed." for m in tg.sent[before:]),
                timeout=60,
            )
            answered.append(time.monotonic() - t0)
        round_trip = (cpu_seconds(proc.pid) - cpu0) / n
    finally:
        await stop(proc)
        await close_telegram(tg)
        await api.close()
    return {
        "plain_ms": plain * 1000,
        "round_ms": round_trip * 1000,
        "p50": pct(answered, 50) * 1000,
        "p95": pct(answered, 95) * 1000,
    }


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as d:
        got = await bench(Path(d), args.rounds)
    print(f"Approval benchmarks — {platform.python_version()}, {os.cpu_count()} CPUs")
    print("| metric | measured | target |")
    print("|---|---|---|")
    print(f"| Corvid CPU, plain message (no tool) | {got['plain_ms']:.1f} ms | — |")
    print(
        f"| Corvid CPU, whole approval round trip (message, request, press, tool, reply) | "
        f"{got['round_ms']:.1f} ms | ≤ 50 ms |"
    )
    print(
        f"| press → reply, p50 / p95 ({args.rounds} round trips) | "
        f"{got['p50']:.1f} / {got['p95']:.1f} ms | — |"
    )


if __name__ == "__main__":
    asyncio.run(main())
