"""A daily log held by one writer at a time, across threads and processes (``flock``)."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from agent.tools.files import PRIVATE_FILE_MODE


@contextmanager
def held(path: Path, flags: int) -> Iterator[int]:
    """``path`` opened with ``flags`` and locked until the block ends. Every writer of a log
    holds it: an entry appended while a mark rewrites the log (read, change, rename a new
    file into place) would otherwise go to the file the rename drops. A writer that waited
    while another renamed a new file into place locks that one instead."""
    fd = _locked(path, flags)
    try:
        yield fd
    finally:
        os.close(fd)  # closing the last descriptor of the file lets the lock go


@contextmanager
def steady(path: Path) -> Iterator[None]:
    """``path`` held while a reader reads it and notes how far (no mark lands in between);
    a log that cannot be held (gone, a link) is read as it is, and its reader says why."""
    try:
        fd = _locked(path, os.O_RDONLY)
    except OSError:
        yield
        return
    try:
        yield
    finally:
        os.close(fd)


def _locked(path: Path, flags: int) -> int:
    while True:
        fd = os.open(path, flags | os.O_NOFOLLOW, PRIVATE_FILE_MODE)
        kept = False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            kept = _same(fd, path)
        finally:
            if not kept:  # another file is at the path now, or the wait was cut short
                os.close(fd)
        if kept:
            return fd


def _same(fd: int, path: Path) -> bool:
    """Whether ``fd`` is still the file at ``path`` (not one renamed over, or removed)."""
    opened = os.fstat(fd)
    try:
        now = os.stat(path)
    except FileNotFoundError:
        return False
    return (now.st_dev, now.st_ino) == (opened.st_dev, opened.st_ino)
