"""A daily log held by one writer at a time, across threads and processes (``flock``)."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def held(path: Path, flags: int, mode: int = 0o600) -> Iterator[int]:
    """``path`` opened with ``flags`` and locked until the block ends. Every writer of a log
    holds it: an entry appended while a mark rewrites the log (read, change, rename a new
    file into place) would otherwise go to the file the rename drops. A writer that waited
    while another renamed a new file into place locks that one instead."""
    while True:
        fd = os.open(path, flags | os.O_NOFOLLOW, mode)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            if _same(fd, path):
                break
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)
    try:
        yield fd
    finally:
        os.close(fd)  # closing the last descriptor of the file lets the lock go


def _same(fd: int, path: Path) -> bool:
    """Whether ``fd`` is still the file at ``path`` (not one renamed over, or removed)."""
    opened = os.fstat(fd)
    try:
        now = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return (now.st_dev, now.st_ino) == (opened.st_dev, opened.st_ino)
