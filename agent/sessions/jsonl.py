"""Files written a line at a time (transcripts): appended, held open, synced, torn tails cut."""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Hashable
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


class HeldFiles:
    """Files appended to a line at a time, up to ``most`` of them held open between lines.
    One thread holds them (the caller says which writes may, ``hold``) and lets them go."""

    def __init__(self, most: int) -> None:
        self.most = most
        self._open: dict[Hashable, int] = {}

    @property
    def held(self) -> dict[Hashable, int]:
        return dict(self._open)

    def append(self, key: Hashable, path: Path, data: bytes, *, hold: bool) -> None:
        """Write ``data`` at the end of ``path``: through the file held for ``key``, or one
        opened now and, with ``hold``, held. Without ``hold`` no held file is used (another
        thread's write: the holder may close it under this one). A write that fails takes back
        the part it wrote, so the next line is not glued onto it, and lets the file go."""
        fd = self._open.get(key) if hold else None
        kept = fd is not None
        if fd is None:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
            kept = hold and len(self._open) < self.most
            if kept:
                self._open[key] = fd
        written = 0
        try:
            while written < len(data):
                written += os.write(fd, data[written:])
        except OSError:
            if written:
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, os.fstat(fd).st_size - written)
            if kept:
                self._open.pop(key, None)
                kept = False
            raise
        finally:
            if not kept:
                os.close(fd)

    def let_go(self, key: Hashable) -> None:
        """Close ``key``'s file if it is held (before it is moved aside)."""
        fd = self._open.pop(key, None)
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)

    def let_go_all(self) -> None:
        """Close every file held; the next line opens its file again."""
        held, self._open = self._open, {}
        for fd in held.values():
            with contextlib.suppress(OSError):
                os.close(fd)
