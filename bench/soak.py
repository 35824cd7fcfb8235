"""Soak: does Corvid stay up and flat over thousands of replies? ``python bench/soak.py``.

``corvid run`` runs as a real process, its Telegram channel on the real python-telegram-bot
client against the fake Bot API and its model calls going to the fake Messages API (answering at
once), both served from this process. Chats send in waves: every chat one message, then wait for
every reply. In the middle, Telegram goes away for ``--outage`` seconds while a wave's replies are
being written (every connection dropped unanswered, the long poll too), then comes back.

Printed: RSS and CPU every thousand messages, the HTTP pool of the Telegram client as
``corvid status`` reports it, messages lost or answered twice, and how long after Telegram came
back the last reply of the outage arrived. The targets are copied here so this file stands alone.

In the plain run every chat's conversation grows by a turn each wave, and every chat has a turn
in flight at once, so at the end the whole of every conversation is in memory at the same time:
RSS grows with the conversations. ``--fresh`` sends each wave from chats never seen before, so
conversations stay one turn long and what is measured is what each message leaves behind.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import signal
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.telegram_bench import (
    close_telegram,
    configure,
    cpu_seconds,
    rss_mib,
    settled_rss,
    spawn,
    stop,
)
from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.telegram_api import FakeTelegram

FIRST_USER = 10_000
# Targets: every message answered once; RSS from the first to the last thousand grows by at
# most this much; after an outage, the last reply arrives within this long of recovery.
MAX_GROWTH_MIB = 10.0
# And from idle (polling, before the first message) to the end: at most this much.
MAX_ABOVE_IDLE_MIB = 20.0
MAX_RECOVERY_S = 60.0


def status(home: Path) -> dict:
    """``corvid status --json`` of the running gateway (over its control socket)."""
    import subprocess

    env = {**os.environ, "CORVID_HOME": str(home)}
    out = subprocess.run(
        [sys.executable, "-m", "gateway.ops.cli", "status", "--json"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    return json.loads(out.stdout) if out.stdout.strip() else {}


def pool_of(report: dict) -> str:
    for channel in report.get("channels", []):
        if channel.get("name") == "telegram" and "pool" in channel:
            p = channel["pool"]
            return f"{p['requests']} under way / replaced {p['replaced']}"
    return "?"


HEAPWATCH = ROOT / "bench" / "heapwatch"


async def heap_report(pid: int, signum: int, path: Path) -> dict:
    """Ask the gateway (loaded with ``bench/heapwatch``) to count what is alive; its report."""
    await asyncio.to_thread(path.unlink, missing_ok=True)
    os.kill(pid, signum)
    return await asyncio.to_thread(_read_when_written, path, 60.0)


def _read_when_written(path: Path, limit: float) -> dict:
    deadline = time.monotonic() + limit  # a full collection and a count: well under that
    while not path.exists():
        if time.monotonic() > deadline:
            raise RuntimeError(f"no heap report in {path} after {limit:g} s")
        time.sleep(0.1)
    return json.loads(path.read_text())


async def soak(
    tmp: Path, messages: int, chats: int, outage: float, fresh: bool = False, heap: bool = False
) -> dict:
    api, tg = FakeAnthropic(), FakeTelegram()
    await api.start()
    await tg.start()
    home = tmp / "soak"
    configure(home, api, tg)
    config = yaml.safe_load((home / "config.yaml").read_text())
    waves = messages // chats
    people = chats * waves if fresh else chats  # --fresh: every wave from chats never seen
    config["channels"]["telegram"]["allow_from"] += [FIRST_USER + c for c in range(people)]
    (home / "config.yaml").write_text(yaml.safe_dump(config))
    heap_file = tmp / "heap.json"
    watched = {"PYTHONPATH": os.pathsep.join([str(HEAPWATCH), os.environ.get("PYTHONPATH", "")]),
               "CORVID_HEAP_REPORT": str(heap_file)}  # fmt: skip
    proc = await spawn(home, tg, env_extra=watched if heap else None)
    rows: list[dict] = []
    heap_idle = heap_end = None
    recovery = None
    try:
        await tg.wait_for(lambda: bool(tg.calls_to("getUpdates")), timeout=60)
        idle = await settled_rss(proc.pid, 5.0, 2.0)
        if heap:
            heap_idle = await heap_report(proc.pid, signal.SIGUSR1, Path(f"{heap_file}.idle"))
        tg.text("warm up")
        await tg.wait_sent(1, timeout=60)
        expected = 1
        cpu0, t0 = cpu_seconds(proc.pid), time.monotonic()
        for wave in range(waves):
            middle = wave == waves // 2 and outage > 0
            if middle:
                api.latency = 1.0  # the replies are being written when Telegram goes away
            first = FIRST_USER + (wave * chats if fresh else 0)
            for c in range(chats):
                tg.text(f"w{wave} c{c}", user=first + c)
            expected += chats
            if middle:
                await api.wait_for_requests(len(api.message_requests) + chats, timeout=60)
                tg.down = True
                await asyncio.sleep(outage)  # the outage itself: real time passing
                tg.down = False
                api.latency = 0.0
                back = time.monotonic()
                await tg.wait_sent(expected, timeout=outage + 300)
                recovery = time.monotonic() - back
            else:
                await tg.wait_sent(expected, timeout=300)
            done = (wave + 1) * chats
            if done % 1000 == 0 or wave == waves - 1:
                report = await asyncio.to_thread(status, home)
                rows.append({
                    "messages": done,
                    "rss": rss_mib(proc.pid),
                    "cpu_ms": (cpu_seconds(proc.pid) - cpu0) / done * 1000,
                    "seconds": time.monotonic() - t0,
                    "pool": pool_of(report),
                })  # fmt: skip
                print(f"  {done:>6} messages  RSS {rows[-1]['rss']:6.1f} MiB  "
                      f"{rows[-1]['pool']}", file=sys.stderr, flush=True)  # fmt: skip
        final = await asyncio.to_thread(status, home)
        # Read as idle was: once the process has been quiet a while (what a burst freed is
        # handed back after a few seconds without a turn) and RSS holds still.
        settled = await settled_rss(proc.pid, 8.0, 2.0)
        if heap:
            heap_end = await heap_report(proc.pid, signal.SIGUSR2, heap_file)
    finally:
        await stop(proc)
        await close_telegram(tg)
        await api.close()
    replies = Counter()
    for sent in tg.sent:
        shown = sent["shown"]
        if shown.startswith("echo: w") or "\n\necho: w" in shown:
            replies[shown.rsplit("echo: ", 1)[1]] += 1
    asked = {f"w{w} c{c}" for w in range(waves) for c in range(chats)}
    pools = [c["pool"] for c in final.get("channels", []) if "pool" in c]
    replaced = pools[0]["replaced"] if pools else None
    return {
        "idle": idle,
        "settled": settled,
        "rows": rows,
        "lost": len(asked - set(replies)),
        "twice": sum(1 for text, n in replies.items() if n > 1),
        "late_marked": sum(1 for s in tg.sent if "sent late" in s["shown"]),
        "recovery": recovery,
        "undelivered": len(final.get("undelivered", [])),
        "replaced": replaced,
        "heap": (heap_idle, heap_end),
    }


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--chats", type=int, default=100)
    parser.add_argument("--outage", type=float, default=45.0, help="seconds; 0 for none")
    parser.add_argument(
        "--fresh",
        action="store_true",
        help="every wave from chats never seen before: conversations stay one turn long, so "
        "what grows is what each message leaves behind, not the conversations themselves",
    )
    parser.add_argument(
        "--heap",
        action="store_true",
        help="count what is alive in the gateway at idle and at the end (bench/heapwatch): "
        "the types that grew, the exceptions still alive and where they were raised, the "
        "allocators' figures",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as d:
        r = await soak(Path(d), args.messages, args.chats, args.outage, args.fresh, args.heap)
    rows = r["rows"]
    first, last = rows[0], rows[-1]
    growth = last["rss"] - first["rss"]
    print(f"Soak — {args.messages:,} messages from {args.chats} chats"
          f"{' (new ones every wave)' if args.fresh else ''}, "
          f"{platform.python_version()}, {os.cpu_count()} CPUs")  # fmt: skip
    print("| messages | RSS | CPU per message | Telegram connections (status) |")
    print("|---|---|---|---|")
    for row in rows:
        print(f"| {row['messages']:,} | {row['rss']:.1f} MiB | {row['cpu_ms']:.1f} ms | "
              f"{row['pool']} |")  # fmt: skip
    print()
    print("| metric | measured | target | result |")
    print("|---|---|---|---|")
    ok = r["lost"] == 0 and r["twice"] == 0
    print(f"| messages answered: lost / answered twice | {r['lost']} / {r['twice']} | 0 / 0 | "
          f"{'pass' if ok else 'miss'} |")  # fmt: skip
    above = r["settled"] - r["idle"]
    print(f"| RSS idle → quiet after {last['messages']:,} messages | {r['idle']:.1f} → "
          f"{r['settled']:.1f} MiB ({above:+.1f}) | ≤ +{MAX_ABOVE_IDLE_MIB:g} MiB | "
          f"{'pass' if above <= MAX_ABOVE_IDLE_MIB else 'miss'} |")  # fmt: skip
    print(f"| RSS growth, {first['messages']:,} → {last['messages']:,} messages | "
          f"{growth:+.1f} MiB | ≤ {MAX_GROWTH_MIB:g} MiB | "
          f"{'pass' if growth <= MAX_GROWTH_MIB else 'miss'} |")  # fmt: skip
    if r["recovery"] is not None:
        print(f"| Telegram down {args.outage:g} s mid-reply: last reply after it came back | "
              f"{r['recovery']:.1f} s | ≤ {MAX_RECOVERY_S:g} s | "
              f"{'pass' if r['recovery'] <= MAX_RECOVERY_S else 'miss'} |")  # fmt: skip
        print(f"| replies marked late | {r['late_marked']} | — | — |")
    print(f"| undelivered at the end (corvid status) | {r['undelivered']} | 0 | "
          f"{'pass' if r['undelivered'] == 0 else 'miss'} |")  # fmt: skip
    print(f"| Telegram HTTP client replaced as stuck | {r['replaced']} | 0 | "
          f"{'pass' if not r['replaced'] else 'miss'} |")  # fmt: skip

    if args.heap:
        print_heap(*r["heap"])


def print_heap(idle: dict, end: dict) -> None:
    print()
    print("What is alive in the gateway (after a full collection), idle → end:")
    print(f"- objects (the collector's and frozen ones): {idle['objects']:,} → {end['objects']:,}")
    for key, label in (("pymalloc_arenas", "Python's allocator, arenas of 1 MiB"),
                       ("pymalloc_used_mib", "Python's allocator, MiB in use"),
                       ("c_heap_mib", "C library heap, MiB"),
                       ("c_in_use_mib", "C library heap, MiB in use")):  # fmt: skip
        if key in idle and key in end:
            print(f"- {label}: {idle[key]:,.1f} → {end[key]:,.1f}")
    print("- types grown most: " + ", ".join(f"{name} +{n:,}" for name, n in end["grown"]))
    if not end["exceptions"]:
        print("- exceptions alive: none")
    for kind, places in end["exceptions"].items():
        where = ", ".join(f"{at} ×{n}" for at, n in sorted(places.items(), key=lambda p: -p[1]))
        print(f"- exceptions alive: {kind} ×{sum(places.values())}, raised at {where}")


if __name__ == "__main__":
    asyncio.run(main())
