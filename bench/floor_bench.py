"""Corvid beside the cheapest bot its two libraries make, in one run and side by side."""

# Both run as real processes: ``corvid run`` (Telegram only, the control page on) and
# ``bench/minimal_bot.py`` (python-telegram-bot long polling, one Messages call per message).
# Each polls a fake Bot API served from this process; their model calls go to the fake
# Messages API (answering at once, or after a second for the load rows). Every row measures
# the bots alternately, so drift on a busy machine hits them alike. ``--also NAME=PATH`` adds
# another checkout of Corvid (the code before a change, say) to the same run, with its own
# table against the same minimal bot.

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.gateway_bench import fake_api_process
from bench.telegram_bench import (
    close_telegram,
    compile_like_pip,
    cpu_seconds,
    pct,
    settled_cpu,
    settled_rss,
    spawn,
    stop,
)
from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.telegram_api import FakeTelegram

# Targets: what Corvid must reach against the minimal bot measured in the same run.
CPU_RATIO = 1.3  # CPU per message: at most this many times the minimal bot's
BURST_CHATS = 50  # private chats writing at once, the model taking 1 s...
BURST_RATIO = 1.1  # ...until the last reply: at most this many times the minimal bot's time
P50_MORE_MS = 3.0  # message → reply p50: at most this many ms more than the minimal bot's
IDLE_MORE_MIB = 30.0  # idle RSS: at most this many MiB more than the minimal bot's
# Start → first getUpdates: no later than the minimal bot's.

MINIMAL = "minimal"
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


@dataclass
class Run:
    """The bots of one run: the minimal bot, then each Corvid by name with its checkout."""

    builds: dict[str, Path]
    bots: list[str] = field(init=False)

    def __post_init__(self) -> None:
        self.bots = [MINIMAL, *self.builds]


@asynccontextmanager
async def running(
    run: Run, bot: str, home: Path, api_url: str, *, users: range | None = None
) -> AsyncIterator[tuple[asyncio.subprocess.Process, FakeTelegram, float]]:
    """``bot`` started against a new fake Bot API and the Messages API at ``api_url``: the
    process, the fake, and the monotonic time it was started."""
    tg = FakeTelegram()
    await tg.start()
    if bot != MINIMAL:
        corvid_home(home, api_url, tg, users or range(0))
    t0 = time.monotonic()
    if bot == MINIMAL:
        proc = await spawn_minimal(tg, api_url)
    else:
        proc = await spawn(home, tg, root=run.builds[bot])
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


async def bench_start(run: Run, bot: str, tmp: Path, api_url: str) -> tuple[float, float]:
    """Start → first getUpdates, and first getUpdates → the reply to a waiting message."""
    async with running(run, bot, tmp, api_url) as (proc, tg, t0):
        tg.text("are you there?", user=OWNER)
        await polling(tg, proc)
        await tg.wait_sent(1, timeout=60)
        return first_poll(tg) - t0, tg.calls_to("sendMessage")[0].at - first_poll(tg)


async def bench_steady(
    run: Run, bot: str, tmp: Path, api: FakeAnthropic, n: int, idle: float
) -> dict[str, float]:
    """Idle RSS once settled, then ``n`` sequential messages: latency and CPU per message."""
    async with running(run, bot, tmp / f"{bot}-steady", api.base_url) as (proc, tg, _):
        await polling(tg, proc)
        idle_rss = await settled_rss(proc.pid, idle)
        latencies, cpu_ms, fake = await in_turn(proc, tg, n, api)
    # Each reply's time less the fake API's own on its requests, which grows with the
    # conversation Corvid sends (the minimal bot sends one message).
    own = [t - f for t, f in zip(latencies, fake, strict=True)]
    return {
        "idle_rss": idle_rss,
        "p50": pct(latencies, 50) * 1000,
        "p95": pct(latencies, 95) * 1000,
        "p50_own": pct(own, 50) * 1000,
        "fake_ms": statistics.median(fake) * 1000,
        "cpu_ms": cpu_ms,
    }


async def bench_cpu(run: Run, tmp: Path, api_url: str, n: int) -> dict[str, float]:
    """CPU per message in ms of each bot, all running at once, over ``n`` messages sent to
    each in turn (one bot's, answered, then the next's; the order turns every message)."""
    async with AsyncExitStack() as stack:
        bots = {}
        for bot in run.bots:
            proc, tg, _ = await stack.enter_async_context(running(run, bot, tmp / bot, api_url))
            await polling(tg, proc)
            bots[bot] = (proc, tg)
        for _, tg in bots.values():
            tg.text("warm up", user=OWNER)
            await tg.wait_sent(1, timeout=60)
        # What a start leaves to do in threads is not the messages' CPU.
        for proc, _ in bots.values():
            await settled_cpu(proc.pid)
        cpu0 = {bot: cpu_seconds(proc.pid) for bot, (proc, _) in bots.items()}
        turns = list(bots.values())
        for i in range(n):
            for _, tg in turns[i % len(turns) :] + turns[: i % len(turns)]:
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


async def bench_load(run: Run, bot: str, tmp: Path, api_url: str, chats: int) -> float:
    """``chats`` private chats write at once, the model answering each after 1 s: seconds
    until the last reply."""
    users = LOAD_USERS[:chats]
    home = tmp / f"{bot}-load{chats}"
    async with running(run, bot, home, api_url, users=users) as (proc, tg, _):
        await polling(tg, proc)
        tg.text("warm up", user=OWNER)
        await tg.wait_sent(1, timeout=60)
        t0 = time.monotonic()
        for user in users:
            tg.text("hi", user=user)
        await tg.wait_sent(1 + chats, timeout=120)
        return tg.calls_to("sendMessage")[-1].at - t0


@dataclass
class Results:
    """Each bot's measurements, by bot name."""

    starts: dict[str, list[float]]
    firsts: dict[str, list[float]]
    steady: dict[str, dict[str, float]]
    cpu: dict[str, list[float]]
    load: dict[int, dict[str, list[float]]]


# long: one run of every row, each row's bots alternated; the steps read in order
async def measure(run: Run, args: argparse.Namespace) -> Results:
    bots = run.bots
    res = Results(
        starts={b: [] for b in bots},
        firsts={b: [] for b in bots},
        steady={},
        cpu={b: [] for b in bots},
        load={n: {b: [] for b in bots} for n in args.loads},
    )
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        api = FakeAnthropic()
        await api.start()
        try:
            for i in range(args.starts):  # alternately, one start of each at a time
                for bot in bots:
                    start, first = await bench_start(run, bot, tmp / f"s{i}-{bot}", api.base_url)
                    res.starts[bot].append(start)
                    res.firsts[bot].append(first)
            for bot in bots if args.messages else ():
                res.steady[bot] = await bench_steady(run, bot, tmp, api, args.messages, args.idle)
            for r in range(args.cpu_rounds):
                paired = await bench_cpu(run, tmp / f"cpu{r}", api.base_url, args.cpu_messages)
                for bot in bots:
                    res.cpu[bot].append(paired[bot])
        finally:
            await api.close()
        async with fake_api_process(1.0) as slow_url:
            for r in range(args.rounds):
                for chats in args.loads:
                    for bot in bots:
                        took = await bench_load(run, bot, tmp / f"r{r}", slow_url, chats)
                        res.load[chats][bot].append(took)
    return res


@dataclass(frozen=True)
class Row:
    metric: str
    minimal: str
    corvid: str
    target: str = "—"
    ok: bool | None = None  # None: a row without a target

    @property
    def result(self) -> str:
        return "—" if self.ok is None else "pass" if self.ok else "miss"


def rows(res: Results, build: str) -> list[Row]:
    """``build``'s rows beside the minimal bot's, for what was measured."""
    out: list[Row] = []
    if res.starts[build]:
        out += start_rows(res, build)
    if build in res.steady:
        out += steady_rows(res.steady[MINIMAL], res.steady[build])
    if res.cpu[build]:
        cpu_m, cpu_c = res.cpu[MINIMAL], res.cpu[build]
        ratios = [c / m for c, m in zip(cpu_c, cpu_m, strict=True)]
        ratio = statistics.median(ratios)
        out.append(
            Row(
                f"CPU per message, all at once, messages in turn: median of {len(cpu_c)} runs",
                f"{statistics.median(cpu_m):.2f} ms",
                f"{statistics.median(cpu_c):.2f} ms (runs' ratio {ratio:.2f} ×; "
                f"{min(ratios):.2f}–{max(ratios):.2f})",
                f"≤ {CPU_RATIO} ×",
                ratio <= CPU_RATIO,
            )
        )
    for chats, times in res.load.items():
        if not times[build]:
            continue
        mm, cc = statistics.median(times[MINIMAL]), statistics.median(times[build])
        ratios = [c / m for c, m in zip(times[build], times[MINIMAL], strict=True)]
        held = chats == BURST_CHATS
        out.append(
            Row(
                f"{chats} private chats at once, model 1 s: last reply, median of {len(ratios)}",
                f"{mm:.2f} s",
                f"{cc:.2f} s ({cc / mm:.2f} ×; runs' ratios {min(ratios):.2f}–{max(ratios):.2f})",
                f"≤ {mm * BURST_RATIO:.2f} s" if held else "—",
                cc <= mm * BURST_RATIO if held else None,
            )
        )
    return out


def start_rows(res: Results, build: str) -> list[Row]:
    med: Callable[[list[float]], float] = statistics.median
    start_m, start_c = med(res.starts[MINIMAL]), med(res.starts[build])
    return [
        Row(
            "start → first getUpdates, median",
            f"{start_m:.2f} s",
            f"{start_c:.2f} s",
            f"≤ {start_m:.2f} s",
            start_c <= start_m,
        ),
        Row(
            "first reply after a start (from the first getUpdates), median",
            f"{med(res.firsts[MINIMAL]) * 1000:.0f} ms",
            f"{med(res.firsts[build]) * 1000:.0f} ms",
        ),
    ]


def steady_rows(m: dict[str, float], c: dict[str, float]) -> list[Row]:
    return [
        Row(
            "idle RSS (Corvid: Telegram, control page on)",
            f"{m['idle_rss']:.1f} MiB",
            f"{c['idle_rss']:.1f} MiB",
            f"≤ {m['idle_rss'] + IDLE_MORE_MIB:.1f} MiB",
            c["idle_rss"] <= m["idle_rss"] + IDLE_MORE_MIB,
        ),
        Row(
            "message → reply p50, model answers at once",
            f"{m['p50']:.1f} ms",
            f"{c['p50']:.1f} ms",
            f"≤ {m['p50'] + P50_MORE_MS:.1f} ms",
            c["p50"] <= m["p50"] + P50_MORE_MS,
        ),
        Row("message → reply p95", f"{m['p95']:.1f} ms", f"{c['p95']:.1f} ms"),
        Row(
            "the fake API's own time on a message's request, median",
            f"{m['fake_ms']:.1f} ms",
            f"{c['fake_ms']:.1f} ms",
        ),
        Row(
            "message → reply p50, less the fake API's time on its request",
            f"{m['p50_own']:.1f} ms",
            f"{c['p50_own']:.1f} ms",
        ),
        Row("CPU per message, those messages", f"{m['cpu_ms']:.1f} ms", f"{c['cpu_ms']:.1f} ms"),
    ]


def table(out: list[Row], name: str = "Corvid") -> list[str]:
    lines = [f"| metric | minimal bot | {name} | target | result |", "|---|---|---|---|---|"]
    lines += [f"| {r.metric} | {r.minimal} | {r.corvid} | {r.target} | {r.result} |" for r in out]
    return lines


def commit(root: Path) -> str:
    """The checkout's commit, and whether it has changes not committed."""
    git = ["git", "-C", str(root)]
    head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run([*git, "status", "--porcelain"], capture_output=True, text=True)
    changed = " with changes not committed" if dirty.stdout.strip() else ""
    return (head.stdout.strip() or "unknown") + changed


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--starts", type=int, default=5, help="starts of each bot")
    p.add_argument("--messages", type=int, default=100, help="sequential messages")
    p.add_argument("--idle", type=float, default=5.0, help="seconds before idle RSS")
    p.add_argument("--cpu-messages", type=int, default=300, help="messages of a CPU run")
    p.add_argument("--cpu-rounds", type=int, default=5, help="CPU runs (median ratio)")
    p.add_argument("--rounds", type=int, default=5, help="runs of each load row (median)")
    p.add_argument("--loads", type=int, nargs="*", default=[BURST_CHATS, 200], help="chats at once")
    p.add_argument(
        "--also",
        action="append",
        default=[],
        metavar="NAME=PATH",
        help="another checkout of Corvid to run beside this one (its own table)",
    )
    return p


def builds_of(args: argparse.Namespace) -> dict[str, Path]:
    builds = {"corvid": ROOT}
    for given in args.also:
        name, _, path = given.partition("=")
        builds[name] = Path(path).resolve()
    for root in builds.values():
        compile_like_pip(root)
    return builds


async def main() -> None:
    args = parser().parse_args()
    run = Run(builds_of(args))
    load_before = os.getloadavg()[0]
    res = await measure(run, args)
    print(
        f"load average (1 min): {load_before:.2f} before, {os.getloadavg()[0]:.2f} after; "
        f"{args.starts} starts, {args.messages} messages, {args.cpu_rounds} CPU runs of "
        f"{args.cpu_messages}"
    )
    for build, root in run.builds.items():
        print(f"\n{build}: {commit(root)}")
        print("\n".join(table(rows(res, build))))


if __name__ == "__main__":
    asyncio.run(main())
