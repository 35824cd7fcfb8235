"""``corvid memory``: search the memory as the assistant does, and rebuild its index."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from gateway.contract.events import OWNER, printable
from gateway.ops.home import prepare

if TYPE_CHECKING:
    from agent.memory.hits import Hit
    from agent.memory.semantic import SemanticIndex
    from gateway.config.loader import Config


def memory_reindex(args: argparse.Namespace, home: Path, environ: Mapping[str, str]) -> int:
    from gateway.tool_setup import memory_index, memory_search

    config = prepare(home, environ)
    index = memory_index(config)
    try:
        started = time.perf_counter()
        files = index.rebuild()
        chunks = index.chunk_count
        print(
            f"Indexed {files} file(s) into {chunks} chunk(s) "
            f"in {time.perf_counter() - started:.2f} s."
        )
        with _billed(config) as embedded:
            vectors = memory_search(config, index, embedded=embedded)[1]
            return 0 if vectors is None else _embed_all(vectors)
    finally:
        index.close()


@contextlib.contextmanager
def _billed(config: Config) -> Iterator[Callable[[str, int], None]]:
    """What a paid embedding service bills for a command's embeddings goes in the usage
    ledger, as ``corvid run``'s does."""
    from agent.usage.ledger import UsageLedger
    from agent.usage.meter import Meter
    from agent.usage.prices import PriceTable
    from gateway.contract.ports import SystemClock
    from gateway.usage.setup import embeddings_counter

    ledger = UsageLedger(config.layout.usage, config.tz)
    try:
        yield embeddings_counter(Meter(ledger, PriceTable(config.llm.prices), SystemClock()))
    finally:
        ledger.close()


def _embed_all(vectors: SemanticIndex) -> int:
    """Give every chunk its vector (from the cache when it has one), with a progress bar on
    a terminal and a line now and then otherwise."""
    from agent.memory.embedding.base import EmbeddingError, ModelMissing

    bar = ProgressBar(sys.stdout, f"Embedding with {vectors.model}")
    started = time.perf_counter()
    try:
        bar.show(vectors.progress().embedded, vectors.progress().total)
        done = vectors.catch_up(lambda p: bar.show(p.embedded, p.total))
    except ModelMissing as exc:
        # Not a failure of the index: it is whole, and search goes on by words.
        bar.end()
        why = str(exc).removesuffix("; fetching is tried again later")  # not by this command
        print(f"Memory search is by words only for now: {why}.")
        return 0
    except EmbeddingError as exc:
        bar.end()
        print(f"corvid: embedding stopped: {exc}; search uses keywords for the rest")
        return 1
    finally:
        vectors.close()
    bar.end()
    print(
        f"{done.embedded} of {done.total} chunk(s) have vectors ({vectors.model}), "
        f"{time.perf_counter() - started:.2f} s."
    )
    return 0


def memory_search(args: argparse.Namespace, home: Path, environ: Mapping[str, str]) -> int:
    from agent.memory.hits import dated
    from agent.memory.when import DaySpan
    from gateway.tool_setup import memory_index
    from gateway.tool_setup import memory_search as searcher

    try:
        first, last = (_day(args, name) for name in ("since", "until"))
    except ValueError as exc:
        print(f"corvid: {exc}", file=sys.stderr)
        return 2
    span = None if first is None and last is None else DaySpan(first or date.min, last or date.max)
    config = prepare(home, environ)
    index = memory_index(config)
    try:
        with _billed(config) as embedded:
            search, vectors = searcher(config, index, embedded=embedded)
            try:
                if vectors is not None:
                    index.sync()
                    vectors.from_cache()  # what ``corvid run`` embedded; the rest by keywords
                query = " ".join(args.query)
                hits = search.search(query, max(1, args.max_results), audience=OWNER, span=span)
            finally:
                if vectors is not None:
                    vectors.close()
    finally:
        index.close()
    today = datetime.now(config.tz).date()
    if args.json:
        print(json.dumps([_as_json(h, today) for h in hits], ensure_ascii=False, indent=2))
        return 0 if hits else 1
    if not hits:
        print("No matches.")
        return 1
    for hit in hits:
        why = f"{dated(hit, today)}; score {hit.score}{_why(hit)}"
        print(f"{hit.path}:{hit.start_line}-{hit.end_line}  ({why})")
        print("    " + printable(hit.snippet).replace("\n", "\n    "))
    return 0


def _day(args: argparse.Namespace, name: str) -> date | None:
    value = getattr(args, name, None)
    if not value:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise ValueError(f"--{name} must be a day written YYYY-MM-DD, not {value!r}") from None


def _as_json(hit: Hit, today: date) -> dict[str, object]:
    """A hit for scripts: where it is, its excerpt, when it was written and why it ranked."""
    from agent.memory.when import age

    return {
        "file": hit.path,
        "lines": [hit.start_line, hit.end_line],
        "text": hit.snippet,
        "date": hit.written or None,
        "age": age(hit.written, today) if hit.written else None,
        "newer": hit.newer or None,
        "chat": hit.chat or None,
        "scores": {
            "score": hit.score,
            "text": hit.text_score,
            "vector": hit.vector_score,
            "recency": hit.recency,
            "words": hit.words,
        },
    }


def _why(hit: Hit) -> str:
    if hit.text_score is None:
        return ""
    vector = "-" if hit.vector_score is None else f"{hit.vector_score}"
    return f"; text {hit.text_score}, vector {vector}, recency {hit.recency}"


class ProgressBar:
    """``[#####.....] 512/1024`` redrawn in place on a terminal; elsewhere (a log, a pipe) a
    plain line at each tenth of the way."""

    WIDTH = 30

    def __init__(self, out: TextIO, label: str) -> None:
        self.out = out
        self.label = label
        self.tty = out.isatty()
        self._tenth = -1
        self._drawn = False

    def show(self, done: int, total: int) -> None:
        share = done / total if total else 1.0
        if self.tty:
            filled = int(share * self.WIDTH)
            bar = "#" * filled + "." * (self.WIDTH - filled)
            self.out.write(f"\r{self.label} [{bar}] {done}/{total}")
            self._drawn = True
        elif int(share * 10) != self._tenth:
            self._tenth = int(share * 10)
            self.out.write(f"{self.label}: {done}/{total} chunks\n")
        self.out.flush()

    def end(self) -> None:
        if self._drawn:
            self.out.write("\n")
            self.out.flush()
            self._drawn = False
