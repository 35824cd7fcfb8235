"""Workspace history benchmark, run on demand: ``python bench/history_bench.py [--writes N]``.

Replays N writes (default 10,000) as a busy workspace sees them: memory_append entries to the
owner's daily log (50 a day, so a log grows through the day) and every tenth write a
memory_update to a MEMORY.md of ~20 KB. Prints the time each write takes with and without its
record in ``state/history.sqlite`` (median, p95), and how much the history grows.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agent.memory.index import MemoryIndex
from agent.memory.store import Memory
from agent.settings import MemorySettings
from agent.workspace.history import History
from gateway.contract.events import OWNER

TZ = ZoneInfo("Europe/Berlin")
WORDS = "tea bank loan plants Lisbon sister flight train meeting dentist invoice garden".split()


def sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def replay(folder: Path, writes: int, keep: bool) -> list[float]:
    ws = folder / "workspace"
    ws.mkdir()
    (folder / "state").mkdir()
    history = History(ws, folder / "state" / "history.sqlite") if keep else None
    index = MemoryIndex(folder / "state" / "index.sqlite", ws)
    memory = Memory(ws, index, MemorySettings(), history=history)
    rng = random.Random(7)
    facts = [f"- {sentence(rng, 12)}" for _ in range(150)]
    (ws / "MEMORY.md").write_text("# Memory\n\n" + "\n".join(facts) + "\n")
    start = datetime(2026, 1, 1, 8, tzinfo=TZ)
    times = []
    for i in range(writes):
        now = start + timedelta(days=i // 50, minutes=10 * (i % 50))
        began = time.perf_counter()
        if i % 10 == 9:
            old = facts[rng.randrange(len(facts))]
            new = f"- {sentence(rng, 12)}"
            memory.update_long_term("replace", new, old)
            facts[facts.index(old)] = new
        else:
            memory.append(sentence(rng, 30), now, OWNER)
        times.append(time.perf_counter() - began)
    index.close()
    if history is not None:
        history.close()
    return times


def report(label: str, times: list[float]) -> None:
    ms = sorted(t * 1000 for t in times)
    p95 = ms[int(len(ms) * 0.95)]
    print(f"{label:<22} median {statistics.median(ms):6.2f} ms   p95 {p95:6.2f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--writes", type=int, default=10_000)
    n = parser.parse_args().writes
    with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
        plain = replay(Path(a), n, keep=False)
        kept = replay(Path(b), n, keep=True)
        report("write, no history", plain)
        report("write + history", kept)
        extra = [k - p for k, p in zip(sorted(kept), sorted(plain), strict=True)]
        print(
            f"recording one write    median {statistics.median(extra) * 1000:6.2f} ms (difference)"
        )
        db = Path(b) / "state" / "history.sqlite"
        size = sum(p.stat().st_size for p in db.parent.glob("history.sqlite*"))
        files = sum(p.stat().st_size for p in (Path(b) / "workspace").rglob("*.md"))
        print(
            f"{n} writes: history {size / 1e6:.1f} MB on disk; "
            f"the workspace itself {files / 1e6:.1f} MB"
        )


if __name__ == "__main__":
    main()
