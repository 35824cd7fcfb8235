"""Reading a workspace file without ever waiting on it."""

from __future__ import annotations

import os
import stat
from pathlib import Path

# Opening a FIFO waits for a writer; checking the path first leaves a gap in which one can be
# put there. Opened without waiting, the open file is then asked what it is.
_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC


class NotPlainFile(OSError):
    """Something other than a regular file is at the path: a folder, a FIFO, a device."""

    def __init__(self, path: str | Path, mode: int) -> None:
        super().__init__(f"{path} is not a regular file")
        self.folder = stat.S_ISDIR(mode)


def read_plain(path: str | Path) -> bytes:
    """The bytes of the regular file at ``path`` (links followed). ``NotPlainFile`` when
    something else is there, found without waiting on it; a missing file raises
    ``FileNotFoundError``, like ``open``."""
    fd = os.open(path, _FLAGS)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotPlainFile(path, st.st_mode)
        # The size as of now, plus one byte to see the end in the same read; a file that grew
        # meanwhile is read on to its end.
        want = st.st_size + 1
        data = os.read(fd, want)
        if len(data) < want:
            return data
        parts = [data]
        while chunk := os.read(fd, 1 << 16):
            parts.append(chunk)
        return b"".join(parts)
    finally:
        os.close(fd)


def text_of(data: bytes, *, strict: bool = False) -> str:
    """A file's bytes as ``open(path, encoding="utf-8")`` reads them: every newline made
    ``\\n``. Bad UTF-8 raises ``UnicodeDecodeError`` with ``strict``; otherwise it is replaced
    and the newlines are left as they are (as reading the bytes and decoding them did)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        if strict:
            raise
        return data.decode("utf-8", errors="replace")
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text
