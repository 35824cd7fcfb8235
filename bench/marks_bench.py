"""What the nightly consolidation marks out of date over a year, run on demand:
``python bench/marks_bench.py [--judge model|first|true|search|blind] [--others N]``. Prints a
table.

The year of ``memory_year_bench.py`` (bench/retrieval/year.py), without marks. Each day that
holds a newer version of a changed fact, and as many other days (seeded), is consolidated in
turn as the job does it at 23:30: the day's log is new, every other log read already, and the
run lists the older notes a search ranks near each new entry. Every ``replaces`` change the
answer makes is applied, so later days see the marks before them. Then the questions of the
year are asked as ``memory_year_bench.py`` asks them.

The judge is who answers: ``model``, the real Messages API through the anthropic client with
the key in ANTHROPIC_API_KEY (the only way to learn how often a model names what it is shown;
it costs one call a day run); offline, against the fake Messages API of the tests, ``true``
names exactly the older versions of the same fact among the notes listed (what the marks can
do at best), ``search`` does the same and, for a newer version with no older one listed under
it, first searches with ``earlier_notes`` by the fact's name in the set ("door code", "vet":
a stand-in for the words a model would choose, which only ``model`` measures) and names what
that finds too, ``blind`` does the same with the words a model wrote for each newer version
seeing only that note (``bench/retrieval/year_searched.py``), and ``first`` names the first
note listed under every new entry (a careless model: what false marks cost).

Rows: marks made, those that name an older version of the same fact and those that do not;
the newer versions whose older one was marked; then, with the marks, "latest first" for the
held-out half, the tuning half and the fresh facts, and the held-out half's recall@10 and
MRR@10 (a false mark moves a note one place down).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import tempfile
from collections.abc import Callable
from datetime import date, datetime, time, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agent.memory.consolidation import Curator
from agent.memory.hybrid import HybridSearch
from agent.memory.index import MemoryIndex
from agent.memory.proposal_store import Store
from agent.memory.proposals import REPLACES
from agent.memory.replacing import SEARCH
from agent.memory.semantic import SemanticIndex
from agent.memory.store import Memory
from agent.model.llm import AnthropicLLM
from agent.settings import ConsolidationSettings, LLMSettings, MemorySettings, SearchSettings
from bench.memory_year_bench import CACHE, _half, embedder_named, hybrid, measure
from bench.retrieval.year import DAYS, FIRST_DAY, TODAY, Span, build
from bench.retrieval.year_fresh import FRESH
from bench.retrieval.year_searched import SEARCHED
from bench.retrieval.year_series import CHANGED
from gateway.contract.ports import Secret
from tests.fakes.anthropic_api import FakeAnthropic, Reply

TZ = ZoneInfo("Europe/Berlin")
LISTED = "## Earlier notes a new entry may make out of date\n\n"


def version_of(notes: dict[str, Span]) -> Callable[[str], tuple[str, int] | None]:
    """A note named as the run names it ("memory/x.md:3") → (changed fact, version), or None
    for any other note."""
    versions = {
        key: (key.rpartition(":")[0], int(key.rpartition(":")[2]))
        for key in notes
        if key.rpartition(":")[0] in {c.subject for c in CHANGED + FRESH}
    }

    def of(ref: str) -> tuple[str, int] | None:
        path, _, line = ref.rpartition(":")
        for key, (where, first, last) in notes.items():
            if where == path and first <= int(line) <= last:
                return versions.get(key)
        return None

    return of


def listed_pairs(prompt: str) -> list[tuple[str, str]]:
    """(new entry, older note) as the run lists them, in order."""
    if LISTED not in prompt:
        return []
    pairs = []
    newer = ""
    for line in prompt.split(LISTED, 1)[1].splitlines():
        if line.startswith("### "):
            newer = line[4:].strip()
        elif line.startswith("- ") and newer:
            pairs.append((newer, line[2:].split(" ", 1)[0]))
    return pairs


def found_pairs(body: dict[str, Any]) -> list[tuple[str, str]]:
    """(new entry, older note) as the run's searches (``earlier_notes``) found them, in order."""
    pairs = []
    for message in body["messages"]:
        for block in message["content"] if isinstance(message["content"], list) else []:
            if block.get("type") == "tool_result" and not block.get("is_error"):
                text = block["content"]
                text = text if isinstance(text, str) else "".join(b["text"] for b in text)
                pairs += listed_pairs(LISTED + text)
    return pairs


def new_entries(prompt: str) -> list[str]:
    """The new entries of the run's logs, named as the run numbers them ("memory/x.md:3")."""
    entries, rel = [], ""
    for line in prompt.split("since the last run\n\n", 1)[-1].split(LISTED)[0].splitlines():
        if line.startswith("### "):
            rel = line[4:].strip()
        elif line.partition("| ")[2].startswith("## "):
            entries.append(f"{rel}:{line.partition('|')[0]}")
    return entries


def searches(
    prompt: str, of: Callable[[str], tuple[str, int] | None], blind: bool
) -> list[tuple[str, dict]]:
    """The ``search`` judge's searches: for each new entry that is a newer version of a changed
    fact with no older version listed under it, one by the fact's name ("door code"); the
    ``blind`` judge's: by the words written for it seeing the new note alone."""
    listed = listed_pairs(prompt)
    calls = []
    for entry in new_entries(prompt):
        new = of(entry)
        if new is None or new[1] == 0:
            continue
        if any(older_version(of, newer, older) for newer, older in listed if newer == entry):
            continue
        words = SEARCHED[new] if blind else (new[0].replace("-", " "),)
        calls += [(SEARCH, {"entry": entry, "about": about}) for about in words]
    return calls


def older_version(of: Callable[[str], tuple[str, int] | None], newer: str, older: str) -> bool:
    """Whether ``older`` is an older version of the changed fact ``newer`` is a version of."""
    new, old = of(newer), of(older)
    return bool(new and old and new[0] == old[0] and old[1] < new[1])


def fake_judge(kind: str, of: Callable[[str], tuple[str, int] | None]) -> Callable[..., Reply]:
    def brain(body: dict[str, Any]) -> Reply:
        first = body["messages"][0]["content"]  # the run's prompt, maybe in blocks
        prompt = first if isinstance(first, str) else "".join(b.get("text", "") for b in first)
        searching = kind in ("search", "blind") and len(body["messages"]) == 1
        if searching and (calls := searches(prompt, of, kind == "blind")):
            return Reply(tool_calls=calls)
        changes, named = [], set()
        for newer, older in listed_pairs(prompt) + found_pairs(body):
            right = newer not in named if kind == "first" else older_version(of, newer, older)
            if right:
                named.add(newer)
                changes.append({"op": REPLACES, "source": newer, "old": older, "reason": "r"})
        return Reply(json.dumps({"changes": changes}))

    return brain


def days_run(others: int, seed: int) -> list[date]:
    """Every day with a newer version of a changed fact, and ``others`` days without one."""
    changed = {date.fromisoformat(day) for c in CHANGED + FRESH for day, _ in c.versions[1:]}
    year = [FIRST_DAY + timedelta(days=n) for n in range(DAYS)]
    pool = [d for d in year if d not in changed]
    return sorted(changed | set(random.Random(seed).sample(pool, min(others, len(pool)))))


async def consolidate(args: argparse.Namespace, ws: Path, notes: dict[str, Span], d: Path) -> dict:
    of = version_of(notes)
    idx = MemoryIndex(d / "index.sqlite", ws)
    idx.rebuild()
    vectors = SemanticIndex(embedder_named("local"), CACHE / "year-embeddings.sqlite", 64)
    idx.listen(vectors)
    vectors.catch_up()
    store = Store(d / "proposals.json")
    cfg = MemorySettings(consolidation=ConsolidationSettings(first_days=1))
    today = [TODAY]  # the day being consolidated
    search = HybridSearch(idx, vectors, SearchSettings(), lambda: today[0])
    memory = Memory(ws, idx, cfg, search=search, proposals=store)
    curator = Curator(memory, store)
    api = None
    if args.judge == "model":
        key = os.environ.get("ANTHROPIC_API_KEY", "")
        if not key:
            raise SystemExit("--judge model needs ANTHROPIC_API_KEY (or use --judge true|first)")
        llm = AnthropicLLM(LLMSettings(api_key=Secret(key)))
    else:
        api = FakeAnthropic()
        await api.start()
        api.brain = fake_judge(args.judge, of)
        llm = AnthropicLLM(LLMSettings(api_key=Secret("sk-bench"), base_url=api.base_url))
    counts: dict[str, Any] = {"days": 0, "marks": 0, "true": 0, "false": 0}
    marked: set[tuple[str, int]] = set()  # newer versions that marked an older one
    try:
        for day in days_run(args.others, args.seed):
            logs = sorted((ws / "memory").glob("*.md"))
            read = {f"memory/{p.name}": p.stat().st_size for p in logs if p.stem != str(day)}
            store.set_marks(read)  # only this day's log is new
            today[0] = day
            outcome = await curator.propose(llm, datetime.combine(day, time(23, 30), TZ))
            counts["days"] += 1
            if outcome.proposal is None:
                continue
            numbers = [n for n, i in enumerate(outcome.proposal.items, 1) if i.op == REPLACES]
            if numbers:
                curator.apply(outcome.proposal.id, "bench", numbers)
            for n in numbers:
                item = outcome.proposal.items[n - 1]
                right = older_version(of, item.sources[0], item.replaces)
                counts["marks"] += 1
                counts["true" if right else "false"] += 1
                if right and (new := of(item.sources[0])) is not None:
                    marked.add(new)
    finally:
        await llm.close()
        if api is not None:
            await api.close()
        vectors.close()
        idx.close()
    counts["newer marked"] = len(marked)
    every = {(c.subject, n) for c in CHANGED + FRESH for n in range(1, len(c.versions))}
    counts["unmarked"] = sorted(every - marked)
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    judges = ("model", "first", "true", "search", "blind")
    parser.add_argument("--judge", choices=judges, default="model")
    parser.add_argument("--others", type=int, default=45, help="days without a change run too")
    parser.add_argument("--seed", type=int, default=68)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        ws, notes = d / "workspace", {}
        queries = build(ws, notes=notes)
        counts = asyncio.run(consolidate(args, ws, notes, d))
        newer = sum(len(c.versions) - 1 for c in CHANGED + FRESH)
        idx = MemoryIndex(d / "after.sqlite", ws)  # the marked year, indexed anew
        idx.rebuild()
        vectors = SemanticIndex(embedder_named("local"), CACHE / "year-embeddings.sqlite", 64)
        idx.listen(vectors)
        vectors.catch_up()
        search = hybrid(idx, vectors, SearchSettings())
        rows = {
            h: measure([q for q in queries if _half(q) == h], search)
            for h in ("held", "tune", "fresh")
        }
        vectors.close()
        idx.close()
    print(
        f"judge: {args.judge}; {counts['days']} days consolidated ({args.others} without a change)"
    )
    print(f"marks made: {counts['marks']}; an older version of the same fact: {counts['true']}; "
          f"another note: {counts['false']}; newer versions that marked an older one: "
          f"{counts['newer marked']} of {newer}")  # fmt: skip
    print("newer versions that marked none:", ", ".join(f"{s} {n}" for s, n in counts["unmarked"]))
    for half in ("held", "tune", "fresh"):
        r = rows[half]
        print(f"{half}: latest first {r['latest first']:.2f}, recall@10 {r['recall@10']:.2f}, "
              f"MRR@10 {r['MRR@10']:.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
