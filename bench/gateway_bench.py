"""Gateway benchmarks, run on demand: ``python bench/gateway_bench.py``. Prints a table.

1. overhead: channel → gateway → agent → transcript → channel with an in-process model that
   answers at once; wall time and CPU per message (p50/p99).
2. concurrency: 200 sessions × 1 message with a 1 s in-process model; time to the last reply.
3. batching: 20 rapid messages to one session; model calls after the first, and order.
4. through the SDK: the same 200 × 1 s through the real anthropic client to the fake API in a
   separate process, against a bare ``AsyncAnthropic`` client sending the same requests.
5. prompt cache: a 20-turn private chat through the gateway, the agent and the real anthropic
   client to the fake API, whose prompt-cache simulation reports cache reads and writes; the
   share of input tokens read from the cache shows whether the prompt prefix stays byte-stable.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agent.model.port import LLMResponse, PlainModel
from agent.model.request import with_cache_breakpoints
from agent.sessions.state import Usage
from gateway.app import build_app
from gateway.config.home import init_home
from gateway.config.loader import parse_config
from gateway.contract.events import SessionKey
from tests.conftest import RecordingChannel
from tests.fakes.anthropic_api import (
    FakeAnthropic,
    Reply,
    last_user_text,
    request_kind,
    tokens,
)


class InProcessLLM(PlainModel):
    """A model that answers after ``latency`` seconds without any HTTP."""

    model = "bench"
    context_window = 200_000

    def __init__(self, latency: float = 0.0) -> None:
        self.latency = latency
        self.calls: list[list[dict[str, Any]]] = []

    async def complete(
        self, system, messages, tools, system_note=None, deltas=None, *, charge
    ) -> LLMResponse:
        self.calls.append(messages[-1]["content"])
        if self.latency:
            await asyncio.sleep(self.latency)
        if deltas is not None:
            deltas.text("ok")
        return LLMResponse([{"type": "text", "text": "ok"}], "end_turn", Usage(100, 0, 0, 5))


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, round(p / 100 * (len(values) - 1)))]


def make_config(home: Path, base_url: str | None = None, **sections: dict[str, Any]):
    init_home(home, {})
    llm: dict[str, Any] = {"api_key": "bench-key", "retries": 0, "timeout": 30}
    if base_url:
        llm["base_url"] = base_url
    return parse_config({"timezone": "UTC", "llm": llm, **sections}, home=home, environ={})


async def bench_overhead(tmp: Path, n: int = 2000, sessions: int = 20) -> dict[str, float]:
    llm = InProcessLLM()
    chan = RecordingChannel()
    gw = build_app(make_config(tmp / "overhead"), [chan], llm=llm)
    await gw.start()
    keys = [SessionKey("test", "private", str(i)) for i in range(sessions)]
    for key in keys:  # session creation is a one-off cost; measure steady state
        await chan.push("warm up", key=key)
    walls: list[float] = []
    cpus: list[float] = []
    for i in range(n):
        key = keys[i % sessions]
        t0, c0 = time.perf_counter(), time.process_time()
        await chan.push(f"message {i}", key=key)
        walls.append((time.perf_counter() - t0) * 1000)
        cpus.append((time.process_time() - c0) * 1000)
    await gw.stop()
    assert chan.texts() == ["ok"] * (n + sessions), set(chan.texts())
    return {
        "p50_ms": pct(walls, 50),
        "p99_ms": pct(walls, 99),
        "cpu_ms_mean": statistics.mean(cpus),
    }


async def bench_concurrency(tmp: Path, sessions: int = 200, latency: float = 1.0) -> float:
    llm = InProcessLLM(latency)
    chan = RecordingChannel()
    gw = build_app(make_config(tmp / "concurrency"), [chan], llm=llm)
    await gw.start()
    t0 = time.perf_counter()
    futures = [chan.push("hi", key=SessionKey("test", "group", str(i))) for i in range(sessions)]
    await asyncio.gather(*futures)
    elapsed = time.perf_counter() - t0
    await gw.stop()
    assert chan.texts() == ["ok"] * sessions, set(chan.texts())
    return elapsed


async def bench_batching(tmp: Path, n: int = 20, latency: float = 0.05) -> tuple[int, bool]:
    llm = InProcessLLM(latency)
    chan = RecordingChannel()
    gw = build_app(make_config(tmp / "batching"), [chan], llm=llm)
    await gw.start()
    futures = []
    for i in range(n):
        futures.append(chan.push(f"m{i:02d}"))
        await asyncio.sleep(0.005)  # a person typing fast: messages arrive while turns run
    await asyncio.gather(*futures)
    await gw.stop()
    assert set(chan.texts()) == {"ok"}, set(chan.texts())
    seen = [
        b["text"].rsplit("\n", 1)[-1]
        for content in llm.calls
        for b in content
        if b["type"] == "text"
    ]
    in_order = seen == [f"m{i:02d}" for i in range(n)]
    return len(llm.calls) - 1, in_order


@contextlib.asynccontextmanager
async def fake_api_process(latency: float):
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.fakes.anthropic_api",
        "--latency",
        str(latency),
        stdout=asyncio.subprocess.PIPE,
        cwd=ROOT,
    )
    assert proc.stdout is not None
    line = await asyncio.wait_for(proc.stdout.readline(), 30)
    try:
        yield line.decode().strip()
    finally:
        proc.terminate()
        await proc.wait()


async def bench_sdk(
    tmp: Path, sessions: int = 200, latency: float = 1.0, rounds: int = 1, same_body: bool = True
) -> tuple[list[float], list[float]]:
    """``sessions`` requests at once, each answered after ``latency`` s by the fake API in
    another process: seconds until the last answer through a bare ``AsyncAnthropic`` client,
    and until the last reply through Corvid (new sessions every round), per round.

    With ``same_body`` the bare client sends what Corvid sends for the first message of a new
    group session (system prompt, tools, cache breakpoints), so both pay the SDK's per-request
    cost for the same bytes; otherwise a minimal request ("hi", no system, no tools).
    """
    import anthropic

    bare_times: list[float] = []
    corvid_times: list[float] = []
    async with fake_api_process(latency) as url:
        bare = anthropic.AsyncAnthropic(api_key="bench-key", base_url=url, max_retries=0)
        config = make_config(tmp / f"sdk{sessions}", url)
        chan = RecordingChannel()
        gw = build_app(config, [chan])
        body: dict[str, Any] = {
            "model": config.llm.model,
            "max_tokens": config.llm.max_tokens,
            "messages": [{"role": "user", "content": "hi"}],
        }
        if same_body:
            key = SessionKey("test", "group", "bare")
            user = {
                "role": "user",
                "content": [
                    {"type": "text", "text": "[Sat 2026-11-21 09:00 UTC · Ada (id 1)]\nhi"}
                ],
            }
            system, messages, tools = with_cache_breakpoints(
                gw.agent.prompts(key), [user], gw.agent.tools.schemas()
            )
            body.update(system=system, messages=messages, tools=tools)

        async def one():
            async with bare.messages.stream(**body) as s:
                await s.get_final_message()

        await gw.start()
        await one()  # warm the connection pools
        await chan.push("warm up", key=SessionKey("test", "group", "warm"))
        for r in range(rounds):  # alternate, so drift on the machine hits both alike
            t0 = time.perf_counter()
            await asyncio.gather(*(one() for _ in range(sessions)))
            bare_times.append(time.perf_counter() - t0)
            keys = [SessionKey("test", "group", f"{r}-{i}") for i in range(sessions)]
            t0 = time.perf_counter()
            await asyncio.gather(*(chan.push("hi", key=key) for key in keys))
            corvid_times.append(time.perf_counter() - t0)
        await gw.stop()
        await bare.close()
        texts = chan.texts()
        assert len(texts) == rounds * sessions + 1, len(texts)
        assert all(t.startswith("echo:") for t in texts), texts[:3]
    return bare_times, corvid_times


CHAT = [
    "Morning! Can you remind me what we decided about the garden fence?",
    "Right. And how much did the quote from the second carpenter come to?",
    "Let's go with the cheaper one then, but ask about the gate hinges first.",
    "Also, my sister arrives on Friday; what time does her train get in?",
    "Put a note in today's log that the fence is decided, please.",
]


class CacheUsage(FakeAnthropic):
    """The fake API, keeping the usage numbers (with its cache simulation) of each chat call."""

    def __init__(self) -> None:
        # The API caches a prefix only from 1024 tokens on (Sonnet); the fake can do the same.
        super().__init__(brain=self.answer, min_cache_tokens=1024)
        self.usages: list[dict[str, int]] = []
        self.recalled = 0  # chat requests whose newest message carries recalled notes

    @staticmethod
    def answer(body: dict[str, Any]) -> Reply:
        return Reply(CacheUsage.answer_text(last_user_text(body).split("\n", 1)[-1]))

    @staticmethod
    def answer_text(asked: str) -> str:
        return f"About “{asked}”: " + "here is a considered answer of a few lines. " * 12

    def _usage(self, body: dict[str, Any]) -> dict[str, int]:
        usage = super()._usage(body)
        if request_kind(body) == "chat":
            self.usages.append(usage)
            self.recalled += "[Recalled from memory" in json.dumps(body["messages"][-1])
        return usage


async def bench_prompt_cache(
    tmp: Path,
    turns: int = 20,
    *,
    seed: Callable[[Path], object] | None = None,
    **sections: dict[str, Any],
) -> dict[str, float]:
    """A private chat of ``turns`` turns through the gateway, the agent and the real SDK;
    ``seed`` may write the workspace's memory first, ``sections`` change the configuration.

    Returns the share of input tokens read from the cache, as the fake API reports them, over
    all requests and over the requests after the first (which can only write the cache); and
    the cache reads of each request after the first as a share of the whole prompt of the
    request before it: 100 % when the prompt only ever grows at its end, byte-stable before.
    """
    api = CacheUsage()
    await api.start()
    chan = RecordingChannel()
    config = make_config(tmp / "cache", api.base_url, **sections)
    if seed is not None:
        seed(config.workspace)
    gw = build_app(config, [chan])
    await gw.start()
    memory = gw.agent.memory
    if seed is not None and memory is not None and memory.vectors is not None:
        await asyncio.to_thread(memory.vectors.wait_idle, 600)  # the seeded notes embedded
    try:
        for i in range(turns):
            await chan.push(CHAT[i % len(CHAT)] + f" ({i + 1})")
    finally:
        await gw.stop()
        await api.close()
    usages = api.usages
    assert len(usages) == turns, f"{len(usages)} model calls for {turns} turns"
    # The least a request after the first can add that no cache holds: the last reply and the
    # new message as the person wrote it (the fake's count), with no framing at all.
    said = [CHAT[i % len(CHAT)] + f" ({i + 1})" for i in range(turns)]
    replies = [CacheUsage.answer_text(m) for m in said]
    least = [tokens(replies[i - 1]) + tokens(said[i]) for i in range(1, turns)]

    def total(u: dict[str, int]) -> int:
        return u["input_tokens"] + u["cache_read_input_tokens"] + u["cache_creation_input_tokens"]

    def read_share(us: list[dict[str, int]]) -> float:
        return sum(u["cache_read_input_tokens"] for u in us) / sum(map(total, us))

    kept = sum(u["cache_read_input_tokens"] for u in usages[1:]) / sum(map(total, usages[:-1]))
    return {
        "all": read_share(usages),
        "after_first": read_share(usages[1:]),
        "turns_2_12": read_share(usages[1:12]),
        # What each request after the first adds that no cache holds: the last reply and the
        # new message, when the prefix before them is byte-stable.
        "uncached_per_turn": sum(total(u) - u["cache_read_input_tokens"] for u in usages[1:])
        / (len(usages) - 1),
        "prefix_kept": kept,
        "least_uncached_per_turn": sum(least) / len(least),
        # The share a client that adds nothing but the new text would read: no prompt of
        # this length can do better, whatever it keeps stable.
        "ceiling_2_12": sum(total(u) - n for u, n in zip(usages[1:12], least, strict=False))
        / sum(map(total, usages[1:12])),
        "first_request_tokens": usages[0]["cache_creation_input_tokens"]
        + usages[0]["input_tokens"],
        "recalled": api.recalled,
    }


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--skip-sdk", action="store_true", help="skip the SDK comparison")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        rows: list[tuple[str, str, str]] = []
        o = await bench_overhead(tmp)
        rows.append(("gateway overhead per message, p50", f"{o['p50_ms']:.2f} ms", "≤ 2 ms"))
        rows.append(("gateway overhead per message, p99", f"{o['p99_ms']:.2f} ms", "≤ 10 ms"))
        rows.append(("CPU per message (mean)", f"{o['cpu_ms_mean']:.2f} ms", "≤ 10 ms"))
        c = await bench_concurrency(tmp)
        rows.append(("200 sessions × 1 msg, 1 s model (in-process)", f"{c:.3f} s", "≤ 1.3 s"))
        calls, ordered = await bench_batching(tmp)
        rows.append(("20 rapid messages: model calls after the first", str(calls), "≤ 2"))
        rows.append(("20 rapid messages: answered in order", "yes" if ordered else "NO", "yes"))
        if not args.skip_sdk:
            (bare,), (corvid,) = await bench_sdk(tmp)
            rows.append(("200 × 1 s via SDK + fake API: bare AsyncAnthropic", f"{bare:.3f} s", "—"))
            rows.append(
                (
                    "200 × 1 s via SDK + fake API: Corvid",
                    f"{corvid:.3f} s",
                    f"≤ {1.1 * bare:.3f} s (1.1 × bare)",
                )
            )
        cache = await bench_prompt_cache(tmp)
        rows.append(("prompt-cache reads / input tokens, 20 turns", f"{cache['all']:.1%}", "—"))
        rows.append(
            (
                "prompt-cache reads / input tokens, turns 2–20",
                f"{cache['after_first']:.1%}",
                "—",
            )
        )
        rows.append(
            (
                "prompt-cache reads / input tokens, turns 2–12",
                f"{cache['turns_2_12']:.1%}",
                "≥ 99.5%",
            )
        )
        rows.append(
            (
                "prompt-cache reads / previous request's whole prompt",
                f"{cache['prefix_kept']:.1%}",
                "100%",
            )
        )
        rows.append(
            (
                "input no cache holds, per turn after the first",
                f"{cache['uncached_per_turn']:.0f} tok",
                "—",
            )
        )
    width = max(len(r[0]) for r in rows)
    print(f"{'metric':<{width}}  {'measured':>12}  target")
    for name, value, target in rows:
        print(f"{name:<{width}}  {value:>12}  {target}")
    print(
        f"\nmachine: {os.cpu_count()} CPUs, Python {sys.version.split()[0]}, "
        f"{platform.system()} {platform.release()}"
    )


if __name__ == "__main__":
    asyncio.run(main())
