"""MkDocs hooks for the manual: pages made at build time from the files they describe.

The configuration reference is made from the config template, and the benchmark history is
`bench/HISTORY.md` itself, which stays with the bench; neither is copied into `docs/`, so
neither can fall behind what it shows.
"""

from __future__ import annotations

from typing import Any

from config_reference import PAGE, ROOT, TEMPLATE, render
from mkdocs.structure.files import File, Files

HISTORY = ROOT / "bench" / "HISTORY.md"
HISTORY_PAGE = "development/history.md"


def on_files(files: Files, config: Any) -> Files:
    files.append(File.generated(config, PAGE, content=render(TEMPLATE.read_text(encoding="utf-8"))))
    files.append(File.generated(config, HISTORY_PAGE, abs_src_path=str(HISTORY)))
    return files
