"""Memory consolidation benchmark, run on demand: ``python bench/consolidation_bench.py``.

Writes 30 days of the owner's logs (~150 KB) and a MEMORY.md of ~10 KB, then runs one
consolidation as the job does, through the real anthropic client against the fake Messages
API (tests/fakes), whose answer proposes 20 changes. Prints what the model is sent (characters
and tokens, as the fake counts them: characters / 4), Corvid's own wall time (the fake answers
at once: a real model adds its own seconds), and the proposal's size; then a second run with
nothing new, which must ask the model nothing.
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agent.memory.consolidation import Curator
from agent.memory.index import MemoryIndex
from agent.memory.proposal_store import Store
from agent.memory.store import Memory
from agent.model.llm import AnthropicLLM
from agent.settings import ConsolidationSettings, LLMSettings, MemorySettings
from agent.workspace.history import History
from gateway.contract.ports import Secret
from tests.fakes.anthropic_api import FakeAnthropic, Reply

TZ = ZoneInfo("Europe/Berlin")
NOW = datetime(2026, 3, 31, 22, 0, tzinfo=TZ)
WORDS = (
    "Anna Bob Lisbon Porto dentist invoice garden tomatoes train flight meeting project report "
    "deadline sister birthday cake tea coffee bank loan plants book novel concert tickets"
).split()


def sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def workspace(folder: Path, rng: random.Random) -> tuple[Path, list[str]]:
    ws = folder / "workspace"
    (ws / "memory").mkdir(parents=True)
    facts = [f"- {sentence(rng, 14)}" for _ in range(110)]
    (ws / "MEMORY.md").write_text("# Memory\n\n" + "\n".join(facts) + "\n")
    for back in range(30):
        day = (NOW - timedelta(days=back)).date()
        entries = [
            f"## {8 + i // 2:02d}:{(i % 2) * 30:02d}\n\n{sentence(rng, 28)}\n" for i in range(25)
        ]
        (ws / "memory" / f"{day.isoformat()}.md").write_text(
            f"# {day.isoformat()}\n\n" + "\n".join(entries)
        )
    return ws, facts


def answer(facts: list[str], rng: random.Random) -> str:
    changes = []
    for i in range(20):
        if i % 2:
            source = f"memory/{NOW.date().isoformat()}.md:{5 + i}"
            changes.append({"op": "add", "text": f"- {sentence(rng, 12)}", "reason": "new",
                            "sources": [source]})  # fmt: skip
        else:
            changes.append({"op": "update", "old": facts[i], "text": f"- {sentence(rng, 14)}",
                            "reason": "changed", "sources": []})  # fmt: skip
    return json.dumps({"changes": changes})


async def main() -> None:
    rng = random.Random(11)
    api = FakeAnthropic()
    await api.start()
    calls: list[int] = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            ws, facts = workspace(folder, rng)
            logs = sum(p.stat().st_size for p in (ws / "memory").glob("*.md"))
            reply = answer(facts, rng)

            def brain(body):
                calls.append(1)
                return Reply(reply)

            api.brain = brain
            (folder / "state").mkdir()
            index = MemoryIndex(folder / "state" / "index.sqlite", ws)
            cfg = MemorySettings(consolidation=ConsolidationSettings(first_days=30))
            history = History(ws, folder / "state" / "history.sqlite")
            store = Store(folder / "state" / "proposals.json")
            memory = Memory(ws, index, cfg, history=history, proposals=store)
            llm = AnthropicLLM(LLMSettings(api_key=Secret("sk-bench"), base_url=api.base_url))
            await llm.warm_up()
            curator = Curator(memory, store)
            started = time.perf_counter()
            outcome = await curator.propose(llm, NOW)
            took = time.perf_counter() - started
            assert outcome.proposal is not None
            u = outcome.usage
            tokens = u.input + u.cache_read + u.cache_write
            print(f"logs read: {logs / 1000:.0f} KB in 30 files; MEMORY.md "
                  f"{(ws / 'MEMORY.md').stat().st_size / 1000:.0f} KB")  # fmt: skip
            print(f"sent to the model: {outcome.chars_in / 1000:.0f} K characters, {tokens:,} "
                  "input tokens (the fake's count: characters / 4), of which written to the "
                  f"prompt cache (a quarter dearer): {u.cache_write:,}")  # fmt: skip
            print(f"wall time, Corvid's side: {took * 1000:.0f} ms (the fake answers at once)")
            stored = json.dumps(store.all()[0].__dict__, default=str)
            print(f"proposal: {len(outcome.proposal.items)} changes; {len(stored) / 1000:.1f} KB "
                  f"stored; message {len(outcome.proposal.summary()) / 1000:.1f} KB; diff "
                  f"{len(curator.preview(outcome.proposal)) / 1000:.1f} KB")  # fmt: skip
            before = len(calls)
            again = await curator.propose(llm, NOW)
            print(f"second run, nothing new: {len(calls) - before} model call(s), "
                  f"proposal {again.proposal}")  # fmt: skip
            await llm.close()
            history.close()
            index.close()
    finally:
        await api.close()


if __name__ == "__main__":
    asyncio.run(main())
