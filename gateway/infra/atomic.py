"""Writing files safely: replaced whole, so a crash leaves the old file or the new, never half."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

# A new file's permissions unless the caller says otherwise: state is the owner's alone.
PRIVATE = 0o600


def write_atomic(
    path: Path, data: str | bytes, *, mode: int = PRIVATE, keep_mode: bool = True
) -> None:
    """Write ``data`` (text is UTF-8) to ``path`` through a temporary file of its own in the
    same folder, made durable (the file, then the folder's entry) before and after the rename.
    A new file gets ``mode``; a replaced one keeps its own unless ``keep_mode`` is off."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    # A name no other writer uses: two processes (the gateway and the CLI) may write at once.
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, _mode_for(path, mode, keep_mode))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fsync_folder(path.parent)


def private_file(path: Path) -> Path:
    """Make ``path`` (created empty if missing) readable by the owner's user alone, whatever
    the umask. SQLite gives a database's -wal and -shm files the database's own mode, so a
    database made this way before it is opened keeps those private too."""
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT, PRIVATE))
    os.chmod(path, PRIVATE)
    return path


def fsync_folder(folder: Path) -> None:
    """Make a rename or a new name in ``folder`` survive a power cut."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _mode_for(path: Path, mode: int, keep_mode: bool) -> int:
    if not keep_mode:
        return mode
    try:
        return path.stat().st_mode & 0o777
    except FileNotFoundError:
        return mode
