"""Telegram benchmarks, run on demand: ``python bench/telegram_bench.py``. Prints a table.

``corvid run`` runs as a real process, its Telegram channel polling a fake Bot API and its model
calls going to the fake Messages API (answering at once), both served from this process:

1. start-up: process start → first ``getUpdates`` (median of several starts);
2. idle RSS once polling and settled (the SDK import that follows start-up done);
3. message → reply: a message is queued on the fake Bot API, the time until Corvid's
   ``sendMessage`` arrives, p50/p95 over sequential messages, and Corvid's CPU per message;
4. idle RSS with Discord enabled beside Telegram (``bench_idle_both``), its gateway and REST
   API faked too.
"""

from __future__ import annotations

import argparse
import asyncio
import compileall
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.telegram_api import FakeTelegram

TICKS = os.sysconf("SC_CLK_TCK")


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, round(p / 100 * (len(values) - 1)))]


def configure(home: Path, api: FakeAnthropic, tg: FakeTelegram, discord: Any = None) -> None:
    """A home for ``corvid run`` against the fakes: Telegram, and Discord if ``discord`` (a
    FakeDiscord) is given. Tokens come from the environment (see ``spawn``)."""
    tg.write_corvid_config(home, api.base_url, poll_timeout=10)
    config = yaml.safe_load((home / "config.yaml").read_text())
    config["logging"]["level"] = "WARNING"
    config["web"]["port"] = 0  # the control page on any free port: never a clash
    if discord is not None:
        section = discord.channel_config()
        del section["token"]  # from the environment
        config["channels"]["discord"].update(section)
    (home / "config.yaml").write_text(yaml.safe_dump(config))


def compile_like_pip(root: Path = ROOT) -> None:
    """Write the bytecode of Corvid's own modules (of the checkout at ``root``), as ``pip
    install`` does for an installed Corvid: run from a checkout with ``PYTHONDONTWRITEBYTECODE``
    set (as some machines and containers set it), every start would compile its modules
    again, CPU that an installed Corvid never spends."""
    for package in ("gateway", "channels", "agent"):
        compileall.compile_dir(root / package, quiet=1)


# Once, as this module is loaded by a bench: never inside a start the bench times.
compile_like_pip()


async def spawn(
    home: Path,
    tg: FakeTelegram,
    discord: Any = None,
    env_extra: dict[str, str] | None = None,
    root: Path = ROOT,
) -> asyncio.subprocess.Process:
    """``corvid run`` on ``home``, from the checkout at ``root`` (this one by default)."""
    env = {
        **os.environ,
        "CORVID_HOME": str(home),
        "ANTHROPIC_API_KEY": "sk-bench",
        "TELEGRAM_BOT_TOKEN": tg.token,
        **(env_extra or {}),
    }
    env.pop("ANTHROPIC_AUTH_TOKEN", None)
    if discord is not None:
        env["DISCORD_BOT_TOKEN"] = discord.token
        env["SSL_CERT_FILE"] = discord.ca_file  # the fake serves TLS from a test authority
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "gateway.ops.cli",
        "run",
        cwd=root,
        env=env,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )


async def stop(proc: asyncio.subprocess.Process) -> None:
    proc.terminate()
    try:
        await asyncio.wait_for(proc.wait(), 30)
    except TimeoutError:
        proc.kill()
        await proc.wait()


async def close_telegram(tg: FakeTelegram) -> None:
    """Close the fake once Corvid is gone. A long poll Corvid left behind would hold the
    server's shutdown for up to ``poll_timeout``; an update nobody will read releases it."""
    tg.text("(bench: release the last long poll)")
    await tg.close()


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


async def _steady(
    read: Callable[[], float],
    what: str,
    at_least: float,
    over: float,
    spread: float,
    limit: float,
    clock: Callable[[], float] = time.monotonic,
) -> float:
    """``read()`` once, after ``at_least`` seconds, it has moved by at most ``spread`` over the
    last ``over`` seconds; RuntimeError naming ``what`` if it still moves after ``limit``."""
    t0 = clock()
    samples: list[tuple[float, float]] = []
    while True:
        now = clock()
        samples.append((now, read()))
        # From the last reading at least ``over`` old: on a busy machine the one before this
        # may be older than that, and a window of one reading shows no movement at all.
        old = [i for i, (t, _) in enumerate(samples) if t <= now - over]
        recent = [v for _, v in samples[old[-1] :]] if old else []
        if now - t0 >= at_least and recent and max(recent) - min(recent) <= spread:
            return samples[-1][1]
        if now - t0 > limit:
            raise RuntimeError(f"{what} still changing after {limit} s: {recent}")
        await asyncio.sleep(0.1)


async def settled_cpu(
    pid: int, quiet: float = 1.0, most: float = 0.02, limit: float = 30.0
) -> None:
    """Return once the process has spent at most ``most`` seconds of CPU in the last ``quiet``
    seconds: what a start leaves running in threads (the control page's import, once the model's
    SDK has loaded) is over, so it is not counted as the next messages' CPU."""
    await _steady(lambda: cpu_seconds(pid), f"CPU time of {pid}", 0.0, quiet, most, limit)


async def settled_rss(pid: int, at_least: float, steady: float = 2.0, limit: float = 30.0) -> float:
    """RSS in MiB once the process is idle: after ``at_least`` seconds, and unchanged (within
    0.5 MiB) for ``steady`` seconds; start-up work such as the SDK import must be over."""
    return await _steady(lambda: rss_mib(pid), f"RSS of {pid}", at_least, steady, 0.5, limit)


async def bench_startup(tmp: Path, runs: int) -> list[float]:
    times = []
    for i in range(runs):
        api, tg = FakeAnthropic(), FakeTelegram()
        await api.start()
        await tg.start()
        home = tmp / f"start{i}"
        configure(home, api, tg)
        t0 = time.monotonic()
        proc = await spawn(home, tg)
        try:
            await tg.wait_for(lambda tg=tg: bool(tg.calls_to("getUpdates")), timeout=60)
            times.append(tg.calls_to("getUpdates")[0].at - t0)
        finally:
            await stop(proc)
            await close_telegram(tg)
            await api.close()
    return times


async def bench_stop(tmp: Path, runs: int) -> list[float]:
    """SIGTERM → exit, with a message answered and the next long poll open: what a person
    waits at Ctrl-C or ``systemctl stop``."""
    times = []
    for i in range(runs):
        api, tg = FakeAnthropic(), FakeTelegram()
        await api.start()
        await tg.start()
        home = tmp / f"stop{i}"
        configure(home, api, tg)
        proc = await spawn(home, tg)
        try:
            tg.text("hello")
            await tg.wait_sent(1, timeout=60)
            await tg.wait_for(
                lambda tg=tg: any(c.params.get("offset") for c in tg.calls_to("getUpdates")),
                timeout=60,
            )
            t0 = time.monotonic()
            await stop(proc)
            times.append(time.monotonic() - t0)
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
            await close_telegram(tg)
            await api.close()
    return times


async def bench_messages(tmp: Path, n: int, idle: float, steady: float = 2.0) -> dict[str, float]:
    api, tg = FakeAnthropic(), FakeTelegram()
    await api.start()
    await tg.start()
    home = tmp / "messages"
    configure(home, api, tg)
    proc = await spawn(home, tg)
    try:
        await tg.wait_for(lambda: bool(tg.calls_to("getUpdates")), timeout=60)
        idle_rss = await settled_rss(proc.pid, idle, steady)
        # Warm-up: the first message pays for the SDK client and the first connections.
        tg.text("warm up")
        await tg.wait_sent(1, timeout=60)
        latencies = []
        cpu0 = cpu_seconds(proc.pid)
        for i in range(n):
            t0 = time.monotonic()
            tg.text(f"message {i}")
            await tg.wait_sent(i + 2, timeout=60)
            latencies.append(tg.calls_to("sendMessage")[-1].at - t0)
        cpu = cpu_seconds(proc.pid) - cpu0
        busy_rss = rss_mib(proc.pid)
    finally:
        await stop(proc)
        await close_telegram(tg)
        await api.close()
    return {
        "idle_rss": idle_rss,
        "rss_after": busy_rss,
        "p50": pct(latencies, 50) * 1000,
        "p95": pct(latencies, 95) * 1000,
        "cpu_ms": cpu / n * 1000,
    }


async def bench_idle_both(tmp: Path, idle: float, steady: float = 2.0) -> float:
    """Idle RSS (MiB) of ``corvid run`` with Telegram and Discord both enabled and connected.

    Measured once both channels are up (first ``getUpdates``; Discord READY and the slash
    commands synced) and the process has settled; then one message on each platform checks
    that both were really being served."""
    from tests.fakes.discord_api import FakeDiscord

    api, tg, dc = FakeAnthropic(), FakeTelegram(), FakeDiscord()
    await api.start()
    await tg.start()
    await dc.start()
    home = tmp / "both"
    configure(home, api, tg, dc)
    proc = await spawn(home, tg, dc)
    try:
        await tg.wait_for(lambda: bool(tg.calls_to("getUpdates")), timeout=60)
        await dc.wait_for(lambda: bool(dc.calls_to("PUT", "/applications/")), timeout=60)
        rss = await settled_rss(proc.pid, idle, steady)
        tg.text("hello on telegram")
        dc.message("hello on discord", guild=False)
        sent_tg = await tg.wait_sent(1, timeout=60)
        sent_dc = await dc.wait_sent(1, timeout=60)
        assert sent_tg[0]["shown"] == "echo: hello on telegram", sent_tg
        assert sent_dc[0]["content"] == "echo: hello on discord", sent_dc
    finally:
        await stop(proc)
        await close_telegram(tg)
        await dc.close()
        await api.close()
    return rss


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--starts", type=int, default=5)
    parser.add_argument("--messages", type=int, default=100)
    parser.add_argument("--idle", type=float, default=5.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        starts = await bench_startup(tmp, args.starts)
        stops = await bench_stop(tmp, args.starts)
        msgs = await bench_messages(tmp, args.messages, args.idle)
        both = await bench_idle_both(tmp, args.idle)
    print(f"Telegram benchmarks — {platform.python_version()}, {os.cpu_count()} CPUs")
    print("| metric | measured | target |")
    print("|---|---|---|")
    print(
        f"| process start → first getUpdates, median (range) of {len(starts)} | "
        f"{statistics.median(starts):.2f} s ({min(starts):.2f}–{max(starts):.2f}) | ≤ 0.6 s |"
    )
    print(
        f"| SIGTERM → exit, a long poll open, median (range) of {len(stops)} | "
        f"{statistics.median(stops):.2f} s ({min(stops):.2f}–{max(stops):.2f}) | ≤ 2 s |"
    )
    print(f"| idle RSS, Telegram only | {msgs['idle_rss']:.0f} MiB | ≤ 100 MiB |")
    print(f"| idle RSS, Telegram + Discord | {both:.0f} MiB | — |")
    print(
        f"| message → reply, model answering at once, p50 / p95 ({args.messages} messages) | "
        f"{msgs['p50']:.1f} / {msgs['p95']:.1f} ms | p50 ≤ 30 ms |"
    )
    print(f"| Corvid CPU per message | {msgs['cpu_ms']:.1f} ms | ≤ 10 ms |")
    print(f"| RSS after the messages | {msgs['rss_after']:.0f} MiB | — |")


if __name__ == "__main__":
    asyncio.run(main())
