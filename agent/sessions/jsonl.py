"""Files written a line at a time (transcripts): made durable by path (a fresh descriptor will
do, since fsync acts on the file), and a last line torn by a crash cut off before reading."""

from __future__ import annotations

import logging
import os
from pathlib import Path

log = logging.getLogger(__name__)


def fsync_path(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:  # archived by /new in the meantime
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def cut_torn_tail(path: Path) -> None:
    """Drop a last line without its newline (a write cut short by a crash)."""
    size = path.stat().st_size
    if size == 0:
        return
    with path.open("rb+") as f:
        f.seek(-1, os.SEEK_END)
        if f.read(1) == b"\n":
            return
        keep, pos = 0, size
        while pos > 0:
            start = max(0, pos - (1 << 16))
            f.seek(start)
            cut = f.read(pos - start).rfind(b"\n")
            if cut >= 0:
                keep = start + cut + 1
                break
            pos = start
        log.warning("%s: dropping a torn last line (%d bytes)", path.name, size - keep)
        f.truncate(keep)
