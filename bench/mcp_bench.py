"""MCP benchmarks, run on demand: ``python bench/mcp_bench.py``. Prints a table.

1. start-up: ``corvid run`` as a process against the fake Bot API and Messages API, process
   start → first ``getUpdates``, with no MCP server and with three stdio servers configured
   (the test suite's MCPServer script), alternating, median of several starts each. The
   servers start in the background, so polling must begin no later with them.
2. round trip: one MCP tool call (``echo``) through the tool registry to a stdio server, the
   wall time and this process's CPU time per call (the client side: Corvid and the SDK; the
   server's own CPU is its process's, not counted).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import yaml

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(BENCH))

import telegram_bench

from agent.mcp.hub import McpHub
from agent.settings import McpServerSettings
from agent.tools.context import TurnContext
from agent.tools.registry import ToolRegistry
from gateway.contract.events import SessionKey
from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.telegram_api import FakeTelegram

SERVER = str(ROOT / "tests" / "fakes" / "mcp_server.py")
# The targets: polling no later with the servers than without (within what separates two
# runs of the same thing here), and at most this much client CPU per tool call.
NOISE_S = 0.05
CPU_MS = 5.0


def with_servers(home: Path, n: int) -> None:
    config = yaml.safe_load((home / "config.yaml").read_text())
    config["mcp"] = {
        "servers": {f"s{i}": {"command": sys.executable, "args": [SERVER]} for i in range(n)}
    }
    (home / "config.yaml").write_text(yaml.safe_dump(config))


async def first_poll(home: Path, api: FakeAnthropic, tg: FakeTelegram) -> float:
    t0 = time.monotonic()
    proc = await telegram_bench.spawn(home, tg)
    try:
        await tg.wait_for(lambda: bool(tg.calls_to("getUpdates")), timeout=60)
        return tg.calls_to("getUpdates")[0].at - t0
    finally:
        await telegram_bench.stop(proc)


async def bench_startup(tmp: Path, runs: int, servers: int = 3) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {"without": [], "with": []}
    for i in range(runs):
        for kind in ("without", "with"):
            api, tg = FakeAnthropic(), FakeTelegram()
            await api.start()
            await tg.start()
            try:
                home = tmp / f"{kind}{i}"
                telegram_bench.configure(home, api, tg)
                if kind == "with":
                    with_servers(home, servers)
                times[kind].append(await first_poll(home, api, tg))
            finally:
                await telegram_bench.close_telegram(tg)
                await api.close()
    return times


async def bench_round_trip(tmp: Path, calls: int) -> dict[str, float]:
    hub = McpHub({"b": McpServerSettings(command=sys.executable, args=[SERVER])}, tmp / "mcp")
    hub.start()
    try:
        registry = ToolRegistry([], extra=[hub])
        await registry.settle()
        if "b__echo" not in registry:
            raise RuntimeError(f"the server did not start: {hub.describe()}")
        ctx = TurnContext(
            SessionKey("bench", "private", "1"), tmp, datetime.now(UTC), ZoneInfo("UTC")
        )
        for _ in range(20):  # warm: first calls import and cache
            await registry.call("b__echo", {"text": "warm"}, ctx)
        walls = []
        cpu0 = time.process_time()
        for i in range(calls):
            t0 = time.perf_counter()
            result = await registry.call("b__echo", {"text": f"call {i}"}, ctx)
            walls.append(time.perf_counter() - t0)
            if f"\necho: call {i}\n" not in result.text:
                raise RuntimeError(f"unexpected answer: {result.text!r}")
        cpu = time.process_time() - cpu0
    finally:
        await hub.close()
    return {
        "wall_ms": statistics.median(walls) * 1000,
        "p95_ms": telegram_bench.pct(walls, 95) * 1000,
        "cpu_ms": cpu / calls * 1000,
    }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--starts", type=int, default=5, help="starts of each kind (default 5)")
    parser.add_argument("--calls", type=int, default=500, help="tool calls timed (default 500)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="corvid-mcp-bench-") as d:
        tmp = Path(d)
        starts = await bench_startup(tmp, args.starts)
        trip = await bench_round_trip(tmp, args.calls)
    without, with_ = (statistics.median(starts[k]) for k in ("without", "with"))
    print("| metric | value | target | result |")
    print("|---|---|---|---|")
    for label, key in (("no MCP server", "without"), ("3 stdio MCP servers", "with")):
        values = starts[key]
        med = statistics.median(values)
        print(
            f"| start → first getUpdates, {label}, median (range) of {len(values)} "
            f"| {med:.2f} s ({min(values):.2f}–{max(values):.2f}) | — | — |"
        )
    late = with_ - without
    print(
        f"| polling later with 3 servers than without | {late:+.2f} s "
        f"| ≤ +{NOISE_S:g} s | {'met' if late <= NOISE_S else 'NOT met'} |"
    )
    print(f"| MCP tool round trip, wall, median (p95) | {trip['wall_ms']:.2f} ms "
          f"({trip['p95_ms']:.2f}) | — | — |")  # fmt: skip
    print(
        f"| MCP tool round trip, Corvid's CPU per call | {trip['cpu_ms']:.2f} ms "
        f"| ≤ {CPU_MS:g} ms | {'met' if trip['cpu_ms'] <= CPU_MS else 'NOT met'} |"
    )


if __name__ == "__main__":
    asyncio.run(main())
