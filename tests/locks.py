"""Waiting, bounded, until a thread waits for an ``flock`` the test holds."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path


def until_waiting(path: Path, thread: threading.Thread) -> None:
    """Return once ``thread`` waits for the lock on ``path`` (Linux lists a waiter in
    /proc/locks with "->"); fail if it ends first, or does not come within ten seconds."""
    inode = f":{os.stat(path).st_ino} "
    deadline = time.monotonic() + 10
    while not any("->" in x and inode in x for x in Path("/proc/locks").read_text().splitlines()):
        assert thread.is_alive(), "it did not wait for the lock"
        assert time.monotonic() < deadline, "it never came to the lock"
        threading.Event().wait(0.005)
