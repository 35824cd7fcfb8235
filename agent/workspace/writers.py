"""A workspace file held by one writer at a time, across threads and processes (``flock``)."""

from __future__ import annotations

import fcntl
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

MODE = 0o600  # a file made by a writer that holds it: the owner's alone, as every workspace file


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
def alone(path: Path) -> Iterator[None]:
    """``path`` held for the block when it can be: a reader that notes how far it read, or
    a writer that reads, changes and replaces it. One that cannot be held (not there yet, a
    link) is used as it is, and its reader or writer says what is wrong with it."""
    try:
        regular = stat.S_ISREG(os.lstat(path).st_mode)
        fd = _locked(path, os.O_RDONLY) if regular else None
    except OSError:
        fd = None
    if fd is None:
        yield
        return
    try:
        yield
    finally:
        os.close(fd)


def _locked(path: Path, flags: int) -> int:
    while True:
        # Never waits to open: a FIFO planted at the path opens at once, as a file does.
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK, MODE)
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
        now = None
    return now is not None and (now.st_dev, now.st_ino) == (opened.st_dev, opened.st_ino)
