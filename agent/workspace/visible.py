"""Reading a workspace file as the file tools resolve it, for every reader that is not a tool."""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

from agent.workspace.audience import WRITTEN_AFTER, readable, untrusted, written_after_outside
from agent.workspace.reading import NotPlainFile, read_plain, text_of
from gateway.contract.events import Audience


class Unreadable(Exception):
    """Something is at the path that the reader may not read; ``why`` says what, without a
    host path."""

    def __init__(self, rel: str, why: str) -> None:
        super().__init__(f"{rel}: {why}")
        self.why = why


def inside(workspace: Path, path: Path) -> Path | None:
    """Where ``path`` leads, links followed, when that is inside ``workspace`` (its real
    path); None when it leads outside or through a loop of links."""
    try:
        resolved = path.resolve()
    except (RuntimeError, OSError):  # a loop of links (Python < 3.13)
        return None
    # is_relative_to compares path parts: a sibling named like the workspace is outside.
    return resolved if resolved == workspace or resolved.is_relative_to(workspace) else None


def read_visible(
    workspace: Path,
    rel: str,
    audience: Audience,
    *,
    strict: bool = False,
    quoted: bool = True,
    noted: Mapping[str, str] | None = None,
) -> str:
    """The text at ``rel`` in ``workspace`` (its real path) as ``audience`` may read it,
    quoted when it was written after reading from outside (unless ``quoted`` is off: the
    caller quotes it itself). ``FileNotFoundError`` when nothing is there; ``Unreadable`` when
    what is there may not be read; bad UTF-8 raises ``UnicodeDecodeError`` with ``strict``,
    else is replaced. ``noted``: ``written_after_outside`` as read already by a reader of
    several files."""
    if not readable(audience, PurePosixPath(rel)):
        raise Unreadable(rel, "not readable in this chat")
    plain = _plain(workspace, rel)
    if plain is not None:  # its own real path: the checks below would all pass
        path, st = plain
        if st is None:
            raise FileNotFoundError(rel)
    else:
        found = inside(workspace, workspace / rel)
        if found is None:
            raise Unreadable(rel, "a link that leads outside the workspace")
        path, where = os.fspath(found), found.relative_to(workspace).as_posix()
        # Judged where the path leads: AGENTS.md as a link to MEMORY.md shows a group nothing.
        if not readable(audience, PurePosixPath(where)):
            raise Unreadable(rel, f"a link to {where}, which this chat may not read")
        rel = where
        try:
            st = os.stat(path)
        except FileNotFoundError:
            raise FileNotFoundError(rel) from None
    if not stat.S_ISREG(st.st_mode):
        raise Unreadable(rel, "not a regular file")
    if audience.chat is not None and st.st_nlink > 1:
        raise Unreadable(rel, "a file with a second name (a hard link)")
    try:
        text = text_of(read_plain(path), strict=strict)
    except NotPlainFile:  # replaced by something else since: found without waiting on it
        raise Unreadable(rel, "not a regular file") from None
    if not quoted:
        return text
    read = (written_after_outside(workspace) if noted is None else noted).get(rel)
    return untrusted(f"{rel}, written after reading {read}", text, WRITTEN_AFTER) if read else text


def _plain(workspace: Path, rel: str) -> tuple[str, os.stat_result | None] | None:
    """``rel`` under the workspace and its ``lstat`` (None: not there) when the path is
    already its own real path: plain names only, no link on the way. None when it has to be
    resolved (a link, ``..``, an absolute path). A new session's prompt reads several files,
    and resolving each from ``/`` was most of the time its prompt took."""
    parts = rel.split("/")
    if any(p in ("", ".", "..") for p in parts):
        return None
    path = os.fspath(workspace)
    st = None
    for part in parts:
        path = os.path.join(path, part)
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            return path, None
        except OSError:
            return None
        if stat.S_ISLNK(st.st_mode):
            return None
    return path, st
