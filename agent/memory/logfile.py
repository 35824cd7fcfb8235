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
    fd = _locked(path, flags, mode)
    try:
        yield fd
    finally:
        os.close(fd)  # closing the last descriptor of the file lets the lock go


@contextmanager
def steady(path: Path) -> Iterator[None]:
    """``path`` held while a reader reads it and notes how far (no mark lands in between);
    a log that cannot be held (gone, a link) is read as it is, and its reader says why."""
    try:
        fd = _locked(path, os.O_RDONLY, 0o600)
    except OSError:
        yield
        return
    try:
        yield
    finally:
        os.close(fd)


def _locked(path: Path, flags: int, mode: int) -> int:
    while True:
        fd = os.open(path, flags | os.O_NOFOLLOW, mode)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            if _same(fd, path):
                return fd
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)


def _same(fd: int, path: Path) -> bool:
    """Whether ``fd`` is still the file at ``path`` (not one renamed over, or removed)."""
    opened = os.fstat(fd)
    try:
        now = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return (now.st_dev, now.st_ino) == (opened.st_dev, opened.st_ino)
