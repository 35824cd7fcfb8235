"""The exec sandbox's start-up overhead, run on demand: ``python bench/exec_bench.py``.

Runs ``true`` many times through ``Sandbox.run`` (bubblewrap, its namespaces, the limits, a
pids control group when run as root) and as a bare ``/bin/sh -c true`` child, and prints the
median and p95 of each and of the difference, which is what the box costs a command.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agent.sandbox.bwrap import Sandbox
from agent.settings import ExecSettings


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, round(p / 100 * (len(values) - 1)))]


async def bare() -> float:
    t0 = time.monotonic()
    proc = await asyncio.create_subprocess_exec("/bin/sh", "-c", "true", env={})
    await proc.wait()
    return time.monotonic() - t0


async def boxed(box: Sandbox) -> float:
    t0 = time.monotonic()
    ran = await box.run("true")
    assert ran.status == 0, ran
    return time.monotonic() - t0


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=100)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as d:
        box = Sandbox(ExecSettings(enabled=True), Path(d))
        problem = box.problem()
        if problem is not None:
            sys.exit(f"the sandbox cannot run here: {problem}")
        await boxed(box)  # the first run pays for the page cache
        plain = [await bare() for _ in range(args.runs)]
        sandboxed = [await boxed(box) for _ in range(args.runs)]
    print(f"exec sandbox — {platform.python_version()}, {os.cpu_count()} CPUs, {args.runs} runs")
    print("| command `true` | median | p95 |")
    print("|---|---|---|")
    for name, values in (("bare /bin/sh -c", plain), ("in the sandbox", sandboxed)):
        median, p95 = statistics.median(values) * 1000, pct(values, 95) * 1000
        print(f"| {name} | {median:.1f} ms | {p95:.1f} ms |")
    extra = [b - p for b, p in zip(sorted(sandboxed), sorted(plain), strict=True)]
    print(
        f"| sandbox overhead | {statistics.median(extra) * 1000:.1f} ms | "
        f"{pct(extra, 95) * 1000:.1f} ms |"
    )


if __name__ == "__main__":
    asyncio.run(main())
