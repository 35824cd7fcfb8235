"""Hybrid memory search benchmarks, run on demand: ``python bench/vector_bench.py [CHUNKS...]``.

Builds the synthetic memory of memory_bench.py at each size (default 10k and 100k chunks),
gives every chunk a 384-number vector from a stand-in model (random unit vectors seeded by
the text: the cost of a real model is not what is measured here), and times hybrid search
with the query's vector made beforehand, so the model's time is left out: keyword matches,
the vector product over every chunk, merging, decay and MMR. Also: filling the vector table
from the embedding cache (what a restart costs), and the table's size in memory.
"""

from __future__ import annotations

import hashlib
import random
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from memory_bench import FUNCTION_WORDS, LAST_DAY, build_corpus, pct

from agent.memory.hybrid import HybridSearch
from agent.memory.index import MemoryIndex
from agent.memory.semantic import SemanticIndex
from agent.settings import SearchSettings
from gateway.contract.events import OWNER, Audience

DIM = 384


class SeededEmbedder:
    """Unit vectors drawn from a generator seeded by each text: stable, and fast."""

    model_id = "bench:seeded-384"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        rows = np.empty((len(texts), DIM), dtype=np.float32)
        for i, text in enumerate(texts):
            seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")
            row = np.random.default_rng(seed).standard_normal(DIM)
            rows[i] = row / np.linalg.norm(row)
        return rows

    def close(self) -> None:
        pass


def bench_hybrid(tmp: Path, chunks: int, queries: int = 200) -> dict[str, float]:
    rng = random.Random(11)
    home = tmp / f"hybrid-{chunks}"
    ws, vocab = build_corpus(home, chunks, rng, lines_per_day=132 if chunks <= 20_000 else 1320)
    state = home / "state"
    idx = MemoryIndex(state / "index.sqlite", ws)
    t0 = time.perf_counter()
    idx.rebuild()
    out: dict[str, float] = {"chunks": idx.chunk_count, "rebuild_s": time.perf_counter() - t0}
    vectors = SemanticIndex(SeededEmbedder(), state / "embeddings.sqlite", batch_size=256)
    idx.listen(vectors)
    t0 = time.perf_counter()
    vectors.catch_up()
    out["embed_s"] = time.perf_counter() - t0
    vectors.close()
    # A restart: the table filled from the cache alone.
    vectors = SemanticIndex(SeededEmbedder(), state / "embeddings.sqlite")
    t0 = time.perf_counter()
    idx.listen(vectors)
    vectors.from_cache()
    out["from_cache_s"] = time.perf_counter() - t0
    out["table_mb"] = vectors.table._matrix.nbytes / 1e6
    search = HybridSearch(idx, vectors, SearchSettings(), lambda: LAST_DAY)
    texts = [
        " ".join(rng.choices(FUNCTION_WORDS, k=i % 3) + rng.choices(vocab, k=1 + i % 2))
        for i in range(queries)
    ]
    for text in texts:  # the query vectors, made beforehand: the model's time is apart
        vectors.embed_query(text)
    for name, audience in (("owner", OWNER), ("group", Audience("nobody-here"))):
        times = []
        for text in texts:
            t0 = time.perf_counter()
            search.search(text, 8, audience=audience)
            times.append((time.perf_counter() - t0) * 1000)
        out[f"{name}_p50"], out[f"{name}_p95"] = pct(times, 50), pct(times, 95)
    keyword = []
    for text in texts:
        t0 = time.perf_counter()
        idx.search(text, 8, audience=OWNER)
        keyword.append((time.perf_counter() - t0) * 1000)
    out["keyword_p95"] = pct(keyword, 95)
    vectors.close()
    idx.close()
    return out


def main() -> None:
    sizes = [int(a) for a in sys.argv[1:]] or [10_000, 100_000]
    print(f"stand-in model, {DIM} numbers a chunk; query vectors made beforehand")
    with tempfile.TemporaryDirectory() as d:
        for size in sizes:
            r = bench_hybrid(Path(d), size)
            print(
                f"{r['chunks']:>8,} chunks: hybrid p50 {r['owner_p50']:.1f} ms, "
                f"p95 {r['owner_p95']:.1f} ms (keywords alone p95 {r['keyword_p95']:.1f} ms); "
                f"an empty group's p95 {r['group_p95']:.1f} ms; vectors {r['table_mb']:.0f} MB "
                f"in memory, filled from the cache in {r['from_cache_s']:.2f} s; index rebuilt "
                f"in {r['rebuild_s']:.1f} s, cached {r['chunks'] / r['embed_s']:,.0f} chunks/s"
            )


if __name__ == "__main__":
    main()
