"""Walking a folder within bounds, with a note when the listing was cut short."""

from __future__ import annotations

import os
import time
from pathlib import Path

MAX_WALK_ENTRIES = 20_000
MAX_WALK_SECONDS = 5.0


def bounded_walk(base: Path, recursive: bool, deadline: float) -> tuple[list[Path], bool]:
    """Visible entries under ``base``, sorted, and whether that is all of them: the walk stops
    at ``MAX_WALK_ENTRIES`` or at ``deadline`` (``time.monotonic``). Hidden names are left
    out, and it never descends through a symbolic link."""
    out: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(base, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        here = Path(dirpath)
        out.extend(here / name for name in dirnames)
        out.extend(here / name for name in sorted(filenames) if not name.startswith("."))
        if len(out) >= MAX_WALK_ENTRIES or time.monotonic() > deadline:
            return sorted(out[:MAX_WALK_ENTRIES]), False
        if not recursive:
            break
    return sorted(out), True
