"""Workspace history benchmark, run on demand: ``python bench/history_bench.py [--writes N]``.

Replays N writes (default 10,000) as a busy workspace sees them: memory_append entries to the
owner's daily log (50 a day, so a log grows through the day) and every tenth write a
memory_update to a MEMORY.md of ~20 KB. Each write goes to two workspaces in turn, one
keeping a history in ``state/history.sqlite``; prints each one's time (median, p95), the
difference write by write, and how much the history grows.
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


class Replay:
    """One workspace and the writes made to it, as a busy day makes them."""

    def __init__(self, folder: Path, keep: bool) -> None:
        ws = folder / "workspace"
        ws.mkdir()
        (folder / "state").mkdir()
        self.history = History(ws, folder / "state" / "history.sqlite") if keep else None
        self.index = MemoryIndex(folder / "state" / "index.sqlite", ws)
        self.memory = Memory(ws, self.index, MemorySettings(), history=self.history)
        self.rng = random.Random(7)
        self.facts = [f"- {sentence(self.rng, 12)}" for _ in range(150)]
        (ws / "MEMORY.md").write_text("# Memory\n\n" + "\n".join(self.facts) + "\n")
        self.start = datetime(2026, 1, 1, 8, tzinfo=TZ)

    def write(self, i: int) -> float:
        now = self.start + timedelta(days=i // 50, minutes=10 * (i % 50))
        began = time.perf_counter()
        if i % 10 == 9:
            old = self.facts[self.rng.randrange(len(self.facts))]
            new = f"- {sentence(self.rng, 12)}"
            self.memory.update_long_term("replace", new, old)
            self.facts[self.facts.index(old)] = new
        else:
            self.memory.append(sentence(self.rng, 30), now, OWNER)
        return time.perf_counter() - began

    def close(self) -> None:
        self.index.close()
        if self.history is not None:
            self.history.close()


def report(label: str, times: list[float]) -> None:
    ms = sorted(t * 1000 for t in times)
    p95 = ms[int(len(ms) * 0.95)]
    print(f"{label:<22} median {statistics.median(ms):6.2f} ms   p95 {p95:6.2f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--writes", type=int, default=10_000)
    n = parser.parse_args().writes
    with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
        plain_run, kept_run = Replay(Path(a), keep=False), Replay(Path(b), keep=True)
        # The same write to both, one after the other: a busy machine slows both alike.
        plain, kept = [], []
        for i in range(n):
            plain.append(plain_run.write(i))
            kept.append(kept_run.write(i))
        plain_run.close()
        kept_run.close()
        report("write, no history", plain)
        report("write + history", kept)
        extra = sorted(k - p for k, p in zip(kept, plain, strict=True))
        print(
            f"recording one write    median {statistics.median(extra) * 1000:6.2f} ms, "
            f"p95 {extra[int(len(extra) * 0.95)] * 1000:6.2f} ms (the same write, paired)"
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
