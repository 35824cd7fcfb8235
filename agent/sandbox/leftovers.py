"""What a command left in the workspace, checked on the way out of the box."""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from agent.workspace.audience import (
    PROMPT_FOLDERS,
    WRITTEN_AFTER_OUTSIDE,
    note_written,
    prompt_place,
)
from agent.workspace.visible import inside

MAX_ENTRIES = 50_000
MAX_SECONDS = 5.0
# What a path is, to tell a change: its kind and inode, size and modification time.
Stamp = tuple[int, int, int, int]


@dataclass(frozen=True, slots=True)
class Before:
    """The workspace as a run found it (``look``): each entry's stamp, and whether the look
    saw all of it."""

    stamps: dict[str, Stamp] = field(default_factory=dict)
    whole: bool = True


def look(workspace: Path) -> Before:
    """Every entry of the workspace (hidden ones too), never following a link, within bounds."""
    stamps: dict[str, Stamp] = {}
    deadline = time.monotonic() + MAX_SECONDS
    for folder, dirs, files in os.walk(workspace, followlinks=False):
        for name in (*dirs, *files):
            path = os.path.join(folder, name)
            with contextlib.suppress(OSError):
                st = os.lstat(path)
                rel = os.path.relpath(path, workspace)
                stamps[rel] = (st.st_mode, st.st_ino, st.st_size, st.st_mtime_ns)
        if len(stamps) >= MAX_ENTRIES or time.monotonic() > deadline:
            return Before(stamps, whole=False)
    return Before(stamps)


def tidy(workspace: Path, before: Before, sealed: str | None) -> list[str]:
    """Remove what the run may not leave (``_unwanted``) and note what a sealed
    run changed; ``sealed``: what the conversation had read from outside, None when it is not
    sealed. Returns what was removed, as the model is told it."""
    after = look(workspace)
    removed: list[str] = []
    for rel, stamp in sorted(after.stamps.items()):
        if before.stamps.get(rel) == stamp:
            continue
        path = workspace / rel
        mode = stamp[0]
        why = _unwanted(workspace, path, mode, rel, sealed is not None and rel not in before.stamps)
        if why is not None:
            with contextlib.suppress(OSError):
                if stat.S_ISDIR(mode):
                    shutil.rmtree(path)
                else:
                    os.unlink(path)
                removed.append(f"{rel} ({why})")
        elif sealed is not None and stat.S_ISREG(mode):
            # Whoever reads it later has read from outside, as with the file tools' writes.
            note_written(workspace, rel, sealed)
    return removed


def _unwanted(workspace: Path, path: Path, mode: int, rel: str, new: bool) -> str | None:
    """Why the run may not leave ``path``, or None."""
    if stat.S_ISLNK(mode) and inside(workspace, path) is None:
        return "a link that leads outside the workspace"
    # The workspace holds no links out, and no FIFO, socket or device (a reader could wait on
    # one forever).
    if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "not a regular file"
    parts = PurePosixPath(rel).parts
    place = (
        rel == WRITTEN_AFTER_OUTSIDE
        or prompt_place(PurePosixPath(rel))
        or (len(parts) == 1 and parts[0].casefold() in PROMPT_FOLDERS)
    )
    # The box binds the existing places read-only; making a new one is as much a write.
    if new and place:
        return "a place later prompts read, which this conversation may not change"
    return None
