"""Memory benchmarks, run on demand: ``python bench/memory_bench.py``. Prints a table.

Builds a 200 KB MEMORY.md and as many years of synthetic daily logs as make 10k index chunks
(about four and a half), then measures a full index rebuild, memory_search latency (each search
first checks every file for changes, as in real use), reindexing one changed file, and the system
prompt size. ``bench_memory`` is the part bench/run.py shows.
"""

from __future__ import annotations

import random
import statistics
import sys
import tempfile
import time
from datetime import date, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agent.memory.hits import Searcher
from agent.memory.hybrid import HybridSearch
from agent.memory.index import MemoryIndex
from agent.memory.store import Memory
from agent.memory.text import chunk_entries
from agent.sessions.prompt import build_system_prompt
from agent.settings import AgentSettings, MemorySettings, SearchSettings
from gateway.config.home import init_home
from gateway.contract.events import OWNER, SessionKey, audience_of

FUNCTION_WORDS = (
    "the and to of a in is for on with we i it that was at be this have from by are "
    "about then after before will should need"
).split()
SYLLABLES = "ka lo mi ne ru sa ti vo be da fe gi ho ju ki la mo nu pe ri so tu wa ze".split()


def vocabulary(rng: random.Random, n: int = 4000) -> list[str]:
    words: set[str] = set()
    while len(words) < n:
        words.add("".join(rng.choices(SYLLABLES, k=rng.randint(2, 4))))
    return sorted(words)


def day_log(day: date, lines_per_day: int, rng: random.Random, vocab, weights) -> str:
    """Text with a realistic shape: function words everywhere, content words Zipf-distributed."""
    out = [f"# {day}", ""]
    for h in range(lines_per_day // 4):
        out += [f"## {8 + h % 12:02d}:{h % 60:02d}", ""]
        words = rng.choices(FUNCTION_WORDS, k=6) + rng.choices(vocab, weights, k=6)
        rng.shuffle(words)
        out += [" ".join(words), ""]
    return "\n".join(out) + "\n"


LAST_DAY = date(2026, 11, 21)
MEMORY_MD = "- a fact worth keeping about the owner\n" * 5400  # about 200 KB


def build_corpus(
    home: Path, chunks: int, rng: random.Random, lines_per_day: int = 132
) -> tuple[Path, list[str]]:
    """A Corvid home whose memory, a 200 KB MEMORY.md and daily logs back from LAST_DAY, cuts
    into ``chunks`` index chunks (rounded up to a whole day). Returns the workspace and the
    vocabulary of the logs."""
    init_home(home, {})
    ws = (home / "workspace").resolve()
    m = MemorySettings()
    vocab = vocabulary(rng)
    weights = [1 / (rank + 1) for rank in range(len(vocab))]
    (ws / "MEMORY.md").write_text(MEMORY_MD)
    count = len(chunk_entries(MEMORY_MD, m.chunk_lines, m.chunk_overlap_lines))
    day = LAST_DAY
    while count < chunks:
        text = day_log(day, lines_per_day, rng, vocab, weights)
        (ws / "memory" / f"{day}.md").write_text(text)
        count += len(chunk_entries(text, m.chunk_lines, m.chunk_overlap_lines))
        day -= timedelta(days=1)
    return ws, vocab


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, round(p / 100 * (len(values) - 1)))]


def bench_search(
    idx: MemoryIndex,
    vocab: list[str],
    rng: random.Random,
    queries: int = 300,
    searcher: Searcher | None = None,
) -> dict[str, float]:
    """memory_search latency in ms: p50/p95 of topic queries, p95 of worst-case queries; of
    the keyword index alone, or of ``searcher``."""
    search = searcher or idx

    def measure(make_query) -> list[float]:
        times = []
        for i in range(queries):
            query = make_query(i)
            t0 = time.perf_counter()
            search.search(query, 8, audience=OWNER)
            times.append((time.perf_counter() - t0) * 1000)
        return times

    # A search names a topic: one or two content words (any word of the vocabulary, as likely
    # rare as common), often wrapped in a few function words.
    topic = measure(
        lambda i: " ".join(rng.choices(FUNCTION_WORDS, k=i % 3) + rng.choices(vocab, k=1 + i % 2))
    )
    # Worst case: every word of the query is in most chunks, so every chunk is scored.
    worst = measure(lambda i: " ".join(rng.choices(FUNCTION_WORDS + vocab[:3], k=1 + i % 3)))
    return {"p50": pct(topic, 50), "p95": pct(topic, 95), "worst_p95": pct(worst, 95)}


def system_prompt_chars(ws: Path, idx: MemoryIndex, key: SessionKey) -> int:
    """Size of the system prompt a new session of ``key`` gets from this workspace."""
    memory = Memory(ws, idx, MemorySettings())
    now = datetime.combine(LAST_DAY, datetime.min.time(), ZoneInfo("UTC")).replace(hour=21)
    a = AgentSettings()
    prompt = build_system_prompt(
        ws,
        key,
        timezone="UTC",
        per_file_chars=a.bootstrap_max_chars,
        total_chars=a.bootstrap_total_max_chars,
        extra_sections=(memory.snapshot(audience_of(key), now, long_term=True),),
    )
    return len(prompt)


def bench_memory(tmp: Path, chunks: int = 10_000, queries: int = 300) -> dict[str, float]:
    """Build the corpus, rebuild the index, time searches; the numbers bench/run.py shows."""
    rng = random.Random(7)
    home = tmp / "memory"
    ws, vocab = build_corpus(home, chunks, rng)
    idx = MemoryIndex(home / "state" / "index.sqlite", ws)
    try:
        t0 = time.perf_counter()
        idx.rebuild()
        rebuild = time.perf_counter() - t0
        search = bench_search(idx, vocab, rng, queries)
        prompt = system_prompt_chars(ws, idx, SessionKey("t", "private", "1"))
        return {"chunks": idx.chunk_count, "rebuild_s": rebuild, "prompt_chars": prompt, **search}
    finally:
        idx.close()


def main() -> None:
    rng = random.Random(7)
    rows: list[tuple[str, str, str]] = []
    with tempfile.TemporaryDirectory() as d:
        home = Path(d)
        ws, vocab = build_corpus(home, 10_000, rng)
        idx = MemoryIndex(home / "state" / "index.sqlite", ws)

        t0 = time.perf_counter()
        idx.rebuild()
        rebuild = time.perf_counter() - t0
        rows.append(("index: chunks from daily logs + MEMORY.md", f"{idx.chunk_count:,}", "10k"))
        rows.append(("full rebuild", f"{rebuild:.2f} s", "—"))
        s = bench_search(idx, vocab, rng)
        rows.append(("memory_search p50, topic queries", f"{s['p50']:.1f} ms", "—"))
        rows.append(("memory_search p95, topic queries", f"{s['p95']:.1f} ms", "≤ 20 ms"))
        rows.append(
            ("memory_search p95, only words found in most chunks", f"{s['worst_p95']:.1f} ms", "—")
        )
        # As the assistant searches with embeddings off: the keyword ranking's later steps
        # (a time in the query, newer notes above the ones they replace) on top.
        ranked = HybridSearch(idx, None, SearchSettings(), lambda: LAST_DAY)
        s = bench_search(idx, vocab, random.Random(7), searcher=ranked)
        rows.append(
            ("memory_search p95 with the ranking, embeddings off", f"{s['p95']:.1f} ms", "—")
        )
        rows.append(("same, only words found in most chunks", f"{s['worst_p95']:.1f} ms", "—"))

        today = ws / "memory" / f"{LAST_DAY}.md"
        reindex = []
        for i in range(20):
            with today.open("a") as f:
                f.write(f"## 23:{i:02d}\n\nappended entry {i} about the budget\n\n")
            t0 = time.perf_counter()
            idx.sync()
            reindex.append((time.perf_counter() - t0) * 1000)
        rows.append(
            (
                "one-file reindex (append to today's log), median",
                f"{statistics.median(reindex):.1f} ms",
                "≤ 50 ms",
            )
        )

        for key in (SessionKey("t", "private", "1"), SessionKey("t", "group", "2")):
            kind = "private" if key.private else "group"
            rows.append(
                (
                    f"system prompt, {kind} session (200 KB MEMORY.md, 10k chunks of logs)",
                    f"{system_prompt_chars(ws, idx, key):,} chars",
                    "bounded",
                )
            )
        idx.close()
    width = max(len(r[0]) for r in rows)
    print(f"{'metric':<{width}}  {'measured':>14}  target")
    for name, value, target in rows:
        print(f"{name:<{width}}  {value:>14}  {target}")


if __name__ == "__main__":
    main()
