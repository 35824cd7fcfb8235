"""Where recall's relevance bar should be, run on demand: ``python bench/recall_bench.py
[--model PATH]``. Prints tables.

Recall (``agent/memory/recall.py``) gives the model the notes of a hybrid search of the
owner's message whose cosine reaches ``memory.recall.min_similarity``, or whose words hold
``min_words`` of the message's weight (each word counted by its IDF). This bench searches
the retrieval set of bench/retrieval/ (the same as bench/memory_search_bench.py) with every
query as a message and, for a grid of both bars, prints per class: how often recall brings
a relevant note (a hit in the same file whose lines overlap the entry's), how often it
brings anything, and the share of recalled notes that are relevant. For the "nothing" class
(no relevant note exists) the share of queries with nothing recalled is what matters. The
hits are taken as recall takes them: the first ``--notes`` of the search, kept if above the
bar. Keyword-only search (provider ``none``) is measured too: there only ``min_words``
applies. Last, the prompt cache's share (bench/gateway_bench.py's 20-turn chat) with recall
off and on, over the same memory: the notes go with the message, so it must not change.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agent.memory.embedding.local import load_local_embedder
from agent.memory.hits import Hit
from agent.memory.hybrid import HybridSearch
from agent.memory.index import MemoryIndex
from agent.memory.recall import by_meaning, relevant
from agent.memory.semantic import SemanticIndex
from agent.settings import RecallSettings, SearchSettings
from bench.gateway_bench import bench_prompt_cache
from bench.memory_search_bench import CLASSES, found, table
from bench.retrieval.corpus import DAYS, FIRST_DAY, Query, build
from gateway.contract.events import OWNER

SIMILARITIES = (0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6)
WORDS = (0.8, 0.9, 1.01)  # 1.01: the words never suffice alone


def measure(
    queries: list[Query], hits: dict[str, list[Hit]], cfg: RecallSettings
) -> dict[str, tuple[float, float, float]]:
    """Per class: (relevant note recalled, anything recalled, recalled notes relevant)."""
    per: dict[str, list[tuple[float, float, float | None]]] = {c: [] for c in CLASSES}
    for q in queries:
        kept = [h for h in hits[q.text][: cfg.max_notes] if relevant(h, cfg)]
        good = [
            h
            for h in kept
            if any(found((h.path, h.start_line, h.end_line, 0), s) for s in q.relevant)
        ]
        per[q.kind].append(
            (float(bool(good)), float(bool(kept)), len(good) / len(kept) if kept else None)
        )
    out = {}
    for c, rows in per.items():
        precise = [r[2] for r in rows if r[2] is not None]
        out[c] = (
            statistics.fmean(r[0] for r in rows),
            statistics.fmean(r[1] for r in rows),
            statistics.fmean(precise) if precise else float("nan"),
        )
    return out


def _pair(hit: float, precision: float) -> str:
    return f"{hit:.2f}/" + ("-" if precision != precision else f"{precision:.2f}")  # nan: none


def sweep(title: str, queries: list[Query], hits: dict[str, list[Hit]], grid) -> None:
    rows = []
    for sim, words in grid:
        cfg = replace(RecallSettings(), min_similarity=sim, min_words=words)
        per = measure(queries, hits, cfg)
        found_any = [per[c][0] for c in CLASSES if c != "nothing"]
        precise = [per[c][2] for c in CLASSES if c != "nothing" and per[c][2] == per[c][2]]
        rows.append(
            [
                f"{sim:.2f}" if sim <= 1 else "-",
                f"{words:.2f}" if words <= 1 else "-",
                *(_pair(*per[c][::2]) for c in CLASSES if c != "nothing"),
                f"{statistics.fmean(found_any):.2f}",
                f"{statistics.fmean(precise):.2f}" if precise else "-",
                f"{1 - per['nothing'][1]:.2f}",
            ]
        )
    header = [
        "cosine ≥",
        "words ≥",
        *(f"{c} hit/prec" for c in CLASSES if c != "nothing"),
        "mean hit",
        "mean prec",
        "nothing: silent",
    ]
    table(title, header, rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, help="a model folder (default: the package's)")
    parser.add_argument("--notes", type=int, default=RecallSettings().max_notes)
    args = parser.parse_args()
    models = Path.home() / ".cache" / "corvid-bench" / "models"
    embedder = load_local_embedder(args.model, models)
    last_day = FIRST_DAY + timedelta(days=DAYS - 1)
    with tempfile.TemporaryDirectory() as d:
        ws = Path(d) / "workspace"
        queries = build(ws)
        idx = MemoryIndex(Path(d) / "index.sqlite", ws)
        idx.rebuild()
        keyword_hits = {q.text: idx.search(q.text, args.notes, audience=OWNER) for q in queries}
        vectors = SemanticIndex(embedder, Path(d) / "embeddings.sqlite", batch_size=64)
        idx.listen(vectors)
        vectors.catch_up()
        hybrid = HybridSearch(idx, vectors, SearchSettings(), lambda: last_day)
        # As recall searches: a message of fewer than three words by its words alone.
        hybrid_hits = {
            q.text: hybrid.search(q.text, args.notes, audience=OWNER)
            if by_meaning(q.text)
            else keyword_hits[q.text]
            for q in queries
        }
        idx.close()
    counts = ", ".join(f"{c} {sum(q.kind == c for q in queries)}" for c in CLASSES)
    print(
        f"retrieval set: {len(queries)} queries ({counts}); first {args.notes} hits; "
        f"model {embedder.model_id}"
    )
    print(
        "hit: a relevant note recalled; prec: recalled notes that are relevant; "
        "nothing: silent: share of 'nothing' queries with no note recalled"
    )
    grid = [(s, w) for w in WORDS for s in SIMILARITIES]
    sweep("hybrid search", queries, hybrid_hits, grid)
    sweep("keywords only (provider none)", queries, keyword_hits, [(2.0, w) for w in WORDS])
    rows = []
    for provider in ("none", "local"):
        for on in (False, True):
            c = asyncio.run(cache_share(provider, on))
            rows.append(
                [
                    f"{provider}, recall {'on' if on else 'off'}",
                    *(f"{c[k] * 100:.1f} %" for k in ("all", "after_first", "prefix_kept")),
                    str(c["recalled"]),
                ]
            )
    table(
        "prompt cache: gateway_bench's 20-turn private chat, over the retrieval set's memory",
        ["embeddings", "cache reads/input", "turns 2-20", "prefix kept", "turns with notes"],
        rows,
    )


def seed(ws: Path) -> None:
    """The retrieval set, and notes that the cache bench's chat asks about."""
    build(ws)
    (ws / "memory" / "2026-11-02.md").write_text(
        "# 2026-11-02\n\n## 19:00\n\n"
        "Garden fence: we decided on larch, 1.8 m high, gate on the east side.\n"
        "Carpenter quotes for the fence: the first 2,400 EUR, the second 1,950 EUR.\n\n"
        "## 21:00\n\nAnna comes by train on Friday, arriving 18:42 at Hauptbahnhof.\n",
        encoding="utf-8",
    )


async def cache_share(provider: str, on: bool) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as d:
        return await bench_prompt_cache(
            Path(d),
            seed=seed,
            web={"enabled": False},
            memory={"embeddings": {"provider": provider}, "recall": {"enabled": on}},
        )


if __name__ == "__main__":
    main()
