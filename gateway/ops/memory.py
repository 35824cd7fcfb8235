"""``corvid memory``: searching the memory index, and building it again from the Markdown."""

from __future__ import annotations

import argparse
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from gateway.contract.events import OWNER
from gateway.ops.home import prepare

if TYPE_CHECKING:
    from agent.memory.index import MemoryIndex


def _open_index(home: Path, environ: Mapping[str, str]) -> MemoryIndex:
    from gateway.tool_setup import memory_index

    return memory_index(prepare(home, environ))


def memory_reindex(args: argparse.Namespace, home: Path, environ: Mapping[str, str]) -> int:
    index = _open_index(home, environ)
    try:
        started = time.perf_counter()
        files = index.rebuild()
        chunks = index.chunk_count
    finally:
        index.close()
    print(
        f"Indexed {files} file(s) into {chunks} chunk(s) in {time.perf_counter() - started:.2f} s."
    )
    return 0


def memory_search(args: argparse.Namespace, home: Path, environ: Mapping[str, str]) -> int:
    index = _open_index(home, environ)
    try:
        hits = index.search(" ".join(args.query), max(1, args.max_results), audience=OWNER)
    finally:
        index.close()
    if not hits:
        print("No matches.")
        return 1
    for hit in hits:
        print(f"{hit.path}:{hit.start_line}-{hit.end_line}  (score {hit.score})")
        print("    " + hit.snippet.replace("\n", "\n    "))
    return 0
