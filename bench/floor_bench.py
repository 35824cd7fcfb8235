"""Corvid against the cheapest bot its two libraries make, side by side in one run:
``python bench/floor_bench.py``. Prints a table with the targets.

Both run as real processes: ``corvid run`` (Telegram only, the control page on) and
``bench/minimal_bot.py`` (python-telegram-bot long polling, one Messages call per message,
nothing else). Each polls a fake Bot API served from this process; their model calls go to
the fake Messages API (answering at once, or after a second for the load rows). Measured for
each, alternately, so drift on a busy machine hits both alike:

1. start → first ``getUpdates``, and the first reply after a start: a message waiting when the
   bot starts, from its first ``getUpdates`` to the reply (median of ``--starts``);
2. idle RSS once polling and settled;
3. message → reply, p50/p95 over ``--messages`` sequential messages, and the process's CPU per
   message, with the fake Messages API's own time on each message's requests and the p50
   without it (the fake, in this process, does more for a longer request); then CPU per
   message again over ``--cpu-messages``, in ``--cpu-rounds`` runs with both bots running at
   once and the messages going to each in turn, one at a time, which bot first alternating,
   so that both meet the machine as it is at that moment (the median of the runs' ratios is
   the row held to the target: runs of one bot after the other moved by a third on this kind
   of machine, the machine's own speed changing between them);
4. 50 and 200 private chats writing at once, the model taking 1 s: until the last reply,
   the median of ``--rounds`` runs (one run of either bot can differ from the next by a
   fifth).

Targets (what Corvid must reach): idle RSS ≤ the minimal bot + 5 MiB; CPU per message (the
paired runs' median ratio) ≤ 1.3 ×; p50 ≤ the minimal bot + 3 ms; first reply ≤ 300 ms;
start → first getUpdates ≤ 0.5 s; 50 and 200 chats ≤ 1.1 × the minimal bot's time.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.gateway_bench import fake_api_process
from bench.telegram_bench import (
    close_telegram,
    cpu_seconds,
    pct,
    settled_cpu,
    settled_rss,
    spawn,
    stop,
)
from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.telegram_api import FakeTelegram

BOTS = ("minimal", "corvid")
OWNER = 42
LOAD_USERS = range(1000, 1200)  # the private chats of the load rows


async def spawn_minimal(tg: FakeTelegram, api_url: str) -> asyncio.subprocess.Process:
    env = {
        **os.environ,
        "TELEGRAM_BOT_TOKEN": tg.token,
        "TELEGRAM_BASE_URL": f"{tg.base_url}/bot",
        "ANTHROPIC_API_KEY": "sk-bench",
        "ANTHROPIC_BASE_URL": api_url,
    }
    env.pop("ANTHROPIC_AUTH_TOKEN", None)
    return await asyncio.create_subprocess_exec(
        sys.executable,
        str(ROOT / "bench" / "minimal_bot.py"),
        cwd=ROOT,
        env=env,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )


def corvid_home(home: Path, api_url: str, tg: FakeTelegram, users: range) -> None:
    """A home as ``bench/telegram_bench.py`` makes it (Telegram only, long polls of 10 s, the
    control page on), with ``users`` allowed beside the owner."""
    tg.write_corvid_config(home, api_url, poll_timeout=10)
    config = yaml.safe_load((home / "config.yaml").read_text())
    config["logging"]["level"] = "WARNING"
    config["web"]["port"] = 0
    config["channels"]["telegram"]["allow_from"] = [OWNER, *users]
    (home / "config.yaml").write_text(yaml.safe_dump(config))


@asynccontextmanager
async def running(
    bot: str, home: Path, api_url: str, *, users: range | None = None
) -> AsyncIterator[tuple[asyncio.subprocess.Process, FakeTelegram, float]]:
    """``bot`` started against a new fake Bot API and the Messages API at ``api_url``: the
    process, the fake, and the monotonic time it was started."""
    tg = FakeTelegram()
    await tg.start()
    if bot == "corvid":
        corvid_home(home, api_url, tg, users or range(0))
    t0 = time.monotonic()
    proc = await (spawn(home, tg) if bot == "corvid" else spawn_minimal(tg, api_url))
    try:
        yield proc, tg, t0
    finally:
        await stop(proc)
        await close_telegram(tg)


def first_poll(tg: FakeTelegram) -> float:
    return tg.calls_to("getUpdates")[0].at


async def polling(tg: FakeTelegram, proc: asyncio.subprocess.Process) -> None:
    try:
        await tg.wait_for(lambda: bool(tg.calls_to("getUpdates")), timeout=60)
    except TimeoutError:
        err = await proc.stderr.read() if proc.stderr and proc.returncode is not None else b""
        raise RuntimeError(f"no getUpdates from the bot: {err.decode()[-2000:]}") from None


async def bench_starts(
    bot: str, tmp: Path, api_url: str, n: int
) -> tuple[list[float], list[float]]:
    """Start → first getUpdates, and first getUpdates → the reply to a waiting message."""
    starts, firsts = [], []
    for i in range(n):
        async with running(bot, tmp / f"{bot}-start{i}", api_url) as (proc, tg, t0):
            tg.text("are you there?", user=OWNER)
            await polling(tg, proc)
            await tg.wait_sent(1, timeout=60)
            starts.append(first_poll(tg) - t0)
            firsts.append(tg.calls_to("sendMessage")[0].at - first_poll(tg))
    return starts, firsts


async def bench_steady(
    bot: str, tmp: Path, api: FakeAnthropic, n: int, idle: float
) -> dict[str, float]:
    """Idle RSS once settled, then ``n`` sequential messages: latency and CPU per message."""
    async with running(bot, tmp / f"{bot}-steady", api.base_url) as (proc, tg, _):
        await polling(tg, proc)
        idle_rss = await settled_rss(proc.pid, idle)
        latencies, cpu_ms, fake = await in_turn(proc, tg, n, api)
    # Each reply's time less the fake API's own on its requests. The fake parses the whole
    # request and walks it for its prompt-cache bookkeeping (hashing only what is new since a
    # recent request), which grows with the conversation Corvid sends.
    own = [t - f for t, f in zip(latencies, fake, strict=True)]
    return {
        "idle_rss": idle_rss,
        "p50": pct(latencies, 50) * 1000,
        "p95": pct(latencies, 95) * 1000,
        "p50_own": pct(own, 50) * 1000,
        "fake_ms": statistics.median(fake) * 1000,
        "cpu_ms": cpu_ms,
    }


async def bench_cpu(tmp: Path, api_url: str, n: int) -> dict[str, float]:
    """CPU per message in ms of each bot, both running at once, over ``n`` messages sent to
    each in turn (one bot's, answered, then the other's; which bot goes first alternates)."""
    async with AsyncExitStack() as stack:
        bots = {}
        for bot in BOTS:
            proc, tg, _ = await stack.enter_async_context(running(bot, tmp / bot, api_url))
            await polling(tg, proc)
            bots[bot] = (proc, tg)
        for _, tg in bots.values():
            tg.text("warm up", user=OWNER)
            await tg.wait_sent(1, timeout=60)
        # What a start leaves to do in threads (Corvid's control page is imported once the
        # model's SDK has loaded) is not the messages' CPU: without this wait it came to
        # 0.3-1 ms a message of a run, more for a build that left more of it.
        for proc, _ in bots.values():
            await settled_cpu(proc.pid)
        cpu0 = {bot: cpu_seconds(proc.pid) for bot, (proc, _) in bots.items()}
        turns = list(bots.values())
        for i in range(n):
            # Each bot first every other message, so that neither's place is fixed.
            for _, tg in turns if i % 2 == 0 else turns[::-1]:
                tg.text(f"message {i}", user=OWNER)
                await tg.wait_sent(i + 2, timeout=60)
        return {bot: (cpu_seconds(p.pid) - cpu0[bot]) / n * 1000 for bot, (p, _) in bots.items()}


async def in_turn(
    proc: asyncio.subprocess.Process, tg: FakeTelegram, n: int, api: FakeAnthropic
) -> tuple[list[float], float, list[float]]:
    """One message to warm up, then ``n``, each sent once the last is answered: each one's
    seconds to its reply, the process's CPU per message in ms, and the seconds ``api`` (the
    fake the bot calls, in this process) spent on the Messages requests that ended while each
    message waited for its reply."""
    tg.text("warm up", user=OWNER)
    await tg.wait_sent(1, timeout=60)
    latencies, fake = [], []
    cpu0 = cpu_seconds(proc.pid)
    for i in range(n):
        t0, served = time.monotonic(), len(api.spent)
        tg.text(f"message {i}", user=OWNER)
        await tg.wait_sent(i + 2, timeout=60)
        latencies.append(tg.calls_to("sendMessage")[-1].at - t0)
        fake.append(sum(api.spent[served:]))
    return latencies, (cpu_seconds(proc.pid) - cpu0) / n * 1000, fake


async def bench_load(bot: str, tmp: Path, api_url: str, chats: int) -> float:
    """``chats`` private chats write at once, the model answering each after 1 s: seconds
    until the last reply."""
    users = LOAD_USERS[:chats]
    async with running(bot, tmp / f"{bot}-load{chats}", api_url, users=users) as (proc, tg, _):
        await polling(tg, proc)
        tg.text("warm up", user=OWNER)
        await tg.wait_sent(1, timeout=60)
        t0 = time.monotonic()
        for user in users:
            tg.text("hi", user=user)
        await tg.wait_sent(1 + chats, timeout=120)
        return tg.calls_to("sendMessage")[-1].at - t0


Row = tuple[str, str, str, str, str]


def verdict(ok: bool) -> str:
    return "pass" if ok else "miss"


def rows(
    starts: dict[str, list[float]],
    firsts: dict[str, list[float]],
    steady: dict[str, dict[str, float]],
    load: dict[int, dict[str, list[float]]],
    cpu: dict[str, list[float]],
) -> list[Row]:
    med: Callable[[list[float]], float] = statistics.median
    m, c = steady["minimal"], steady["corvid"]
    out: list[Row] = [
        (
            "start → first getUpdates, median",
            f"{med(starts['minimal']):.2f} s",
            f"{med(starts['corvid']):.2f} s",
            "≤ 0.5 s",
            verdict(med(starts["corvid"]) <= 0.5),
        ),
        (
            "first reply after a start (from the first getUpdates), median",
            f"{med(firsts['minimal']) * 1000:.0f} ms",
            f"{med(firsts['corvid']) * 1000:.0f} ms",
            "≤ 300 ms",
            verdict(med(firsts["corvid"]) <= 0.3),
        ),
        (
            "idle RSS (Corvid: Telegram, control page on)",
            f"{m['idle_rss']:.1f} MiB",
            f"{c['idle_rss']:.1f} MiB",
            f"≤ {m['idle_rss'] + 5:.1f} MiB",
            verdict(c["idle_rss"] <= m["idle_rss"] + 5),
        ),
        (
            "message → reply p50, model answers at once",
            f"{m['p50']:.1f} ms",
            f"{c['p50']:.1f} ms",
            f"≤ {m['p50'] + 3:.1f} ms",
            verdict(c["p50"] <= m["p50"] + 3),
        ),
        ("message → reply p95", f"{m['p95']:.1f} ms", f"{c['p95']:.1f} ms", "—", "—"),
        (
            "the fake API's own time on a message's request, median",
            f"{m['fake_ms']:.1f} ms",
            f"{c['fake_ms']:.1f} ms",
            "—",
            "—",
        ),
        (
            "message → reply p50, less the fake API's time on its request",
            f"{m['p50_own']:.1f} ms",
            f"{c['p50_own']:.1f} ms",
            "—",
            "—",
        ),
        (
            "CPU per message, those messages",
            f"{m['cpu_ms']:.1f} ms",
            f"{c['cpu_ms']:.1f} ms",
            "—",
            "—",
        ),
    ]
    ratio = med([c / m for c, m in zip(cpu["corvid"], cpu["minimal"], strict=True)])
    out.append(
        (
            f"CPU per message, both at once, messages in turn: median of {len(cpu['corvid'])} runs",
            f"{med(cpu['minimal']):.2f} ms",
            f"{med(cpu['corvid']):.2f} ms (runs' ratio {ratio:.2f} ×)",
            "≤ 1.3 ×",
            verdict(ratio <= 1.3),
        )
    )
    for chats, times in load.items():
        mm, cc = med(times["minimal"]), med(times["corvid"])
        out.append(
            (
                f"{chats} private chats at once, model 1 s: last reply",
                f"{mm:.2f} s",
                f"{cc:.2f} s ({cc / mm:.2f} ×)",
                f"≤ {mm * 1.1:.2f} s",
                verdict(cc <= mm * 1.1),
            )
        )
    return out


def table(out: list[Row]) -> list[str]:
    lines = ["| metric | minimal bot | Corvid | target | result |", "|---|---|---|---|---|"]
    lines += [f"| {' | '.join(r)} |" for r in out]
    return lines


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", type=int, default=5, help="starts of each bot")
    parser.add_argument("--messages", type=int, default=100, help="sequential messages")
    parser.add_argument("--idle", type=float, default=5.0, help="seconds before idle RSS")
    parser.add_argument("--cpu-messages", type=int, default=300, help="messages of a CPU run")
    parser.add_argument("--cpu-rounds", type=int, default=5, help="CPU runs of each bot")
    parser.add_argument("--rounds", type=int, default=3, help="runs of each load row (median)")
    parser.add_argument("--loads", type=int, nargs="*", default=[50, 200], help="chats at once")
    args = parser.parse_args()
    starts: dict[str, list[float]] = {b: [] for b in BOTS}
    firsts: dict[str, list[float]] = {b: [] for b in BOTS}
    steady: dict[str, dict[str, float]] = {}
    load: dict[int, dict[str, list[float]]] = {n: {b: [] for b in BOTS} for n in args.loads}
    cpu: dict[str, list[float]] = {b: [] for b in BOTS}
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        api = FakeAnthropic()
        await api.start()
        try:
            for i in range(args.starts):  # alternately, one start of each at a time
                for bot in BOTS:
                    s, f = await bench_starts(bot, tmp / f"s{i}", api.base_url, 1)
                    starts[bot] += s
                    firsts[bot] += f
            for bot in BOTS:
                steady[bot] = await bench_steady(bot, tmp, api, args.messages, args.idle)
            for r in range(args.cpu_rounds):
                paired = await bench_cpu(tmp / f"cpu{r}", api.base_url, args.cpu_messages)
                for bot in BOTS:
                    cpu[bot].append(paired[bot])
        finally:
            await api.close()
        async with fake_api_process(1.0) as slow_url:
            for r in range(args.rounds):
                for chats in args.loads:
                    for bot in BOTS:
                        load[chats][bot].append(
                            await bench_load(bot, tmp / f"r{r}", slow_url, chats)
                        )
    print(
        f"load average (1 min): {load_before:.2f} before, {os.getloadavg()[0]:.2f} after; "
        f"{args.starts} starts, {args.messages} messages, {args.cpu_rounds} CPU runs of "
        f"{args.cpu_messages}"
    )
    print("\n".join(table(rows(starts, firsts, steady, load, cpu))))


if __name__ == "__main__":
    asyncio.run(main())
