"""Corvid's floor targets, checked: ``python bench/check.py`` exits 1 when a row misses."""

# Runs the comparison with the minimal bot (bench/floor_bench.py) and the soak (bench/soak.py),
# prints every row with its target, and ends with the rows missed. Run on
# demand (about half an hour), not by the test suite. The targets are written in those two
# benches: CPU per message ≤ 1.3 × the minimal bot's; 50 chats at once ≤ 1.1 × its time;
# message → reply p50 ≤ its + 3 ms; start → first getUpdates ≤ its; idle RSS ≤ its + 30 MiB;
# a soak of 10,000 messages loses none, answers none twice and grows by ≤ 10 MiB.

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import floor_bench, soak
from bench.floor_bench import Row


def soak_rows(r: dict, messages: int) -> list[Row]:
    """The soak's rows held to a target (the ``minimal`` column is empty: Corvid alone)."""
    first, last = r["rows"][0], r["rows"][-1]
    growth = last["rss"] - first["rss"]
    return [
        Row(
            f"soak of {messages:,} messages: lost / answered twice",
            "",
            f"{r['lost']} / {r['twice']}",
            "0 / 0",
            r["lost"] == 0 and r["twice"] == 0,
        ),
        Row(
            f"soak: RSS growth, {first['messages']:,} → {last['messages']:,} messages",
            "",
            f"{growth:+.1f} MiB",
            f"≤ {soak.MAX_GROWTH_MIB:g} MiB",
            growth <= soak.MAX_GROWTH_MIB,
        ),
    ]


async def main() -> int:
    p = floor_bench.parser()
    p.description = (__doc__ or "").splitlines()[0]
    p.add_argument("--soak-messages", type=int, default=10_000)
    p.add_argument("--soak-chats", type=int, default=200)
    p.add_argument("--soak-outage", type=float, default=45.0, help="seconds; 0 for none")
    args = p.parse_args()
    run = floor_bench.Run(floor_bench.builds_of(args))
    load_before = os.getloadavg()[0]
    res = await floor_bench.measure(run, args)
    with tempfile.TemporaryDirectory() as d:
        soaked = await soak.soak(Path(d), args.soak_messages, args.soak_chats, args.soak_outage)
    print(f"load average (1 min): {load_before:.2f} before, {os.getloadavg()[0]:.2f} after")
    missed = []
    for build, root in run.builds.items():
        shown = floor_bench.rows(res, build)
        if build == "corvid":
            shown += soak_rows(soaked, args.soak_messages)
        print(f"\n{build}: {floor_bench.commit(root)}")
        print("\n".join(floor_bench.table(shown)))
        missed += [f"{build}: {row.metric}" for row in shown if row.ok is False]
    if missed:
        print("\nMISSED:\n" + "\n".join(f"- {m}" for m in missed), file=sys.stderr)
        return 1
    print("\nevery row met its target")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
