"""One writer of the workspace's files at a time, across threads and processes (``flock``)."""

from __future__ import annotations

import errno
import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from gateway.contract.errors import ToolError

LOCK = ".writers.lock"  # at the workspace's top, beside its other hidden files
MODE = 0o600  # the owner's alone, as every file of the workspace
WAIT = 10.0  # seconds a writer waits for another (a terminal suspended mid-write) at most


@contextmanager
def held(workspace: Path) -> Iterator[None]:
    """The workspace's files to this writer alone until the block ends. Every writer that
    reads a file, changes it and writes it back holds it (a mark, the file tools, undo),
    and so does every appender and consolidation's reading of the logs: an entry appended
    while a mark rewrites its log would go to the file the mark's rename drops, and a run
    would read a mark before the store knows of it. A lock beside the files, not on them:
    a file renamed into place is another file, which nobody holds. Refused (ToolError)
    when another writer keeps it longer than ``WAIT``."""
    with locked(workspace / LOCK):
        yield


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """The lock file at ``path`` (made when missing) held until the block ends; a
    ToolError when another holder keeps it longer than ``WAIT``."""
    fd = _locked(path)
    try:
        yield
    finally:
        os.close(fd)  # closing the last descriptor of the file lets the lock go


def waiting(pause: float) -> None:
    """A writer waits ``pause`` seconds for another to finish before it asks again."""
    time.sleep(pause)


def _locked(path: Path) -> int:
    deadline = time.monotonic() + WAIT
    while True:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, MODE)
        except OSError as exc:
            if exc.errno != errno.ELOOP:
                raise ToolError(f"{path} cannot be locked ({exc.strerror}).") from None
            os.unlink(path)  # a link put where the lock goes: the name is the lock's alone
            continue
        kept = False
        try:
            kept = _waited(fd, deadline, path) and _same(fd, path)
        finally:
            if not kept:  # removed while this writer waited, or the wait failed or ran out
                os.close(fd)
        if kept:
            return fd


def _waited(fd: int, deadline: float, path: Path) -> bool:
    """Lock ``fd``, polling: a blocking ``flock`` cannot be given up after a while."""
    pause = 0.001
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise ToolError(
                    f"Another writer (perhaps a corvid command in a terminal) has held "
                    f"{path.name} for {WAIT:.0f} seconds; nothing was written. Try again."
                ) from None
            waiting(pause)
            pause = min(pause * 2, 0.05)


def _same(fd: int, path: Path) -> bool:
    """Whether ``fd`` is still the file at ``path`` (not removed, or another put there)."""
    opened = os.fstat(fd)
    try:
        now = os.stat(path)
    except OSError:  # removed; or a link put there, which the next open removes
        now = None
    return now is not None and (now.st_dev, now.st_ino) == (opened.st_dev, opened.st_ino)
