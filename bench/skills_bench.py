"""Skills and the prompt cache, run on demand: ``python bench/skills_bench.py``.

The same 20-turn private chat as ``gateway_bench.bench_prompt_cache`` (the real SDK against
the fake API and its prompt-cache simulation), once with the bundled skills only and once with
20 more installed in the workspace. The skills' list is part of the system prompt, so it must
be the same bytes in every request: the share of input read from the cache must not drop.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from gateway_bench import CHAT, CacheUsage

from gateway.app import build_app
from gateway.config.home import init_home
from tests.conftest import RecordingChannel, make_config


def install(workspace: Path, count: int) -> None:
    for i in range(count):
        folder = workspace / "skills" / f"skill-{i:02d}"
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(
            f"---\nname: skill-{i:02d}\ndescription: Does task number {i} the way the owner "
            "likes it, step by step, with the checks it needs.\n---\n"
            + "A step of the instructions.\n"
            * 40
        )


async def chat(home: Path, turns: int) -> dict[str, float]:
    api = CacheUsage()
    await api.start()
    chan = RecordingChannel()
    app = build_app(make_config(home, api.base_url), [chan])
    await app.start()
    try:
        for i in range(turns):
            await chan.push(CHAT[i % len(CHAT)] + f" ({i + 1})")
    finally:
        await app.stop()
        await api.close()
    usages = api.usages

    def total(u: dict[str, int]) -> int:
        return u["input_tokens"] + u["cache_read_input_tokens"] + u["cache_creation_input_tokens"]

    read = sum(u["cache_read_input_tokens"] for u in usages[1:])
    return {
        "after_first": read / sum(map(total, usages[1:])),
        "prefix_kept": read / sum(map(total, usages[:-1])),
        "first_tokens": total(usages[0]),
    }


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--skills", type=int, default=20)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as d:
        for count in (0, args.skills):
            home = Path(d) / f"home-{count}"
            init_home(home, {})
            install(home / "workspace", count)
            rows.append((count, await chat(home, args.turns)))
    print(f"Skills and the prompt cache — {platform.python_version()}, {os.cpu_count()} CPUs")
    print("| skills installed (besides the bundled) | first request, tokens | "
          f"cache reads ÷ input, turns 2–{args.turns} | reads ÷ previous prompt |")  # fmt: skip
    print("|---|---|---|---|")
    for count, got in rows:
        print(
            f"| {count} | {got['first_tokens']:.0f} | {got['after_first'] * 100:.1f} % | "
            f"{got['prefix_kept'] * 100:.1f} % |"
        )


if __name__ == "__main__":
    asyncio.run(main())
